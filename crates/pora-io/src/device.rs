//! Facts about the device under a file that benchmarks need: which block device holds it, that
//! device's completed-read counter, its logical block size, evicting the file from the page
//! cache (and checking that it worked). CPU time is in [`crate::cpu_time`].
//!
//! Everything here is Linux-specific (sysfs, `/proc/diskstats`, `posix_fadvise`, `mincore`). On
//! other systems each function returns [`Unknown`] with the reason instead of failing to
//! compile, so callers print "unknown" and carry on.

pub use crate::cpu_time::Unknown;

/// The block device a file lives on, as the kernel names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDevice {
    /// Kernel name of the file system's device (`sda1`, `nvme0n1p2`, `dm-0`, `vda`).
    pub name: String,
    /// The whole disk: the parent when `name` is a partition, else `name` itself.
    pub disk: String,
    pub major: u32,
    pub minor: u32,
    /// `/sys/dev/block/MAJ:MIN`, resolved.
    pub sys_dir: std::path::PathBuf,
    /// sysfs directory of `disk` (where `queue/` lives).
    pub disk_sys_dir: std::path::PathBuf,
}

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

/// Reads completed, from one line of `/sys/block/<dev>/stat` (the first field).
pub fn parse_sys_stat_reads(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// Reads completed for device `major:minor`, from the text of `/proc/diskstats`
/// (`major minor name reads_completed ...` per line).
pub fn parse_diskstats_reads(text: &str, major: u32, minor: u32) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let maj: u32 = fields.next()?.parse().ok()?;
        let min: u32 = fields.next()?.parse().ok()?;
        if (maj, min) != (major, minor) {
            return None;
        }
        let _name = fields.next()?;
        fields.next()?.parse().ok()
    })
}

/// Parses the `MAJ:MIN` text of a sysfs `dev` file.
pub fn parse_dev_numbers(text: &str) -> Option<(u32, u32)> {
    let (maj, min) = text.trim().split_once(':')?;
    Some((maj.parse().ok()?, min.parse().ok()?))
}

#[cfg(target_os = "linux")]
pub use linux::{block_device_of, evict, resident_pages, resident_pages_sampled};

#[cfg(not(target_os = "linux"))]
pub use other::{block_device_of, evict, resident_pages, resident_pages_sampled};

#[cfg(target_os = "linux")]
impl BlockDevice {
    /// Reads the device has completed since boot: sysfs `stat`, else `/proc/diskstats`.
    pub fn reads_completed(&self) -> Result<u64, Unknown> {
        linux::reads_completed(self)
    }

    /// The disk's logical block size in bytes (the O_DIRECT alignment unit).
    pub fn logical_block_size(&self) -> Result<u32, Unknown> {
        linux::logical_block_size(self)
    }
}

#[cfg(not(target_os = "linux"))]
impl BlockDevice {
    /// Reads the device has completed since boot (Linux only).
    pub fn reads_completed(&self) -> Result<u64, Unknown> {
        Err(Unknown(other::NOT_LINUX.into()))
    }

    /// The disk's logical block size in bytes (Linux only).
    pub fn logical_block_size(&self) -> Result<u32, Unknown> {
        Err(Unknown(other::NOT_LINUX.into()))
    }
}

#[cfg(target_os = "linux")]
mod linux {
    //! sysfs, `/proc/diskstats`, `posix_fadvise` and `mincore`.

