//! The platform-independent half of the Windows overlapped backends (`iocp`, `iocp-unbuffered`):
//! the slot state machine that turns "started / completed at once / completed later on the
//! port" into [`Completion`]s, over the ranges, sector rules and buffer slab of
//! [`crate::align`]. It has no `cfg` so it is unit-tested on every platform with a fake OS
//! driver; `windows::iocp` supplies the real driver (ReadFile + a completion port).
//!
//! The shape follows TigerBeetle's `src/io/windows.zig`: operation slots are owned by the worker
//! and allocated once at its depth, nothing is allocated per read, and the caller's deadline is
//! the wait's timeout.
//!
//! Teardown is bounded: `cancel_all` asks the OS to cancel (`CancelIoEx`) and waits at most the
//! time it is given; dropping the engine does that within [`TEARDOWN_WAIT`], and if reads are
//! still pending (a dead device) the driver leaks its OVERLAPPEDs, buffers, handles and port
//! rather than free memory the kernel may still write.

// Only the Windows backend uses this at run time; elsewhere it is compiled for its unit tests.
#![cfg_attr(not(windows), allow(dead_code))]

use crate::align::{check_sector_alignment, BlockRange, SpanPlan};
use crate::leak::note_leaked_backend;
use crate::{
    CancelOutcome, Completion, IoError, QueueFull, ReadError, ReadErrorKind, Sample, SampleRead,
    SAMPLE_LEN, TEARDOWN_WAIT,
};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Win32 `ERROR_HANDLE_EOF`: the read started at or past the end of the file.
pub(crate) const WIN32_ERROR_HANDLE_EOF: i32 = 38;
/// Win32 `INFINITE` wait timeout.
pub(crate) const WAIT_INFINITE_MS: u32 = u32::MAX;
/// Win32 `ERROR_INVALID_HANDLE`: what a read naming a file that is not open completes with.
pub(crate) const WIN32_ERROR_INVALID_HANDLE: i32 = 6;

/// Milliseconds to wait for `deadline` from `now`, rounded up so the wait never ends before the
/// deadline; [`WAIT_INFINITE_MS`] without a deadline, 0 once it has passed.
pub(crate) fn timeout_ms(now: Instant, deadline: Option<Instant>) -> u32 {
    let Some(deadline) = deadline else {
        return WAIT_INFINITE_MS;
    };
    let left = deadline.saturating_duration_since(now);
    let ms = left.as_nanos().div_ceil(1_000_000);
    ms.min(u128::from(WAIT_INFINITE_MS - 1)) as u32
}

/// What the OS said when a read was started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Started {
    /// Finished inside the call (ReadFile returned TRUE with skip-on-success set): no port
    /// packet will follow, so the backend completes it now.
    CompletedNow { bytes: u32 },
    /// In flight (ERROR_IO_PENDING); a completion arrives on the port later.
    Pending,
    /// Failed inside the call with this OS error code; no port packet will follow.
    Failed { code: i32 },
}

/// One completion taken off the port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PortEvent {
    pub slot: u32,
    /// Bytes transferred, or the OS error code.
    pub outcome: Result<u32, i32>,
}

impl Default for PortEvent {
    fn default() -> Self {
        PortEvent {
            slot: u32::MAX,
            outcome: Ok(0),
        }
    }
}

/// The OS under the state machine: starts reads into slot buffers and waits on the port.
pub(crate) trait OverlappedDriver {
    /// Address of slot `slot`'s buffer (checked for alignment before every unbuffered read).
    fn buffer_addr(&self, slot: u32) -> usize;
    /// The first `len` bytes of slot `slot`'s buffer, once its read has finished.
    fn buffer(&self, slot: u32, len: u32) -> &[u8];
    /// Starts reading `span` of file `file` into slot `slot`'s buffer.
    fn start(&mut self, slot: u32, file: u32, span: BlockRange) -> Started;
    /// Waits at most `timeout_ms` (or forever: [`WAIT_INFINITE_MS`]) for at least one completion
    /// and stores what is ready (up to `events.len()`) in `events`. Returns how many; 0 on
    /// timeout.
    fn wait(&mut self, events: &mut [PortEvent], timeout_ms: u32) -> Result<usize, IoError>;
    /// Asks the OS to cancel every pending read; each still completes (with an error) via `wait`.
    fn cancel_all(&mut self);
    /// Called when pending reads could not be drained: the driver must never free memory the OS
    /// may still write to (buffers, OVERLAPPEDs), so it leaks them, with its handles and port.
    fn leak_buffers(&mut self);
}

/// The read a slot is busy with.
#[derive(Clone, Copy, Debug)]
struct SlotUse {
    read: SampleRead,
    span: BlockRange,
}

