//! Findings from canned sysfs/procfs trees: a plain disk with big read-ahead, a LUKS volume over
//! md RAID 0 of two NVMe drives, and a cached shard larger than RAM.

use super::*;
use pora_io::host::block_device::device_facts;
use pora_io::host::memory::meminfo;
use pora_io::host::page_cache::Residency;
use pora_io::probe::{Extents, Support};
use std::path::Path;

#[path = "../../../pora-io/src/host/fake_tree.rs"]
mod fake_tree;
use fake_tree::{link, write};

fn queue(dir: &Path, sched: &str, ra_kb: u32, rot: u8, nr: u32) {
    for (k, v) in [
        ("scheduler", sched.to_string()),
        ("read_ahead_kb", ra_kb.to_string()),
        ("rotational", rot.to_string()),
        ("nr_requests", nr.to_string()),
        ("logical_block_size", "512".into()),
        ("physical_block_size", "4096".into()),
    ] {
        write(&dir.join("queue").join(k), &format!("{v}\n"));
    }
}

/// vda (partition vda1 = 254:1, read-ahead 8192, mq-deadline, non-rotational, nr_requests 32)
/// and dm-0 (253:0) = LUKS over md0 (raid0) over nvme0n1 + nvme1n1.
fn canned(mem_total_kb: u64, mem_avail_kb: u64) -> (tempfile::TempDir, Roots) {
    let t = tempfile::tempdir().unwrap();
    let sys = t.path().join("sys");
    let vda = sys.join("block/vda");
    queue(&vda, "none [mq-deadline] kyber", 8192, 0, 32);
    write(&vda.join("vda1/partition"), "1");
    let dm = sys.join("block/dm-0");
    queue(&dm, "none", 128, 0, 128);
    write(&dm.join("dm/uuid"), "CRYPT-LUKS2-0123-data");
    write(&dm.join("dm/name"), "shards");
    let md = sys.join("block/md0");
    queue(&md, "none", 128, 0, 128);
    write(&md.join("md/level"), "raid0");
    for n in ["nvme0n1", "nvme1n1"] {
        queue(
            &sys.join("block").join(n),
            "[none] mq-deadline",
            128,
            0,
            1023,
        );
        write(
            &sys.join("block").join(n).join("device/model"),
            "Fast NVMe 2TB",
        );
    }
    link(&md, &dm.join("slaves/md0"));
    for n in ["nvme0n1", "nvme1n1"] {
        link(&sys.join("block").join(n), &md.join("slaves").join(n));
    }
    link(&vda.join("vda1"), &sys.join("dev/block/254:1"));
    link(&dm, &sys.join("dev/block/253:0"));
    let proc = t.path().join("proc");
    write(
        &proc.join("meminfo"),
        &format!("MemTotal: {mem_total_kb} kB\nMemFree: 1 kB\nMemAvailable: {mem_avail_kb} kB\n"),
    );
    (t, Roots { sys, proc })
}

const GIB: u64 = 1 << 30;

fn facts(roots: &Roots, major: u32, minor: u32, size: u64, cached: u64) -> FileFacts {
    FileFacts {
        path: "/data/shard0.dat".into(),
        size_bytes: size,
        allocated_bytes: Fact::Known(size),
        sparse: Fact::Known(false),
        extents: Fact::Known(Extents {
            count: 70,
            first_physical_offset: Some(1 << 20),
        }),
        fs_type: Fact::Known("ext4".into()),
        device_number: Fact::Known(format!("{major}:{minor}")),
        device: device_facts(roots, major, minor)
            .map(Fact::Known)
            .unwrap_or_else(|| Fact::unknown("none")),
        o_direct: Support {
            works: Some(true),
            detail: String::new(),
        },
        page_cache: Fact::Known(Residency {
            cached_bytes: cached,
            file_bytes: size,
        }),
        memory: meminfo(roots).into(),
        io_uring: Support {
            works: Some(false),
            detail: "io_uring_setup: Operation not permitted".into(),
        },
        io_uring_disabled_sysctl: Some(2),
    }
}

fn by_id<'a>(f: &'a [Finding], id: &str) -> Vec<&'a Finding> {
    f.iter().filter(|x| x.id == id).collect()
}

