//! The table of access methods (`--method` values), what each can do and where `auto` ranks it:
//! the leaf every other file reads. A method's capabilities, read path and preference are
//! stated here, once; every list of methods (`auto`'s candidates, what `auto` opens with nothing
//! known, tune's ceiling pass) is derived from them. Whether a method is available here and how it opens are each platform's
//! (`unix.rs`, `windows.rs`), reached through `open.rs`.

use std::fmt;
use std::str::FromStr;

/// An access method. `Auto` resolves to a concrete one when opened.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// One buffered handle per worker, positional reads (`pread` / `seek_read`).
    Pread,
    /// One handle shared by every worker: es-node's way, kept as a baseline.
    PreadShared,
    /// Unbuffered (`O_DIRECT`) logical-block reads into aligned buffers, per-worker handles.
    Direct,
    /// A shared read-only memory map with random-access advice.
    Mmap,
    /// io_uring over buffered files, many reads in flight per ring.
    Uring,
    /// io_uring over `O_DIRECT` files with registered buffers.
    UringDirect,
    /// Windows overlapped reads on a completion port.
    Iocp,
    /// Windows overlapped reads, `FILE_FLAG_NO_BUFFERING`, sector-aligned buffers.
    IocpUnbuffered,
    /// Deterministic simulated disk (seeded latency, reordering, faults) for tests. The name
    /// parses in every build; opening it needs the `sim` cargo feature of pora-io (see
    /// [`crate::sim`]), and without it the method is unavailable with a reason saying so.
    Sim,
    /// The best available method for the files (see [`Method::resolve_auto`]).
    #[default]
    Auto,
}

/// Why a method cannot be used here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl Unavailable {
    /// Why `method` is not this platform's (each platform's file lists the methods it has).
    pub(crate) fn elsewhere(method: Method) -> Unavailable {
        let why = match method {
            Method::Uring | Method::UringDirect => "io_uring exists only on Linux",
            Method::Iocp | Method::IocpUnbuffered => "IOCP exists only on Windows",
            Method::Direct => "O_DIRECT is Linux's; on Windows use iocp-unbuffered",
            Method::Pread | Method::PreadShared | Method::Mmap => "not built for this platform",
            Method::Sim | Method::Auto => "not a platform's method (open.rs handles it)",
        };
        Unavailable(why.into())
    }
}

/// What a method or an opened factory can do, for callers that choose defaults, arms or report
/// shapes by it instead of by lists of methods. Read it from [`Method::capabilities`] before
/// opening, from [`crate::BackendFactory::capabilities`] after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Reads are performed on the worker's own thread inside `submit` and `reap`, one after
    /// another (pread, O_DIRECT pread, mmap, the shared handle, the simulated disk's synchronous
    /// mode): such a worker gets its parallelism from threads (or from deep batches when reads
    /// are memory copies), and its time in the backend is partly CPU work, not waiting. When
    /// false, many reads are in flight per thread and time in `reap` is waiting for the device.
    pub completes_inline: bool,
    /// Reads bypass the OS page cache (O_DIRECT, `FILE_FLAG_NO_BUFFERING`): whether the files are
    /// in memory says nothing about how fast they read.
    pub bypasses_page_cache: bool,
    /// Reads move whole logical blocks at block-aligned offsets into aligned buffers: the
    /// natural read unit is the device's logical block, not one 32-byte sample, and a block
    /// size must be a multiple of it.
    pub needs_alignment: bool,
    /// [`crate::Backend::cancel_all`] withdraws reads the OS already holds (io_uring
    /// `ASYNC_CANCEL`, IOCP `CancelIoEx`) instead of waiting for them to finish; either way it
    /// waits no longer than it is told. Methods that complete inline never leave a read with the
    /// OS between calls, so they have nothing to withdraw: false.
    pub cancels_in_flight: bool,
    /// A disk error under a read fails that read alone (an error completion naming the file and
    /// offset) instead of ending the process. Reads through system calls always are; a mapped
    /// read (`mmap`) only where the platform's fault is caught: SIGBUS on Unix
    /// (`unix/sigbus.rs`), the in-page error on Windows x86_64 (`windows/guarded_copy.rs`).
    /// `auto` takes a method as a candidate only when it is.
    pub read_faults_contained: bool,
}

impl Method {
    /// Every method, in table order.
    pub const ALL: [Method; 10] = [
        Method::Pread,
        Method::PreadShared,
        Method::Direct,
        Method::Mmap,
        Method::Uring,
        Method::UringDirect,
        Method::Iocp,
        Method::IocpUnbuffered,
        Method::Sim,
        Method::Auto,
    ];

