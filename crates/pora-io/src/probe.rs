//! What `pora doctor` reports about one file, gathered from the host facts in [`crate::host`]
//! plus the probes only doctor runs: whether O_DIRECT works, io_uring availability, allocated
//! bytes and extent count (FIEMAP). The cheap subset a tune profile is keyed on (the devices'
//! facts, read once per device) is [`crate::host::file_devices::FileDevices`].
//!
//! The OS calls (stat, FIEMAP, O_DIRECT) exist on Linux only; elsewhere they report "unknown"
//! with the reason, so the crate builds for Windows and macOS unchanged.

use crate::host::block_device::{device_facts, device_numbers, DeviceFacts};
use crate::host::file_system::fs_type;
use crate::host::memory::{meminfo, MemInfo};
use crate::host::page_cache::{residency, Residency};
use crate::host::{read_num, Roots};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A fact that is known, or unknown with the reason. Serialises as the value itself, or as
/// `{"unknown": "why"}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Fact<T> {
    Known(T),
    Unknown { unknown: String },
}

impl<T> Fact<T> {
    pub fn unknown(why: impl Into<String>) -> Self {
        Fact::Unknown {
            unknown: why.into(),
        }
    }
    pub fn known(&self) -> Option<&T> {
        match self {
            Fact::Known(v) => Some(v),
            Fact::Unknown { .. } => None,
        }
    }
}

impl<T> From<Result<T, String>> for Fact<T> {
    fn from(r: Result<T, String>) -> Self {
        match r {
            Ok(v) => Fact::Known(v),
            Err(why) => Fact::unknown(why),
        }
    }
}

/// Whether a feature works here, with the detail (the reason when it does not).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Support {
    /// `None` when it could not be determined.
    pub works: Option<bool>,
    pub detail: String,
}

/// Physically contiguous runs of a file, as `filefrag` counts them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Extents {
    pub count: u64,
    /// Byte address on the device of the file's first extent (for alignment checks).
    pub first_physical_offset: Option<u64>,
}

/// Everything `pora doctor` reports about one file.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileFacts {
    pub path: PathBuf,
    pub size_bytes: u64,
    pub allocated_bytes: Fact<u64>,
    pub sparse: Fact<bool>,
    pub extents: Fact<Extents>,
    pub fs_type: Fact<String>,
    /// `major:minor` of the file system's device (`st_dev`).
    pub device_number: Fact<String>,
    pub device: Fact<DeviceFacts>,
    pub o_direct: Support,
    pub page_cache: Fact<Residency>,
    pub memory: Fact<MemInfo>,
    pub io_uring: Support,
    /// `kernel.io_uring_disabled` (0 enabled, 1 root/group only, 2 disabled), when present.
    pub io_uring_disabled_sysctl: Option<u32>,
}

/// What the probes only the OS layer can run find about a file.
struct OsFacts {
    allocated_bytes: Fact<u64>,
    extents: Fact<Extents>,
    o_direct: Support,
}

/// Probes everything about `path` (read-only).
pub fn probe_file(path: &Path, roots: &Roots) -> Result<FileFacts, String> {
    let size_bytes = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let os = os::file_facts(path);
    let numbers = device_numbers(path, roots);
    let device = match numbers.dev {
        Some((major, minor)) => device_facts(roots, major, minor)
            .map(Fact::Known)
            .unwrap_or_else(|| {
                Fact::unknown(format!(
                    "no block device {major}:{minor} in {}/dev/block",
                    roots.sys.display()
                ))
            }),
        None => Fact::unknown(numbers.why.clone()),
    };
    let device_number = match numbers.stat_dev {
        Some((ma, mi)) => Fact::Known(format!("{ma}:{mi}")),
        None => Fact::unknown(numbers.why.clone()),
    };
    let allocated = os.allocated_bytes.clone();
    let sparse = match &allocated {
        Fact::Known(a) => Fact::Known(*a < size_bytes),
        Fact::Unknown { unknown } => Fact::unknown(unknown.clone()),
    };
    Ok(FileFacts {
        path: path.to_path_buf(),
        size_bytes,
        allocated_bytes: allocated,
        sparse,
        extents: os.extents,
        fs_type: fs_type(path).into(),
        device_number,
        device,
        o_direct: os.o_direct,
        page_cache: residency(path).into(),
        memory: meminfo(roots).into(),
        io_uring: io_uring_support(),
        io_uring_disabled_sysctl: read_num(&roots.proc.join("sys/kernel/io_uring_disabled")),
    })
}

