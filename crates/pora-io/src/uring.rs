//! io_uring methods (`uring`, `uring-direct`), Linux only: one ring per worker sized to its
//! depth, registered files, reads into one buffer arena allocated once per worker and registered
//! with the ring (READ_FIXED) when the locked-memory limit allows, batched submission (every
//! queued SQE, then one `io_uring_enter`) and batched reaping with a deadline (`EXT_ARG` timeout,
//! or an `IORING_OP_TIMEOUT` entry on kernels without it).
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
use crate::host::block_device::{device_facts_of, DeviceFacts};
use crate::host::sector_size::logical_block_size;
use crate::host::Roots;
use crate::leak::note_leaked_backend;
use crate::unix::{no_such_file, open_direct, open_read_only};
use crate::{
    Backend, BackendFactory, BlockSize, CancelOutcome, Capabilities, Completion, FactoryResult,
    IoConfig, IoError, Method, QueueFull, ReadError, ReadErrorKind, SampleRead, SAMPLE_LEN,
    TEARDOWN_WAIT,
};
use io_uring::{opcode, squeue, types, IoUring};
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// `user_data` of timeout entries (slot ids are below 2^32).
const TIMEOUT_USER_DATA: u64 = u64::MAX;
/// `user_data` of cancel entries.
const CANCEL_USER_DATA: u64 = u64::MAX - 1;
/// io_uring's limit on submission queue entries (IORING_MAX_ENTRIES).
const MAX_RING_ENTRIES: usize = 32768;
/// A single registered buffer may not exceed 1 GiB.
const MAX_FIXED_BUFFER_BYTES: usize = 1 << 30;
/// Deepest O_DIRECT ring that hands each read to the kernel in its own `io_uring_enter`, on a
/// device with its own hardware (virtio, NVMe, SCSI). A batch of SQEs in one enter is plugged and
/// reaches the device as one notification; at moderate depth that makes reads queue behind each
/// other, and per-read submission (fio's rhythm) measured up to 20% faster at depth 8, 3–5% at 32
/// and 7–10% at 64 on the virtio disk (docs/BENCHMARKS.md §16, §17, §32). At 128 the batch held
/// its own, and buffered rings lost badly per read (a cache miss is punted per enter).
const SUBMIT_EACH_MAX_DEPTH: usize = 64;
/// The same on a device the host's own CPUs serve (a loop device over RAM, a RAM disk, zram:
/// [`DeviceFacts::served_by_host`]): there the kernel's work per read is the limit, not the
/// device's latency, and at depth 64 one enter per batch read 20% more at 0.6x the CPU per read
/// (§30), so rings deeper than 32 batch.
const HOST_SERVED_SUBMIT_EACH_MAX_DEPTH: usize = 32;

/// The deepest ring that enters per read, for O_DIRECT reads of files on these devices
/// (`None`: unknown, as on tmpfs or outside Linux): the host-served limit only when every device
/// is known to be served by the host, since a slower device among them sets the pace.
fn submit_each_max_depth(devices: &[Option<DeviceFacts>]) -> usize {
    let all_host_served = !devices.is_empty()
        && devices
            .iter()
            .all(|d| d.as_ref().is_some_and(DeviceFacts::served_by_host));
    if all_host_served {
        HOST_SERVED_SUBMIT_EACH_MAX_DEPTH
    } else {
        SUBMIT_EACH_MAX_DEPTH
    }
}

/// What the kernel's io_uring offers beyond what pora needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RingFeatures {
    /// `IORING_OP_ASYNC_CANCEL` (5.5+): in-flight reads can be withdrawn by `cancel_all`.
    async_cancel: bool,
}

/// The probe's answer, computed once per process.
fn probed() -> &'static Result<RingFeatures, String> {
    static PROBE: OnceLock<Result<RingFeatures, String>> = OnceLock::new();
    PROBE.get_or_init(probe_uncached)
}

/// Whether io_uring can be used here; the reason when not. Probed once per process.
pub fn probe() -> Result<(), String> {
    probed().as_ref().map(|_| ()).map_err(Clone::clone)
}

/// Whether the kernel can cancel a read it holds (`IORING_OP_ASYNC_CANCEL`).
fn kernel_cancels_reads() -> bool {
    probed().as_ref().is_ok_and(|f| f.async_cancel)
}

