//! End-to-end tune on the simulated disk: with a fixed read latency and enough CPU, samples/s
//! grow linearly with depth (depth / latency per worker), so the best and the knee are the
//! deepest arm, and its throughput matches the model.

use super::*;
use crate::shards::open_files_as_shards;
use pora_core::header::{Header, HEADER_SIZE, META_SIZE};
use pora_core::{Address, EncodeType};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use search::Arm;
use std::io::Write;

/// Writes shard 0 (64 KVs of 4 KiB, random bytes, no encoding) as a complete v1 data file.
pub(crate) fn shard_file(dir: &std::path::Path, miner: Address) -> PathBuf {
    let header = Header {
        version: 1,
        chunk_idx_start: 0,
        chunk_idx_len: 64,
        encode_type: EncodeType::None,
        max_kv_size: 1 << 12,
        chunk_size: 1 << 12,
        meta_size: META_SIZE,
        miner,
        status: 0,
    };
    let file = dir.join("shard0.dat");
    let mut out = std::fs::File::create(&file).unwrap();
    out.write_all(&header.encode()).unwrap();
    let mut data = vec![0u8; (header.allocated_len().unwrap() - HEADER_SIZE) as usize];
    Xoshiro256PlusPlus::seed_from_u64(7).fill_bytes(&mut data);
    out.write_all(&data).unwrap();
    file
}

#[test]
fn sim_with_fixed_latency_picks_the_deepest_arm() {
    let dir = tempfile::tempdir().unwrap();
    let file = shard_file(dir.path(), Address::default());
    let latency_us = 4000;
    let input = TuneInput {
        shards: open_files_as_shards(&[file], None).unwrap(),
        methods: vec![Method::Sim],
        // One worker, depths 1..16: 250, 500, ... 4000 samples/s — each step doubles, far beyond
        // the 3% knee margin and far below any CPU limit.
        limits: GridLimits {
            cpus: 1,
            max_depth: 16,
            max_threads_sync: 1,
        },
        budget_sec: 8.0,
        sim: SimConfig {
            seed: 3,
            latency_us: (latency_us, latency_us),
            ..SimConfig::default()
        },
        random_checks: 2,
        latency_curve: true,
    };
    let stop = AtomicBool::new(false);
    let out = tune(&input, &stop, &mut |_| {}).unwrap();
    assert!(!out.interrupted);
    let c = out.choice.expect("a choice");
    assert_eq!(
        c.knee.arm,
        Arm {
            method: Method::Sim,
            threads: 1,
            depth: 16
        }
    );
    assert_eq!(c.best.arm, c.knee.arm);
    let model = 16.0 * 1e6 / f64::from(latency_us);
    let got = c.knee.mean();
    assert!(
        got > 0.7 * model && got < 1.05 * model,
        "sim throughput {got} vs model {model}"
    );
    // The raw ceiling on the same simulated disk, at the same 16 reads in flight, is about the
    // knee's: the same latency model bounds both, so they may land either side of each other by
    // a few percent on a loaded machine; a ceiling far below mining would be a measurement bug.
    let ceiling = out.ceiling.expect("raw ceiling on sim");
    assert!(
        ceiling.iops > 0.85 * got,
        "ceiling {} vs mining {got}",
        ceiling.iops
    );
    assert!(!out.latency_curve.is_empty());
    let p50 = out.knee_latency.expect("knee latency").latency_us_p50;
    assert!(
        p50 >= 0.9 * f64::from(latency_us),
        "p50 {p50} µs below the model's latency"
    );
}

#[test]
fn stop_flag_interrupts_without_a_choice_being_forced() {
    let dir = tempfile::tempdir().unwrap();
    let file = shard_file(dir.path(), Address::default());
    let input = TuneInput {
        shards: open_files_as_shards(&[file], None).unwrap(),
        methods: vec![Method::Sim],
        limits: GridLimits {
            cpus: 1,
            max_depth: 4,
            max_threads_sync: 1,
        },
        budget_sec: 5.0,
        sim: SimConfig {
            seed: 3,
            latency_us: (100, 100),
            ..SimConfig::default()
        },
        random_checks: 2,
        latency_curve: false,
    };
    let stop = AtomicBool::new(true);
    let out = tune(&input, &stop, &mut |_| {}).unwrap();
    assert!(out.interrupted);
    assert!(out.choice.is_none());
}
