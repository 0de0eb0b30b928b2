//! From a method to its backend factory: whether a method is available on this machine, what
//! `auto` resolves to, and opening. The rules themselves are each platform's: `linux.rs`,
//! `unix.rs` (the other Unixes) and `windows.rs` each say which methods they have and open them;
//! the simulated disk (`sim.rs`) is the same everywhere.

#[cfg(target_os = "linux")]
use crate::linux as platform;
use crate::method::{Method, Unavailable};
#[cfg(all(unix, not(target_os = "linux")))]
use crate::unix as platform;
#[cfg(windows)]
use crate::windows as platform;
use crate::{FactoryResult, IoConfig, IoError};
use std::path::PathBuf;

impl Method {
    /// Whether this build and machine can use the method; the reason when not.
    pub fn availability(self) -> Result<(), Unavailable> {
        match self {
            Method::Sim => crate::sim::availability(),
            Method::Auto => Ok(()),
            m => platform::availability(m),
        }
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

/// Resolves `auto`, checks availability and opens the method's factory.
pub(crate) fn open(paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
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
            match platform::open(method, paths, config) {
                Err(IoError::Unavailable { .. }) => platform::open(Method::Pread, paths, config),
                other => other,
            }
        }
        _ => platform::open(method, paths, config),
    }
}
