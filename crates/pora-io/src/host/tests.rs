//! Host facts read from canned sysfs / procfs trees: partitions, a LUKS volume over md RAID 0
//! of two NVMe drives, `/proc/meminfo` and mountinfo text.

use super::block_device::{
    active_scheduler, device_facts, mount_source, read_queues, Layer, ReadSpread,
};
use super::fake_tree::{link, write};
use super::file_system::fs_name;
use super::memory::{meminfo, MemInfo};
use super::Roots;
use std::path::Path;

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
    for q in 0..4 {
        write(&n0.join(format!("mq/{q}/nr_tags")), "1023\n");
    }
    write(&n0.join("nvme0n1p1/partition"), "1\n");
    let n1 = sys.join("devices/pci/nvme1/block/nvme1n1");
    queue(&n1, "[none] mq-deadline\n", 128, 0);
    // A disk with hardware behind it has a `device` link (to its controller) in sysfs.
    for disk in [&n0, &n1] {
        std::fs::create_dir_all(disk.join("device")).unwrap();
    }
    link(&md, &dm.join("slaves/md0"));
    link(&n0.join("nvme0n1p1"), &md.join("slaves/nvme0n1p1"));
    link(&n1, &md.join("slaves/nvme1n1"));
    link(&vda.join("vda1"), &sys.join("dev/block/254:1"));
    link(&dm, &sys.join("dev/block/253:0"));
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

/// The facts pora-mine's depth rule counts (`session::knobs`): each disk's queues a read can
/// use, and how a read reaches the disks through the layers.
#[test]
fn leaves_carry_their_read_queues_and_the_stack_its_shape() {
    let (_t, roots) = canned();
    let vda = device_facts(&roots, 254, 1).unwrap();
    let q = &vda.leaves[0].queue;
    assert_eq!(
        (q.nr_requests, q.hw_queues, q.read_queues),
        (Some(256), None, None)
    );
    assert_eq!(vda.reads, ReadSpread::Disk(0));
    let raid = device_facts(&roots, 253, 0).unwrap();
    let q = &raid.leaves[0].queue;
    assert_eq!(
        (q.hw_queues, q.read_queues),
        (Some(4), Some(4)),
        "no nvme parameters: every queue takes reads"
    );
    // dm-0 over md0 (raid0) over both drives: a read may go to either, all count.
    assert_eq!(
        raid.reads,
        ReadSpread::All(vec![ReadSpread::All(vec![
            ReadSpread::Disk(0),
            ReadSpread::Disk(1)
        ])])
    );
}

/// md raid1 sends each read to one mirror: the stack says so.
#[test]
fn raid1_reads_go_to_any_one_mirror() {
    let (_t, roots) = canned();
    let md = roots.sys.join("devices/virtual/block/md1");
    queue(&md, "none\n", 256, 0);
    write(&md.join("md/level"), "raid1\n");
    let a = roots.sys.join("devices/pci/sda/block/sda");
    let b = roots.sys.join("devices/pci/sdb/block/sdb");
    queue(&a, "[mq-deadline] none\n", 128, 0);
    queue(&b, "[mq-deadline] none\n", 128, 0);
    link(&a, &md.join("slaves/sda"));
    link(&b, &md.join("slaves/sdb"));
    link(&md, &roots.sys.join("dev/block/9:1"));
    let d = device_facts(&roots, 9, 1).unwrap();
    assert_eq!(
        d.layers,
        vec![Layer::Raid {
            name: "md1".into(),
            level: "raid1".into()
        }]
    );
    assert_eq!(
        d.reads,
        ReadSpread::AnyOne(vec![ReadSpread::Disk(0), ReadSpread::Disk(1)])
    );
}