fn probe_uncached() -> Result<RingFeatures, String> {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .and_then(|s| s.trim().parse::<u8>().ok())
        .unwrap_or(0);
    if disabled == 2 {
        return Err(
            "io_uring is disabled system-wide (sysctl kernel.io_uring_disabled = 2)".into(),
        );
    }
    let ring = IoUring::new(8).map_err(|e| setup_failure_reason(&e, disabled))?;
    let mut probe = io_uring::Probe::new();
    ring.submitter().register_probe(&mut probe).map_err(|e| {
        format!(
            "the kernel cannot list its io_uring opcodes ({e}): older than 5.6, which pora needs"
        )
    })?;
    let needed = [
        (opcode::Read::CODE, "READ"),
        (opcode::ReadFixed::CODE, "READ_FIXED"),
        (opcode::Timeout::CODE, "TIMEOUT"),
    ];
    let missing: Vec<&str> = needed
        .iter()
        .filter(|(code, _)| !probe.is_supported(*code))
        .map(|(_, name)| *name)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the kernel's io_uring lacks opcodes {}",
            missing.join(", ")
        ));
    }
    Ok(RingFeatures {
        async_cancel: probe.is_supported(opcode::AsyncCancel::CODE),
    })
}

/// A human reason for a failed `io_uring_setup`.
fn setup_failure_reason(e: &std::io::Error, disabled: u8) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => "io_uring_setup is not implemented (ENOSYS): kernel older than 5.1 \
                              or built without CONFIG_IO_URING"
            .into(),
        Some(libc::EPERM) if disabled == 1 => {
            let group = std::fs::read_to_string("/proc/sys/kernel/io_uring_group")
                .map(|g| g.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            format!(
                "io_uring is restricted (sysctl kernel.io_uring_disabled = 1) and this process is \
                 neither privileged nor in group kernel.io_uring_group (gid {group})"
            )
        }
        Some(libc::EPERM) => "io_uring_setup was refused (EPERM): blocked by a seccomp filter (a \
                             container's default profile?) or a security module"
            .into(),
        Some(libc::ENOMEM) => "io_uring_setup failed (ENOMEM): locked-memory limit too low \
                              (ulimit -l; kernels before 5.12 charge rings to it)"
            .into(),
        _ => format!("io_uring_setup failed: {e}"),
    }
}

