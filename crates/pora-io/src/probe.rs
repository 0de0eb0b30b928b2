//! Facts `pora doctor` and `pora tune` need about a file's device, file system and OS: sector
//! sizes, I/O scheduler, nr_requests, read-ahead, rotational, dm-crypt / device-mapper / md RAID
//! layers, file system type, whether O_DIRECT works, io_uring availability, page-cache residency
//! (mincore) against available memory, sparseness and extent count (FIEMAP); plus [`evict`].
//!
//! Every sysfs / procfs reader takes a [`Roots`] so tests run on canned trees. The OS calls
//! (stat, statfs, mincore, FIEMAP, O_DIRECT) exist on Linux only; elsewhere they report
//! "unknown" with the reason, so the crate builds for Windows and macOS unchanged.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// Where sysfs and procfs are mounted (`/sys`, `/proc` on a real system).
#[derive(Clone, Debug)]
pub struct Roots {
    pub sys: PathBuf,
    pub proc: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            sys: PathBuf::from("/sys"),
            proc: PathBuf::from("/proc"),
        }
    }
}

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

/// The request queue settings of one block device.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueFacts {
    /// The active scheduler (the bracketed one in `queue/scheduler`).
    pub scheduler: Option<String>,
    pub nr_requests: Option<u32>,
    pub read_ahead_kb: Option<u32>,
    pub rotational: Option<bool>,
    pub logical_block_bytes: Option<u32>,
    pub physical_block_bytes: Option<u32>,
}

/// A stacking layer between the file system and the disks.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Layer {
    /// dm-crypt (LUKS or plain): every read is decrypted on the CPU.
    DmCrypt {
        name: String,
        dm_name: Option<String>,
    },
    /// Another device-mapper target (LVM, multipath, ...); `subsystem` is the uuid prefix.
    DeviceMapper { name: String, subsystem: String },
    /// md software RAID with its level (`raid0`, `raid1`, ...).
    Raid { name: String, level: String },
}

/// A physical disk at the bottom of the stack.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeafDisk {
    pub name: String,
    pub model: Option<String>,
    pub queue: QueueFacts,
}

/// The block device a file system sits on, resolved through sysfs.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceFacts {
    pub major: u32,
    pub minor: u32,
    /// The device of the file system (`vda1`, `dm-0`, `md0`).
    pub name: String,
    /// The whole device after partition -> parent (`vda`, `dm-0`, `md0`).
    pub disk: String,
    pub model: Option<String>,
    /// Queue of `disk`: governs read-ahead and block sizes for the file system.
    pub queue: QueueFacts,
    /// dm / md layers from the top down.
    pub layers: Vec<Layer>,
    /// Disks at the bottom (just `disk` when nothing is stacked).
    pub leaves: Vec<LeafDisk>,
}

/// How much of a file the page cache holds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Residency {
    pub cached_bytes: u64,
    pub file_bytes: u64,
}

/// Memory figures from `/proc/meminfo`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemInfo {
    pub total_bytes: u64,
    pub available_bytes: u64,
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

/// Who a file is and what it sits on, from cheap calls only (stat, statfs, a few sysfs reads):
/// what a tune profile is keyed on, checked at every `pora mine` start. The expensive probes
/// (mincore, FIEMAP, O_DIRECT, io_uring) stay in [`probe_file`].
#[derive(Clone, Debug, PartialEq)]
pub struct Identity {
    /// `major:minor` of the file system's device (`st_dev`).
    pub device_number: Option<String>,
    /// The device model from sysfs, when it has one.
    pub model: Option<String>,
    pub fs_type: Option<String>,
}

/// What the OS layer finds for [`identify`].
struct OsIdentity {
    /// The file system's `st_dev`.
    stat_dev: Option<(u32, u32)>,
    /// The block device to look up in sysfs.
    dev: Option<(u32, u32)>,
    fs_type: Fact<String>,
}

