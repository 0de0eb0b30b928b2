//! Which block device holds a file, resolved through sysfs in one place for every caller (bench's
//! read counters, the O_DIRECT alignment, doctor, tune profiles): the file system's device number
//! (`st_dev`, following the mount source for the anonymous `0:N` devices of btrfs and network
//! file systems), the device's sysfs directory, the whole disk a partition belongs to, the dm / md
//! layers stacked under it, the disks at the bottom and their request-queue settings.

use super::{read_num, read_trim, Roots, Unknown};
use serde::Serialize;
use std::path::{Path, PathBuf};

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
    pub sys_dir: PathBuf,
    /// sysfs directory of `disk` (where `queue/` lives).
    pub disk_sys_dir: PathBuf,
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
    /// Hardware queues (`mq/` entries); each has `nr_requests` requests of its own.
    pub hw_queues: Option<u32>,
    /// Of `hw_queues`, those a read is sent on ([`read_queues`]): an NVMe drive's poll queues
    /// and dedicated write queues take none of pora's reads.
    pub read_queues: Option<u32>,
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
    /// No device behind it: kernel code on the host's own CPUs serves its reads (a loop device,
    /// a RAM disk, zram, null_blk). sysfs gives such a disk no `device` link; a disk with
    /// hardware (or a hypervisor's virtual hardware: virtio, NVMe, SCSI) has one.
    pub host_served: bool,
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
    /// How one read reaches `leaves` through `layers`.
    #[serde(skip)]
    pub reads: ReadSpread,
}

/// How the reads of a stacked device reach the disks at the bottom: the shape of the stack, as
/// far as it decides which disks a read can touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadSpread {
    /// One disk: its index in [`DeviceFacts::leaves`].
    Disk(usize),
    /// Each read goes to one of these (md raid1: mirrors; md picks one per read).
    AnyOne(Vec<ReadSpread>),
    /// Reads are spread over all of these (raid0 stripes, linear, dm tables, raid4/5/6 data).
    All(Vec<ReadSpread>),
}

impl Default for ReadSpread {
    fn default() -> Self {
        ReadSpread::All(Vec::new())
    }
}

/// The sysfs directory of block device `major:minor`: `<sys>/dev/block/MAJ:MIN`, resolved.
pub fn sysfs_dir(sys: &Path, major: u32, minor: u32) -> std::io::Result<PathBuf> {
    std::fs::canonicalize(sys.join(format!("dev/block/{major}:{minor}")))
}

/// The whole disk's sysfs directory for a device directory. A partition's directory sits inside
/// its disk's, has a `partition` file and no `queue/` of its own: the queue, the model and the
/// layers below belong to the parent. Any other device is its own disk.
pub fn whole_disk_dir(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(parent)
            if dir.join("partition").exists()
                || (!dir.join("queue").exists() && parent.join("queue").exists()) =>
        {
            parent.to_path_buf()
        }
        _ => dir.to_path_buf(),
    }
}

/// The kernel's name of a device: the last component of its sysfs directory.
fn dir_name(dir: &Path) -> Option<String> {
    dir.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn model_of(disk_dir: &Path) -> Option<String> {
    read_trim(&disk_dir.join("device/model")).filter(|m| !m.is_empty())
}

/// `(major, minor)` of a device number (`st_dev`, `st_rdev`).
#[cfg(target_os = "linux")]
pub(crate) fn major_minor(dev: u64) -> (u32, u32) {
    (libc::major(dev), libc::minor(dev))
}

/// The block device holding `path` (its file system's `st_dev`), Linux only.
pub fn block_device_of(path: &Path) -> Result<BlockDevice, Unknown> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let meta =
            std::fs::metadata(path).map_err(|e| Unknown(format!("{}: {e}", path.display())))?;
        let (major, minor) = major_minor(meta.dev());
        if major == 0 {
            return Err(Unknown(format!(
                "{} is on a file system without a block device (device {major}:{minor}: tmpfs, overlayfs, btrfs subvolume or network)",
                path.display()
            )));
        }
        let sys = Roots::default().sys;
        let sys_dir = sysfs_dir(&sys, major, minor).map_err(|e| {
            Unknown(format!(
                "{}: {e} (device of {})",
                sys.join(format!("dev/block/{major}:{minor}")).display(),
                path.display()
            ))
        })?;
        let no_name = |dir: &Path| Unknown(format!("{} has no device name", dir.display()));
        let name = dir_name(&sys_dir).ok_or_else(|| no_name(&sys_dir))?;
        let disk_sys_dir = whole_disk_dir(&sys_dir);
        let disk = dir_name(&disk_sys_dir).ok_or_else(|| no_name(&disk_sys_dir))?;
        Ok(BlockDevice {
            name,
            disk,
            major,
            minor,
            sys_dir,
            disk_sys_dir,
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        Err(Unknown(super::NOT_LINUX.into()))
    }
}

/// Parses the `MAJ:MIN` text of a sysfs `dev` file.
pub fn parse_dev_numbers(text: &str) -> Option<(u32, u32)> {
    let (maj, min) = text.trim().split_once(':')?;
    Some((maj.parse().ok()?, min.parse().ok()?))
}

/// The file system's device number and the block device to look up in sysfs for it.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeviceNumbers {
    /// The file system's `st_dev`.
    pub stat_dev: Option<(u32, u32)>,
    /// The block device behind it (the mount source's for anonymous devices).
    pub dev: Option<(u32, u32)>,
    /// Why `dev` is `None`.
    pub why: String,
}

