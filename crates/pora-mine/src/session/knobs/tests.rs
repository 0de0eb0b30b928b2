//! The depth rule on canned sysfs trees, each figure worked out by hand from the tree: the
//! threads that run, NVMe poll queues, raid1 mirrors, and what a session's `knobs` makes of a
//! caller's `--threads`.

use super::*;
use pora_io::host::block_device::device_facts;
use pora_io::host::Roots;
use std::path::Path;

#[path = "../../../../pora-io/src/host/fake_tree.rs"]
mod fake_tree;
use fake_tree::{link, write};

/// A disk at `dir` with `queues` hardware queues of `requests` requests each.
fn disk(dir: &Path, requests: u32, queues: u32) {
    write(&dir.join("queue/nr_requests"), &format!("{requests}\n"));
    write(&dir.join("queue/logical_block_size"), "512\n");
    for q in 0..queues {
        write(
            &dir.join(format!("mq/{q}/nr_tags")),
            &format!("{requests}\n"),
        );
    }
}

/// A tree with one NVMe drive, `nvme0n1` (259:0): 8 hardware queues of 64 requests.
fn one_nvme() -> (tempfile::TempDir, Roots) {
    let t = tempfile::tempdir().unwrap();
    let sys = t.path().join("sys");
    let n = sys.join("devices/pci/nvme0/nvme/nvme0/nvme0n1");
    disk(&n, 64, 8);
    write(&n.join("device/transport"), "pcie\n");
    link(&n, &sys.join("dev/block/259:0"));
    let proc = t.path().join("proc");
    (t, Roots { sys, proc })
}

/// md `name` (9:`minor`) at `level` over two NVMe drives of one queue of 128 requests each.
fn md_over_two(minor: u32, level: &str) -> (tempfile::TempDir, Roots) {
    let t = tempfile::tempdir().unwrap();
    let sys = t.path().join("sys");
    let md = sys.join(format!("devices/virtual/block/md{minor}"));
    disk(&md, 128, 0);
    write(&md.join("md/level"), &format!("{level}\n"));
    for d in ["nvme0n1", "nvme1n1"] {
        let dir = sys.join(format!("devices/pci/{d}"));
        disk(&dir, 128, 1);
        link(&dir, &md.join(format!("slaves/{d}")));
    }
    link(&md, &sys.join(format!("dev/block/9:{minor}")));
    let proc = t.path().join("proc");
    (t, Roots { sys, proc })
}

fn queues(roots: &Roots, major: u32, minor: u32, cpus: usize) -> DeviceQueues {
    DeviceQueues::new(device_facts(roots, major, minor).unwrap(), cpus)
}

/// A caller's `--threads` reach only their own queues: on 8 CPUs and 8 queues of 64, one thread
/// reaches one queue (64 reads), not the 8 the CPUs would (512, which held to 256 was four
/// queues' worth on one).
#[test]
fn threads_reach_only_the_queues_of_the_threads_that_run() {
    let (_t, roots) = one_nvme();
    let q = queues(&roots, 259, 0, 8);
    assert_eq!(q.request_slots(1), Some(64));
    assert_eq!(q.request_slots(8), Some(512));
    assert_eq!(
        q.request_slots(16),
        Some(512),
        "16 threads on 8 CPUs reach 8"
    );
    assert_eq!(q.request_slots(0), Some(64), "no threads counts as one");
    assert_eq!(q.depth_per_thread(1), 64);
    assert_eq!(q.depth_per_thread(16), 32);
    assert_eq!(default_knobs(Method::UringDirect, false, &q, None), (8, 64));
    assert_eq!(
        default_knobs(Method::UringDirect, false, &q, Some(1)),
        (1, 64)
    );
    // On 2 CPUs, 8 threads still reach only 2 queues: 128 reads, 16 a thread.
    let two = queues(&roots, 259, 0, 2);
    assert_eq!(
        default_knobs(Method::UringDirect, false, &two, Some(8)),
        (8, 16)
    );
}