/// io_uring as the I/O layer sees it.
pub fn io_uring_support() -> Support {
    #[cfg(target_os = "linux")]
    {
        match crate::uring::probe() {
            Ok(()) => Support {
                works: Some(true),
                detail: "io_uring rings can be created".into(),
            },
            Err(why) => Support {
                works: Some(false),
                detail: why,
            },
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Support {
            works: Some(false),
            detail: "io_uring exists only on Linux".into(),
        }
    }
}

#[cfg(target_os = "linux")]
mod os {
    //! The Linux system calls behind the probes.
    use super::{Extents, Fact, OsFacts, Support};
    use std::fs::File;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::path::Path;

    pub(super) fn file_facts(path: &Path) -> OsFacts {
        OsFacts {
            allocated_bytes: match std::fs::metadata(path) {
                Ok(m) => Fact::Known(m.blocks() * 512),
                Err(e) => Fact::unknown(e.to_string()),
            },
            extents: extents(path).into(),
            o_direct: o_direct(path),
        }
    }

    /// Opens with O_DIRECT and reads one 4 KiB block at offset 0 into an aligned buffer: some
    /// file systems accept the open and fail the read with EINVAL.
    fn o_direct(path: &Path) -> Support {
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
        {
            Ok(f) => f,
            Err(e) => {
                return Support {
                    works: Some(false),
                    detail: format!("open with O_DIRECT failed: {e}"),
                }
            }
        };
        const BLOCK: usize = 4096;
        let mut storage = vec![0u8; 2 * BLOCK];
        let start = storage.as_ptr().align_offset(BLOCK);
        let buf = &mut storage[start..start + BLOCK];
        match std::os::unix::fs::FileExt::read_at(&file, buf, 0) {
            Ok(_) => Support {
                works: Some(true),
                detail: "O_DIRECT open and aligned 4 KiB read work".into(),
            },
            Err(e) => Support {
                works: Some(false),
                detail: format!("O_DIRECT read failed: {e}"),
            },
        }
    }

    // FIEMAP (linux/fiemap.h): the kernel fills up to fm_extent_count extents after the header.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct FiemapExtent {
        fe_logical: u64,
        fe_physical: u64,
        fe_length: u64,
        fe_reserved64: [u64; 2],
        fe_flags: u32,
        fe_reserved: [u32; 3],
    }

    const BATCH: usize = 256;

    #[repr(C)]
    struct Fiemap {
        fm_start: u64,
        fm_length: u64,
        fm_flags: u32,
        fm_mapped_extents: u32,
        fm_extent_count: u32,
        fm_reserved: u32,
        fm_extents: [FiemapExtent; BATCH],
    }

    /// `_IOWR('f', 11, struct fiemap)` with the 32-byte header size. The direction field sits
    /// elsewhere on powerpc, mips and sparc64 (read|write is `6 << 29` there, `3 << 30`
    /// elsewhere), but both are the same value, `0xC000_0000`: one constant serves every
    /// architecture.
    const FS_IOC_FIEMAP: u64 = (3 << 30) | (32 << 16) | (0x66 << 8) | 11;
    const FIEMAP_EXTENT_LAST: u32 = 1;

    /// Counts physically contiguous runs like `filefrag`: adjacent extents merge.
    fn extents(path: &Path) -> Result<Extents, String> {
        let file = File::open(path).map_err(|e| e.to_string())?;
        let mut req = Box::new(Fiemap {
            fm_start: 0,
            fm_length: 0,
            fm_flags: 0,
            fm_mapped_extents: 0,
            fm_extent_count: 0,
            fm_reserved: 0,
            fm_extents: [FiemapExtent::default(); BATCH],
        });
        let (mut count, mut first, mut prev): (u64, Option<u64>, Option<FiemapExtent>) =
            (0, None, None);
        let mut start = 0u64;
        loop {
            req.fm_start = start;
            req.fm_length = u64::MAX - start;
            req.fm_extent_count = BATCH as u32;
            req.fm_mapped_extents = 0;
            // SAFETY: req is a live, writable fiemap header followed by fm_extent_count extents,
            // exactly the layout the ioctl reads and fills; the descriptor is valid.
            let rc = unsafe {
                libc::ioctl(
                    std::os::fd::AsRawFd::as_raw_fd(&file),
                    FS_IOC_FIEMAP as _,
                    &mut *req as *mut Fiemap,
                )
            };
            if rc != 0 {
                let e = std::io::Error::last_os_error();
                return Err(format!("FIEMAP not supported here: {e}"));
            }
            let mapped = (req.fm_mapped_extents as usize).min(BATCH);
            if mapped == 0 {
                break;
            }
            let mut last_seen = false;
            for e in &req.fm_extents[..mapped] {
                first.get_or_insert(e.fe_physical);
                let contiguous = prev.is_some_and(|p| {
                    p.fe_logical + p.fe_length == e.fe_logical
                        && p.fe_physical + p.fe_length == e.fe_physical
                });
                if !contiguous {
                    count += 1;
                }
                prev = Some(*e);
                last_seen |= e.fe_flags & FIEMAP_EXTENT_LAST != 0;
            }
            let tail = req.fm_extents[mapped - 1];
            start = tail.fe_logical + tail.fe_length;
            if last_seen || mapped < BATCH {
                break;
            }
        }
        Ok(Extents {
            count,
            first_physical_offset: first,
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    //! Stubs: these probes are Linux's; other systems report "unknown" with the reason.
    use super::{Fact, OsFacts, Support};
    use std::path::Path;

    const WHY: &str = "probe implemented on Linux only";

    pub(super) fn file_facts(_path: &Path) -> OsFacts {
        OsFacts {
            allocated_bytes: Fact::unknown(WHY),
            extents: Fact::unknown(WHY),
            o_direct: Support {
                works: None,
                detail: WHY.into(),
            },
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
    macro_rules! skip_note {
        ($($arg:tt)*) => {{
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), $($arg)*);
        }};
    }

    use super::*;
    use crate::host::page_cache::evict;
    use std::fs;

    #[test]
    fn real_file_probe_residency_and_evict() {
        use std::io::Write;
        let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        let path = dir.path().join("f");
        let mut f = fs::File::create(&path).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        drop(f);
        let _ = fs::read(&path).unwrap();
        let facts = probe_file(&path, &Roots::default()).unwrap();
        assert_eq!(facts.size_bytes, 1 << 20);
        assert!(facts.fs_type.known().is_some(), "{:?}", facts.fs_type);
        assert_eq!(facts.sparse.known(), Some(&false));
        let r = residency(&path).unwrap();
        assert_eq!(r.file_bytes, 1 << 20);
        match facts.extents {
            Fact::Known(e) => assert!(e.count >= 1),
            Fact::Unknown { unknown } => skip_note!("SKIP extents: {unknown}"),
        }
        if evict(&path).unwrap().is_verified() {
            assert_eq!(residency(&path).unwrap().cached_bytes, 0);
        } else {
            skip_note!("SKIP eviction check: eviction could not be verified on this file system");
        }
        // A sparse file: allocated less than its size.
        let sparse = dir.path().join("s");
        fs::File::create(&sparse)
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        let facts = probe_file(&sparse, &Roots::default()).unwrap();
        assert_eq!(facts.sparse.known(), Some(&true));
    }
}
