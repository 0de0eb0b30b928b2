//! pora-io: every random-read access method behind one small completion-based contract, and the
//! only crate in pora with OS-specific code.
//!
//! The contract follows fio's queue / commit / reap and TigerBeetle's I/O layer:
//! - the caller [`Backend::push`]es [`SampleRead`]s tagged with its own id, [`Backend::submit`]s
//!   them, and [`Backend::reap`]s completions, passing the deadline to the wait;
//! - buffers are owned by the backend, allocated once when the worker is created and aligned as
//!   the method needs; nothing is allocated per read;
//! - synchronous methods (pread, mmap) complete inline inside `submit`, through the same
//!   interface, so the mining scheduler has exactly one code path;
//! - every read error comes back in its own [`Completion`] with the file and offset; EINTR and
//!   EAGAIN are retried inside the layer and never reach the caller.
//!
//! A [`BackendFactory`] is opened once over all files of a mining run (read-only, always) and
//! hands each worker thread its own [`Backend`]: per-worker handles, rings or ports.
//!
//! What a method can do (complete reads inline, bypass the page cache, need aligned blocks,
//! cancel reads the OS holds) is one [`Capabilities`] value, from [`Method::capabilities`] before
//! opening and from [`BackendFactory::capabilities`] after, so callers never list methods.
//!
//! Every wait is bounded. [`Backend::drop_queued`] forgets reads not yet submitted without
//! handing them to the OS; [`Backend::cancel_all`] does that and waits at most a given time for
//! in-flight ones; dropping a backend does the same within [`TEARDOWN_WAIT`], and a
//! backend whose reads the OS still holds after that (a dead or hung device) is leaked, ring or
//! port and buffers together, instead of freed under the kernel's feet: [`leaked_backends`]
//! counts them.
//!
//! The facts about the machine that the methods and the measurements need (block device, file
//! system, sector size, page cache, device counters, memory, CPU time) each have one home in
//! [`host`]; [`probe`] assembles doctor's report from them.

#[macro_use]
mod forward;

pub mod align;
mod cache_reads;
mod error;
mod inline;
mod leak;
mod method;
mod open;
mod overlapped_engine;
mod positional;
pub use positional::read_exact_at;
pub mod sim;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(unix)]
pub mod unix;
#[cfg(target_os = "linux")]
pub mod uring;
#[cfg(windows)]
pub mod windows;

pub mod host;
pub mod probe;

/// Process and thread CPU time, at the path callers have always used.
pub use host::cpu_time;

pub use cache_reads::{CacheReads, HIT_LATENCY};
pub use error::{IoError, ReadError, ReadErrorKind};
pub use leak::{leaked_backends, note_leaked_backend, TEARDOWN_WAIT};
pub use method::{Capabilities, Method, ReadPath, Unavailable};
pub use sim::{SimConfig, SimFault};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes of one sample: what every read returns to the caller.
pub const SAMPLE_LEN: usize = 32;
/// The bytes of one sample.
pub type Sample = [u8; SAMPLE_LEN];

/// One read request: the 32 bytes at `offset` of file number `file` (an index into the paths the
/// factory was opened with). The backend may move a larger aligned block to get them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleRead {
    /// The caller's id for this read (the miner's chain index); returned unchanged in the
    /// completion.
    pub tag: u32,
    pub file: u32,
    pub offset: u64,
}

/// The outcome of one [`SampleRead`]: plain data, so batches of them move with one copy.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub tag: u32,
    pub result: Result<Sample, ReadError>,
}

/// Returned by [`Backend::push`] when `capacity()` reads are already queued or in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("backend queue is full")]
pub struct QueueFull;

/// What [`Backend::cancel_all`] achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CancelOutcome {
    /// Reads that were queued or in flight and are now gone: dropped before reaching the OS,
    /// cancelled, or completed and discarded.
    pub discarded: usize,
    /// Reads the OS still held when the time ran out (equal to `in_flight()` afterwards). Their
    /// buffers stay owned by the backend; the caller should drop it (which leaks what the OS may
    /// still write into, see [`leaked_backends`]) and create a new one.
    pub still_in_flight: usize,
}

