//! Taking reads back from the kernel: completions turned into samples or errors (short reads
//! resumed, EINTR/EAGAIN re-issued), and cancelling what the kernel holds within a time.

use super::{UringBackend, CANCEL_USER_DATA, TIMEOUT_USER_DATA};
use crate::{Completion, IoError, ReadError, ReadErrorKind, SAMPLE_LEN};
use io_uring::opcode;
use std::time::Instant;

impl UringBackend {
    /// Reads handed to the kernel (in the submission queue or in flight) whose CQE has not been
    /// processed.
    pub(super) fn outstanding(&self) -> usize {
        self.slots.len() - self.free.len() - self.queued.len()
    }

    /// Asks the kernel to cancel every outstanding read and waits until `give_up` for their
    /// CQEs, discarding them (a read that already reached the device cannot be cancelled and
    /// finishes normally).
    pub(super) fn cancel_in_kernel(&mut self, give_up: Instant) -> Result<(), IoError> {
        if self.outstanding() == 0 {
            return Ok(());
        }
        if self.send_cancels {
            let mut busy = vec![true; self.slots.len()];
            for &id in &self.free {
                busy[id as usize] = false;
            }
            for id in (0..busy.len()).filter(|&i| busy[i]) {
                let entry = opcode::AsyncCancel::new(id as u64)
                    .build()
                    .user_data(CANCEL_USER_DATA);
                // SAFETY: a cancel entry holds no pointer, only the user_data to match.
                while unsafe { self.ring.submission().push(&entry) }.is_err() {
                    self.submit_ignoring_busy()?;
                    if Instant::now() >= give_up {
                        return Ok(());
                    }
                }
            }
        }
        loop {
            self.discard_completions();
            let Some(left) = give_up.checked_duration_since(Instant::now()) else {
                return Ok(());
            };
            if self.outstanding() == 0 || left.is_zero() {
                return Ok(());
            }
            self.enter(self.outstanding(), Some(left))?;
        }
    }

    /// Consumes every CQE, freeing the slots of finished reads without re-issuing any.
    pub(super) fn discard_completions(&mut self) {
        for (user_data, _) in self.ring.completion().map(|c| (c.user_data(), c.result())) {
            if user_data != TIMEOUT_USER_DATA && user_data != CANCEL_USER_DATA {
                self.free.push(user_data as u32);
            }
        }
    }

    /// Processes every CQE in the completion queue: finished reads are appended to `out`,
    /// retryable errors and resumable short reads are queued again. Returns how many finished.
    pub(super) fn drain(&mut self, out: &mut Vec<Completion>) -> Result<usize, IoError> {
        self.cqe_scratch.clear();
        self.cqe_scratch
            .extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
        let mut finished = 0;
        for i in 0..self.cqe_scratch.len() {
            let (user_data, res) = self.cqe_scratch[i];
            if user_data == TIMEOUT_USER_DATA || user_data == CANCEL_USER_DATA {
                continue;
            }
            let id = user_data as u32;
            match self.on_result(id, res) {
                Some(result) => {
                    out.push(Completion {
                        tag: self.slots[id as usize].tag,
                        result,
                    });
                    self.free.push(id);
                    finished += 1;
                }
                None => self.push_entry(id)?,
            }
        }
        Ok(finished)
    }

    /// The outcome of a CQE for slot `id`, or `None` when the read must be issued again.
    pub(super) fn on_result(
        &mut self,
        id: u32,
        res: i32,
    ) -> Option<Result<crate::Sample, ReadError>> {
        let resume_align = self.resume_align;
        let slot = &mut self.slots[id as usize];
        let error = |kind| {
            Some(Err(ReadError {
                file: slot.file,
                offset: slot.offset,
                kind,
            }))
        };
        if res < 0 {
            return match -res {
                libc::EINTR | libc::EAGAIN => None,
                errno => error(ReadErrorKind::Os(errno)),
            };
        }
        slot.got += res as u32;
        if slot.range.covers_sample(slot.got as usize) {
            let at = id as usize * self.slot_bytes + slot.range.sample_pos as usize;
            debug_assert!(at + SAMPLE_LEN <= self.arena.len());
            let mut sample = [0u8; SAMPLE_LEN];
            // SAFETY: `at + 32` lies inside this slot's part of the arena (sample_pos + 32 <=
            // range.len <= slot_bytes). The kernel has finished writing this slot (its CQE was
            // posted) and no other read targets it. Other slots may be written by the kernel
            // right now, so no reference to the whole arena is formed, only these 32 bytes copied.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.arena.as_ptr().add(at),
                    sample.as_mut_ptr(),
                    SAMPLE_LEN,
                );
            }
            return Some(Ok(sample));
        }
        if res == 0 || slot.got >= slot.range.len || slot.got & (resume_align - 1) != 0 {
            return error(ReadErrorKind::ShortRead {
                got: slot.got,
                wanted: slot.range.len,
            });
        }
        None
    }
}
