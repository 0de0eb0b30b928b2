//! What O_DIRECT needs to know about a file's device and file system: the logical block size
//! (reads must be aligned to it) and, when O_DIRECT is refused, the file system's name for the
//! error message.

use crate::IoError;
use std::fs::File;
use std::path::Path;

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
        bytes: crate::align::FALLBACK_LOGICAL_BLOCK_BYTES,
        source: "fallback",
    }
}

#[cfg(target_os = "linux")]
fn plausible_block(bytes: u32) -> Option<u32> {
    (bytes.is_power_of_two() && (512..=65536).contains(&bytes)).then_some(bytes)
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
    plausible_block(stx.stx_dio_offset_align)
}

#[cfg(target_os = "linux")]
fn sysfs_logical_block(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let dev = file.metadata().ok()?.dev();
    sysfs_logical_block_at(Path::new("/sys"), libc::major(dev), libc::minor(dev))
}

/// Reads `<sys>/dev/block/MAJ:MIN/queue/logical_block_size`; for a partition the queue directory
/// belongs to the parent disk, one level up.
#[cfg(target_os = "linux")]
pub(crate) fn sysfs_logical_block_at(sys: &Path, major: u32, minor: u32) -> Option<u32> {
    let dev_dir = sys
        .join(format!("dev/block/{major}:{minor}"))
        .canonicalize()
        .ok()?;
    let candidates = [dev_dir.join("queue"), dev_dir.parent()?.join("queue")];
    candidates.iter().find_map(|queue| {
        let text = std::fs::read_to_string(queue.join("logical_block_size")).ok()?;
        plausible_block(text.trim().parse().ok()?)
    })
}

/// Opens `path` read-only with O_DIRECT. A file system that refuses O_DIRECT (EINVAL) gives
/// `IoError::Unavailable` naming the file system.
pub(crate) fn open_direct(path: &Path, method: &'static str) -> Result<File, IoError> {
    match super::open_read_only(path, true) {
        Err(IoError::Open { source, .. }) if source.raw_os_error() == Some(libc::EINVAL) => {
            let fs = super::open_read_only(path, false)
                .map(|f| fs_name(&f))
                .unwrap_or_else(|_| "unknown".into());
            Err(IoError::Unavailable {
                method,
                reason: format!(
                    "{}: the {fs} file system does not support O_DIRECT (open returned EINVAL); \
                     put the file on a disk-backed file system or use a buffered method",
                    path.display()
                ),
            })
        }
        other => other,
    }
}

/// The name of the file system holding `file` (Linux: from the statfs magic number).
pub(crate) fn fs_name(file: &File) -> String {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: statfs is plain data; all-zero is a valid value.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid descriptor and a writable statfs buffer.
        if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } == 0 {
            return fs_name_of_magic(st.f_type as u64);
        }
    }
    let _ = file;
    "unknown".into()
}

/// Names the common Linux file system magic numbers; others print in hex.
#[cfg(target_os = "linux")]
pub(crate) fn fs_name_of_magic(magic: u64) -> String {
    let name = match magic {
        0x0102_1994 => "tmpfs",
        0x8584_58f6 => "ramfs",
        0xEF53 => "ext2/3/4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0xF2F5_2010 => "f2fs",
        0x794c_7630 => "overlayfs",
        0x6969 => "nfs",
        0xFF53_4D42 => "cifs",
        0x0102_1997 => "9p",
        0x6573_5546 => "fuse",
        0x2fc1_2fc1 => "zfs",
        0x7371_7368 => "squashfs",
        0x4d44 => "vfat",
        0x2011_BAB0 => "exfat",
        0x5346_544e => "ntfs",
        0x6165_6673 => "aufs",
        0x6a65_6a65 => "virtiofs",
        0x9fa0 => "proc",
        0x6265_6572 => "sysfs",
        _ => return format!("unknown (magic {magic:#x})"),
    };
    name.into()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

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

    #[test]
    fn magic_names() {
        assert_eq!(fs_name_of_magic(0x01021994), "tmpfs");
        assert!(fs_name_of_magic(0x1234).contains("0x1234"));
    }
}
