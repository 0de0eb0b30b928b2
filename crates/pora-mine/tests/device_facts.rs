//! One reading of the devices under a session's files, handed to every rule that needs them: a
//! session over two shards whose files sit (in a canned sysfs tree) on a RAM-backed loop device
//! and on a disk with hardware groups them into two pools, and each pool's depth (the depth
//! rule) and its rings' submission rhythm follow that file's device. Had any rule read the
//! real sysfs itself, it would see the one real device both temporary files share.
#![cfg(target_os = "linux")]

mod common;

use common::write_shard;
use pora_io::host::file_devices::{FileDevices, FileNumbers};
use pora_io::host::Roots;
use pora_io::{IoError, Method};
use pora_mine::session::{OpenOptions, ProfileSource, Session};
use pora_mine::MineError;
use std::io::Write as _;
use std::path::Path;

#[path = "../../pora-io/src/host/fake_tree.rs"]
mod fake_tree;
use fake_tree::write;

/// A disk at `dir` with one hardware queue of `requests` requests; `hardware`: a device link
/// (a controller behind it), else served by the host's CPUs (a loop device, a RAM disk).
fn disk(dir: &Path, requests: u32, hardware: bool) {
    write(&dir.join("queue/nr_requests"), &format!("{requests}\n"));
    write(&dir.join("queue/logical_block_size"), "512\n");
    write(&dir.join("queue/rotational"), "0\n");
    write(&dir.join("mq/0/nr_tags"), &format!("{requests}\n"));
    if hardware {
        std::fs::create_dir_all(dir.join("device")).unwrap();
    }
}

/// `loop0` (7:0): served by the host, 128 requests; `vda` (253:0): hardware, 64 requests.
fn loop_and_disk(t: &Path) -> Roots {
    let sys = t.join("sys");
    let loop0 = sys.join("devices/virtual/block/loop0");
    disk(&loop0, 128, false);
    let vda = sys.join("devices/pci0000:00/virtio1/block/vda");
    disk(&vda, 64, true);
    fake_tree::link(&loop0, &sys.join("dev/block/7:0"));
    fake_tree::link(&vda, &sys.join("dev/block/253:0"));
    Roots {
        sys,
        proc: t.join("proc"),
    }
}

/// Worked by hand, 2 threads a pool: loop0 queues 128 reads on one queue, 64 a thread, past the
/// 32 up to which a ring over a host-served device enters per read (so it batches); vda queues
/// 64, 32 a thread, and a ring over hardware enters per read up to 64.
#[test]
fn the_depth_rule_and_the_rhythm_follow_each_files_device() {
    let dir = tempfile::tempdir().unwrap();
    let on_loop = write_shard(dir.path(), 0, 6, 1);
    let on_vda = write_shard(dir.path(), 1, 6, 2);
    let roots = loop_and_disk(dir.path());
    let mut options = OpenOptions::default()
        .with_method(Method::UringDirect)
        .with_threads(Some(2))
        .with_profile(ProfileSource::Ignore);
    options.io.devices = FileDevices::from_numbers(
        &roots,
        [
            (on_loop.clone(), FileNumbers::on((7, 0))),
            (on_vda.clone(), FileNumbers::on((253, 0))),
        ],
    );
    let session = match Session::open(&[vec![on_loop], vec![on_vda]], &options) {
        Ok(s) => s,
        Err(MineError::Open {
            source: IoError::Unavailable { reason, .. },
            ..
        }) => {
            let _ = writeln!(std::io::stderr(), "SKIP uring-direct: {reason}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let choices = session.choices();
    let devices: Vec<Option<&str>> = choices.iter().map(|c| c.device.as_deref()).collect();
    assert_eq!(devices, [Some("loop0"), Some("vda")]);
    assert_eq!(choices[0].shards, [0]);
    assert_eq!(choices[1].shards, [1]);
    assert_eq!((choices[0].threads, choices[0].depth), (2, 64));
    assert_eq!((choices[1].threads, choices[1].depth), (2, 32));
    assert!(
        choices[0].io.contains("one enter per read up to depth 32"),
        "{}",
        choices[0].io
    );
    assert!(
        choices[1].io.contains("one enter per read up to depth 64"),
        "{}",
        choices[1].io
    );
}
