//! Limits (RELIABILITY.md): a 1 TiB sparse shard whose byte offsets lie past 2^40 mines the same
//! nonces as the single-nonce path, and memory stays flat over 1,000 slots.

/// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
#[allow(unused_macros)] // some platforms skip nothing
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod common;

use common::*;
use pora_core::{EncodeType, U256};
#[cfg(target_os = "linux")]
use pora_io::SimConfig;
use pora_io::{IoConfig, Method};
use pora_mine::Miner;
use std::io::Write;
use std::sync::atomic::AtomicBool;

#[test]
fn one_tib_sparse_shard_past_2_pow_40() {
    let dir = tempfile::tempdir().unwrap();
    // Shard 3 of 1 TiB shards (kvEntriesBits 23, 128 KiB KVs) covers global bytes [3 TiB, 4 TiB).
    let chunks = 1u64 << 23;
    let header = v1_header(3 * chunks, chunks, EncodeType::None, 1 << 17, MINER);
    let path = dir.path().join("sparse-1tib.dat");
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(&header.encode()).unwrap();
    if let Err(e) = file.set_len(header.allocated_len().unwrap()) {
        skip_note!("SKIP 1 TiB sparse shard: this filesystem refuses a 1 TiB file ({e})");
        return;
    }
    drop(file);
    let shard = open_shard(&path);
    assert_eq!(
        (shard.geometry.shard_idx, shard.geometry.kv_entries_bits),
        (3, 23)
    );
    assert!(shard.geometry.first_sample() << 5 >= 1 << 40);
    let required = U256::MAX / U256::from(50u64);
    let want = naive_scan(&shard, &randao(8), 0..2000, 2, &required);
    let factory = pora_io::open(
        std::slice::from_ref(&path),
        &IoConfig {
            method: Method::Pread,
            ..Default::default()
        },
    )
    .unwrap();
    let mut cfg = config(2, 8, 0..2000);
    cfg.required_diff = Some(required);
    let report = Miner::new(vec![shard.clone()], factory, cfg.mine())
        .unwrap()
        .mine_slot(&cfg.request(randao(8)), &AtomicBool::new(false))
        .unwrap();
    let got: Vec<_> = report.shards[0]
        .found
        .iter()
        .map(|p| (p.nonce, p.hash1))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    assert!(report.shards[0]
        .found
        .iter()
        .flat_map(|p| &p.sample_idxs)
        .all(|&i| i >> 35 == 3));
}

#[cfg(target_os = "linux")]
fn resident_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4
}

#[cfg(target_os = "linux")]
#[test]
fn memory_is_flat_over_1000_slots() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![write_shard(dir.path(), 0, 8, 61)];
    let mut cfg = config(2, 32, 0..300);
    cfg.required_diff = Some(U256::MAX / U256::from(100u64));
    let miner = Miner::new(
        vec![open_shard(&paths[0])],
        sim_factory(&paths, SimConfig::default()),
        cfg.mine(),
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    for i in 0..50u32 {
        miner
            .mine_slot(&cfg.request(randao(i as u8)), &stop)
            .unwrap();
    }
    let before = resident_kib();
    for i in 0..1000u32 {
        let report = miner
            .mine_slot(&cfg.request(randao(i as u8)), &stop)
            .unwrap();
        assert_eq!(report.shards[0].nonces_tried, 300);
    }
    let after = resident_kib();
    eprintln!("resident memory over 1000 slots: {before} KiB -> {after} KiB");
    assert!(
        after < before + 4096,
        "resident memory grew from {before} KiB to {after} KiB over 1000 slots"
    );
}