/// Slot state machine of one overlapped worker: pushed → started → (completed now | pending on
/// the port) → ready → reaped. Storage is sized once at the depth.
pub(crate) struct OverlappedEngine<D: OverlappedDriver> {
    driver: D,
    plan: SpanPlan,
    /// `Some(sector)` for unbuffered handles: every read is checked against the sector rules.
    sector_rule: Option<u32>,
    files: u32,
    slots: Box<[Option<SlotUse>]>,
    free: Vec<u32>,
    queued: Vec<u32>,
    pending_in_os: usize,
    ready: VecDeque<Completion>,
    events: Box<[PortEvent]>,
    /// How long dropping the engine waits for cancelled reads ([`TEARDOWN_WAIT`]).
    teardown_wait: Duration,
    /// A `cancel_all` ran out of time with reads still pending: `shutdown` no longer waits.
    cancel_gave_up: bool,
    /// `shutdown` leaked the driver's memory (counted once).
    leaked: bool,
}

impl<D: OverlappedDriver> OverlappedEngine<D> {
    /// `depth` slots; `driver` must own at least `depth` buffers of `plan.max_span_len()` bytes.
    pub(crate) fn new(
        driver: D,
        plan: SpanPlan,
        sector_rule: Option<u32>,
        files: u32,
        depth: usize,
    ) -> Self {
        let depth = depth.max(1);
        OverlappedEngine {
            driver,
            plan,
            sector_rule,
            files,
            slots: vec![None; depth].into_boxed_slice(),
            free: (0..depth as u32).rev().collect(),
            queued: Vec::with_capacity(depth),
            pending_in_os: 0,
            ready: VecDeque::with_capacity(depth),
            events: vec![PortEvent::default(); depth].into_boxed_slice(),
            teardown_wait: TEARDOWN_WAIT,
            cancel_gave_up: false,
            leaked: false,
        }
    }

    #[cfg(test)]
    pub(crate) fn driver(&self) -> &D {
        &self.driver
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.queued.len() + self.pending_in_os + self.ready.len()
    }

    pub(crate) fn push(&mut self, read: SampleRead) -> Result<(), QueueFull> {
        if self.in_flight() >= self.capacity() {
            return Err(QueueFull);
        }
        // Slots in use = queued + pending <= in_flight < capacity, so one is free.
        let slot = self.free.pop().ok_or(QueueFull)?;
        let span = self.plan.span(read.offset).unwrap_or(BlockRange {
            start: read.offset,
            len: 0,
            sample_pos: 0,
        });
        self.slots[slot as usize] = Some(SlotUse { read, span });
        self.queued.push(slot);
        Ok(())
    }

    /// Starts every queued read; those the OS finishes at once become ready immediately.
    pub(crate) fn submit(&mut self) -> Result<(), IoError> {
        for i in 0..self.queued.len() {
            let slot = self.queued[i];
            let used = self.slots[slot as usize].expect("queued slot is in use");
            if used.read.file >= self.files {
                // A read of a file that is not open fails alone, like any bad read.
                self.finish(slot, Err(WIN32_ERROR_INVALID_HANDLE));
                continue;
            }
            if used.span.len == 0 {
                // The sample would end past u64::MAX: no file is that long.
                self.finish(slot, Err(WIN32_ERROR_HANDLE_EOF));
                continue;
            }
            if let Err(e) = self.check_sector_rule(slot, used) {
                // Leave the queue consistent: what was not started stays queued.
                self.queued.drain(..i);
                return Err(e);
            }
            match self.driver.start(slot, used.read.file, used.span) {
                Started::CompletedNow { bytes } => self.finish(slot, Ok(bytes)),
                Started::Pending => self.pending_in_os += 1,
                Started::Failed { code } => self.finish(slot, Err(code)),
            }
        }
        self.queued.clear();
        Ok(())
    }

    /// Refuses unbuffered reads that would break the sector rules. Such a read is a bug in pora,
    /// not a disk error, so it stops the worker with a clear message.
    fn check_sector_rule(&self, slot: u32, used: SlotUse) -> Result<(), IoError> {
        let Some(sector) = self.sector_rule else {
            return Ok(());
        };
        check_sector_alignment(used.span, self.driver.buffer_addr(slot), sector).map_err(|m| {
            IoError::Config(format!(
                "unbuffered read of file #{} at offset {} breaks the {sector}-byte sector rule: {m}",
                used.read.file, used.read.offset
            ))
        })
    }

