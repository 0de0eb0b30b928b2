//! Handing reads to the kernel: a read's entry in the submission queue, one `io_uring_enter`
//! with its retries, the timeout entry of kernels without `EXT_ARG` and its timespec's lifetime.

use super::{UringBackend, TIMEOUT_USER_DATA};
use crate::IoError;
use io_uring::{opcode, squeue, types};
use std::os::fd::AsRawFd;
use std::time::Duration;

impl UringBackend {
    /// Puts slot `id`'s (remaining) read into the submission queue, entering the kernel first if
    /// the queue is full (it cannot be while the ring has room for depth + 1 entries).
    pub(super) fn push_entry(&mut self, id: u32) -> Result<(), IoError> {
        let slot = self.slots[id as usize];
        // SAFETY: slot `id`'s buffer lies inside the arena (id < depth), which lives as long as
        // the ring; `got < range.len <= slot_bytes`, so [buf, buf + len) stays in the slot.
        let buf = unsafe {
            self.arena
                .as_mut_ptr()
                .add(id as usize * self.slot_bytes + slot.got as usize)
        };
        let len = slot.range.len - slot.got;
        let offset = slot.range.start + u64::from(slot.got);
        let entry = match (self.fixed_files, self.fixed_buffers) {
            (true, true) => opcode::ReadFixed::new(types::Fixed(slot.file), buf, len, 0)
                .offset(offset)
                .build(),
            (true, false) => opcode::Read::new(types::Fixed(slot.file), buf, len)
                .offset(offset)
                .build(),
            (false, fixed_buffers) => {
                let fd = types::Fd(self.files[slot.file as usize].as_raw_fd());
                if fixed_buffers {
                    opcode::ReadFixed::new(fd, buf, len, 0)
                        .offset(offset)
                        .build()
                } else {
                    opcode::Read::new(fd, buf, len).offset(offset).build()
                }
            }
        };
        let mut entry = entry.user_data(u64::from(id));
        if self.force_async.get(slot.file as usize) == Some(&true) {
            entry = entry.flags(squeue::Flags::ASYNC);
        }
        loop {
            // SAFETY: the buffer lies in the arena, which is freed only after the ring (never
            // while a read is in flight: `Drop` leaks both otherwise), and nothing else touches
            // this slot's bytes until its CQE has been processed.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return Ok(());
            }
            self.enter(0, None)?;
        }
    }

    /// One `io_uring_enter`: submits the queue and waits for `want` completions or `timeout`.
    /// EINTR, EAGAIN and EBUSY (completion queue full) are retried; a timeout is not an error.
    pub(super) fn enter(&mut self, want: usize, timeout: Option<Duration>) -> Result<(), IoError> {
        loop {
            self.enters += 1;
            let result = match timeout {
                Some(t) if !self.timeout_entries => {
                    // The kernel copies this timespec inside the call (EXT_ARG), so the stack is
                    // fine here.
                    let ts = types::Timespec::from(t);
                    let args = types::SubmitArgs::new().timespec(&ts);
                    self.ring.submitter().submit_with_args(want, &args)
                }
                Some(t) => match self.arm_timeout(t, want)? {
                    true => self.ring.submit_and_wait(want),
                    // The previous timeout entry is still queued (the kernel keeps refusing
                    // entries): no timer can be armed, so do not wait; the caller re-checks.
                    false => return Ok(()),
                },
                None => self.ring.submit_and_wait(want),
            };
            if self.timeout_in_sq && self.ring.submission().is_empty() {
                // Consumed: the kernel copied the timespec while preparing the entry.
                self.timeout_in_sq = false;
            }
            match result {
                Ok(_) => return Ok(()),
                Err(e) => match e.raw_os_error() {
                    Some(libc::ETIME) => return Ok(()),
                    // Interrupted while waiting with a deadline: let the caller re-check it.
                    Some(libc::EINTR) if timeout.is_some() => return Ok(()),
                    Some(libc::EINTR) => continue,
                    // Out of resources or the completion queue overflowed: completions must be
                    // consumed first; the caller drains and calls again.
                    Some(libc::EAGAIN) | Some(libc::EBUSY) => return Ok(()),
                    _ => return Err(enter_error(e)),
                },
            }
        }
    }

    /// Queues a timeout entry for `t` (completing after `want` CQEs) that points at the
    /// backend's own timespec. Returns false when an earlier timeout entry is still unconsumed
    /// even after one more submit: the timespec it points at must not change.
    pub(super) fn arm_timeout(&mut self, t: Duration, want: usize) -> Result<bool, IoError> {
        if self.timeout_in_sq {
            self.submit_ignoring_busy()?;
            if !self.ring.submission().is_empty() {
                return Ok(false);
            }
            self.timeout_in_sq = false;
        }
        **self.timeout_ts = types::Timespec::from(t);
        let entry = opcode::Timeout::new(&**self.timeout_ts)
            .count(want as u32)
            .build()
            .user_data(TIMEOUT_USER_DATA);
        loop {
            // SAFETY: the entry points at `timeout_ts`, a box owned by this backend whose address
            // never changes; it is not rewritten while this entry may be unconsumed
            // (`timeout_in_sq`), and it is freed only after the ring or leaked with it.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                self.timeout_in_sq = true;
                return Ok(true);
            }
            self.submit_ignoring_busy()?;
            if self.ring.submission().is_full() {
                return Ok(false);
            }
        }
    }

    /// One submit without waiting; EINTR/EAGAIN/EBUSY leave entries queued and are not errors.
    pub(super) fn submit_ignoring_busy(&mut self) -> Result<(), IoError> {
        self.enters += 1;
        match self.ring.submit() {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(enter_error(e)),
        }
    }

    /// Hands queued reads and re-issued ones to the kernel without waiting.
    pub(super) fn flush(&mut self) -> Result<(), IoError> {
        if !self.ring.submission().is_empty() {
            self.enter(0, None)?;
        }
        Ok(())
    }
}

pub(super) fn enter_error(source: std::io::Error) -> IoError {
    IoError::Os {
        what: "io_uring_enter",
        source,
    }
}
