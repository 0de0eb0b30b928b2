//! How much of a file the page cache holds (mincore over read-only mappings, exactly or sampled
//! at a cost independent of the file's size) and evicting a file from it (POSIX_FADV_DONTNEED,
//! checked with mincore): what cold benchmarks, tune trials, doctor and mine's smart defaults
//! need. Linux only; elsewhere residency is [`Unknown`](super::Unknown) and eviction
//! [`Eviction::Unsupported`].

use serde::Serialize;
use std::path::Path;

/// The outcome of [`evict`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// `POSIX_FADV_DONTNEED` was issued and `mincore` shows none of the file's pages cached.
    Verified { total_pages: u64 },
    /// `POSIX_FADV_DONTNEED` was issued but some pages stay cached (dirty, mapped by another
    /// process, or a file system that ignores the advice such as tmpfs).
    StillResident {
        resident_pages: u64,
        total_pages: u64,
    },
    /// `POSIX_FADV_DONTNEED` was issued; whether it worked could not be checked.
    Unverified { reason: String },
    /// This OS offers no way to evict one file.
    Unsupported { reason: String },
}

impl Eviction {
    /// Whether the file is known to be out of the page cache.
    pub fn is_verified(&self) -> bool {
        matches!(self, Eviction::Verified { .. })
    }

    /// One line for reports.
    pub fn describe(&self) -> String {
        match self {
            Eviction::Verified { total_pages } => {
                format!("evicted, verified with mincore (0 of {total_pages} pages cached)")
            }
            Eviction::StillResident { resident_pages, total_pages } => format!(
                "eviction incomplete: {resident_pages} of {total_pages} pages still cached after POSIX_FADV_DONTNEED"
            ),
            Eviction::Unverified { reason } => format!("eviction could not be verified: {reason}"),
            Eviction::Unsupported { reason } => format!("eviction not possible: {reason}"),
        }
    }
}

/// How much of a file the page cache holds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Residency {
    pub cached_bytes: u64,
    pub file_bytes: u64,
}

/// How much of `path` is in the page cache (mincore over read-only mappings, 1 GiB at a time).
pub fn residency(path: &Path) -> Result<Residency, String> {
    let file_bytes = file_len(path)?;
    let (resident_pages, total_pages) = resident_pages(path).map_err(|e| e.0)?;
    Ok(scaled_residency(resident_pages, total_pages, file_bytes))
}

/// [`residency`] estimated from 64 windows of 2 MiB spread over the file: cheap at any file size,
/// for the choice made at every mining start.
pub fn residency_sampled(path: &Path) -> Result<Residency, String> {
    let file_bytes = file_len(path)?;
    let (resident, checked) =
        resident_pages_sampled(path, SAMPLE_WINDOWS, SAMPLE_WINDOW_BYTES).map_err(|e| e.0)?;
    Ok(scaled_residency(resident, checked, file_bytes))
}

/// How much of `path` is in the page cache now, at a cost that does not grow with the file:
/// `cachestat(2)` (Linux 6.5 and later) over the same 64 windows of 2 MiB that
/// [`residency_sampled`] maps for `mincore`, which it falls back to. What `auto` reads before
/// and after every slot; its cost is recorded as each slot's `decisionMs`. (One `cachestat` over
/// a whole 8 GiB file held in memory walks its 2 million cached pages: 40-170 ms, more than 1%
/// of a slot.)
pub fn residency_now(path: &Path) -> Result<Residency, String> {
    match cachestat_sampled(path, SAMPLE_WINDOWS, SAMPLE_WINDOW_BYTES) {
        Ok(Some(r)) => Ok(r),
        _ => residency_sampled(path),
    }
}

/// Windows sampled by [`residency_sampled`] and [`residency_now`].
const SAMPLE_WINDOWS: u64 = 64;
const SAMPLE_WINDOW_BYTES: u64 = 2 << 20;

