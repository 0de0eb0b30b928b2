//! io_uring methods (`uring`, `uring-direct`), Linux only: one ring per worker sized to its
//! depth, registered files, reads into one buffer arena allocated once per worker and registered
//! with the ring (READ_FIXED) when the locked-memory limit allows, submission in the rhythm the
//! devices under the files call for (`rhythm.rs`: an O_DIRECT ring up to a depth enters per read,
//! others queue every SQE and enter once; `submit.rs`) and batched reaping with a deadline
//! (`EXT_ARG` timeout, or an `IORING_OP_TIMEOUT` entry on kernels without it; `complete.rs`).
//!
//! Kernel lifetimes: the kernel reads the arena (as the target of reads) until each read's CQE is
//! posted, and reads a timeout entry's timespec when it consumes the entry, which can be a later
//! `io_uring_enter` than the one it was queued for (EAGAIN/EBUSY leave entries in the queue). So
//! the arena and the timespec are owned by the backend next to the ring, the timespec is never
//! rewritten while an entry pointing at it may still be unconsumed, and both are freed only after
//! the ring, when no read is in flight. Dropping a backend cancels its reads
//! (`IORING_OP_ASYNC_CANCEL`) and waits at most [`TEARDOWN_WAIT`]; if the kernel still holds
//! reads after that (a dead device), ring, arena and timespec are leaked, never freed, and
//! [`crate::leaked_backends`] counts it.
//!
//! Files on FUSE and network file systems are read with `IOSQE_ASYNC`: those file systems do not
//! honour the non-blocking first attempt io_uring makes inside `io_uring_enter`, so a slow or hung
//! read there would block the submitting worker (measured: a FUSE read held 3 s kept a 1 s slot
//! waiting 3 s); forced to the kernel's worker threads, the ring's deadline holds again. Local
//! block devices keep the inline first attempt (no extra thread hop).

use crate::align::{self, AlignedBuf, BlockRange};
use crate::host::sector_size::logical_block_size;
use crate::host::Roots;
use crate::leak::note_leaked_backend;
use crate::unix::{no_such_file, open_direct, open_read_only};
use crate::{
    Backend, BackendFactory, BlockSize, CancelOutcome, Capabilities, Completion, FactoryResult,
    IoConfig, IoError, Method, QueueFull, ReadError, ReadErrorKind, SampleRead, SAMPLE_LEN,
    TEARDOWN_WAIT,
};
use io_uring::{types, IoUring};
use kernel::{kernel_cancels_reads, setup_failure_reason};
use rhythm::submit_each_max_depth;
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod complete;
mod kernel;
mod rhythm;
mod submit;
#[cfg(test)]
mod tests;

pub use kernel::probe;

/// `user_data` of timeout entries (slot ids are below 2^32).
const TIMEOUT_USER_DATA: u64 = u64::MAX;
/// `user_data` of cancel entries.
const CANCEL_USER_DATA: u64 = u64::MAX - 1;
/// io_uring's limit on submission queue entries (IORING_MAX_ENTRIES).
const MAX_RING_ENTRIES: usize = 32768;
/// A single registered buffer may not exceed 1 GiB.
const MAX_FIXED_BUFFER_BYTES: usize = 1 << 30;

pub(crate) fn open(method: Method, paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
    Ok(Arc::new(factory(method, paths, config)?))
}

