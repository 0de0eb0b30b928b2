//! Which file system holds a file, from its `statfs` magic number: one table for doctor's report,
//! tune profiles' fingerprint and the message when O_DIRECT is refused.

use std::path::Path;

/// The name of a `statfs` `f_type` magic number (compared as 32 bits: `f_type` is a signed
/// 32-bit field on some architectures, which sign-extends the large magics).
pub fn fs_name(magic: u64) -> Option<&'static str> {
    Some(match magic & 0xFFFF_FFFF {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x2FC1_2FC1 => "zfs",
        0xF2F5_2010 => "f2fs",
        0xCA45_1A4E => "bcachefs",
        0x0102_1994 => "tmpfs",
        0x8584_58F6 => "ramfs",
        0x794C_7630 => "overlayfs",
        0x6573_5546 => "fuse",
        0x6969 => "nfs",
        0xFF53_4D42 => "cifs",
        0xFE53_4D42 => "smb2",
        0x0102_1997 => "9p",
        0x7366_746E => "ntfs3",
        0x5346_544E => "ntfs",
        0x2011_BAB0 => "exfat",
        0x4D44 => "vfat",
        0x7371_7368 => "squashfs",
        0x3153_464A => "jfs",
        0x5265_4973 => "reiserfs",
        0x6165_6673 => "aufs",
        0x6A65_6A65 => "virtiofs",
        0x9FA0 => "proc",
        0x6265_6572 => "sysfs",
        _ => return None,
    })
}

/// [`fs_name`], or `unknown (magic 0x...)` for a magic number not in the table.
pub fn fs_name_or_magic(magic: u64) -> String {
    match fs_name(magic) {
        Some(name) => name.to_string(),
        None => format!("unknown (magic {:#x})", magic & 0xFFFF_FFFF),
    }
}

/// The file system holding `path` (Linux: `statfs`), or why it is unknown.
pub fn fs_type(path: &Path) -> Result<String, String> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c_path =
            std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: c_path is NUL-terminated and `st` is a valid, writable statfs.
        let magic = statfs_magic(|st| unsafe { libc::statfs(c_path.as_ptr(), st) })
            .map_err(|e| format!("statfs: {e}"))?;
        Ok(fs_name_or_magic(magic))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        Err("probe implemented on Linux only".into())
    }
}

/// The name of the file system holding the open `file` (Linux: `fstatfs`), `unknown` elsewhere.
#[cfg(unix)]
pub fn fs_type_of_file(file: &std::fs::File) -> String {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid descriptor and a valid, writable statfs.
        if let Ok(magic) = statfs_magic(|st| unsafe { libc::fstatfs(file.as_raw_fd(), st) }) {
            return fs_name_or_magic(magic);
        }
    }
    let _ = file;
    "unknown".into()
}

/// The `f_type` magic number that `call` (statfs or fstatfs) writes into a zeroed `statfs`.
#[cfg(target_os = "linux")]
fn statfs_magic(call: impl FnOnce(*mut libc::statfs) -> libc::c_int) -> std::io::Result<u64> {
    // SAFETY: statfs is plain old data; all-zero is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if call(&mut st) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between architectures
    let magic = st.f_type as u64;
    Ok(magic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_names() {
        assert_eq!(fs_name_or_magic(0x01021994), "tmpfs");
        assert!(fs_name_or_magic(0x1234).contains("0x1234"));
        assert_eq!(fs_name(0xEF53), Some("ext4"));
        assert_eq!(fs_name(0x1234), None);
    }

    #[test]
    fn sign_extended_magic_is_masked_to_32_bits() {
        // cifs's magic as a 32-bit signed f_type, widened to 64 bits.
        assert_eq!(fs_name(0xFFFF_FFFF_FF53_4D42), Some("cifs"));
    }
}
