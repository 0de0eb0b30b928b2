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

    /// What `auto` opens when nothing is known of the files: the first of
    /// [`Method::auto_candidates`] (the buffered one), which is also what a session's steering
    /// decides for a cold shard whose rates are neither profiled nor measured (the model's
    /// buffered read gains what the cache holds, a direct one never does; pinned by
    /// pora-mine's `steering_and_resolve_auto_agree_when_nothing_is_known`). A session then
    /// measures and re-decides before every slot; `pread` where no candidate is available.
    pub fn resolve_auto() -> Method {
        Method::auto_candidates()
            .first()
            .copied()
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
        // file system (overlayfs, procfs, old tmpfs), which only opening the files reveals; the
        // next candidate, then pread, is taken.
        _ if config.method == Method::Auto && method != Method::Pread => {
            let mut fallbacks = Method::auto_candidates()
                .into_iter()
                .filter(|m| *m != method && *m != Method::Mmap)
                .chain([Method::Pread]);
            let mut opened = platform::open(method, paths, config);
            while let Err(IoError::Unavailable { .. }) = opened {
                let Some(next) = fallbacks.next() else { break };
                opened = platform::open(next, paths, config);
            }
            opened
        }
        _ => platform::open(method, paths, config),
    }
}