    use super::{parse_diskstats_reads, parse_sys_stat_reads, BlockDevice, Eviction, Unknown};
    use crate::IoError;
    use std::fs::File;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};

    /// Bytes mapped at once while counting cached pages, so huge files need no huge vector.
    const MINCORE_WINDOW_BYTES: u64 = 1 << 30;

    /// The block device holding `path` (its file system's `st_dev`).
    pub fn block_device_of(path: &Path) -> Result<BlockDevice, Unknown> {
        let meta =
            std::fs::metadata(path).map_err(|e| Unknown(format!("{}: {e}", path.display())))?;
        let dev = meta.dev();
        let (major, minor) = (libc::major(dev), libc::minor(dev));
        if major == 0 {
            return Err(Unknown(format!(
                "{} is on a file system without a block device (device {major}:{minor}: tmpfs, overlayfs, btrfs subvolume or network)",
                path.display()
            )));
        }
        let link = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
        let sys_dir = std::fs::canonicalize(&link).map_err(|e| {
            Unknown(format!(
                "{}: {e} (device of {})",
                link.display(),
                path.display()
            ))
        })?;
        let name = dir_name(&sys_dir)?;
        // A partition's sysfs directory sits inside its disk's and has a `partition` file.
        let disk_sys_dir = match sys_dir.join("partition").exists() {
            true => sys_dir
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| sys_dir.clone()),
            false => sys_dir.clone(),
        };
        let disk = dir_name(&disk_sys_dir)?;
        Ok(BlockDevice {
            name,
            disk,
            major,
            minor,
            sys_dir,
            disk_sys_dir,
        })
    }

    fn dir_name(dir: &Path) -> Result<String, Unknown> {
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Unknown(format!("{} has no device name", dir.display())))
    }

    pub(super) fn reads_completed(dev: &BlockDevice) -> Result<u64, Unknown> {
        let stat_path = dev.sys_dir.join("stat");
        if let Some(reads) = std::fs::read_to_string(&stat_path)
            .ok()
            .as_deref()
            .and_then(parse_sys_stat_reads)
        {
            return Ok(reads);
        }
        let text = std::fs::read_to_string("/proc/diskstats").map_err(|e| {
            Unknown(format!(
                "neither {} nor /proc/diskstats is readable: {e}",
                stat_path.display()
            ))
        })?;
        parse_diskstats_reads(&text, dev.major, dev.minor).ok_or_else(|| {
            Unknown(format!(
                "device {}:{} is not in /proc/diskstats",
                dev.major, dev.minor
            ))
        })
    }

    pub(super) fn logical_block_size(dev: &BlockDevice) -> Result<u32, Unknown> {
        let p = dev.disk_sys_dir.join("queue/logical_block_size");
        let text =
            std::fs::read_to_string(&p).map_err(|e| Unknown(format!("{}: {e}", p.display())))?;
        text.trim()
            .parse()
            .map_err(|_| Unknown(format!("{}: not a number: {text:?}", p.display())))
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
    //! Fallbacks: the facts are unknown here.

    use super::{BlockDevice, Eviction, Unknown};
    use crate::IoError;
    use std::path::Path;

    pub(super) const NOT_LINUX: &str =
        "block-device statistics and page-cache eviction are implemented for Linux only";

    pub fn block_device_of(_path: &Path) -> Result<BlockDevice, Unknown> {
        Err(Unknown(NOT_LINUX.into()))
    }

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
    use super::*;
    #[cfg(target_os = "linux")]
    use std::path::Path;

    const DISKSTATS: &str = "\
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 259       0 nvme0n1 123456 10 9876543 4000 77 0 616 12 0 3000 4012 0 0 0 0 0 0
 259       1 nvme0n1p1 4242 0 33936 100 0 0 0 0 0 90 100 0 0 0 0 0 0
 254       0 vda 40791 6183 3760234 32422 22405 32850 9302872 41145 0 9684 74671
   8      16 sdb 5 0 40 1 0 0 0 0 0 1 1
";

    #[test]
    fn diskstats_finds_the_device_by_numbers() {
        assert_eq!(parse_diskstats_reads(DISKSTATS, 259, 0), Some(123456));
        assert_eq!(parse_diskstats_reads(DISKSTATS, 259, 1), Some(4242));
        assert_eq!(parse_diskstats_reads(DISKSTATS, 254, 0), Some(40791));
        assert_eq!(parse_diskstats_reads(DISKSTATS, 8, 16), Some(5));
        assert_eq!(parse_diskstats_reads(DISKSTATS, 7, 0), Some(0));
    }

    #[test]
    fn diskstats_missing_or_garbled_device_is_none() {
        assert_eq!(parse_diskstats_reads(DISKSTATS, 8, 0), None);
        assert_eq!(parse_diskstats_reads("", 8, 0), None);
        assert_eq!(parse_diskstats_reads(" 8 0 sda notanumber 1 2", 8, 0), None);
        assert_eq!(parse_diskstats_reads(" 8 0 sda", 8, 0), None);
    }

    #[test]
    fn sys_stat_first_field_is_reads_completed() {
        let line = "   40791     6183  3760234    32422    22405    32850  9302872    41145        0     9684    74671\n";
        assert_eq!(parse_sys_stat_reads(line), Some(40791));
        assert_eq!(parse_sys_stat_reads(""), None);
        assert_eq!(parse_sys_stat_reads("x 1 2"), None);
    }

    #[test]
    fn dev_numbers_parse() {
        assert_eq!(parse_dev_numbers("259:3\n"), Some((259, 3)));
        assert_eq!(parse_dev_numbers("259"), None);
        assert_eq!(parse_dev_numbers("a:b"), None);
    }

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
        // A file smaller than the sample is counted whole.
        assert_eq!(
            resident_pages_sampled(&path, 64, 1 << 20).expect("whole"),
            (full_resident, full_total)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn block_device_of_root_file_system_or_reason() {
        // Containers often put / on overlayfs (no block device); both outcomes must be clean.
        match block_device_of(Path::new("/")) {
            Ok(dev) => {
                assert!(!dev.name.is_empty() && !dev.disk.is_empty());
                assert!(dev.reads_completed().is_ok(), "{dev:?}");
                let lbs = dev.logical_block_size().expect("logical block size");
                assert!(lbs >= 512 && lbs.is_power_of_two());
            }
            Err(Unknown(reason)) => assert!(reason.contains("device"), "{reason}"),
        }
    }
}