/// NVMe poll queues take no read of pora's: with `poll_queues=4` of 8, the 8 threads of 8 CPUs
/// reach 4 read queues of 64, 256 reads, 32 a thread.
#[test]
fn nvme_poll_queues_are_not_counted() {
    let (_t, roots) = one_nvme();
    write(&roots.sys.join("module/nvme/parameters/poll_queues"), "4\n");
    let q = queues(&roots, 259, 0, 8);
    assert_eq!(q.request_slots(8), Some(256));
    assert_eq!(default_knobs(Method::UringDirect, false, &q, None), (8, 32));
    // A caller's 2 threads reach 2 of the 4.
    assert_eq!(q.request_slots(2), Some(128));
}

/// A raid1 read goes to one mirror: two mirrors of 128 give 2 threads 128 reads, 64 each; the
/// same two drives striped (raid0) give 256, 128 each.
#[test]
fn raid1_counts_one_mirror_and_raid0_every_stripe() {
    let (_t, roots) = md_over_two(1, "raid1");
    let q = queues(&roots, 9, 1, 2);
    assert_eq!(q.request_slots(2), Some(128));
    assert_eq!(default_knobs(Method::UringDirect, false, &q, None), (2, 64));
    let (_t, roots) = md_over_two(0, "raid0");
    let q = queues(&roots, 9, 0, 2);
    assert_eq!(q.request_slots(2), Some(256));
    assert_eq!(
        default_knobs(Method::UringDirect, false, &q, None),
        (2, 128)
    );
    // Mirrors of unequal queues: the smaller is what a read is sure of.
    let (_t, roots) = md_over_two(1, "raid1");
    let mut facts = device_facts(&roots, 9, 1).unwrap();
    facts.leaves[1].queue.nr_requests = Some(32);
    assert_eq!(DeviceQueues::new(facts, 2).request_slots(2), Some(32));
}

/// md raid0 over two partitions of one drive reads from that drive's queues only: one queue of
/// 128, not two.
#[test]
fn partitions_of_one_disk_under_a_layer_count_once() {
    let t = tempfile::tempdir().unwrap();
    let sys = t.path().join("sys");
    let md = sys.join("devices/virtual/block/md2");
    disk(&md, 128, 0);
    write(&md.join("md/level"), "raid0\n");
    let n = sys.join("devices/pci/nvme0n1");
    disk(&n, 128, 1);
    for p in ["nvme0n1p1", "nvme0n1p2"] {
        write(&n.join(p).join("partition"), "1\n");
        link(&n.join(p), &md.join(format!("slaves/{p}")));
    }
    link(&md, &sys.join("dev/block/9:2"));
    let roots = Roots {
        sys,
        proc: t.path().join("proc"),
    };
    assert_eq!(queues(&roots, 9, 2, 2).request_slots(2), Some(128));
}

/// Unknown devices, and a disk whose requests are unknown, keep the deep default; the depth
/// never drops below one read nor rises past [`DEEP_DEPTH`].
#[test]
fn unknown_queues_keep_the_deep_default_and_depth_stays_in_bounds() {
    let unknown = DeviceQueues::unknown(4);
    assert_eq!(unknown.request_slots(4), None);
    assert_eq!(
        default_knobs(Method::UringDirect, false, &unknown, None),
        (4, 256)
    );
    let (_t, roots) = one_nvme();
    let mut facts = device_facts(&roots, 259, 0).unwrap();
    facts.leaves[0].queue.nr_requests = None;
    assert_eq!(DeviceQueues::new(facts.clone(), 8).request_slots(8), None);
    // 16 threads on 8 queues of one request: 8 reads, half a read a thread, held at one.
    facts.leaves[0].queue.nr_requests = Some(1);
    assert_eq!(DeviceQueues::new(facts.clone(), 8).depth_per_thread(16), 1);
    facts.leaves[0].queue.nr_requests = Some(4096);
    assert_eq!(DeviceQueues::new(facts, 8).depth_per_thread(1), 256);
}