#[test]
fn plain_disk_read_ahead_scheduler_nr_requests_io_uring() {
    let (_t, roots) = canned(16 << 20, 8 << 20);
    let f = findings(&facts(&roots, 254, 1, 64 * GIB, 0));
    let ra = by_id(&f, "read-ahead")[0];
    assert_eq!(ra.severity, Severity::Warn);
    assert!(ra.message.contains("8192"));
    assert_eq!(
        ra.remedy.as_deref(),
        Some("set read_ahead_kb to 0-16: echo 0 | sudo tee /sys/block/vda/queue/read_ahead_kb")
    );
    let sched = by_id(&f, "scheduler")[0];
    assert_eq!(sched.severity, Severity::Info);
    assert!(sched
        .remedy
        .as_deref()
        .unwrap()
        .contains("/sys/block/vda/queue/scheduler"));
    assert_eq!(by_id(&f, "nr-requests")[0].severity, Severity::Warn);
    let uring = by_id(&f, "io-uring")[0];
    assert_eq!(uring.severity, Severity::Warn);
    assert!(uring
        .remedy
        .as_deref()
        .unwrap()
        .contains("io_uring_disabled=0"));
    assert_eq!(by_id(&f, "sector-size")[0].severity, Severity::Ok);
    assert!(by_id(&f, "sector-size")[0]
        .message
        .contains("logical 512 B, physical 4096 B"));
    assert!(by_id(&f, "dm-crypt").is_empty() && by_id(&f, "raid").is_empty());
    assert_eq!(by_id(&f, "page-cache")[0].severity, Severity::Ok);
}

#[test]
fn luks_over_raid0_of_nvme() {
    let (_t, roots) = canned(16 << 20, 8 << 20);
    let f = findings(&facts(&roots, 253, 0, 64 * GIB, 0));
    let crypt = by_id(&f, "dm-crypt");
    assert_eq!(crypt.len(), 1);
    assert_eq!(crypt[0].severity, Severity::Warn);
    assert!(crypt[0]
        .remedy
        .as_deref()
        .unwrap()
        .contains("--perf-no_read_workqueue shards"));
    let raid = by_id(&f, "raid")[0];
    assert!(
        raid.message.contains("raid0 over 2 disk(s)"),
        "{}",
        raid.message
    );
    // Both NVMe leaves use `none` with deep queues: ok.
    assert!(by_id(&f, "scheduler")
        .iter()
        .all(|s| s.severity == Severity::Ok));
    assert!(by_id(&f, "nr-requests")
        .iter()
        .all(|s| s.severity == Severity::Ok));
    assert_eq!(
        by_id(&f, "read-ahead")[0].severity,
        Severity::Warn,
        "dm-0 read_ahead_kb 128"
    );
}

#[test]
fn cached_shard_larger_than_ram_and_small_shard_in_ram() {
    // 8 GiB RAM, 32 GiB shard of which 6 GiB cached.
    let (_t, roots) = canned(8 << 20, 1 << 20);
    let f = findings(&facts(&roots, 254, 1, 32 * GIB, 6 * GIB));
    let pc = by_id(&f, "page-cache")[0];
    assert_eq!(pc.severity, Severity::Warn);
    assert!(pc
        .remedy
        .as_deref()
        .unwrap()
        .contains("mining numbers will drop once the cache is cold"));
    // A 1 GiB shard with 4 GiB available fits in RAM.
    let (_t2, roots2) = canned(8 << 20, 4 << 20);
    let f = findings(&facts(&roots2, 254, 1, GIB, 0));
    assert_eq!(by_id(&f, "page-cache")[0].severity, Severity::Info);
}

#[test]
fn sparse_fragmented_tmpfs_and_no_o_direct() {
    let (_t, roots) = canned(16 << 20, 8 << 20);
    let mut x = facts(&roots, 254, 1, 64 * GIB, 0);
    x.allocated_bytes = Fact::Known(GIB);
    x.sparse = Fact::Known(true);
    x.extents = Fact::Known(Extents {
        count: 200_000,
        first_physical_offset: Some(512),
    });
    x.fs_type = Fact::Known("tmpfs".into());
    x.o_direct = Support {
        works: Some(false),
        detail: "open with O_DIRECT failed: Invalid argument".into(),
    };
    let f = findings(&x);
    assert!(by_id(&f, "sparse")[0]
        .remedy
        .as_deref()
        .unwrap()
        .contains("test file, not real data"));
    assert_eq!(by_id(&f, "extents")[0].severity, Severity::Warn);
    assert_eq!(by_id(&f, "filesystem")[0].severity, Severity::Warn);
    assert!(by_id(&f, "o-direct")[0]
        .remedy
        .as_deref()
        .unwrap()
        .contains("--method pread"));
    // The file starts at device byte 512: not on a 4096-byte physical sector.
    assert_eq!(by_id(&f, "sector-size")[0].severity, Severity::Warn);
}

#[test]
fn unknown_device_is_info_not_a_crash() {
    let (_t, roots) = canned(16 << 20, 8 << 20);
    let f = findings(&facts(&roots, 8, 0, GIB, 0));
    assert_eq!(by_id(&f, "device")[0].severity, Severity::Info);
    assert_eq!(by_id(&f, "sector-size")[0].severity, Severity::Info);
}

#[test]
fn shard_and_profile_findings() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.dat");
    assert_eq!(
        shard_finding(std::slice::from_ref(&missing), None).severity,
        Severity::Bad
    );
    let p = profile_finding(&[missing]);
    assert_eq!(p.severity, Severity::Info);
    assert!(p.remedy.unwrap().contains("pora tune"));
    assert_eq!(bytes(1536), "1.5 KiB");
}