impl CancelOutcome {
    /// Whether the backend is idle and can be reused.
    pub fn is_idle(&self) -> bool {
        self.still_in_flight == 0
    }
}

/// One worker's access to the files. Not shared between threads.
pub trait Backend: Send {
    /// The method this backend implements.
    fn method(&self) -> Method;

    /// Most reads that may be queued or in flight at once (the worker's depth).
    fn capacity(&self) -> usize;

    /// Reads pushed and not yet reaped.
    fn in_flight(&self) -> usize;

    /// Queues one read. Nothing reaches the OS until [`Backend::submit`].
    fn push(&mut self, read: SampleRead) -> Result<(), QueueFull>;

    /// Queues `reads` in order, as [`Backend::push`] would one by one: one call per batch of
    /// the miner instead of one per read. On `QueueFull` a prefix of `reads` may be queued.
    fn push_all(&mut self, reads: &[SampleRead]) -> Result<(), QueueFull> {
        reads.iter().try_for_each(|read| self.push(*read))
    }

    /// Hands every queued read to the OS; synchronous methods perform them here.
    fn submit(&mut self) -> Result<(), IoError>;

    /// Waits until at least `min_complete` completions are ready (clamped to `in_flight()`) or
    /// `deadline` passes, then appends every ready completion to `out`. Returns how many were
    /// appended. `out` should have capacity for `capacity()` entries so no allocation happens.
    fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        min_complete: usize,
        deadline: Option<Instant>,
    ) -> Result<usize, IoError>;

    /// Forgets the reads pushed and not yet handed to the OS by [`Backend::submit`], without
    /// handing them over: they are never read and no completion comes back for them. Reads
    /// already submitted, and completions not yet reaped, are untouched. Never waits and never
    /// enters the OS. Returns how many reads were dropped.
    fn drop_queued(&mut self) -> usize;

    /// Forgets every read pushed and not yet reaped, waiting at most `within` for the OS to give
    /// back the ones it holds: queued reads are dropped ([`Backend::drop_queued`]), in-flight
    /// ones are cancelled where the OS can (io_uring `ASYNC_CANCEL`, IOCP `CancelIoEx`: see
    /// [`Capabilities::cancels_in_flight`]) and otherwise waited for; their completions are
    /// discarded, never returned by a later `reap`. Synchronous methods hold nothing in the OS
    /// between calls and return at once. A failure of the ring or port itself counts the reads
    /// as still in flight. The default drops the queued reads and reaps the submitted ones
    /// until `within` has passed.
    fn cancel_all(&mut self, within: Duration) -> CancelOutcome {
        let give_up = Instant::now() + within;
        let before = self.in_flight();
        self.drop_queued();
        let mut discard = Vec::with_capacity(self.capacity());
        let mut failed = false;
        while !failed && self.in_flight() > 0 && Instant::now() < give_up {
            failed = self
                .reap(&mut discard, self.in_flight(), Some(give_up))
                .is_err();
            discard.clear();
        }
        CancelOutcome {
            discarded: before - self.in_flight(),
            still_in_flight: self.in_flight(),
        }
    }
}

/// How a backend moves data: the unit of one read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BlockSize {
    /// The method's natural unit: exactly 32 bytes for buffered and mapped methods, one logical
    /// block (aligned around the sample) for direct methods.
    #[default]
    Natural,
    /// Read this many bytes at the `bytes`-aligned offset containing the sample (fio's `bs`).
    Bytes(u32),
}

/// What to open.
#[derive(Clone, Debug, Default)]
pub struct IoConfig {
    pub method: Method,
    pub block_size: BlockSize,
    /// Only for [`Method::Sim`] (whose device needs the `sim` cargo feature, see [`sim`]).
    pub sim: SimConfig,
    /// The devices under the files, read once by the caller (a session reads them when it
    /// opens): the submission rhythm of O_DIRECT rings follows them. A method that needs the
    /// device of a file this does not cover reads it when it opens.
    pub devices: host::file_devices::FileDevices,
}