/// [`Identity`] of `path`; facts that cannot be read stay `None`.
pub fn identify(path: &Path, roots: &Roots) -> Identity {
    let OsIdentity {
        stat_dev,
        dev,
        fs_type,
    } = os::identity(path, roots);
    Identity {
        device_number: stat_dev.map(|(ma, mi)| format!("{ma}:{mi}")),
        model: dev
            .and_then(|(ma, mi)| device_facts(roots, ma, mi))
            .and_then(|d| d.model),
        fs_type: fs_type.known().cloned(),
    }
}

/// Probes everything about `path` (read-only).
pub fn probe_file(path: &Path, roots: &Roots) -> Result<FileFacts, String> {
    let size_bytes = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let os = os::file_facts(path, roots);
    let device = match os.dev {
        Some((major, minor)) => device_facts(roots, major, minor)
            .map(Fact::Known)
            .unwrap_or_else(|| {
                Fact::unknown(format!(
                    "no block device {major}:{minor} in {}/dev/block",
                    roots.sys.display()
                ))
            }),
        None => Fact::unknown(os.dev_why.clone()),
    };
    let device_number = match os.stat_dev {
        Some((ma, mi)) => Fact::Known(format!("{ma}:{mi}")),
        None => Fact::unknown(os.dev_why.clone()),
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
        fs_type: os.fs_type,
        device_number,
        device,
        o_direct: os.o_direct,
        page_cache: residency(path).into(),
        memory: meminfo(roots).into(),
        io_uring: io_uring_support(),
        io_uring_disabled_sysctl: read_trim(&roots.proc.join("sys/kernel/io_uring_disabled"))
            .and_then(|s| s.parse().ok()),
    })
}

// ---------------------------------------------------------------------------------------------
// sysfs / procfs readers (plain file reads under a root: platform independent, testable)

fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_num<T: std::str::FromStr>(path: &Path) -> Option<T> {
    read_trim(path)?.parse().ok()
}

/// The active scheduler from `queue/scheduler` text (`none [mq-deadline] kyber`).
pub fn active_scheduler(text: &str) -> Option<String> {
    let t = text.trim();
    if let (Some(a), Some(b)) = (t.find('['), t.find(']')) {
        return (a < b).then(|| t[a + 1..b].to_string());
    }
    // A device with a single choice prints it without brackets.
    (!t.is_empty() && !t.contains(' ')).then(|| t.to_string())
}

/// Queue settings from `<device dir>/queue`.
pub fn queue_facts(device_dir: &Path) -> QueueFacts {
    let q = device_dir.join("queue");
    QueueFacts {
        scheduler: read_trim(&q.join("scheduler")).and_then(|s| active_scheduler(&s)),
        nr_requests: read_num(&q.join("nr_requests")),
        read_ahead_kb: read_num(&q.join("read_ahead_kb")),
        rotational: read_num::<u8>(&q.join("rotational")).map(|r| r != 0),
        logical_block_bytes: read_num(&q.join("logical_block_size")),
        physical_block_bytes: read_num(&q.join("physical_block_size")),
    }
}

/// The whole-device directory for a device directory: a partition's parent, else itself.
fn whole_device_dir(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(parent) if dir.join("partition").exists() => parent.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn model_of(disk_dir: &Path) -> Option<String> {
    read_trim(&disk_dir.join("device/model")).filter(|m| !m.is_empty())
}

/// Resolves block device `major:minor` through `<sys>/dev/block` and describes it, its queue,
/// the dm / md layers under it and the disks at the bottom. `None` when sysfs has no such device.
pub fn device_facts(roots: &Roots, major: u32, minor: u32) -> Option<DeviceFacts> {
    let dir = std::fs::canonicalize(roots.sys.join(format!("dev/block/{major}:{minor}"))).ok()?;
    let disk_dir = whole_device_dir(&dir);
    let mut layers = Vec::new();
    let mut leaves = Vec::new();
    walk_stack(&disk_dir, 0, &mut layers, &mut leaves);
    Some(DeviceFacts {
        major,
        minor,
        name: dir_name(&dir),
        disk: dir_name(&disk_dir),
        model: model_of(&disk_dir),
        queue: queue_facts(&disk_dir),
        layers,
        leaves,
    })
}

/// Depth-first walk over `slaves/`: records dm / md layers and the leaf disks.
fn walk_stack(disk_dir: &Path, depth: usize, layers: &mut Vec<Layer>, leaves: &mut Vec<LeafDisk>) {
    let name = dir_name(disk_dir);
    if let Some(layer) = layer_of(disk_dir, &name) {
        layers.push(layer);
    }
    let mut slaves: Vec<PathBuf> = std::fs::read_dir(disk_dir.join("slaves"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| std::fs::canonicalize(e.path()).ok())
                .collect()
        })
        .unwrap_or_default();
    slaves.sort();
    // Stacks are a few levels deep; the bound only guards against a malformed tree.
    if slaves.is_empty() || depth >= 8 {
        if !leaves.iter().any(|l| l.name == name) {
            leaves.push(LeafDisk {
                name,
                model: model_of(disk_dir),
                queue: queue_facts(disk_dir),
            });
        }
        return;
    }
    for slave in slaves {
        walk_stack(&whole_device_dir(&slave), depth + 1, layers, leaves);
    }
}