    /// Turns a finished slot into a ready completion and frees the slot.
    fn finish(&mut self, slot: u32, outcome: Result<u32, i32>) {
        let used = self.slots[slot as usize]
            .take()
            .expect("finished slot is in use");
        let (read, span) = (used.read, used.span);
        let error = |kind| {
            Err(ReadError {
                file: read.file,
                offset: read.offset,
                kind,
            })
        };
        let result = match outcome {
            Ok(bytes) => {
                let need = span.sample_pos + SAMPLE_LEN as u32;
                if bytes.min(span.len) >= need {
                    let mut sample: Sample = [0; SAMPLE_LEN];
                    sample.copy_from_slice(
                        &self.driver.buffer(slot, need)[span.sample_pos as usize..need as usize],
                    );
                    Ok(sample)
                } else {
                    let got = bytes.saturating_sub(span.sample_pos).min(SAMPLE_LEN as u32);
                    error(ReadErrorKind::ShortRead {
                        got,
                        wanted: SAMPLE_LEN as u32,
                    })
                }
            }
            Err(WIN32_ERROR_HANDLE_EOF) => error(ReadErrorKind::ShortRead {
                got: 0,
                wanted: SAMPLE_LEN as u32,
            }),
            Err(code) => error(ReadErrorKind::Os(code)),
        };
        self.ready.push_back(Completion {
            tag: read.tag,
            result,
        });
        self.free.push(slot);
    }

    /// Takes one batch off the port (waiting at most `timeout_ms`); returns how many finished.
    fn wait_once(&mut self, timeout_ms: u32) -> Result<usize, IoError> {
        let n = self.driver.wait(&mut self.events, timeout_ms)?;
        for i in 0..n {
            let event = self.events[i];
            let in_use = self
                .slots
                .get(event.slot as usize)
                .is_some_and(|s| s.is_some());
            if !in_use {
                return Err(IoError::Config(format!(
                    "completion port returned unknown slot {}",
                    event.slot
                )));
            }
            self.pending_in_os -= 1;
            self.finish(event.slot, event.outcome);
        }
        Ok(n)
    }

    /// The contract's `reap`: appends ready completions, waiting on the port (deadline as the
    /// timeout) until at least `min_complete` (clamped to in-flight) were appended.
    pub(crate) fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        min_complete: usize,
        deadline: Option<Instant>,
    ) -> Result<usize, IoError> {
        let want = min_complete.min(self.in_flight());
        let mut appended = self.drain_ready(out);
        if want == 0 && self.pending_in_os > 0 {
            // A non-blocking look at the port so callers polling with 0 make progress.
            self.wait_once(0)?;
            appended += self.drain_ready(out);
        }
        while appended < want && self.pending_in_os > 0 {
            let timeout = match deadline {
                None => WAIT_INFINITE_MS,
                Some(_) => timeout_ms(Instant::now(), deadline),
            };
            let n = self.wait_once(timeout)?;
            appended += self.drain_ready(out);
            if n == 0 && timeout != WAIT_INFINITE_MS {
                break; // the deadline has passed
            }
        }
        Ok(appended)
    }

    fn drain_ready(&mut self, out: &mut Vec<Completion>) -> usize {
        let n = self.ready.len();
        out.extend(self.ready.drain(..));
        n
    }

    /// The contract's `drop_queued`: frees the slots of reads pushed since the last `submit`,
    /// which were never started (no `ReadFile`, so the OS has never seen them).
    pub(crate) fn drop_queued(&mut self) -> usize {
        let dropped = self.queued.len();
        for slot in self.queued.drain(..) {
            self.slots[slot as usize] = None;
            self.free.push(slot);
        }
        dropped
    }

    /// The contract's `cancel_all`: drops queued reads (never started) and ready completions,
    /// asks the OS to cancel pending ones and waits at most `within` for their packets, which
    /// are discarded.
    pub(crate) fn cancel_all(&mut self, within: Duration) -> CancelOutcome {
        let give_up = Instant::now() + within;
        let before = self.in_flight();
        self.drop_queued();
        self.ready.clear();
        if self.pending_in_os > 0 {
            self.driver.cancel_all();
        }
        while self.pending_in_os > 0 {
            let timeout = timeout_ms(Instant::now(), Some(give_up));
            match self.wait_once(timeout) {
                Ok(0) if timeout == 0 => break,
                Ok(_) => self.ready.clear(),
                // A broken port: the reads stay counted as pending, so the backend is replaced.
                Err(_) => break,
            }
        }
        self.ready.clear();
        let still = self.pending_in_os;
        self.cancel_gave_up |= still > 0;
        CancelOutcome {
            discarded: before - still,
            still_in_flight: still,
        }
    }

    /// Cancels and drains every pending read within [`TEARDOWN_WAIT`] (at once if a
    /// `cancel_all` already gave up) so no buffer is freed while the OS may write to it.
    /// Returns false, leaks the driver's memory, handles and port and counts the leak
    /// ([`crate::leaked_backends`]) if they could not all be drained.
    pub(crate) fn shutdown(&mut self) -> bool {
        let within = if self.cancel_gave_up {
            Duration::ZERO
        } else {
            self.teardown_wait
        };
        if self.cancel_all(within).is_idle() {
            return true;
        }
        if !self.leaked {
            self.leaked = true;
            self.driver.leak_buffers();
            note_leaked_backend();
        }
        false
    }
}

impl<D: OverlappedDriver> Drop for OverlappedEngine<D> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests;