/// sysfs does not say which of an NVMe drive's queues poll; the nvme driver's parameters do:
/// worked by hand from `nvme_setup_io_queues` / `nvme_calc_irq_sets` for 8 hardware queues.
#[test]
fn nvme_poll_and_write_queues_take_no_reads() {
    let t = tempfile::tempdir().unwrap();
    let sys = t.path().join("sys");
    let nvme = sys.join("block/nvme0n1");
    let params = sys.join("module/nvme/parameters");
    let reads = |dir: &Path| read_queues(dir, Some(8), &sys);
    assert_eq!(reads(&nvme), Some(8), "no parameters: every queue reads");
    write(&params.join("poll_queues"), "0\n");
    write(&params.join("write_queues"), "0\n");
    assert_eq!(reads(&nvme), Some(8));
    write(&params.join("poll_queues"), "2\n");
    assert_eq!(reads(&nvme), Some(6), "8 queues, the last 2 poll");
    write(&params.join("write_queues"), "2\n");
    assert_eq!(reads(&nvme), Some(4), "of 6 interrupt queues, 2 for writes");
    write(&params.join("write_queues"), "9\n");
    assert_eq!(reads(&nvme), Some(1), "writes never take every queue");
    write(&params.join("write_queues"), "0\n");
    write(&params.join("poll_queues"), "64\n");
    assert_eq!(reads(&nvme), Some(1), "one interrupt queue is always kept");
    assert_eq!(read_queues(&nvme, None, &sys), None);
    // Other disks, and NVMe over a fabric, read on every queue.
    assert_eq!(reads(&sys.join("block/sda")), Some(8));
    write(&sys.join("block/nvme1n1/device/transport"), "tcp\n");
    assert_eq!(reads(&sys.join("block/nvme1n1")), Some(8));
    write(&sys.join("block/nvme2n1/device/transport"), "pcie\n");
    assert_eq!(reads(&sys.join("block/nvme2n1")), Some(1));
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

/// A loop device has no `device` link: the host's CPUs serve its reads. The virtio disk and the
/// NVMe drives under the LUKS/RAID stack have hardware behind them, and so has the stack.
#[test]
fn a_disk_without_a_device_link_is_served_by_the_host() {
    let (_t, roots) = canned();
    let loop0 = roots.sys.join("devices/virtual/block/loop0");
    queue(&loop0, "[none] mq-deadline\n", 128, 0);
    link(&loop0, &roots.sys.join("dev/block/7:0"));
    let d = device_facts(&roots, 7, 0).unwrap();
    assert!(d.leaves[0].host_served && d.served_by_host());
    let vda = device_facts(&roots, 254, 1).unwrap();
    assert!(!vda.leaves[0].host_served && !vda.served_by_host());
    let stack = device_facts(&roots, 253, 0).unwrap();
    assert_eq!(stack.leaves.len(), 2);
    assert!(stack.leaves.iter().all(|l| !l.host_served) && !stack.served_by_host());
}

/// The devices under a set of files are read once each: three files on vda1 and dm-0 give two
/// readings, each file its own device's facts, a file on tmpfs (`0:45`, no block device) its
/// device number as its key; `covering` keeps what was read and reads only what is new.
#[test]
fn file_devices_read_each_device_once() {
    use super::file_devices::{FileDevices, FileNumbers};
    use std::path::PathBuf;
    let (_t, roots) = canned();
    let path = |name: &str| PathBuf::from(format!("/shards/{name}"));
    let devices = FileDevices::from_numbers(
        &roots,
        [
            (path("a"), FileNumbers::on((254, 1))),
            (path("b"), FileNumbers::on((253, 0))),
            (path("c"), FileNumbers::on((254, 1))),
            (
                path("tmp"),
                FileNumbers {
                    stat_dev: Some((0, 45)),
                    block_device: None,
                },
            ),
        ],
    );
    assert_eq!(devices.readings(), 2);
    assert_eq!(devices.facts(&path("a")).unwrap().disk, "vda");
    assert_eq!(devices.facts(&path("c")).unwrap().disk, "vda");
    assert_eq!(devices.facts(&path("b")).unwrap().disk, "dm-0");
    assert!(!devices.facts(&path("b")).unwrap().served_by_host());
    assert_eq!(devices.device_key(&path("a")).as_deref(), Some("vda"));
    assert_eq!(devices.device_key(&path("tmp")).as_deref(), Some("0:45"));
    assert!(devices.facts(&path("tmp")).is_none() && devices.covers(&path("tmp")));
    assert!(!devices.covers(&path("other")) && devices.device_key(&path("other")).is_none());
    // Nothing new: the same reading, no file read again.
    let again = devices.covering(&[path("a"), path("b")], &roots);
    assert_eq!(again.readings(), 2);
    assert_eq!(again.facts(&path("b")), devices.facts(&path("b")));
}