/// The factory [`open`] shares, over `paths` with the devices `config` carries.
fn factory(method: Method, paths: &[PathBuf], config: &IoConfig) -> Result<UringFactory, IoError> {
    let direct = method == Method::UringDirect;
    let (unit, resume_align, buf_align) = if direct {
        let mut logical = 0u32;
        for path in paths {
            let file = open_direct(path, method.name())?;
            logical = logical.max(logical_block_size(&file).bytes);
        }
        let unit = align::read_unit(config.block_size, Some(logical))?;
        (Some(unit), logical, (logical as usize).max(4096))
    } else {
        let unit = match config.block_size {
            BlockSize::Natural => None,
            bs => Some(align::read_unit(bs, None)?),
        };
        (unit, 1, 64)
    };
    let submit_each_max_depth = if direct {
        // The caller's reading (a session's); files it did not read are read now, once.
        let devices = config.devices.covering(paths, &Roots::default());
        submit_each_max_depth(paths.iter().map(|p| devices.facts(p)))
    } else {
        0
    };
    Ok(UringFactory {
        method,
        submit_each_max_depth,
        paths: paths.to_vec(),
        unit,
        resume_align,
        buf_align,
        fixed_buffers: AtomicU8::new(FIXED_UNKNOWN),
        fixed_files: AtomicU8::new(FIXED_UNKNOWN),
        cancels_reads: kernel_cancels_reads(),
    })
}

const FIXED_UNKNOWN: u8 = 0;
const FIXED_YES: u8 = 1;
const FIXED_NO: u8 = 2;

struct UringFactory {
    method: Method,
    paths: Vec<PathBuf>,
    /// `None`: read exactly the 32 sample bytes (buffered only).
    unit: Option<u32>,
    /// Granularity at which a partial read may be resumed (the logical block for O_DIRECT).
    resume_align: u32,
    buf_align: usize,
    /// Whether the last worker could register its buffers (for `describe`).
    fixed_buffers: AtomicU8,
    /// Whether the last worker could register its files (for `describe`).
    fixed_files: AtomicU8,
    /// The kernel lists `ASYNC_CANCEL`: `cancel_all` withdraws reads instead of waiting for them.
    cancels_reads: bool,
    /// Rings up to this depth enter per read ([`submit_each_max_depth`]); 0 for buffered rings.
    submit_each_max_depth: usize,
}

impl BackendFactory for UringFactory {
    fn method(&self) -> Method {
        self.method
    }

    fn describe(&self) -> String {
        let unit = align::describe_read_unit(self.unit, "reads");
        let buffers = match self.fixed_buffers.load(Ordering::Relaxed) {
            FIXED_YES => "registered buffers (READ_FIXED)",
            FIXED_NO => "unregistered buffers (registration refused: ulimit -l?)",
            _ => "registered buffers when the memlock limit allows",
        };
        let files = match self.fixed_files.load(Ordering::Relaxed) {
            FIXED_NO => "plain file descriptors (registering the files was refused)",
            _ => "registered files",
        };
        let direct = if self.method == Method::UringDirect {
            format!(
                "O_DIRECT (logical block {} bytes), one enter per read up to depth {}, ",
                self.resume_align, self.submit_each_max_depth
            )
        } else {
            "buffered, ".to_string()
        };
        format!(
            "{}: io_uring, {direct}one ring per worker, {files}, {buffers}, {unit}",
            self.method
        )
    }

    fn capabilities(&self) -> Capabilities {
        let mut capabilities = self.method.capabilities();
        capabilities.cancels_in_flight = self.cancels_reads;
        capabilities
    }

    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let backend = UringBackend::new(self, depth.max(1))?;
        let fixed = if backend.fixed_buffers {
            FIXED_YES
        } else {
            FIXED_NO
        };
        self.fixed_buffers.store(fixed, Ordering::Relaxed);
        let files = if backend.fixed_files {
            FIXED_YES
        } else {
            FIXED_NO
        };
        self.fixed_files.store(files, Ordering::Relaxed);
        Ok(Box::new(backend))
    }
}

/// One read in flight: what was asked and how much has arrived.
#[derive(Clone, Copy, Debug)]
struct InFlightRead {
    tag: u32,
    file: u32,
    offset: u64,
    range: BlockRange,
    /// Bytes of `range` read so far (a short read is resumed from here).
    got: u32,
}

impl InFlightRead {
    const EMPTY: InFlightRead = InFlightRead {
        tag: 0,
        file: 0,
        offset: 0,
        range: BlockRange {
            start: 0,
            len: 0,
            sample_pos: 0,
        },
        got: 0,
    };
}

