//! The table of access methods (`--method` values), their availability on this machine, and the
//! dispatch from a method to its backend factory.

use crate::{BackendFactory, IoConfig, IoError};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

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
    /// the documented rule picks here ([`Method::resolve_auto`]); opening it can still fall back
    /// to `pread` where the files' file system refuses O_DIRECT.
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
            },
            Method::Uring | Method::UringDirect | Method::Iocp | Method::IocpUnbuffered => {
                Capabilities {
                    completes_inline: false,
                    bypasses_page_cache: unbuffered,
                    needs_alignment: unbuffered,
                    cancels_in_flight: true,
                }
            }
            // Reads at the simulated device are waited for, as on a disk that cannot cancel.
            Method::Sim => Capabilities {
                completes_inline: false,
                bypasses_page_cache: false,
                needs_alignment: false,
                cancels_in_flight: false,
            },
            Method::Auto => Method::resolve_auto().capabilities(),
        }
    }

    /// Whether the method bypasses the OS page cache: shorthand for
    /// `capabilities().bypasses_page_cache`.
    pub fn is_unbuffered(self) -> bool {
        self.capabilities().bypasses_page_cache
    }

    /// Whether this build and machine can use the method; the reason when not.
    pub fn availability(self) -> Result<(), Unavailable> {
        platform_availability(self)
    }

    /// The concrete real-disk methods usable here, in table order (no `sim`, no `auto`).
    pub fn available_real() -> Vec<Method> {
        Method::ALL
            .into_iter()
            .filter(|m| !matches!(m, Method::Sim | Method::Auto) && m.availability().is_ok())
            .collect()
    }

    /// The documented rule for `auto` until a tune profile says otherwise: io_uring with
    /// O_DIRECT where it works (deep queues from few threads, no page-cache pollution), then
    /// IOCP unbuffered on Windows, then per-worker pread.
    pub fn resolve_auto() -> Method {
        [Method::UringDirect, Method::IocpUnbuffered, Method::Pread]
            .into_iter()
            .find(|m| m.availability().is_ok())
            .unwrap_or(Method::Pread)
    }
}

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

#[cfg(target_os = "linux")]
fn platform_availability(m: Method) -> Result<(), Unavailable> {
    match m {
        Method::Pread | Method::PreadShared | Method::Direct | Method::Mmap | Method::Auto => {
            Ok(())
        }
        Method::Sim => crate::sim::availability(),
        Method::Uring | Method::UringDirect => crate::uring::probe().map_err(Unavailable),
        Method::Iocp | Method::IocpUnbuffered => {
            Err(Unavailable("IOCP exists only on Windows".into()))
        }
    }
}

#[cfg(windows)]
fn platform_availability(m: Method) -> Result<(), Unavailable> {
    match m {
        Method::Pread
        | Method::PreadShared
        | Method::Mmap
        | Method::Iocp
        | Method::IocpUnbuffered
        | Method::Auto => Ok(()),
        Method::Sim => crate::sim::availability(),
        Method::Direct => Err(Unavailable(
            "O_DIRECT is Linux's; on Windows use iocp-unbuffered".into(),
        )),
        Method::Uring | Method::UringDirect => {
            Err(Unavailable("io_uring exists only on Linux".into()))
        }
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn platform_availability(m: Method) -> Result<(), Unavailable> {
    match m {
        Method::Pread | Method::PreadShared | Method::Direct | Method::Mmap | Method::Auto => {
            Ok(())
        }
        Method::Sim => crate::sim::availability(),
        Method::Uring | Method::UringDirect => {
            Err(Unavailable("io_uring exists only on Linux".into()))
        }
        Method::Iocp | Method::IocpUnbuffered => {
            Err(Unavailable("IOCP exists only on Windows".into()))
        }
    }
}

/// Resolves `auto`, checks availability and opens the method's factory.
pub(crate) fn open(
    paths: &[PathBuf],
    config: &IoConfig,
) -> Result<Arc<dyn BackendFactory>, IoError> {
    let method = match config.method {
        Method::Auto => Method::resolve_auto(),
        m => m,
    };
    method.availability().map_err(|u| IoError::Unavailable {
        method: method.name(),
        reason: u.0,
    })?;
    if paths.is_empty() {
        return Err(IoError::Config("no files to open".into()));
    }
    if paths.len() > u32::MAX as usize {
        return Err(IoError::Config("too many files".into()));
    }
    match method {
        Method::Sim => crate::sim::open(paths, config),
        // `auto` must not fail where a plain method works: O_DIRECT can be refused by the files'
        // file system (overlayfs, procfs, old tmpfs), which only opening the files reveals.
        _ if config.method == Method::Auto && method != Method::Pread => {
            match platform_open(method, paths, config) {
                Err(IoError::Unavailable { .. }) => platform_open(Method::Pread, paths, config),
                other => other,
            }
        }
        _ => platform_open(method, paths, config),
    }
}

#[cfg(target_os = "linux")]
fn platform_open(
    method: Method,
    paths: &[PathBuf],
    config: &IoConfig,
) -> Result<Arc<dyn BackendFactory>, IoError> {
    match method {
        Method::Uring | Method::UringDirect => crate::uring::open(method, paths, config),
        _ => crate::unix::open(method, paths, config),
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn platform_open(
    method: Method,
    paths: &[PathBuf],
    config: &IoConfig,
) -> Result<Arc<dyn BackendFactory>, IoError> {
    crate::unix::open(method, paths, config)
}

#[cfg(windows)]
fn platform_open(
    method: Method,
    paths: &[PathBuf],
    config: &IoConfig,
) -> Result<Arc<dyn BackendFactory>, IoError> {
    crate::windows::open(method, paths, config)
}