fn file_len(path: &Path) -> Result<u64, String> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Cached bytes of a `file_bytes` file of which `resident` of `checked` pages are cached.
fn scaled_residency(resident: u64, checked: u64, file_bytes: u64) -> Residency {
    let cached_bytes = match checked {
        0 => 0,
        _ => (resident as u128 * file_bytes as u128 / checked as u128) as u64,
    };
    Residency {
        cached_bytes,
        file_bytes,
    }
}

#[cfg(target_os = "linux")]
pub use linux::{cachestat_sampled, evict, resident_pages, resident_pages_sampled};

#[cfg(not(target_os = "linux"))]
pub use other::{cachestat_sampled, evict, resident_pages, resident_pages_sampled};

#[cfg(target_os = "linux")]
mod linux {
    //! `posix_fadvise` and `mincore`.

    use super::Eviction;
    use crate::host::Unknown;
    use crate::IoError;
    use std::fs::File;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    /// Bytes mapped at once while counting cached pages, so huge files need no huge vector.
    const MINCORE_WINDOW_BYTES: u64 = 1 << 30;

    /// `cachestat(2)`'s number, the same on every architecture (the generic syscall table).
    const SYS_CACHESTAT: libc::c_long = 451;

    /// `struct cachestat_range` of the kernel's uapi.
    #[repr(C)]
    struct CachestatRange {
        off: u64,
        len: u64,
    }