struct UringBackend {
    method: Method,
    /// Dropped by `Drop` only once no read is in flight (leaked otherwise).
    ring: ManuallyDrop<IoUring>,
    /// Keeps the registered descriptors open.
    files: Vec<File>,
    /// Per file: read with `IOSQE_ASYNC` (a file system that blocks inside `io_uring_enter`).
    force_async: Vec<bool>,
    unit: Option<u32>,
    resume_align: u32,
    /// `slots.len()` buffers of `slot_bytes` each; freed by `Drop` only once no read is in
    /// flight (leaked otherwise).
    arena: ManuallyDrop<AlignedBuf>,
    slot_bytes: usize,
    /// Reads go to the registered arena (`READ_FIXED`); plain `READ` when registration was
    /// refused (RLIMIT_MEMLOCK).
    fixed_buffers: bool,
    /// Reads name registered files (`IOSQE_FIXED_FILE`); plain descriptors when refused.
    fixed_files: bool,
    /// Use an IORING_OP_TIMEOUT entry for deadlines (kernels without IORING_FEAT_EXT_ARG).
    timeout_entries: bool,
    /// What the timeout entry points at: boxed (its address never changes), freed with the arena.
    timeout_ts: ManuallyDrop<Box<types::Timespec>>,
    /// A timeout entry pointing at `timeout_ts` was queued and may not be consumed yet: the
    /// timespec must not be rewritten until the submission queue is empty.
    timeout_in_sq: bool,
    /// Ask the kernel to cancel in-flight reads in `cancel_all`: off where the kernel lacks
    /// `ASYNC_CANCEL` (reads are then waited for), and in tests that play a device whose reads
    /// cannot be cancelled.
    send_cancels: bool,
    /// A `cancel_all` ran out of time with reads still in the kernel: `Drop` no longer waits.
    cancel_gave_up: bool,
    slots: Vec<InFlightRead>,
    free: Vec<u32>,
    /// Pushed, not yet in the submission queue.
    queued: Vec<u32>,
    /// Completions found while submitting, handed out by the next `reap`.
    ready: Vec<Completion>,
    /// CQEs copied out of the completion queue before processing: (user_data, result).
    cqe_scratch: Vec<(u64, i32)>,
    /// Submit every read in its own enter (O_DIRECT, depth <= the factory's
    /// `submit_each_max_depth`).
    submit_each: bool,
    /// `io_uring_enter` calls made (`submit.rs`): what the rhythm's tests count.
    enters: u64,
}