/// [`DeviceNumbers`] of the file at `path` (Linux only; elsewhere unknown with the reason).
pub(crate) fn device_numbers(path: &Path, roots: &Roots) -> DeviceNumbers {
    #[cfg(target_os = "linux")]
    {
        linux_device_numbers(path, roots)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (path, roots);
        DeviceNumbers {
            why: "probe implemented on Linux only".into(),
            ..DeviceNumbers::default()
        }
    }
}

#[cfg(target_os = "linux")]
fn linux_device_numbers(path: &Path, roots: &Roots) -> DeviceNumbers {
    use std::os::unix::fs::MetadataExt;
    let stat_dev = std::fs::metadata(path).ok().map(|m| major_minor(m.dev()));
    let (dev, why) = match stat_dev {
        Some((0, minor)) => anonymous_device(roots, minor),
        Some(d) => (Some(d), String::new()),
        None => (None, "stat failed".into()),
    };
    DeviceNumbers { stat_dev, dev, why }
}

/// Btrfs and friends: follow the mount source in mountinfo to a block device.
#[cfg(target_os = "linux")]
fn anonymous_device(roots: &Roots, minor: u32) -> (Option<(u32, u32)>, String) {
    use std::os::unix::fs::MetadataExt;
    let info = std::fs::read_to_string(roots.proc.join("self/mountinfo")).unwrap_or_default();
    let Some(source) = mount_source(&info, 0, minor) else {
        return (
            None,
            format!("anonymous device 0:{minor} not found in mountinfo"),
        );
    };
    match std::fs::metadata(&source) {
        Ok(m) if m.rdev() != 0 => (Some(major_minor(m.rdev())), String::new()),
        _ => (
            None,
            format!("file system on {source} (device 0:{minor}) has no single block device"),
        ),
    }
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

/// The active scheduler from `queue/scheduler` text (`none [mq-deadline] kyber`).
pub fn active_scheduler(text: &str) -> Option<String> {
    let t = text.trim();
    if let (Some(a), Some(b)) = (t.find('['), t.find(']')) {
        return (a < b).then(|| t[a + 1..b].to_string());
    }
    // A device with a single choice prints it without brackets.
    (!t.is_empty() && !t.contains(' ')).then(|| t.to_string())
}

/// Queue settings from `<device dir>/queue`, and its `mq/` queues (`sys`: where sysfs is, for
/// the driver's parameters [`read_queues`] reads).
pub fn queue_facts(device_dir: &Path, sys: &Path) -> QueueFacts {
    let q = device_dir.join("queue");
    let mut facts = QueueFacts {
        scheduler: read_trim(&q.join("scheduler")).and_then(|s| active_scheduler(&s)),
        nr_requests: read_num(&q.join("nr_requests")),
        read_ahead_kb: read_num(&q.join("read_ahead_kb")),
        rotational: read_num::<u8>(&q.join("rotational")).map(|r| r != 0),
        logical_block_bytes: queue_logical_block(device_dir).ok(),
        physical_block_bytes: read_num(&q.join("physical_block_size")),
        hw_queues: std::fs::read_dir(device_dir.join("mq"))
            .ok()
            .map(|entries| entries.filter_map(Result::ok).count() as u32)
            .filter(|&n| n > 0),
        read_queues: None,
    };
    facts.read_queues = read_queues(device_dir, facts.hw_queues, sys);
    facts
}

/// Of a disk's `hw_queues`, those its reads are sent on. sysfs does not say a hardware queue's
/// type (only debugfs's `hctxN/type` does), so for an NVMe drive on PCIe this follows the nvme
/// driver's own split from its module parameters (`<sys>/module/nvme/parameters`), as
/// `nvme_setup_io_queues` and `nvme_calc_irq_sets` make it at probe: `poll_queues` queues (at
/// most all but one) serve only reads submitted with polling, which pora never asks for
/// (no `IORING_SETUP_IOPOLL`); of the rest, when `write_queues` is set, that many take writes
/// and the others reads (at least one). A parameter changed after the drive was probed takes
/// effect at its next reset; until then this may count too few queues, which keeps the depth
/// low rather than past the queue. Any other disk reads on all its queues.
pub fn read_queues(disk_dir: &Path, hw_queues: Option<u32>, sys: &Path) -> Option<u32> {
    let hw = hw_queues?;
    let name = dir_name(disk_dir).unwrap_or_default();
    let transport = read_trim(&disk_dir.join("device/transport"));
    // A namespace's `device` is its controller, whose `transport` is `pcie` for nvme-pci;
    // fabrics (tcp, rdma, fc, loop) have their own options.
    let nvme_pci = name.starts_with("nvme") && transport.as_deref().is_none_or(|t| t == "pcie");
    if !nvme_pci {
        return Some(hw);
    }
    let param = |name: &str| -> u32 {
        read_num(&sys.join("module/nvme/parameters").join(name)).unwrap_or(0)
    };
    let poll = param("poll_queues").min(hw.saturating_sub(1));
    let interrupt = hw - poll;
    let write = param("write_queues");
    Some(match write {
        0 => interrupt,
        _ if interrupt <= 1 => interrupt,
        w if w >= interrupt => 1,
        w => interrupt - w,
    })
}

/// Resolves block device `major:minor` through `<sys>/dev/block` and describes it, its queue,
/// the dm / md layers under it and the disks at the bottom. `None` when sysfs has no such device.
pub fn device_facts(roots: &Roots, major: u32, minor: u32) -> Option<DeviceFacts> {
    let dir = sysfs_dir(&roots.sys, major, minor).ok()?;
    let disk_dir = whole_disk_dir(&dir);
    let mut layers = Vec::new();
    let mut leaves = Vec::new();
    let reads = walk_stack(&roots.sys, &disk_dir, 0, &mut layers, &mut leaves);
    Some(DeviceFacts {
        major,
        minor,
        name: dir_name(&dir).unwrap_or_default(),
        disk: dir_name(&disk_dir).unwrap_or_default(),
        model: model_of(&disk_dir),
        queue: queue_facts(&disk_dir, &roots.sys),
        layers,
        leaves,
        reads,
    })
}

/// Depth-first walk over `slaves/`: records dm / md layers and the leaf disks, and returns how a
/// read of `disk_dir` reaches them.
fn walk_stack(
    sys: &Path,
    disk_dir: &Path,
    depth: usize,
    layers: &mut Vec<Layer>,
    leaves: &mut Vec<LeafDisk>,
) -> ReadSpread {
    let name = dir_name(disk_dir).unwrap_or_default();
    let layer = layer_of(disk_dir, &name);
    // md raid1 sends each read to one mirror (`read_balance`).
    let mirrored = matches!(&layer, Some(Layer::Raid { level, .. }) if level == "raid1");
    if let Some(layer) = layer {
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
        let index = leaves
            .iter()
            .position(|l| l.name == name)
            .unwrap_or_else(|| {
                leaves.push(LeafDisk {
                    name,
                    model: model_of(disk_dir),
                    queue: queue_facts(disk_dir, sys),
                    host_served: !disk_dir.join("device").exists(),
                });
                leaves.len() - 1
            });
        return ReadSpread::Disk(index);
    }
    let parts = slaves
        .iter()
        .map(|slave| walk_stack(sys, &whole_disk_dir(slave), depth + 1, layers, leaves))
        .collect();
    if mirrored {
        ReadSpread::AnyOne(parts)
    } else {
        ReadSpread::All(parts)
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

/// `<disk dir>/queue/logical_block_size`, as the kernel reports it.
pub(crate) fn queue_logical_block(disk_dir: &Path) -> Result<u32, Unknown> {
    let p = disk_dir.join("queue/logical_block_size");
    let text = std::fs::read_to_string(&p).map_err(|e| Unknown(format!("{}: {e}", p.display())))?;
    text.trim()
        .parse()
        .map_err(|_| Unknown(format!("{}: not a number: {text:?}", p.display())))
}

impl DeviceFacts {
    /// Every disk at the bottom is served by the host's own CPUs ([`LeafDisk::host_served`]):
    /// the "device" is kernel code competing with the reader for the same cores.
    pub fn served_by_host(&self) -> bool {
        !self.leaves.is_empty() && self.leaves.iter().all(|leaf| leaf.host_served)
    }
}

impl BlockDevice {
    /// The disk's logical block size in bytes (the O_DIRECT alignment unit), Linux only.
    pub fn logical_block_size(&self) -> Result<u32, Unknown> {
        #[cfg(target_os = "linux")]
        {
            queue_logical_block(&self.disk_sys_dir)
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err(Unknown(super::NOT_LINUX.into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_numbers_parse() {
        assert_eq!(parse_dev_numbers("259:3\n"), Some((259, 3)));
        assert_eq!(parse_dev_numbers("259"), None);
        assert_eq!(parse_dev_numbers("a:b"), None);
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