    /// The `--method` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Method::Pread => "pread",
            Method::PreadShared => "pread-shared",
            Method::Direct => "direct",
            Method::Mmap => "mmap",
            Method::Uring => "uring",
            Method::UringDirect => "uring-direct",
            Method::Iocp => "iocp",
            Method::IocpUnbuffered => "iocp-unbuffered",
            Method::Sim => "sim",
            Method::Auto => "auto",
        }
    }

    /// What the method can do when everything it needs is there, known before opening
    /// anything: for choosing defaults, tune arms and report shapes. An opened factory says what
    /// it really has ([`crate::BackendFactory::capabilities`]): a ring whose kernel lacks
    /// `ASYNC_CANCEL`, the simulated disk in its synchronous mode. `auto` answers for the method
    /// it opens with nothing known ([`Method::resolve_auto`]); a session's steering may take
    /// another of [`Method::auto_candidates`] before any slot.
    pub fn capabilities(self) -> Capabilities {
        let unbuffered = matches!(
            self,
            Method::Direct | Method::UringDirect | Method::IocpUnbuffered
        );
        match self {
            Method::Pread | Method::PreadShared | Method::Direct | Method::Mmap => Capabilities {
                completes_inline: true,
                bypasses_page_cache: unbuffered,
                needs_alignment: unbuffered,
                cancels_in_flight: false,
                read_faults_contained: self != Method::Mmap || MAPPED_FAULTS_CONTAINED,
            },
            Method::Uring | Method::UringDirect | Method::Iocp | Method::IocpUnbuffered => {
                Capabilities {
                    completes_inline: false,
                    bypasses_page_cache: unbuffered,
                    needs_alignment: unbuffered,
                    cancels_in_flight: true,
                    read_faults_contained: true,
                }
            }
            // Reads at the simulated device are waited for, as on a disk that cannot cancel.
            Method::Sim => Capabilities {
                completes_inline: false,
                bypasses_page_cache: false,
                needs_alignment: false,
                cancels_in_flight: false,
                read_faults_contained: true,
            },
            Method::Auto => Method::resolve_auto().capabilities(),
        }
    }

    /// Whether the method bypasses the OS page cache: shorthand for
    /// `capabilities().bypasses_page_cache`.
    pub fn is_unbuffered(self) -> bool {
        self.capabilities().bypasses_page_cache
    }
}

/// How a method reads, as far as choosing among methods cares: `auto` weighs one method of each
/// path, and its model of the page cache tells the paths apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadPath {
    /// Through the page cache, asynchronously or from many threads (`uring`, `pread`, `iocp`).
    Buffered,
    /// Around the page cache (`uring-direct`, `direct`, `iocp-unbuffered`).
    Direct,
    /// A memory map: memory copies when cached, a synchronous page fault per miss (`mmap`).
    Mapped,
}

impl ReadPath {
    /// Every path, in the order `auto` lists its candidates (the first is what it takes when it
    /// knows nothing: see [`Method::resolve_auto`]).
    pub const ALL: [ReadPath; 3] = [ReadPath::Buffered, ReadPath::Direct, ReadPath::Mapped];
}

impl Method {
    /// The read path the method takes (`auto`: the path of the method it opens with nothing
    /// known).
    pub fn read_path(self) -> ReadPath {
        match self {
            Method::Mmap => ReadPath::Mapped,
            Method::Auto => Method::resolve_auto().read_path(),
            m if m.is_unbuffered() => ReadPath::Direct,
            _ => ReadPath::Buffered,
        }
    }

    /// `auto`'s preference for the method among the available ones of its read path, higher
    /// first; `None` for a method `auto` never takes (the shared handle is a baseline, the
    /// simulated disk is for tests). Asynchronous methods rank above synchronous ones: they
    /// keep a device's queue full from few threads.
    pub fn auto_preference(self) -> Option<u8> {
        match self {
            Method::Uring | Method::UringDirect | Method::Iocp | Method::IocpUnbuffered => Some(2),
            Method::Pread | Method::Direct | Method::Mmap => Some(1),
            Method::PreadShared | Method::Sim | Method::Auto => None,
        }
    }

    /// The methods `auto` chooses among on this machine, one per read path in
    /// [`ReadPath::ALL`]'s order: of each path's available methods under which a disk error
    /// fails the read rather than the process, the one it prefers most. The one list `auto`
    /// has: a session's steering weighs these, `pora tune --method auto` sweeps them.
    pub fn auto_candidates() -> Vec<Method> {
        ReadPath::ALL
            .into_iter()
            .filter_map(|path| {
                Method::ALL
                    .into_iter()
                    .filter(|m| m.auto_preference().is_some() && m.read_path() == path)
                    .filter(|m| m.capabilities().read_faults_contained)
                    .filter(|m| m.availability().is_ok())
                    .max_by_key(|m| m.auto_preference())
            })
            .collect()
    }
}

/// Whether this platform catches the fault of a mapped read: Unix's SIGBUS handler, Windows
/// x86_64's guarded copy; elsewhere an in-page error ends the process.
const MAPPED_FAULTS_CONTAINED: bool = cfg!(unix) || cfg!(all(windows, target_arch = "x86_64"));

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Method::ALL.iter().map(|m| m.name()).collect();
                format!("unknown method `{s}` (one of: {})", names.join(", "))
            })
    }
}