/// Opened once per run over all files; creates one [`Backend`] per worker thread.
pub trait BackendFactory: Send + Sync {
    /// The concrete method (never `Auto`).
    fn method(&self) -> Method;
    /// One line for reports: method, alignment, ring features.
    fn describe(&self) -> String;
    /// A backend for one worker with room for `depth` reads in flight.
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError>;
    /// What this factory's backends really do; by default what its method does
    /// ([`Method::capabilities`]). A factory overrides it where it differs: a ring on a kernel
    /// without `ASYNC_CANCEL`, the simulated disk in its synchronous mode.
    fn capabilities(&self) -> Capabilities {
        self.method().capabilities()
    }
    /// Reads this factory's backends have classified as served from the page cache or not,
    /// cumulative since it opened (see `cache_reads.rs`), where the backend can tell from the
    /// reads themselves: the Windows buffered methods and `mmap`. `None` elsewhere: Linux
    /// measures hits from the device's read counter instead.
    fn cache_reads(&self) -> Option<CacheReads> {
        None
    }
}

/// What opening a method over a shard's files gives: the factory every worker's backend comes
/// from, or why it could not open.
pub type FactoryResult = Result<Arc<dyn BackendFactory>, IoError>;

/// Opens `paths` read-only for `config.method` (resolving `Auto`) and returns the factory.
pub fn open(paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
    open::open(paths, config)
}

/// Reads one sample synchronously through `backend`: push, submit, reap until it completes.
/// The plain path for single-nonce work (`pora hash`, re-verifying results); not for mining.
pub fn read_one(backend: &mut dyn Backend, file: u32, offset: u64) -> Result<Sample, IoError> {
    debug_assert_eq!(backend.in_flight(), 0, "read_one needs an idle backend");
    backend
        .push(SampleRead {
            tag: 0,
            file,
            offset,
        })
        .map_err(|_| IoError::Config("backend has no room for one read".into()))?;
    backend.submit()?;
    let mut out = Vec::with_capacity(1);
    while out.is_empty() {
        backend.reap(&mut out, 1, None)?;
    }
    Ok(out.pop().expect("one completion").result?)
}

/// Ends the process now with `code`, without the runtime's cleanup: what a program calls once its
/// output is flushed. On Unix the cleanup can wait for a stalled disk (Rust's unmaps the main
/// thread's signal stack, which waits while any fault on a mapped file waits): `_exit` instead.
/// Elsewhere `std::process::exit` (under Wine, `TerminateProcess` of this process ended it no
/// sooner with a thread held in a FUSE read: docs/RELIABILITY.md).
pub fn exit_at_once(code: i32) -> ! {
    #[cfg(unix)]
    // SAFETY: _exit has no preconditions; nothing after it runs.
    unsafe {
        libc::_exit(code)
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}

/// Makes this process's C allocator (glibc's) take memory from the kernel ahead and never hand
/// it back: the heap grows by 64 MiB more than it needs at a time, blocks below 32 MiB come
/// from it rather than from a mapping of their own, and freed memory stays. Why: while a read
/// through a mapped file (`mmap`) waits for a stalled device, Linux can hold the process's
/// address-space lock (a fault's retried read runs under it), and a thread that then grows or
/// shrinks its heap (`brk`) or maps memory waits as long as the device: a slot's own thread
/// did, in `brk`, 3-5 s past its deadline (docs/RELIABILITY.md). With the heap taken
/// ahead, a slot's allocations do not go to the kernel. For a program at its start (the `pora`
/// binary); a library leaves its host's allocator alone. Returns whether the allocator took the
/// settings; `false` (nothing done) elsewhere than glibc.
pub fn reserve_heap_ahead() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes the allocator's tunables; it is called at program start,
        // and a value it refuses leaves the default (it returns 0).
        let set = unsafe {
            libc::mallopt(libc::M_TOP_PAD, 64 << 20) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX) == 1
                && libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20) == 1
        };
        // One block from the heap grows it now, by the pad, while no device can be stalled.
        drop(std::hint::black_box(vec![0u8; 1 << 20]));
        set
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// Lets a command-line program die quietly of SIGPIPE when its reader goes away (`pora info |
/// head`), as Unix tools do; Rust ignores SIGPIPE by default, which turns every later `println!`
/// into a panic. No-op elsewhere.
pub fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default has no preconditions; it runs at
    // program start, before any thread is spawned.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
