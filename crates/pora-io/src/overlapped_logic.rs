//! The platform-independent half of the Windows overlapped backends (`iocp`, `iocp-unbuffered`):
//! which bytes to read around a sample, the sector-alignment rules, the aligned buffer slab and
//! the slot state machine that turns "started / completed at once / completed later on the
//! port" into [`Completion`]s. It has no `cfg` so it is unit-tested on every platform with a fake
//! OS driver; `windows::iocp` supplies the real driver (ReadFile + a completion port).
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

use crate::leak::note_leaked_backend;
use crate::{
    BlockSize, CancelOutcome, Completion, IoError, QueueFull, Read, ReadError, ReadErrorKind,
    Sample, SAMPLE_LEN, TEARDOWN_WAIT,
};
use std::alloc::Layout;
use std::collections::VecDeque;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

/// Win32 `ERROR_HANDLE_EOF`: the read started at or past the end of the file.
pub(crate) const WIN32_ERROR_HANDLE_EOF: i32 = 38;
/// Win32 `INFINITE` wait timeout.
pub(crate) const WAIT_INFINITE_MS: u32 = u32::MAX;
/// Sector size assumed when the volume cannot be asked (the common "4Kn"/"512e" physical size).
pub(crate) const FALLBACK_SECTOR_BYTES: u32 = 4096;
/// Largest read unit pora issues (one `--block-size`); keeps `2 * unit` within `u32`.
pub(crate) const MAX_UNIT_BYTES: u32 = 64 << 20;
/// Win32 `ERROR_INVALID_HANDLE`: what a read naming a file that is not open completes with.
pub(crate) const WIN32_ERROR_INVALID_HANDLE: i32 = 6;

/// `value` rounded down to a multiple of `unit` (a power of two).
pub(crate) fn align_down(value: u64, unit: u64) -> u64 {
    debug_assert!(unit.is_power_of_two());
    value & !(unit - 1)
}

/// `value` rounded up to a multiple of `unit` (a power of two); `None` on overflow.
pub(crate) fn align_up(value: u64, unit: u64) -> Option<u64> {
    debug_assert!(unit.is_power_of_two());
    Some(value.checked_add(unit - 1)? & !(unit - 1))
}

/// The byte range one read moves: whole `unit`s around the sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    /// File offset of the first byte read.
    pub offset: u64,
    /// Bytes read.
    pub len: u32,
    /// Where the sample starts inside the bytes read.
    pub sample_at: u32,
}

/// Alignment unit of a read: 1 reads exactly the sample; a sector size or `--block-size`
/// reads the whole aligned units that contain it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SpanPlan {
    unit: u32,
}

impl SpanPlan {
    /// A plan reading whole `unit`-byte blocks; `unit` must be a power of two up to
    /// [`MAX_UNIT_BYTES`].
    pub(crate) fn new(unit: u32) -> Result<SpanPlan, IoError> {
        if !unit.is_power_of_two() || unit > MAX_UNIT_BYTES {
            return Err(IoError::Config(format!(
                "read unit {unit} bytes: must be a power of two up to {MAX_UNIT_BYTES}"
            )));
        }
        Ok(SpanPlan { unit })
    }

    pub(crate) fn unit(self) -> u32 {
        self.unit
    }

    /// The largest span any sample can need: one unit, or two when the sample straddles a
    /// unit boundary. This is the per-slot buffer size.
    pub(crate) fn max_span_len(self) -> u32 {
        let unit = u64::from(self.unit);
        align_up(SAMPLE_LEN as u64 + unit - 1, unit).expect("unit is at most 2^24") as u32
    }

    /// The span that holds the sample at `offset`; `None` when it would pass `u64::MAX`.
    pub(crate) fn span(self, offset: u64) -> Option<Span> {
        let unit = u64::from(self.unit);
        let start = align_down(offset, unit);
        let end = align_up(offset.checked_add(SAMPLE_LEN as u64)?, unit)?;
        Some(Span {
            offset: start,
            len: (end - start) as u32,
            sample_at: (offset - start) as u32,
        })
    }
}

/// Bytes one read moves: by default the sample itself (1: no rounding) or, unbuffered, one
/// sector; `--block-size n` reads the `n`-aligned block(s) around the sample and must be a power
/// of two from 32 bytes to [`MAX_UNIT_BYTES`] and, unbuffered, a multiple of the sector size.
pub(crate) fn read_unit(block: BlockSize, sector: Option<u32>) -> Result<u32, IoError> {
    let n = match (block, sector) {
        (BlockSize::Natural, None) => return Ok(1),
        (BlockSize::Natural, Some(sector)) => return Ok(sector),
        (BlockSize::Bytes(n), _) => n,
    };
    if !n.is_power_of_two() || !(SAMPLE_LEN as u32..=MAX_UNIT_BYTES).contains(&n) {
        return Err(IoError::Config(format!(
            "--block-size {n}: must be a power of two from {SAMPLE_LEN} to {MAX_UNIT_BYTES} bytes"
        )));
    }
    match sector {
        Some(sector) if n % sector != 0 => Err(IoError::Config(format!(
            "--block-size {n}: unbuffered reads need a multiple of the volume's {sector}-byte sector"
        ))),
        _ => Ok(n),
    }
}

/// Why an unbuffered read would break the sector rules (pora checks this itself: Wine, and some
/// Windows file systems, do not reject misaligned unbuffered reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Misaligned {
    #[error("offset {0} is not a multiple of the sector size")]
    Offset(u64),
    #[error("length {0} is not a multiple of the sector size")]
    Length(u32),
    #[error("buffer address {0:#x} is not a multiple of the sector size")]
    Buffer(usize),
}

