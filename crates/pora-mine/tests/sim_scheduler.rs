//! The scheduler on the simulated disk: random latencies and reordering over several seeds.
//! Checks the scheduler's invariants: reads in flight never exceed the depth, a chain's next
//! sample is only read after its previous one completed, every nonce of the range is completed
//! exactly once, and the valid nonces equal a naive sequential miner's.

mod common;

use common::*;
use pora_core::U256;
use pora_io::sim::SimStats;
use pora_io::SimConfig;
use pora_mine::{Bottleneck, Find, Miner};
use std::sync::atomic::{AtomicBool, Ordering};

fn sim(seed: u64, stats: &SimStats) -> SimConfig {
    SimConfig {
        seed,
        latency_us: (0, 400),
        slow_probability: 0.05,
        slow_latency_us: (1_000, 3_000),
        stats: stats.clone(),
        ..Default::default()
    }
}

#[test]
fn every_nonce_completes_exactly_once_within_depth_and_in_dependency_order() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![write_shard(dir.path(), 0, 8, 1)];
    let shards = vec![open_shard(&paths[0])];
    for seed in [1u64, 2, 3, 4] {
        let stats = SimStats::default();
        let checked = Checked::new(sim_factory(&paths, sim(seed, &stats)));
        let depth = [1, 7, 32, 64][seed as usize - 1];
        let mut cfg = config(3, depth, 1000..3000);
        // Every nonce is "valid", so the found list names each completed nonce.
        cfg.required_diff = Some(U256::MAX);
        let miner = Miner::new(shards.clone(), checked.clone(), cfg.mine()).unwrap();
        let report = miner
            .mine_slot(&cfg.request(randao(9)), &AtomicBool::new(false))
            .unwrap();
        let shard = &report.shards[0];
        let nonces: Vec<u64> = shard.found.iter().map(|p| p.nonce).collect();
        assert_eq!(
            nonces,
            (1000..3000).collect::<Vec<_>>(),
            "seed {seed}: each nonce exactly once"
        );
        assert_eq!(shard.nonces_tried, 2000);
        assert_eq!(shard.samples_read, 4000);
        assert_eq!(shard.mining_power, 1.0);
        assert_eq!(report.bottleneck, Bottleneck::None);
        assert!(!report.interrupted);
        assert!(
            stats.max_in_flight_seen() <= depth,
            "seed {seed}: {} in flight > depth {depth}",
            stats.max_in_flight_seen()
        );
        assert!(
            stats.max_in_flight_seen() >= depth.min(2),
            "the scheduler should fill its depth"
        );
        assert_eq!(
            checked.violations.load(Ordering::Relaxed),
            0,
            "seed {seed}: a chain read ahead of its completion"
        );
        assert!(checked.max_outstanding.load(Ordering::Relaxed) <= depth as u64);
        assert_eq!(stats.reads_pushed(), 4000);
    }
}

#[test]
fn valid_nonces_equal_a_naive_sequential_miner_over_several_shards() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![
        write_shard(dir.path(), 0, 8, 11),
        write_shard(dir.path(), 3, 7, 12),
    ];
    let shards: Vec<_> = paths.iter().map(|p| open_shard(p)).collect();
    let required = U256::MAX / U256::from(40u64);
    for seed in [5u64, 6, 7] {
        let stats = SimStats::default();
        let mut cfg = config(2, 48, 0..4000);
        cfg.required_diff = Some(required);
        let miner = Miner::new(
            shards.clone(),
            sim_factory(&paths, sim(seed, &stats)),
            cfg.mine(),
        )
        .unwrap();
        let report = miner
            .mine_slot(&cfg.request(randao(seed as u8)), &AtomicBool::new(false))
            .unwrap();
        for (shard, got) in shards.iter().zip(&report.shards) {
            let want = naive_scan(shard, &randao(seed as u8), 0..4000, 2, &required);
            assert!(want.len() > 40, "the difficulty should yield some nonces");
            let got_pairs: Vec<_> = got.found.iter().map(|p| (p.nonce, p.hash1)).collect();
            assert_eq!(
                got_pairs, want,
                "seed {seed}, shard {}",
                shard.geometry.shard_idx
            );
            assert_eq!(
                (got.shard, got.nonces_tried),
                (shard.geometry.shard_idx, 4000)
            );
            for p in &got.found {
                assert_eq!(p.kv_idxs.len(), 2);
                assert!(p
                    .sample_idxs
                    .iter()
                    .all(|&i| i >> shard.geometry.row_bits() == shard.geometry.shard_idx));
            }
        }
    }
}