fn layer_of(disk_dir: &Path, name: &str) -> Option<Layer> {
    if let Some(uuid) = read_trim(&disk_dir.join("dm/uuid")) {
        let dm_name = read_trim(&disk_dir.join("dm/name"));
        return Some(if uuid.starts_with("CRYPT-") {
            Layer::DmCrypt {
                name: name.to_string(),
                dm_name,
            }
        } else {
            let subsystem = uuid
                .split('-')
                .next()
                .filter(|s| !s.is_empty())
                .unwrap_or("unknown")
                .to_string();
            Layer::DeviceMapper {
                name: name.to_string(),
                subsystem,
            }
        });
    }
    read_trim(&disk_dir.join("md/level")).map(|level| Layer::Raid {
        name: name.to_string(),
        level,
    })
}

/// `MemTotal` and `MemAvailable` from `<proc>/meminfo`.
pub fn meminfo(roots: &Roots) -> Result<MemInfo, String> {
    let path = roots.proc.join("meminfo");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_meminfo(&text).ok_or_else(|| format!("{}: no MemTotal / MemAvailable", path.display()))
}

fn parse_meminfo(text: &str) -> Option<MemInfo> {
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix(key)?.strip_prefix(':')?;
            let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kb * 1024)
        })
    };
    Some(MemInfo {
        total_bytes: field("MemTotal")?,
        available_bytes: field("MemAvailable")?,
    })
}

/// The mount source (`/dev/nvme0n1p2`) of the file system whose `st_dev` is `major:minor`, from
/// `/proc/self/mountinfo` text. Btrfs and some others report an anonymous `0:N` device in
/// `st_dev`; the mount source leads to the real block device.
pub fn mount_source(mountinfo: &str, major: u32, minor: u32) -> Option<String> {
    let want = format!("{major}:{minor}");
    mountinfo.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        if fields.get(2) != Some(&want.as_str()) {
            return None;
        }
        // After the optional fields comes " - fstype source options".
        let dash = fields.iter().position(|f| *f == "-")?;
        fields.get(dash + 2).map(|s| s.to_string())
    })
}