/// Checks the `FILE_FLAG_NO_BUFFERING` rules: file offset, length and buffer address are all
/// multiples of the sector size.
pub(crate) fn check_sector_alignment(
    span: Span,
    buffer_addr: usize,
    sector: u32,
) -> Result<(), Misaligned> {
    debug_assert!(sector.is_power_of_two());
    let mask = u64::from(sector) - 1;
    if span.offset & mask != 0 {
        return Err(Misaligned::Offset(span.offset));
    }
    if u64::from(span.len) & mask != 0 || span.len == 0 {
        return Err(Misaligned::Length(span.len));
    }
    if buffer_addr as u64 & mask != 0 {
        return Err(Misaligned::Buffer(buffer_addr));
    }
    Ok(())
}

/// A usable sector size from what the OS reported: a power of two in 512..=65536, otherwise the
/// fallback.
pub(crate) fn sane_sector_size(reported: Option<u32>) -> u32 {
    match reported {
        Some(s) if s.is_power_of_two() && (512..=65536).contains(&s) => s,
        _ => FALLBACK_SECTOR_BYTES,
    }
}

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

/// One allocation holding `slots` buffers of `slot_len` bytes, each starting at a multiple of
/// `align`: allocated once per worker, never moved, freed on drop.
pub(crate) struct AlignedSlab {
    ptr: NonNull<u8>,
    layout: Layout,
    slot_len: usize,
    slots: usize,
}

// SAFETY: the slab is plain owned memory; the raw pointer is not shared with other threads by
// this type (the OS writes into it only while its owning worker has a read pending).
unsafe impl Send for AlignedSlab {}

impl AlignedSlab {
    /// `slot_len` is rounded up to a multiple of `align` (a power of two) so every slot is aligned.
    pub(crate) fn new(slots: usize, slot_len: usize, align: usize) -> Result<AlignedSlab, IoError> {
        let bad = || {
            IoError::Config(format!(
                "cannot allocate {slots} buffers of {slot_len} bytes aligned to {align}"
            ))
        };
        if slots == 0 || slot_len == 0 || !align.is_power_of_two() {
            return Err(bad());
        }
        let slot_len = slot_len.checked_next_multiple_of(align).ok_or_else(bad)?;
        let size = slot_len.checked_mul(slots).ok_or_else(bad)?;
        let layout = Layout::from_size_align(size, align).map_err(|_| bad())?;
        // SAFETY: `layout` has a non-zero size (slots and slot_len are non-zero).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(bad)?;
        Ok(AlignedSlab {
            ptr,
            layout,
            slot_len,
            slots,
        })
    }

    pub(crate) fn slot_len(&self) -> usize {
        self.slot_len
    }

    /// Start of slot `slot`'s buffer; the OS writes here while a read is pending.
    pub(crate) fn slot_ptr(&self, slot: usize) -> *mut u8 {
        assert!(slot < self.slots, "slot {slot} of {}", self.slots);
        // SAFETY: slot < slots, so the offset stays inside the allocation.
        unsafe { self.ptr.as_ptr().add(slot * self.slot_len) }
    }

    /// The first `len` bytes of slot `slot`. Only called when no read into it is pending.
    pub(crate) fn slot_bytes(&self, slot: usize, len: usize) -> &[u8] {
        assert!(len <= self.slot_len);
        // SAFETY: in bounds (checked above); no OS write is pending on this slot, so nothing
        // mutates these bytes while the shared borrow of `self` lives.
        unsafe { std::slice::from_raw_parts(self.slot_ptr(slot), len) }
    }

    /// Mutable view of a slot, for fakes that play the OS in tests.
    #[cfg(test)]
    pub(crate) fn slot_bytes_mut(&mut self, slot: usize) -> &mut [u8] {
        // SAFETY: in bounds; `&mut self` guarantees no other borrow exists.
        unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(slot), self.slot_len) }
    }
}

impl Drop for AlignedSlab {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout and not freed before.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
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
    fn start(&mut self, slot: u32, file: u32, span: Span) -> Started;
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
    read: Read,
    span: Span,
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

    pub(crate) fn push(&mut self, read: Read) -> Result<(), QueueFull> {
        if self.in_flight() >= self.capacity() {
            return Err(QueueFull);
        }
        // Slots in use = queued + pending <= in_flight < capacity, so one is free.
        let slot = self.free.pop().ok_or(QueueFull)?;
        let span = self.plan.span(read.offset).unwrap_or(Span {
            offset: read.offset,
            len: 0,
            sample_at: 0,
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
                let need = span.sample_at + SAMPLE_LEN as u32;
                if bytes.min(span.len) >= need {
                    let mut sample: Sample = [0; SAMPLE_LEN];
                    sample.copy_from_slice(
                        &self.driver.buffer(slot, need)[span.sample_at as usize..need as usize],
                    );
                    Ok(sample)
                } else {
                    let got = bytes.saturating_sub(span.sample_at).min(SAMPLE_LEN as u32);
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

    /// The contract's `cancel_all`: drops queued reads (never started) and ready completions,
    /// asks the OS to cancel pending ones and waits at most `within` for their packets, which
    /// are discarded.
    pub(crate) fn cancel_all(&mut self, within: Duration) -> CancelOutcome {
        let give_up = Instant::now() + within;
        let before = self.in_flight();
        for slot in self.queued.drain(..) {
            self.slots[slot as usize] = None;
            self.free.push(slot);
        }
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
