//! The bottleneck verdict of a synchronous method: reading a shard held in the page cache
//! through mmap is memory copies, CPU work, so a slot cut by its deadline is CPU-bound, not
//! "the disk was the limit".

mod common;

use common::*;
use pora_io::{IoConfig, Method};
use pora_mine::{Bottleneck, Miner};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

#[test]
fn mmap_on_a_cached_shard_is_cpu_bound() {
    if Method::Mmap.availability().is_err() {
        // Past libtest's output capture, so the skip shows in every run.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP: mmap is not available here\n"),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write_shard(dir.path(), 0, 8, 3);
    // Just written: in the page cache.
    let factory = pora_io::open(
        std::slice::from_ref(&path),
        &IoConfig {
            method: Method::Mmap,
            ..Default::default()
        },
    )
    .unwrap();
    let mut cfg = config(1, 64, 0..u64::MAX);
    cfg.slot = Duration::from_millis(300);
    let miner = Miner::new(vec![open_shard(&path)], factory, cfg.mine()).unwrap();
    let report = miner
        .mine_slot(&cfg.request(randao(1)), &AtomicBool::new(false))
        .unwrap();
    assert_eq!(report.bottleneck, Bottleneck::Cpu, "{report:?}");
    assert!(
        report.io_wait_fraction < 0.5,
        "copies from the page cache are work, not waiting: {}",
        report.io_wait_fraction
    );
}

/// A slot the disk held back says so in the library's words: the access method named as the
/// door names its input (the library's own key here, `method`; the CLI renders `--method`), no
/// command-line flag of its own, since the Go and C callers have none.
#[test]
fn a_disk_bound_slot_says_why_without_a_command_line_flag() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_shard(dir.path(), 0, 8, 3);
    let factory = sim_factory(
        std::slice::from_ref(&path),
        pora_io::SimConfig {
            latency_us: (20_000, 20_000),
            ..Default::default()
        },
    );
    let mut cfg = config(1, 1, 0..u64::MAX);
    cfg.slot = Duration::from_millis(200);
    let miner = Miner::new(vec![open_shard(&path)], factory, cfg.mine()).unwrap();
    let report = miner
        .mine_slot(&cfg.request(randao(1)), &AtomicBool::new(false))
        .unwrap();
    assert_eq!(report.bottleneck, Bottleneck::Disk, "{report:?}");
    let why = report.why_below_full_power(&report.shards[0]);
    assert!(
        why.contains("another access method (method)") && !why.contains("--"),
        "{why}"
    );
}