    /// `struct cachestat` of the kernel's uapi (the kernel writes every field; pora reads
    /// `nr_cache`).
    #[repr(C)]
    #[derive(Default)]
    #[allow(dead_code)]
    struct Cachestat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }

    /// The file's cached bytes estimated by `cachestat(2)` over `windows` evenly spaced windows
    /// of `window_bytes` (the whole file, exactly, when it is smaller than that); `Ok(None)`
    /// where the kernel has no such call (before 6.5) or refuses it for this file (newer
    /// kernels ask the rights mincore asks: owner, writer or CAP_SYS_ADMIN).
    pub fn cachestat_sampled(
        path: &Path,
        windows: u64,
        window_bytes: u64,
    ) -> Result<Option<super::Residency>, String> {
        let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file_bytes = file
            .metadata()
            .map_err(|e| format!("{}: {e}", path.display()))?
            .len();
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        let ranges: Vec<(u64, u64)> = if file_bytes <= windows.saturating_mul(window_bytes) {
            vec![(0, file_bytes)]
        } else {
            (0..windows)
                .map(|i| {
                    let offset = (file_bytes / windows * i) / page * page;
                    (offset, window_bytes.min(file_bytes - offset))
                })
                .collect()
        };
        let (mut cached_pages, mut checked_pages) = (0u64, 0u64);
        for (off, len) in ranges {
            let range = CachestatRange { off, len };
            let mut stat = Cachestat::default();
            // SAFETY: cachestat reads `range` and writes `stat`, both live, laid out as the
            // uapi structs and owned by this frame; the descriptor is open for the call.
            let rc = unsafe {
                libc::syscall(
                    SYS_CACHESTAT,
                    file.as_raw_fd(),
                    &range as *const CachestatRange,
                    &mut stat as *mut Cachestat,
                    0u32,
                )
            };
            if rc != 0 {
                return Ok(None);
            }
            cached_pages += stat.nr_cache;
            checked_pages += len.div_ceil(page);
        }
        Ok(Some(super::scaled_residency(
            cached_pages.min(checked_pages),
            checked_pages,
            file_bytes,
        )))
    }

    /// Drops `path`'s clean pages from the page cache and checks with `mincore` that none remain.
    pub fn evict(path: &Path) -> Result<Eviction, IoError> {
        let file = File::open(path).map_err(|source| IoError::Open {
            path: path.into(),
            source,
        })?;
        // SAFETY: posix_fadvise on a valid, owned descriptor; offset 0 and length 0 mean the whole file.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(IoError::Os {
                what: "posix_fadvise(POSIX_FADV_DONTNEED)",
                source: std::io::Error::from_raw_os_error(rc),
            });
        }
        if let Err(reason) = mincore_can_see_page_cache(path, &file) {
            return Ok(Eviction::Unverified { reason });
        }
        Ok(match count_resident(&file) {
            Ok((0, total_pages)) => Eviction::Verified { total_pages },
            Ok((resident_pages, total_pages)) => Eviction::StillResident {
                resident_pages,
                total_pages,
            },
            Err(e) => Eviction::Unverified {
                reason: format!("mincore failed: {e}"),
            },
        })
    }

    /// Pages of `path` in the page cache, and the file's size in pages.
    pub fn resident_pages(path: &Path) -> Result<(u64, u64), Unknown> {
        let file = File::open(path).map_err(|e| Unknown(format!("{}: {e}", path.display())))?;
        mincore_can_see_page_cache(path, &file).map_err(Unknown)?;
        count_resident(&file).map_err(|e| Unknown(format!("mincore on {}: {e}", path.display())))
    }

    /// Resident and checked pages in `windows` evenly spaced windows of `window_bytes` (the whole
    /// file when it is smaller than that): an estimate whose cost does not grow with the file,
    /// for decisions made at every start (a 1 TiB shard has 2^28 pages).
    pub fn resident_pages_sampled(
        path: &Path,
        windows: u64,
        window_bytes: u64,
    ) -> Result<(u64, u64), Unknown> {
        let file = File::open(path).map_err(|e| Unknown(format!("{}: {e}", path.display())))?;
        mincore_can_see_page_cache(path, &file).map_err(Unknown)?;
        let mincore = |e: std::io::Error| Unknown(format!("mincore on {}: {e}", path.display()));
        let len = file.metadata().map_err(mincore)?.len();
        if len <= windows.saturating_mul(window_bytes) {
            return count_resident(&file).map_err(mincore);
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        let (mut resident, mut checked, mut vec) = (0u64, 0u64, Vec::new());
        for i in 0..windows {
            let offset = (len / windows * i) / page * page;
            let window = window_bytes.min(len - offset);
            resident +=
                resident_in_window(&file, offset, window, page, &mut vec).map_err(mincore)?;
            checked += window.div_ceil(page);
        }
        Ok((resident, checked))
    }

    /// Since Linux 5.2 mincore reports page-cache residency of a file mapping only to a caller
    /// that owns the file, may write it, or has CAP_FOWNER; anyone else sees only the pages
    /// mapped in its own page tables, which would make every eviction look successful.
    fn mincore_can_see_page_cache(path: &Path, file: &File) -> Result<(), String> {
        let owner = file.metadata().map_err(|e| e.to_string())?.uid();
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        if euid == 0 || euid == owner {
            return Ok(());
        }
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|e| e.to_string())?;
        // SAFETY: access() reads a NUL-terminated path and has no other preconditions.
        if unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } == 0 {
            return Ok(());
        }
        Err("mincore only sees the page cache of files you own or may write (Linux >= 5.2); run as the file's owner or root".into())
    }

    /// Counts cached pages by mapping the file window by window and calling mincore.
    fn count_resident(file: &File) -> std::io::Result<(u64, u64)> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        let len = file.metadata()?.len();
        let total_pages = len.div_ceil(page);
        let mut resident = 0u64;
        let mut vec = Vec::new();
        let mut offset = 0u64;
        while offset < len {
            let window = (len - offset).min(MINCORE_WINDOW_BYTES);
            resident += resident_in_window(file, offset, window, page, &mut vec)?;
            offset += window;
        }
        Ok((resident, total_pages))
    }

    fn resident_in_window(
        file: &File,
        offset: u64,
        len: u64,
        page: u64,
        vec: &mut Vec<u8>,
    ) -> std::io::Result<u64> {
        let pages = len.div_ceil(page) as usize;
        vec.clear();
        vec.resize(pages, 0);
        // SAFETY: a fresh read-only shared mapping of `len` bytes at a page-aligned offset of a
        // file we hold open; it is never dereferenced, only passed to mincore, and unmapped below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `addr..addr+len` is the mapping made above; `vec` has one byte per page of it.
        let rc = unsafe { libc::mincore(addr, len as usize, vec.as_mut_ptr()) };
        let err = std::io::Error::last_os_error();
        // SAFETY: unmaps exactly the mapping made above, which nothing else references.
        unsafe { libc::munmap(addr, len as usize) };
        if rc != 0 {
            return Err(err);
        }
        Ok(vec.iter().filter(|&&b| b & 1 != 0).count() as u64)
    }
}