pub(crate) fn open(method: Method, paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
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
        let roots = Roots::default();
        let devices: Vec<_> = paths.iter().map(|p| device_facts_of(p, &roots)).collect();
        submit_each_max_depth(&devices)
    } else {
        0
    };
    Ok(Arc::new(UringFactory {
        method,
        submit_each_max_depth,
        paths: paths.to_vec(),
        unit,
        resume_align,
        buf_align,
        fixed_buffers: AtomicU8::new(FIXED_UNKNOWN),
        fixed_files: AtomicU8::new(FIXED_UNKNOWN),
        cancels_reads: kernel_cancels_reads(),
    }))
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

    /// Puts slot `id`'s (remaining) read into the submission queue, entering the kernel first if
    /// the queue is full (it cannot be while the ring has room for depth + 1 entries).
    fn push_entry(&mut self, id: u32) -> Result<(), IoError> {
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
    fn enter(&mut self, want: usize, timeout: Option<Duration>) -> Result<(), IoError> {
        loop {
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
    fn arm_timeout(&mut self, t: Duration, want: usize) -> Result<bool, IoError> {
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
    fn submit_ignoring_busy(&mut self) -> Result<(), IoError> {
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

    /// Reads handed to the kernel (in the submission queue or in flight) whose CQE has not been
    /// processed.
    fn outstanding(&self) -> usize {
        self.slots.len() - self.free.len() - self.queued.len()
    }

    /// Asks the kernel to cancel every outstanding read and waits until `give_up` for their
    /// CQEs, discarding them (a read that already reached the device cannot be cancelled and
    /// finishes normally).
    fn cancel_in_kernel(&mut self, give_up: Instant) -> Result<(), IoError> {
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
    fn discard_completions(&mut self) {
        for (user_data, _) in self.ring.completion().map(|c| (c.user_data(), c.result())) {
            if user_data != TIMEOUT_USER_DATA && user_data != CANCEL_USER_DATA {
                self.free.push(user_data as u32);
            }
        }
    }

    /// Processes every CQE in the completion queue: finished reads are appended to `out`,
    /// retryable errors and resumable short reads are queued again. Returns how many finished.
    fn drain(&mut self, out: &mut Vec<Completion>) -> Result<usize, IoError> {
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
    fn on_result(&mut self, id: u32, res: i32) -> Option<Result<crate::Sample, ReadError>> {
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

    /// Hands queued reads and re-issued ones to the kernel without waiting.
    fn flush(&mut self) -> Result<(), IoError> {
        if !self.ring.submission().is_empty() {
            self.enter(0, None)?;
        }
        Ok(())
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

fn enter_error(source: std::io::Error) -> IoError {
    IoError::Os {
        what: "io_uring_enter",
        source,
    }
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

#[cfg(test)]
mod tests {
    /// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
    #[allow(unused_macros)] // some platforms skip nothing
    macro_rules! skip_note {
        ($($arg:tt)*) => {{
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), $($arg)*);
        }};
    }

    use super::*;
    use std::io::Write;

    fn backend_over(bytes: &[u8], depth: usize) -> Option<(tempfile::NamedTempFile, UringBackend)> {
        if let Err(reason) = probe() {
            skip_note!("SKIP uring: {reason}");
            return None;
        }
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        let factory = buffered_factory(file.path().to_path_buf());
        let backend = UringBackend::new(&factory, depth).unwrap();
        Some((file, backend))
    }

    /// A buffered `uring` factory over one file, reading exactly the sample's 32 bytes.
    fn buffered_factory(path: std::path::PathBuf) -> UringFactory {
        UringFactory {
            method: Method::Uring,
            paths: vec![path],
            unit: None,
            resume_align: 1,
            buf_align: 64,
            fixed_buffers: AtomicU8::new(FIXED_UNKNOWN),
            fixed_files: AtomicU8::new(FIXED_UNKNOWN),
            cancels_reads: kernel_cancels_reads(),
            submit_each_max_depth: 0,
        }
    }

    /// Device facts with one leaf disk, served by the host or with hardware behind it.
    fn one_disk(name: &str, host_served: bool) -> DeviceFacts {
        DeviceFacts {
            major: 7,
            minor: 0,
            name: name.into(),
            disk: name.into(),
            model: None,
            queue: Default::default(),
            layers: Vec::new(),
            leaves: vec![crate::host::block_device::LeafDisk {
                name: name.into(),
                model: None,
                queue: Default::default(),
                host_served,
            }],
            reads: Default::default(),
        }
    }

    /// Depth 64 enters per read on a disk with hardware (the virtio disk measured 7–10% faster
    /// that way, §32) and batches on a RAM-backed loop device (20% faster batched, §30); 32 and
    /// below enter per read everywhere. A shard spread over both kinds, or on an unknown device,
    /// takes the hardware's rhythm.
    #[test]
    fn per_read_enters_reach_depth_64_only_where_a_device_has_hardware() {
        let loop0 = Some(one_disk("loop0", true));
        let vda = Some(one_disk("vda", false));
        assert_eq!(submit_each_max_depth(std::slice::from_ref(&vda)), 64);
        assert_eq!(submit_each_max_depth(std::slice::from_ref(&loop0)), 32);
        assert_eq!(submit_each_max_depth(&[loop0.clone(), loop0.clone()]), 32);
        assert_eq!(submit_each_max_depth(&[loop0.clone(), vda]), 64);
        assert_eq!(submit_each_max_depth(&[loop0, None]), 64);
        assert_eq!(submit_each_max_depth(&[None]), 64);
        assert_eq!(submit_each_max_depth(&[]), 64);
    }

    /// The IORING_OP_TIMEOUT path (kernels before 5.11) reads correctly and honours deadlines.
    #[test]
    fn timeout_entries_path_works() {
        let bytes: Vec<u8> = (0..65536u32).map(|i| (i * 7 % 251) as u8).collect();
        let Some((_file, mut backend)) = backend_over(&bytes, 8) else {
            return;
        };
        backend.timeout_entries = true;
        let mut out = Vec::with_capacity(8);
        for tag in 0..8u32 {
            backend
                .push(SampleRead {
                    tag,
                    file: 0,
                    offset: u64::from(tag) * 4000,
                })
                .unwrap();
        }
        backend.submit().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while out.len() < 8 && Instant::now() < deadline {
            backend.reap(&mut out, 8, Some(deadline)).unwrap();
        }
        assert_eq!(out.len(), 8);
        for c in out {
            let at = c.tag as usize * 4000;
            assert_eq!(c.result.unwrap(), bytes[at..at + 32]);
        }
        // Nothing in flight: a deadline wait returns at once with nothing.
        let mut none = Vec::new();
        assert_eq!(
            backend
                .reap(
                    &mut none,
                    1,
                    Some(Instant::now() + Duration::from_millis(50))
                )
                .unwrap(),
            0
        );
    }

    /// Pushes one read per tag of `tags`, of the sample at `tag * stride` of file 0.
    fn push_reads(backend: &mut UringBackend, tags: std::ops::Range<u32>, stride: u64) {
        for tag in tags {
            let offset = u64::from(tag) * stride;
            backend
                .push(SampleRead {
                    tag,
                    file: 0,
                    offset,
                })
                .unwrap();
        }
    }

    /// Every combination of registered and plain buffers and files reads the right bytes: a
    /// kernel that refuses either registration (RLIMIT_MEMLOCK for the buffers) still reads.
    #[test]
    fn reads_with_and_without_registration() {
        let bytes: Vec<u8> = (0..65536u32).map(|i| (i * 13 % 251) as u8).collect();
        for (fixed_files, fixed_buffers) in
            [(true, true), (true, false), (false, true), (false, false)]
        {
            let Some((_file, mut backend)) = backend_over(&bytes, 8) else {
                return;
            };
            // As root (CI) nothing is refused: both registrations hold unless turned off here.
            assert!(backend.fixed_files, "registering one file was refused");
            backend.fixed_files &= fixed_files;
            backend.fixed_buffers &= fixed_buffers;
            let mut out = Vec::with_capacity(8);
            push_reads(&mut backend, 0..8, 7001);
            backend.submit().unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while out.len() < 8 && Instant::now() < deadline {
                backend.reap(&mut out, 8, Some(deadline)).unwrap();
            }
            assert_eq!(out.len(), 8, "files {fixed_files} buffers {fixed_buffers}");
            for c in out {
                let at = c.tag as usize * 7001;
                assert_eq!(c.result.unwrap(), bytes[at..at + 32]);
            }
        }
    }

    /// Reads pushed and not submitted are dropped without becoming SQEs: they never complete,
    /// the submitted ones do, and afterwards the backend is idle with every slot reusable.
    #[test]
    fn drop_queued_reads_never_reach_the_kernel() {
        let bytes: Vec<u8> = (0..65536u32).map(|i| (i * 7 % 251) as u8).collect();
        let Some((_file, mut backend)) = backend_over(&bytes, 8) else {
            return;
        };
        let push = |backend: &mut UringBackend, tags| push_reads(backend, tags, 1000);
        push(&mut backend, 0..4);
        backend.submit().unwrap();
        push(&mut backend, 4..8);
        assert_eq!(backend.drop_queued(), 4);
        assert_eq!(backend.in_flight(), 4);
        backend.submit().unwrap();
        let mut out = Vec::with_capacity(8);
        let deadline = Instant::now() + Duration::from_secs(10);
        while backend.in_flight() > 0 && Instant::now() < deadline {
            backend.reap(&mut out, 1, Some(deadline)).unwrap();
        }
        let mut tags: Vec<u32> = out.iter().map(|c| c.tag).collect();
        tags.sort_unstable();
        assert_eq!(tags, [0, 1, 2, 3], "a dropped read completed");
        assert_eq!(backend.in_flight(), 0);
        assert_eq!(backend.outstanding(), 0);
        // Every slot is free again: a full batch fits and reads the right bytes.
        out.clear();
        push(&mut backend, 0..8);
        backend.submit().unwrap();
        while out.len() < 8 && Instant::now() < deadline {
            backend.reap(&mut out, 8, Some(deadline)).unwrap();
        }
        assert_eq!(out.len(), 8);
        for c in out {
            let at = c.tag as usize * 1000;
            assert_eq!(c.result.unwrap(), bytes[at..at + 32]);
        }
    }

    /// Dropping a backend with reads in flight waits for them (the kernel writes into the arena).
    #[test]
    fn drop_with_reads_in_flight() {
        let bytes = vec![7u8; 1 << 20];
        let Some((_file, mut backend)) = backend_over(&bytes, 32) else {
            return;
        };
        for tag in 0..32u32 {
            backend
                .push(SampleRead {
                    tag,
                    file: 0,
                    offset: u64::from(tag) * 30_000,
                })
                .unwrap();
        }
        backend.submit().unwrap();
        drop(backend);
    }

    /// A backend over a FIFO that has a writer but no data: its reads never complete by
    /// themselves, like reads on a device that stopped answering (but the kernel can cancel
    /// them, as it can a read waiting for a pipe). The writer end is returned to keep it open.
    fn backend_over_silent_fifo() -> Option<(tempfile::TempDir, File, UringBackend)> {
        if let Err(reason) = probe() {
            skip_note!("SKIP uring: {reason}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("silent.fifo");
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        // Read-write on Linux never blocks and keeps a writer present, so readers block for data.
        let writer = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let factory = buffered_factory(path);
        let backend = UringBackend::new(&factory, 4).unwrap();
        Some((dir, writer, backend))
    }

    fn push_silent_reads(backend: &mut UringBackend, n: u32) {
        for tag in 0..n {
            backend
                .push(SampleRead {
                    tag,
                    file: 0,
                    offset: 0,
                })
                .unwrap();
        }
        backend.submit().unwrap();
    }

    /// Reads that never complete are cancelled by `cancel_all`, which leaves the backend idle
    /// and reusable; timeouts on both deadline paths expire without a completion.
    #[test]
    fn cancel_all_cancels_reads_that_never_complete() {
        for timeout_entries in [false, true] {
            let Some((_dir, mut writer, mut backend)) = backend_over_silent_fifo() else {
                return;
            };
            backend.timeout_entries |= timeout_entries;
            push_silent_reads(&mut backend, 3);
            let mut out = Vec::new();
            for _ in 0..3 {
                let deadline = Instant::now() + Duration::from_millis(20);
                assert_eq!(backend.reap(&mut out, 1, Some(deadline)).unwrap(), 0);
            }
            // One more read pushed but never submitted: dropped without reaching the kernel.
            backend
                .push(SampleRead {
                    tag: 9,
                    file: 0,
                    offset: 0,
                })
                .unwrap();
            let outcome = backend.cancel_all(TEARDOWN_WAIT);
            assert_eq!(
                outcome,
                CancelOutcome {
                    discarded: 4,
                    still_in_flight: 0
                }
            );
            assert_eq!(backend.in_flight(), 0);
            assert!(!backend.cancel_gave_up);
            // Reusable: a read now sees the bytes written into the FIFO.
            std::io::Write::write_all(&mut writer, &[5u8; 32]).unwrap();
            push_silent_reads(&mut backend, 1);
            let deadline = Instant::now() + Duration::from_secs(10);
            while out.is_empty() && Instant::now() < deadline {
                backend.reap(&mut out, 1, Some(deadline)).unwrap();
            }
            assert_eq!(out[0].result.as_ref().unwrap(), &[5u8; 32]);
        }
    }

    /// A backend whose reads the kernel does not give back (cancels withheld here, as a dead
    /// device would not honour them) gives up after the bound and is leaked, not freed: dropping
    /// it returns and counts it.
    #[test]
    fn drop_leaks_a_ring_whose_reads_are_never_given_back() {
        let Some((_dir, _writer, mut backend)) = backend_over_silent_fifo() else {
            return;
        };
        backend.send_cancels = false;
        push_silent_reads(&mut backend, 2);
        let outcome = backend.cancel_all(Duration::from_millis(50));
        assert_eq!(outcome.still_in_flight, 2);
        assert_eq!(backend.in_flight(), 2);
        assert!(backend.cancel_gave_up, "Drop must not wait again");
        let leaked_before = crate::leaked_backends();
        drop(backend);
        assert!(crate::leaked_backends() > leaked_before);
    }

    #[test]
    fn probe_is_cached_and_consistent() {
        assert_eq!(probe(), probe());
    }
}
