//! Sector sizes: the alignment unbuffered reads need (O_DIRECT on Linux, `FILE_FLAG_NO_BUFFERING`
//! on Windows), where it is learned, and the one rule a size reported by the OS must pass before
//! pora aligns reads to it.

#[cfg(target_os = "linux")]
use super::block_device::queue_logical_block;
use std::fs::File;
#[cfg(target_os = "linux")]
use std::path::Path;

/// Sector size assumed when the device cannot be asked: the largest common one (the "4Kn" /
/// "512e" physical size), so reads aligned to it are aligned for 512-byte devices too.
pub const FALLBACK_SECTOR_BYTES: u32 = 4096;

/// `bytes` when it is a usable sector size (a power of two in 512..=65536): anything else the OS
/// reports is treated as not reported.
pub fn plausible_sector_size(bytes: u32) -> Option<u32> {
    (bytes.is_power_of_two() && (512..=65536).contains(&bytes)).then_some(bytes)
}

/// A usable sector size from what the OS reported, else [`FALLBACK_SECTOR_BYTES`].
pub fn sane_sector_size(reported: Option<u32>) -> u32 {
    reported
        .and_then(plausible_sector_size)
        .unwrap_or(FALLBACK_SECTOR_BYTES)
}

/// A logical block size and where it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogicalBlock {
    pub bytes: u32,
    /// `"statx"` (the file system's own O_DIRECT alignment, Linux 6.1+), `"sysfs"` (the block
    /// device's `queue/logical_block_size`) or `"fallback"` (unknown: 4096 assumed).
    pub source: &'static str,
}

/// The alignment unbuffered reads of `file` need: statx's `STATX_DIOALIGN` when the kernel and
/// file system report it, else the logical block size of the device under the file (the whole
/// disk's queue for a partition), else 4096.
pub fn logical_block_size(file: &File) -> LogicalBlock {
    #[cfg(target_os = "linux")]
    {
        if let Some(bytes) = statx_dio_align(file) {
            return LogicalBlock {
                bytes,
                source: "statx",
            };
        }
        if let Some(bytes) = sysfs_logical_block(file) {
            return LogicalBlock {
                bytes,
                source: "sysfs",
            };
        }
    }
    let _ = file;
    LogicalBlock {
        bytes: FALLBACK_SECTOR_BYTES,
        source: "fallback",
    }
}

#[cfg(target_os = "linux")]
fn statx_dio_align(file: &File) -> Option<u32> {
    use std::os::fd::AsRawFd;
    // SAFETY: statx is plain data; all-zero is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, empty path with AT_EMPTY_PATH, and a writable statx buffer.
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return None;
    }
    plausible_sector_size(stx.stx_dio_offset_align)
}

#[cfg(target_os = "linux")]
fn sysfs_logical_block(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let (major, minor) = super::block_device::major_minor(file.metadata().ok()?.dev());
    sysfs_logical_block_at(&super::Roots::default().sys, major, minor)
}

/// The logical block size of device `major:minor` under sysfs root `sys`, from its whole disk's
/// queue (a partition has none of its own), when plausible.
#[cfg(target_os = "linux")]
pub(crate) fn sysfs_logical_block_at(sys: &Path, major: u32, minor: u32) -> Option<u32> {
    let dir = super::block_device::sysfs_dir(sys, major, minor).ok()?;
    let disk_dir = super::block_device::whole_disk_dir(&dir);
    plausible_sector_size(queue_logical_block(&disk_dir).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn partition_falls_back_to_parent_queue() {
        let sys = tempfile::tempdir().unwrap();
        let disk = sys.path().join("devices/virtual/block/sdz");
        std::fs::create_dir_all(disk.join("queue")).unwrap();
        std::fs::create_dir_all(disk.join("sdz1")).unwrap();
        std::fs::write(disk.join("queue/logical_block_size"), "4096\n").unwrap();
        std::fs::create_dir_all(sys.path().join("dev/block")).unwrap();
        std::os::unix::fs::symlink(&disk, sys.path().join("dev/block/8:0")).unwrap();
        std::os::unix::fs::symlink(disk.join("sdz1"), sys.path().join("dev/block/8:1")).unwrap();
        assert_eq!(sysfs_logical_block_at(sys.path(), 8, 0), Some(4096));
        assert_eq!(sysfs_logical_block_at(sys.path(), 8, 1), Some(4096));
        assert_eq!(sysfs_logical_block_at(sys.path(), 8, 2), None);
    }

    #[test]
    fn block_size_of_a_real_file_is_plausible() {
        let file = tempfile::tempfile().unwrap();
        let lb = logical_block_size(&file);
        assert!(lb.bytes.is_power_of_two() && lb.bytes >= 512, "{lb:?}");
    }
}
