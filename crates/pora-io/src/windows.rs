//! Windows methods, one backend per way of reading:
//! - `pread`: a buffered handle per worker per file (`FILE_FLAG_RANDOM_ACCESS`), positional
//!   `seek_read` (synchronous; completes inline in `submit`);
//! - `pread-shared`: one synchronous handle per file shared by every worker, es-node's way, kept
//!   as the baseline arm (Windows serialises I/O on a non-overlapped handle);
//! - `mmap`: one read-only mapping per file shared by every worker, every copy out of it guarded
//!   so that an in-page error fails the read instead of ending the process (`guarded_copy`);
//! - `iocp` / `iocp-unbuffered`: overlapped handles per worker on the worker's own completion
//!   port, many reads in flight, completions reaped in batches with the deadline as the timeout;
//!   the unbuffered variant reads whole sectors into sector-aligned buffers.
//!
//! The platform-independent half of the IOCP backends lives where it is unit-tested on every
//! platform: the ranges, sector rules and buffers in `crate::align`, the slot state machine in
//! `crate::overlapped_engine`.

#[cfg(target_arch = "x86_64")]
mod guarded_copy;
mod iocp;
pub mod probe;
mod sync;

pub use probe::{windows_volume_facts, BitLocker, VolumeFacts};

/// In-page errors contained on mapped reads since the process started.
pub fn mapped_faults() -> u64 {
    #[cfg(target_arch = "x86_64")]
    return guarded_copy::faults_contained();
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// Elsewhere than x86_64 a map's copies are plain: an in-page error ends the process there.
#[cfg(not(target_arch = "x86_64"))]
mod guarded_copy {
    pub(crate) fn install() -> Result<(), String> {
        Ok(())
    }
    /// # Safety
    /// `src .. src + dst.len()` lies inside a live read-only view of a file.
    pub(crate) unsafe fn copy(dst: &mut [u8], src: *const u8) -> Result<(), i32> {
        // SAFETY: the caller vouches for the source range.
        dst.copy_from_slice(unsafe { std::slice::from_raw_parts(src, dst.len()) });
        Ok(())
    }
}

use crate::{FactoryResult, IoConfig, IoError, Method, Unavailable};
use std::path::PathBuf;

/// Which methods Windows has.
pub(crate) fn availability(method: Method) -> Result<(), Unavailable> {
    match method {
        Method::Pread
        | Method::PreadShared
        | Method::Mmap
        | Method::Iocp
        | Method::IocpUnbuffered => Ok(()),
        other => Err(Unavailable::elsewhere(other)),
    }
}

/// Opens `method`'s factory over `paths` (available, checked by the caller).
pub(crate) fn open(method: Method, paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
    match method {
        Method::Pread | Method::PreadShared => sync::open_pread(method, paths, config),
        Method::Mmap => sync::open_mmap(paths, config),
        Method::Iocp | Method::IocpUnbuffered => iocp::open(method, paths, config),
        _ => Err(IoError::Unavailable {
            method: method.name(),
            reason: "not a Windows method".into(),
        }),
    }
}

/// The Win32 error of the last failed call, as an `std::io::Error`.
fn last_os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// `s` as a NUL-terminated UTF-16 string for the `W` APIs.
fn wide(s: &std::ffi::OsStr) -> Vec<u16> {
    use std::os::windows::ffi::OsStrExt;
    s.encode_wide().chain(std::iter::once(0)).collect()
}

/// The text of a NUL-terminated UTF-16 buffer filled by a `W` API.
fn from_wide(buf: &[u16]) -> String {
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf16_lossy(&buf[..end])
}
