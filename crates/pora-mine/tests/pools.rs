//! Device pools: a miner whose shards sit on several devices runs one backend factory
//! and one set of workers per device. Checked on the simulated disk: every pool finds exactly the
//! naive miner's nonces (its backend numbers only its own files), a read error names the right
//! file, a slow device's pool does not hold a fast one back, and pools must partition the shards.

mod common;

use common::*;
use pora_core::U256;
use pora_io::{SimConfig, SimFault};
use pora_mine::{MineError, Miner, OnIoError, Pool};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn sim(seed: u64, latency_us: (u32, u32)) -> SimConfig {
    SimConfig {
        seed,
        latency_us,
        ..Default::default()
    }
}

/// Three single-file shards: shard 0 alone on one "device", shards 1 and 5 on another.
fn three_shards(dir: &std::path::Path) -> Vec<PathBuf> {
    vec![
        write_shard(dir, 0, 8, 61),
        write_shard(dir, 1, 7, 62),
        write_shard(dir, 5, 8, 63),
    ]
}

#[test]
fn each_pool_finds_exactly_the_naive_miners_nonces() {
    let dir = tempfile::tempdir().unwrap();
    let paths = three_shards(dir.path());
    let shards: Vec<_> = paths.iter().map(|p| open_shard(p)).collect();
    let required = U256::MAX / U256::from(40u64);
    let mut cfg = config(1, 1, 0..3000);
    cfg.required_diff = Some(required);
    let first = Checked::new(sim_factory(&paths[..1], sim(1, (0, 300))));
    let second = Checked::new(sim_factory(&paths[1..], sim(2, (0, 300))));
    let pools = vec![
        Pool {
            shards: 1,
            factory: first.clone(),
            threads: 1,
            depth: 24,
        },
        Pool {
            shards: 2,
            factory: second.clone(),
            threads: 2,
            depth: 16,
        },
    ];
    let miner = Miner::with_pools(shards.clone(), pools, cfg.mine()).unwrap();
    assert_eq!(
        miner.describe_io().matches("; ").count(),
        1,
        "one line per pool"
    );
    let report = miner
        .mine_slot(&cfg.request(randao(4)), &AtomicBool::new(false))
        .unwrap();
    for (shard, got) in shards.iter().zip(&report.shards) {
        let want = naive_scan(shard, &randao(4), 0..3000, 2, &required);
        let got_pairs: Vec<_> = got.found.iter().map(|p| (p.nonce, p.hash1)).collect();
        assert_eq!(got_pairs, want, "shard {}", shard.geometry.shard_idx);
        assert_eq!(got.nonces_tried, 3000);
        assert_eq!(got.samples_read, 6000);
    }
    assert!(first.max_outstanding.load(Ordering::Relaxed) <= 24);
    assert!(second.max_outstanding.load(Ordering::Relaxed) <= 2 * 16);
    for checked in [&first, &second] {
        assert_eq!(checked.violations.load(Ordering::Relaxed), 0);
    }
}

#[test]
fn a_read_error_in_the_second_pool_names_its_own_file() {
    let dir = tempfile::tempdir().unwrap();
    let paths = three_shards(dir.path());
    let shards: Vec<_> = paths.iter().map(|p| open_shard(p)).collect();
    // The second pool's file 1 is the miner's file 2 (shard 5).
    let faulty = SimConfig {
        faults: vec![SimFault {
            file: 1,
            offset_start: 0,
            offset_end: u64::MAX,
            short_read: false,
        }],
        ..sim(3, (0, 100))
    };
    let mut cfg = config(1, 1, 0..500);
    cfg.on_io_error = OnIoError::Stop;
    let pools = vec![
        Pool {
            shards: 1,
            factory: sim_factory(&paths[..1], sim(4, (0, 100))),
            threads: 1,
            depth: 8,
        },
        Pool {
            shards: 2,
            factory: sim_factory(&paths[1..], faulty),
            threads: 1,
            depth: 8,
        },
    ];
    let miner = Miner::with_pools(shards, pools, cfg.mine()).unwrap();
    let err = miner
        .mine_slot(&cfg.request(randao(5)), &AtomicBool::new(false))
        .unwrap_err();
    let MineError::Read { path, .. } = &err else {
        panic!("expected a read error, got {err}")
    };
    assert_eq!(path, &paths[2]);
}

#[test]
fn a_slow_pool_does_not_hold_a_fast_pool_back() {
    let dir = tempfile::tempdir().unwrap();
    let paths = [
        write_shard(dir.path(), 0, 8, 71),
        write_shard(dir.path(), 1, 8, 72),
    ];
    let shards: Vec<_> = paths.iter().map(|p| open_shard(p)).collect();
    let mut cfg = config(1, 1, 0..1 << 20);
    cfg.slot = Duration::from_millis(400);
    let pools = vec![
        // A device that answers one read every 20 ms.
        Pool {
            shards: 1,
            factory: sim_factory(&paths[..1], sim(6, (20_000, 20_000))),
            threads: 1,
            depth: 1,
        },
        Pool {
            shards: 1,
            factory: sim_factory(&paths[1..], sim(7, (10, 50))),
            threads: 1,
            depth: 32,
        },
    ];
    let miner = Miner::with_pools(shards, pools, cfg.mine()).unwrap();
    let report = miner
        .mine_slot(&cfg.request(randao(6)), &AtomicBool::new(false))
        .unwrap();
    let (slow, fast) = (&report.shards[0], &report.shards[1]);
    // The slow device reads at most 400 ms / 20 ms samples: about 10 nonces.
    assert!(slow.nonces_tried <= 12, "slow: {}", slow.nonces_tried);
    // The fast pool's chains never wait on the slow device: even on a loaded machine it tries
    // far more than the slow pool's handful (in one shared pool, its 33 chains would mostly be
    // stuck behind 20 ms reads whenever they helped shard 0).
    assert!(
        fast.nonces_tried > 50 * slow.nonces_tried.max(1),
        "fast {} vs slow {}",
        fast.nonces_tried,
        slow.nonces_tried
    );
}

#[test]
fn pools_must_partition_the_shards() {
    let dir = tempfile::tempdir().unwrap();
    let paths = three_shards(dir.path());
    let shards: Vec<_> = paths.iter().map(|p| open_shard(p)).collect();
    let cfg = config(1, 1, 0..10);
    let pool = |n: usize, depth: usize| Pool {
        shards: n,
        factory: sim_factory(&paths, SimConfig::default()),
        threads: 1,
        depth,
    };
    let refused = |pools: Vec<Pool>| match Miner::with_pools(shards.clone(), pools, cfg.mine()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted"),
    };
    assert!(refused(vec![pool(2, 4)]).contains("pools name 2 shards: the miner has 3"));
    assert!(refused(vec![pool(2, 4), pool(2, 4)]).contains("the miner has 3"));
    assert!(refused(vec![pool(1, 4), pool(0, 4), pool(2, 4)]).contains("no shard to mine"));
    // Each pool needs a read in flight per shard.
    assert!(refused(vec![pool(1, 4), pool(2, 1)]).contains("every shard needs at least one"));
    assert!(refused(Vec::new()).contains("pools name 0 shards"));
}