impl UringBackend {
    fn new(factory: &UringFactory, depth: usize) -> Result<UringBackend, IoError> {
        if depth >= MAX_RING_ENTRIES {
            return Err(IoError::Config(format!(
                "depth {depth} is too deep for one io_uring ring (at most {})",
                MAX_RING_ENTRIES - 1
            )));
        }
        let entries = (depth + 1).next_power_of_two() as u32;
        let ring = build_ring(entries, factory.method)?;
        let direct = factory.method == Method::UringDirect;
        let files = factory
            .paths
            .iter()
            .map(|p| {
                if direct {
                    open_direct(p, factory.method.name())
                } else {
                    open_read_only(p, false)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        let force_async = files.iter().map(blocks_inside_enter).collect();
        // Registered files spare the kernel a descriptor lookup per read; a kernel that refuses
        // them (an old one, a descriptor limit) still reads through the plain descriptors.
        let fixed_files = ring.submitter().register_files(&fds).is_ok();
        let slot_bytes = factory.unit.map_or(SAMPLE_LEN, align::max_span);
        let arena_bytes = slot_bytes.checked_mul(depth).ok_or_else(|| {
            IoError::Config(format!(
                "{depth} read buffers of {slot_bytes} bytes do not fit in memory"
            ))
        })?;
        let arena = AlignedBuf::new(arena_bytes, factory.buf_align)?;
        let fixed_buffers = register_arena(&ring, &arena);
        let timeout_entries = !ring.params().is_feature_ext_arg();
        let cq_entries = ring.params().cq_entries() as usize;
        Ok(UringBackend {
            method: factory.method,
            ring: ManuallyDrop::new(ring),
            files,
            force_async,
            unit: factory.unit,
            resume_align: factory.resume_align,
            arena: ManuallyDrop::new(arena),
            slot_bytes,
            fixed_buffers,
            fixed_files,
            timeout_entries,
            timeout_ts: ManuallyDrop::new(Box::new(types::Timespec::new())),
            timeout_in_sq: false,
            send_cancels: factory.cancels_reads,
            cancel_gave_up: false,
            slots: vec![InFlightRead::EMPTY; depth],
            free: (0..depth as u32).rev().collect(),
            queued: Vec::with_capacity(depth),
            ready: Vec::with_capacity(depth),
            cqe_scratch: Vec::with_capacity(cq_entries),
            submit_each: depth <= factory.submit_each_max_depth,
            enters: 0,
        })
    }

    /// The byte range one read of the sample at `offset` moves.
    fn range_for(&self, offset: u64) -> Option<BlockRange> {
        match self.unit {
            None => {
                offset.checked_add(SAMPLE_LEN as u64)?;
                Some(BlockRange {
                    start: offset,
                    len: SAMPLE_LEN as u32,
                    sample_pos: 0,
                })
            }
            Some(unit) => align::block_range(offset, unit),
        }
    }
}

impl Drop for UringBackend {
    /// The kernel may still be writing into the arena for reads in flight: cancel them and wait
    /// at most [`TEARDOWN_WAIT`] (not at all if a `cancel_all` already gave up); if some are
    /// still in the kernel, leak the ring, the arena and the timespec instead of freeing them.
    fn drop(&mut self) {
        let within = if self.cancel_gave_up {
            Duration::ZERO
        } else {
            TEARDOWN_WAIT
        };
        if !self.cancel_all(within).is_idle() {
            note_leaked_backend();
            return;
        }
        // SAFETY: no read is in flight any more (every CQE was consumed), so the kernel no longer
        // writes the arena; the ring goes first, after which nothing can read the timespec or the
        // registered arena; none of the three is used after this.
        unsafe {
            ManuallyDrop::drop(&mut self.ring);
            ManuallyDrop::drop(&mut self.arena);
            ManuallyDrop::drop(&mut self.timeout_ts);
        }
    }
}

/// Whether reads of `file` would block inside `io_uring_enter` (see the module documentation):
/// FUSE (also virtiofs) and network file systems.
fn blocks_inside_enter(file: &File) -> bool {
    let fs = crate::host::file_system::fs_type_of_file(file);
    matches!(
        fs.as_str(),
        "fuse" | "virtiofs" | "nfs" | "cifs" | "smb2" | "9p"
    )
}

/// A ring with `entries` submission entries; cooperative task running where supported (fewer
/// interrupts: completions are run when this thread next enters the kernel).
fn build_ring(entries: u32, method: Method) -> Result<IoUring, IoError> {
    IoUring::builder()
        .setup_coop_taskrun()
        .setup_taskrun_flag()
        .build(entries)
        .or_else(|_| IoUring::new(entries))
        .map_err(|e| IoError::Unavailable {
            method: method.name(),
            reason: setup_failure_reason(&e, 0),
        })
}

/// Registers the whole arena as fixed buffer 0; `false` if the kernel refuses (RLIMIT_MEMLOCK).
fn register_arena(ring: &IoUring, arena: &AlignedBuf) -> bool {
    if arena.len() > MAX_FIXED_BUFFER_BYTES {
        return false;
    }
    let iov = libc::iovec {
        iov_base: arena.as_ptr() as *mut libc::c_void,
        iov_len: arena.len(),
    };
    // SAFETY: the kernel copies the iovec during the call (so the stack is fine) and pins the
    // arena's pages; the arena lives in the same backend as the ring and is freed only after the
    // ring, by the backend's Drop once no read is in flight (both are leaked otherwise).
    unsafe { ring.submitter().register_buffers(&[iov]) }.is_ok()
}

impl Backend for UringBackend {
    fn method(&self) -> Method {
        self.method
    }

    fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len() + self.ready.len()
    }

    fn push(&mut self, read: SampleRead) -> Result<(), QueueFull> {
        if self.in_flight() >= self.capacity() {
            return Err(QueueFull);
        }
        let Some(range) = self
            .range_for(read.offset)
            .filter(|_| (read.file as usize) < self.files.len())
        else {
            // Unreadable requests complete at once with their error, still through `reap`.
            let error = if (read.file as usize) < self.files.len() {
                ReadError {
                    file: read.file,
                    offset: read.offset,
                    kind: ReadErrorKind::Os(libc::EINVAL),
                }
            } else {
                no_such_file(&read)
            };
            self.ready.push(Completion {
                tag: read.tag,
                result: Err(error),
            });
            return Ok(());
        };
        let id = self
            .free
            .pop()
            .expect("a free slot when in_flight < capacity");
        self.slots[id as usize] = InFlightRead {
            tag: read.tag,
            file: read.file,
            offset: read.offset,
            range,
            got: 0,
        };
        self.queued.push(id);
        Ok(())
    }

    fn submit(&mut self) -> Result<(), IoError> {
        for i in 0..self.queued.len() {
            let id = self.queued[i];
            // On a failure, `queued` keeps only the reads that never became SQEs, so a later
            // `drop_queued` frees no slot the kernel may still be handed.
            if let Err(e) = self.push_entry(id) {
                self.queued.drain(..i);
                return Err(e);
            }
            if self.submit_each {
                if let Err(e) = self.enter(0, None) {
                    self.queued.drain(..=i);
                    return Err(e);
                }
            }
        }
        self.queued.clear();
        // Resubmit until the kernel has taken every entry (EAGAIN/EBUSY leave some behind).
        while !self.ring.submission().is_empty() {
            self.enter(0, None)?;
            if !self.ring.submission().is_empty() {
                let mut ready = std::mem::take(&mut self.ready);
                let drained = self.drain(&mut ready);
                self.ready = ready;
                drained?;
            }
        }
        Ok(())
    }

    fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        min_complete: usize,
        deadline: Option<Instant>,
    ) -> Result<usize, IoError> {
        // Reads pushed but not submitted cannot complete: never wait for them.
        let min = min_complete.min(self.in_flight() - self.queued.len());
        let mut reaped = self.ready.len();
        out.append(&mut self.ready);
        reaped += self.drain(out)?;
        if reaped == 0 && min == 0 {
            // A poll: completions waiting as task work are posted only when we enter the kernel.
            self.enter(0, None)?;
            reaped += self.drain(out)?;
        }
        while reaped < min {
            let timeout = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => break,
                },
            };
            self.enter(min - reaped, timeout)?;
            reaped += self.drain(out)?;
        }
        self.flush()?;
        Ok(reaped)
    }

    /// Frees the slots of reads pushed since the last `submit`: they never became SQEs, so the
    /// kernel has never seen them.
    fn drop_queued(&mut self) -> usize {
        let dropped = self.queued.len();
        self.free.extend_from_slice(&self.queued);
        self.queued.clear();
        dropped
    }

    /// Drops queued reads and ready completions, cancels what the kernel holds and waits at most
    /// `within` for it (see [`Backend::cancel_all`]).
    fn cancel_all(&mut self, within: Duration) -> CancelOutcome {
        let give_up = Instant::now() + within;
        let before = self.in_flight();
        self.drop_queued();
        self.ready.clear();
        // A failing ring leaves its reads counted as outstanding: the caller replaces it.
        let _ = self.cancel_in_kernel(give_up);
        let still = self.outstanding();
        self.cancel_gave_up |= still > 0;
        CancelOutcome {
            discarded: before - still,
            still_in_flight: still,
        }
    }
}