#[test]
fn find_best_and_first() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![write_shard(dir.path(), 2, 8, 21)];
    let shards = vec![open_shard(&paths[0])];
    let required = U256::MAX / U256::from(100u64);
    let want = naive_scan(&shards[0], &randao(4), 0..3000, 2, &required);
    assert!(want.len() > 5);
    let run = |find| {
        let mut cfg = config(2, 32, 0..3000);
        cfg.required_diff = Some(required);
        cfg.find = find;
        let miner = Miner::new(
            shards.clone(),
            sim_factory(&paths, sim(1, &SimStats::default())),
            cfg.mine(),
        )
        .unwrap();
        miner
            .mine_slot(&cfg.request(randao(4)), &AtomicBool::new(false))
            .unwrap()
    };
    let best = run(Find::Best);
    let lowest = want.iter().min_by_key(|(_, h)| h.0).unwrap();
    assert_eq!(best.shards[0].found.len(), 1);
    assert_eq!(
        (best.shards[0].found[0].nonce, best.shards[0].found[0].hash1),
        *lowest
    );
    assert_eq!(best.shards[0].nonces_tried, 3000);

    let first = run(Find::First);
    let shard = &first.shards[0];
    assert_eq!(shard.found.len(), 1);
    assert!(want
        .iter()
        .any(|(n, h)| (*n, *h) == (shard.found[0].nonce, shard.found[0].hash1)));
    assert!(
        shard.nonces_tried < 3000,
        "--find first must stop the shard early ({} tried)",
        shard.nonces_tried
    );
    assert_eq!(first.bottleneck, Bottleneck::None);
}

#[test]
fn no_required_diff_reports_nothing_and_stop_flag_interrupts() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![write_shard(dir.path(), 0, 8, 31)];
    let shards = vec![open_shard(&paths[0])];
    let stats = SimStats::default();
    let slow = SimConfig {
        latency_us: (1_000, 2_000),
        stats: stats.clone(),
        ..Default::default()
    };
    let cfg = config(2, 8, 0..1_000_000);
    let miner = Miner::new(shards, sim_factory(&paths, slow), cfg.mine()).unwrap();
    let stop = AtomicBool::new(false);
    let report = std::thread::scope(|s| {
        let handle = s.spawn(|| miner.mine_slot(&cfg.request(randao(1)), &stop));
        // Stop once 64 reads came back: at least (64 - 16 chains) / 2 nonces completed.
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while stats.completions_reaped() < 64 {
            assert!(std::time::Instant::now() < give_up, "the slot never read");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
        handle.join().unwrap().unwrap()
    });
    assert!(report.interrupted);
    assert!(
        report.elapsed_sec < 1.0,
        "stop must end the slot promptly: {}",
        report.elapsed_sec
    );
    let shard = &report.shards[0];
    assert!(shard.nonces_tried > 0 && shard.nonces_tried < 1_000_000);
    assert!(shard.found.is_empty());
    assert_eq!(report.bottleneck, Bottleneck::Disk);
    // The miner is reusable after an interrupted slot: stale reads are drained first.
    let again = miner
        .mine_slot(&cfg.request(randao(2)), &AtomicBool::new(true))
        .unwrap();
    assert!(again.interrupted);
}