/// Methods that do not fill the device queue keep their own defaults on the same device: a
/// buffered ring and a resident synchronous shard 256 deep, a cold synchronous shard 64 threads
/// (or one per CPU past 64) of one read.
#[test]
fn other_methods_keep_their_defaults() {
    let (_t, roots) = one_nvme();
    let q = queues(&roots, 259, 0, 8);
    assert_eq!(default_knobs(Method::Uring, false, &q, None), (8, 256));
    assert_eq!(default_knobs(Method::Pread, true, &q, None), (8, 256));
    assert_eq!(default_knobs(Method::Direct, false, &q, None), (64, 1));
    assert_eq!(default_knobs(Method::Direct, false, &q, Some(3)), (3, 1));
    let many = queues(&roots, 259, 0, 100);
    assert_eq!(default_knobs(Method::Pread, false, &many, None), (100, 1));
    assert!(fills_device_queue(Method::UringDirect));
    assert!(fills_device_queue(Method::IocpUnbuffered));
    assert!(!fills_device_queue(Method::Direct) && !fills_device_queue(Method::Uring));
}

/// `knobs()` for a session: a caller's `--threads` gets the depth for its threads (one thread on
/// 8 queues of 64: 64, where 8 CPUs' count gave 256), `--depth` wins, and a profile's knobs hold
/// for its own method only.
#[test]
fn knobs_fit_the_depth_to_the_callers_threads() {
    let (_t, roots) = one_nvme();
    let q = queues(&roots, 259, 0, 8);
    let run = |tuned: Option<&Tuned>, threads: Option<usize>, depth: Option<usize>| {
        let options = OpenOptions::default()
            .with_threads(threads)
            .with_depth(depth);
        let (t, d, _) = knobs(Method::UringDirect, "m".into(), tuned, &[], &q, &options);
        (t, d)
    };
    assert_eq!(run(None, None, None), (8, 64));
    assert_eq!(run(None, Some(1), None), (1, 64));
    assert_eq!(run(None, Some(4), None), (4, 64));
    assert_eq!(run(None, Some(16), None), (16, 32));
    assert_eq!(run(None, Some(1), Some(7)), (1, 7));
    let profile = |method| Tuned {
        path: PathBuf::from("p.toml"),
        method,
        threads: 3,
        depth: 100,
        rates: Vec::new(),
    };
    assert_eq!(
        run(Some(&profile(Method::UringDirect)), None, None),
        (3, 100)
    );
    assert_eq!(
        run(Some(&profile(Method::UringDirect)), Some(2), None),
        (2, 100)
    );
    // A profile of another method is no guide: 2 threads reach 2 queues, 128 reads, 64 each.
    assert_eq!(run(Some(&profile(Method::Uring)), Some(2), None), (2, 64));
}

/// `auto`'s candidates carry the knobs a pool opened with their method gets, the caller's
/// threads included: on 8 CPUs and 8 queues of 64, the direct ring 8 x 64 (1 x 64 for
/// `--threads 1`), the map 8 x 256 (held in memory), a buffered ring 8 x 256 or a synchronous
/// read 64 x 1 (1 x 1 for `--threads 1`). There is one candidate per read path, worked by hand
/// for this platform: a buffered and a direct read everywhere pora builds (a ring or `pread`,
/// an unbuffered ring or `direct`), and a map where its faults are contained (Unix, Windows
/// x86_64): three here, two elsewhere.
#[test]
fn auto_candidates_carry_the_depth_for_the_threads_that_run() {
    let (_t, roots) = one_nvme();
    let q = queues(&roots, 259, 0, 8);
    let paths_by_hand: &[ReadPath] = if cfg!(unix) || cfg!(all(windows, target_arch = "x86_64")) {
        &[ReadPath::Buffered, ReadPath::Direct, ReadPath::Mapped]
    } else {
        &[ReadPath::Buffered, ReadPath::Direct]
    };
    for (threads, ring, sync) in [(None, (8, 64), (64, 1)), (Some(1), (1, 64), (1, 1))] {
        let all = candidates(None, &q, threads);
        let paths: Vec<ReadPath> = all.iter().map(|c| c.path).collect();
        assert_eq!(paths, paths_by_hand, "{threads:?}");
        for c in all {
            let by_hand = match c.method {
                Method::UringDirect | Method::IocpUnbuffered => ring,
                Method::Pread | Method::Direct => sync,
                Method::Mmap | Method::Uring | Method::Iocp => (threads.unwrap_or(8), 256),
                m => panic!("{m} is no candidate of auto"),
            };
            assert_eq!((c.threads, c.depth), by_hand, "{} {threads:?}", c.method);
        }
    }
}