#[cfg(not(target_os = "linux"))]
mod other {
    //! Fallbacks: the page cache cannot be asked here.

    use super::Eviction;
    use crate::host::{Unknown, NOT_LINUX};
    use crate::IoError;
    use std::path::Path;

    pub fn evict(path: &Path) -> Result<Eviction, IoError> {
        std::fs::metadata(path).map_err(|source| IoError::Open {
            path: path.into(),
            source,
        })?;
        Ok(Eviction::Unsupported {
            reason: NOT_LINUX.into(),
        })
    }

    pub fn resident_pages(_path: &Path) -> Result<(u64, u64), Unknown> {
        Err(Unknown(NOT_LINUX.into()))
    }

    pub fn cachestat_sampled(
        _path: &Path,
        _windows: u64,
        _window_bytes: u64,
    ) -> Result<Option<super::Residency>, String> {
        Ok(None)
    }

    pub fn resident_pages_sampled(
        _path: &Path,
        _windows: u64,
        _window_bytes: u64,
    ) -> Result<(u64, u64), Unknown> {
        Err(Unknown(NOT_LINUX.into()))
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn eviction_of_a_written_file_is_reported() {
        use std::io::Write;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let mut f = std::fs::File::create(&path).expect("create");
        f.write_all(&vec![7u8; 1 << 20]).expect("write");
        f.sync_all()
            .expect("fsync so DONTNEED can drop clean pages");
        let (resident, total) = resident_pages(&path).expect("mincore works as the owner");
        // 1 MiB is 256 pages of 4 KiB, 16 of 64 KiB.
        assert!((16..=256).contains(&total), "{total} pages");
        assert!(resident <= total);
        match evict(&path).expect("evict") {
            // On a disk file system the pages go; on tmpfs they cannot: both are honest answers.
            Eviction::Verified { total_pages } => assert_eq!(total_pages, total),
            Eviction::StillResident {
                resident_pages,
                total_pages,
            } => {
                assert!(resident_pages > 0 && total_pages == total)
            }
            other => panic!("owner of the file must be able to verify: {other:?}"),
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sampled_residency_checks_only_its_windows_and_agrees_with_the_full_count() {
        use std::io::Write;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let mut f = std::fs::File::create(&path).expect("create");
        f.write_all(&vec![7u8; 4 << 20]).expect("write");
        let (full_resident, full_total) = resident_pages(&path).expect("mincore");
        // 4 windows of 64 KiB over 4 MiB: only those pages are looked at.
        let (resident, checked) = resident_pages_sampled(&path, 4, 64 << 10).expect("sampled");
        assert!(checked < full_total, "{checked} of {full_total}");
        let page_bytes = (4u64 << 20) / full_total;
        assert_eq!(checked, 4 * (64 << 10) / page_bytes);
        // Just written: as resident in the sample as in the whole file.
        assert_eq!(resident == checked, full_resident == full_total);
        // cachestat (where the kernel has it; exact on a file smaller than its windows) and the
        // sampled count agree on a cached file.
        if let Some(exact) = cachestat_sampled(&path, 64, 1 << 20).expect("cachestat") {
            assert_eq!(exact.file_bytes, 4 << 20);
            assert_eq!(
                exact.cached_bytes == exact.file_bytes,
                full_resident == full_total
            );
        }
        let now = residency_now(&path).expect("residency now");
        assert_eq!(
            now.cached_bytes == now.file_bytes,
            full_resident == full_total
        );
        // A file smaller than the sample is counted whole.
        assert_eq!(
            resident_pages_sampled(&path, 64, 1 << 20).expect("whole"),
            (full_resident, full_total)
        );
    }
}