/// The name of a `statfs` `f_type` magic number.
pub fn fs_name(magic: u64) -> Option<&'static str> {
    Some(match magic {
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
        0x2011_BAB0 => "exfat",
        0x4D44 => "vfat",
        0x7371_7368 => "squashfs",
        0x3153_464A => "jfs",
        0x5265_4973 => "reiserfs",
        _ => return None,
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

/// How much of `path` is in the page cache (mincore over read-only mappings, 1 GiB at a time).
pub fn residency(path: &Path) -> Result<Residency, String> {
    let file_bytes = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let (resident_pages, total_pages) = crate::device::resident_pages(path).map_err(|e| e.0)?;
    let cached_bytes = match total_pages {
        0 => 0,
        _ => (resident_pages as u128 * file_bytes as u128 / total_pages as u128) as u64,
    };
    Ok(Residency {
        cached_bytes,
        file_bytes,
    })
}

/// [`residency`] estimated from 64 windows of 2 MiB spread over the file: cheap at any file size,
/// for the choice made at every mining start.
pub fn residency_sampled(path: &Path) -> Result<Residency, String> {
    let file_bytes = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let (resident, checked) =
        crate::device::resident_pages_sampled(path, 64, 2 << 20).map_err(|e| e.0)?;
    let cached_bytes = match checked {
        0 => 0,
        _ => (resident as u128 * file_bytes as u128 / checked as u128) as u64,
    };
    Ok(Residency {
        cached_bytes,
        file_bytes,
    })
}

/// Drops `path`'s pages from the page cache (POSIX_FADV_DONTNEED) and returns whether mincore
/// then shows none resident. `false` (not an error) when eviction cannot be verified, e.g. pages
/// mapped by another process, or an OS without the call.
pub fn evict(path: &Path) -> Result<bool, crate::IoError> {
    Ok(crate::device::evict(path)?.is_verified())
}

#[cfg(target_os = "linux")]
mod os {
    //! The Linux system calls behind the probes.
    use super::{fs_name, mount_source, Extents, Fact, OsIdentity, Roots, Support};
    use std::fs::File;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::path::Path;

    pub(super) struct OsFacts {
        /// The file system's `st_dev`.
        pub stat_dev: Option<(u32, u32)>,
        /// The block device to look up in sysfs (the mount source's for anonymous devices).
        pub dev: Option<(u32, u32)>,
        pub dev_why: String,
        pub allocated_bytes: Fact<u64>,
        pub extents: Fact<Extents>,
        pub fs_type: Fact<String>,
        pub o_direct: Support,
    }

    /// `st_dev`, the block device behind it (through mountinfo for anonymous devices) and the
    /// file system type: the cheap part of [`file_facts`].
    pub(super) fn identity(path: &Path, roots: &Roots) -> OsIdentity {
        let meta = std::fs::metadata(path);
        let (stat_dev, dev, _) = device_numbers(meta.as_ref().ok(), roots);
        OsIdentity {
            stat_dev,
            dev,
            fs_type: fs_type(path).into(),
        }
    }

    type DeviceNumbers = (Option<(u32, u32)>, Option<(u32, u32)>, String);

    fn device_numbers(meta: Option<&std::fs::Metadata>, roots: &Roots) -> DeviceNumbers {
        let stat_dev = meta.map(|m| (libc::major(m.dev()), libc::minor(m.dev())));
        let (dev, dev_why) = match stat_dev {
            Some((0, minor)) => anonymous_device(roots, minor),
            Some(d) => (Some(d), String::new()),
            None => (None, "stat failed".into()),
        };
        (stat_dev, dev, dev_why)
    }

    pub(super) fn file_facts(path: &Path, roots: &Roots) -> OsFacts {
        let meta = std::fs::metadata(path);
        let (stat_dev, dev, dev_why) = device_numbers(meta.as_ref().ok(), roots);
        OsFacts {
            stat_dev,
            dev,
            dev_why,
            allocated_bytes: match &meta {
                Ok(m) => Fact::Known(m.blocks() * 512),
                Err(e) => Fact::unknown(e.to_string()),
            },
            extents: extents(path).into(),
            fs_type: fs_type(path).into(),
            o_direct: o_direct(path),
        }
    }

    /// Btrfs and friends: follow the mount source in mountinfo to a block device.
    fn anonymous_device(roots: &Roots, minor: u32) -> (Option<(u32, u32)>, String) {
        let info = std::fs::read_to_string(roots.proc.join("self/mountinfo")).unwrap_or_default();
        let Some(source) = mount_source(&info, 0, minor) else {
            return (
                None,
                format!("anonymous device 0:{minor} not found in mountinfo"),
            );
        };
        match std::fs::metadata(&source) {
            Ok(m) if m.rdev() != 0 => (
                Some((libc::major(m.rdev()), libc::minor(m.rdev()))),
                String::new(),
            ),
            _ => (
                None,
                format!("file system on {source} (device 0:{minor}) has no single block device"),
            ),
        }
    }

    fn fs_type(path: &Path) -> Result<String, String> {
        let c_path =
            std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: statfs is plain old data, zero is a valid bit pattern for it.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: c_path is NUL-terminated and st is a valid, writable statfs.
        if unsafe { libc::statfs(c_path.as_ptr(), &mut st) } != 0 {
            return Err(format!("statfs: {}", std::io::Error::last_os_error()));
        }
        #[allow(clippy::unnecessary_cast)] // f_type's width differs between architectures
        let magic = st.f_type as u64 & 0xFFFF_FFFF;
        Ok(fs_name(magic)
            .map(str::to_string)
            .unwrap_or_else(|| format!("unknown (magic {magic:#x})")))
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

    /// `_IOWR('f', 11, struct fiemap)` with the 32-byte header size; the direction bits differ
    /// on a few architectures.
    #[cfg(any(
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "mips",
        target_arch = "mips64",
        target_arch = "sparc64"
    ))]
    const FS_IOC_FIEMAP: u64 = (6 << 29) | (32 << 16) | (0x66 << 8) | 11;
    #[cfg(not(any(
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "mips",
        target_arch = "mips64",
        target_arch = "sparc64"
    )))]
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
    use super::{Extents, Fact, OsIdentity, Roots, Support};
    use std::path::Path;

    const WHY: &str = "probe implemented on Linux only";

    pub(super) struct OsFacts {
        pub stat_dev: Option<(u32, u32)>,
        pub dev: Option<(u32, u32)>,
        pub dev_why: String,
        pub allocated_bytes: Fact<u64>,
        pub extents: Fact<Extents>,
        pub fs_type: Fact<String>,
        pub o_direct: Support,
    }

    pub(super) fn identity(_path: &Path, _roots: &Roots) -> OsIdentity {
        OsIdentity {
            stat_dev: None,
            dev: None,
            fs_type: Fact::unknown(WHY),
        }
    }

    pub(super) fn file_facts(_path: &Path, _roots: &Roots) -> OsFacts {
        OsFacts {
            stat_dev: None,
            dev: None,
            dev_why: WHY.into(),
            allocated_bytes: Fact::unknown(WHY),
            extents: Fact::unknown(WHY),
            fs_type: Fact::unknown(WHY),
            o_direct: Support {
                works: None,
                detail: WHY.into(),
            },
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    /// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
    #[allow(unused_macros)] // some platforms skip nothing
    macro_rules! skip_note {
        ($($arg:tt)*) => {{
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), $($arg)*);
        }};
    }

    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn queue(dir: &Path, sched: &str, ra_kb: u32, rot: u8) {
        write(&dir.join("queue/scheduler"), sched);
        write(&dir.join("queue/nr_requests"), "256\n");
        write(&dir.join("queue/read_ahead_kb"), &format!("{ra_kb}\n"));
        write(&dir.join("queue/rotational"), &format!("{rot}\n"));
        write(&dir.join("queue/logical_block_size"), "512\n");
        write(&dir.join("queue/physical_block_size"), "4096\n");
    }

    /// A canned tree: 254:1 is partition vda1 of vda; 253:0 is dm-0 (LUKS) over md0 (raid0)
    /// over nvme0n1p1 and nvme1n1.
    fn canned() -> (tempfile::TempDir, Roots) {
        let t = tempfile::tempdir().unwrap();
        let sys = t.path().join("sys");
        let vda = sys.join("devices/virtio1/block/vda");
        queue(&vda, "none [mq-deadline] kyber bfq\n", 8192, 1);
        write(&vda.join("device/model"), "QEMU disk  \n");
        write(&vda.join("vda1/partition"), "1\n");
        let dm = sys.join("devices/virtual/block/dm-0");
        queue(&dm, "none\n", 128, 0);
        write(&dm.join("dm/uuid"), "CRYPT-LUKS2-abcdef-luks\n");
        write(&dm.join("dm/name"), "luks-data\n");
        let md = sys.join("devices/virtual/block/md0");
        queue(&md, "none\n", 256, 0);
        write(&md.join("md/level"), "raid0\n");
        let n0 = sys.join("devices/pci/nvme0/block/nvme0n1");
        queue(&n0, "[none] mq-deadline\n", 128, 0);
        write(&n0.join("nvme0n1p1/partition"), "1\n");
        let n1 = sys.join("devices/pci/nvme1/block/nvme1n1");
        queue(&n1, "[none] mq-deadline\n", 128, 0);
        fs::create_dir_all(dm.join("slaves")).unwrap();
        fs::create_dir_all(md.join("slaves")).unwrap();
        symlink(&md, dm.join("slaves/md0")).unwrap();
        symlink(n0.join("nvme0n1p1"), md.join("slaves/nvme0n1p1")).unwrap();
        symlink(&n1, md.join("slaves/nvme1n1")).unwrap();
        fs::create_dir_all(sys.join("dev/block")).unwrap();
        symlink(vda.join("vda1"), sys.join("dev/block/254:1")).unwrap();
        symlink(&dm, sys.join("dev/block/253:0")).unwrap();
        let proc = t.path().join("proc");
        write(
            &proc.join("meminfo"),
            "MemTotal:        8000000 kB\nMemFree:  100 kB\nMemAvailable:    2000000 kB\n",
        );
        (t, Roots { sys, proc })
    }

    #[test]
    fn partition_resolves_to_parent_disk_queue() {
        let (_t, roots) = canned();
        let d = device_facts(&roots, 254, 1).unwrap();
        assert_eq!((d.name.as_str(), d.disk.as_str()), ("vda1", "vda"));
        assert_eq!(d.model.as_deref(), Some("QEMU disk"));
        assert_eq!(d.queue.scheduler.as_deref(), Some("mq-deadline"));
        assert_eq!(d.queue.read_ahead_kb, Some(8192));
        assert_eq!(d.queue.rotational, Some(true));
        assert_eq!(
            (d.queue.logical_block_bytes, d.queue.physical_block_bytes),
            (Some(512), Some(4096))
        );
        assert!(d.layers.is_empty());
        assert_eq!(d.leaves.len(), 1);
        assert_eq!(d.leaves[0].name, "vda");
    }

    #[test]
    fn crypt_over_raid_layers_and_leaves() {
        let (_t, roots) = canned();
        let d = device_facts(&roots, 253, 0).unwrap();
        assert_eq!(d.disk, "dm-0");
        assert_eq!(
            d.layers,
            vec![
                Layer::DmCrypt {
                    name: "dm-0".into(),
                    dm_name: Some("luks-data".into())
                },
                Layer::Raid {
                    name: "md0".into(),
                    level: "raid0".into()
                }
            ]
        );
        let leaves: Vec<_> = d.leaves.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(leaves, ["nvme0n1", "nvme1n1"]);
        assert_eq!(d.leaves[0].queue.scheduler.as_deref(), Some("none"));
        assert!(device_facts(&roots, 8, 0).is_none());
    }

    #[test]
    fn meminfo_and_scheduler_parsing() {
        let (_t, roots) = canned();
        assert_eq!(
            meminfo(&roots).unwrap(),
            MemInfo {
                total_bytes: 8_000_000 * 1024,
                available_bytes: 2_000_000 * 1024
            }
        );
        assert_eq!(active_scheduler("none"), Some("none".into()));
        assert_eq!(active_scheduler("[none] mq-deadline"), Some("none".into()));
        assert_eq!(active_scheduler(""), None);
        let bad = Roots {
            sys: roots.sys.clone(),
            proc: roots.sys.join("nope"),
        };
        assert!(meminfo(&bad).is_err());
    }

    #[test]
    fn mountinfo_source_for_anonymous_device() {
        let info = "29 1 0:27 / / rw,relatime shared:1 - btrfs /dev/nvme0n1p2 rw,ssd\n\
                    30 29 0:5 / /dev rw - devtmpfs udev rw\n";
        assert_eq!(mount_source(info, 0, 27).as_deref(), Some("/dev/nvme0n1p2"));
        assert_eq!(mount_source(info, 0, 99), None);
        assert_eq!(fs_name(0xEF53), Some("ext4"));
        assert_eq!(fs_name(0x1234), None);
    }

    #[cfg(target_os = "linux")]
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
        if evict(&path).unwrap() {
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
