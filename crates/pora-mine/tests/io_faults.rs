//! Injected read faults on the simulated disk (`--on-io-error`): EIO and short reads at chosen
//! offsets. The affected nonces are never counted as tried nor reported valid, and
//! `--on-io-error retry|skip|stop` behave as documented; messages name the file and offset.

mod common;

use common::*;
use pora_core::{HEADER_SIZE, U256};
use pora_io::sim::SimStats;
use pora_io::{SimConfig, SimFault};
use pora_mine::{MineError, Miner, OnIoError, SlotReport, MAX_RETRIES};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

const NONCES: std::ops::Range<u64> = 0..3000;
/// 32 KiB of the data region: about 3% of the samples, so about 6% of the nonces.
const BAD: (u64, u64) = (HEADER_SIZE + 100 * 4096, HEADER_SIZE + 108 * 4096);

struct Fixture {
    _dir: tempfile::TempDir,
    paths: Vec<PathBuf>,
    valid: Vec<u64>,
    touched: Vec<u64>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![write_shard(dir.path(), 0, 8, 41)];
    let shard = open_shard(&paths[0]);
    let (valid, touched) = naive_scan_avoiding(&shard, &randao(3), NONCES, 2, &U256::MAX, &[BAD]);
    assert!(
        touched.len() > 50,
        "the fault range should touch some nonces: {}",
        touched.len()
    );
    Fixture {
        _dir: dir,
        valid: valid.into_iter().map(|(n, _)| n).collect(),
        touched,
        paths,
    }
}

/// Reads in flight per worker in the tests below: the worker's push group (16 reads) exactly.
const DEPTH: usize = 16;

fn mine(
    fx: &Fixture,
    policy: OnIoError,
    short_read: bool,
    probability: Option<f64>,
    stats: &SimStats,
) -> Result<SlotReport, MineError> {
    mine_at_depth(fx, policy, short_read, probability, stats, DEPTH)
}

fn mine_at_depth(
    fx: &Fixture,
    policy: OnIoError,
    short_read: bool,
    probability: Option<f64>,
    stats: &SimStats,
    depth: usize,
) -> Result<SlotReport, MineError> {
    let sim = SimConfig {
        seed: 5,
        latency_us: (0, 300),
        faults: vec![SimFault {
            file: 0,
            offset_start: BAD.0,
            offset_end: BAD.1,
            short_read,
        }],
        fault_probability: probability,
        stats: stats.clone(),
        ..Default::default()
    };
    let mut cfg = config(2, depth, NONCES);
    cfg.required_diff = Some(U256::MAX);
    cfg.on_io_error = policy;
    let miner = Miner::new(
        vec![open_shard(&fx.paths[0])],
        sim_factory(&fx.paths, sim),
        cfg.mine(),
    )?;
    miner.mine_slot(&cfg.request(randao(3)), &AtomicBool::new(false))
}

fn assert_dropped_exactly_the_touched(fx: &Fixture, report: &SlotReport) {
    let shard = &report.shards[0];
    let found: Vec<u64> = shard.found.iter().map(|p| p.nonce).collect();
    assert_eq!(found, fx.valid, "exactly the untouched nonces are reported");
    assert_eq!(
        shard.nonces_tried,
        fx.valid.len() as u64,
        "dropped nonces are not counted"
    );
    assert_eq!(shard.io_errors, fx.touched.len() as u64);
    let msg = &report.io_error_messages[0];
    assert!(
        msg.contains(&fx.paths[0].display().to_string()) && msg.contains("offset"),
        "{msg}"
    );
}

#[test]
fn skip_drops_each_touched_nonce_at_its_first_error() {
    for short_read in [false, true] {
        let fx = fixture();
        let stats = SimStats::default();
        let report = mine(&fx, OnIoError::Skip, short_read, None, &stats).unwrap();
        assert_dropped_exactly_the_touched(&fx, &report);
        assert_eq!(stats.faults_injected(), fx.touched.len() as u64);
        let want = if short_read {
            "short read"
        } else {
            "Input/output error"
        };
        assert!(
            report.io_error_messages[0].contains(want),
            "{}",
            report.io_error_messages[0]
        );
    }
}

/// Mines with `--on-io-error retry` and a persistent fault at `depth` reads per worker: each
/// touched nonce's failed read is issued exactly 1 + MAX_RETRIES times, then the nonce is
/// dropped, and every other nonce is found. Returns the report for the caller's own checks.
fn assert_retry_drops_persistent_faults(fx: &Fixture, depth: usize) -> SlotReport {
    let stats = SimStats::default();
    let report = mine_at_depth(fx, OnIoError::Retry, false, None, &stats, depth).unwrap();
    assert_dropped_exactly_the_touched(fx, &report);
    assert_eq!(
        stats.faults_injected(),
        fx.touched.len() as u64 * (1 + u64::from(MAX_RETRIES)),
        "depth {depth}: every failed read re-issued {MAX_RETRIES} times"
    );
    report
}

/// Mines with `--on-io-error retry` and intermittent faults (half the reads in the range fail)
/// at `depth` reads per worker: every nonce is tried or dropped, and most recover.
fn assert_retry_recovers_intermittent_faults(fx: &Fixture, depth: usize) {
    let stats = SimStats::default();
    let report = mine_at_depth(fx, OnIoError::Retry, true, Some(0.5), &stats, depth).unwrap();
    let shard = &report.shards[0];
    assert!(stats.faults_injected() > 0);
    assert_eq!(
        shard.nonces_tried + shard.io_errors,
        NONCES.end,
        "depth {depth}: every nonce is tried or dropped"
    );
    assert!(
        shard.io_errors < fx.touched.len() as u64 / 2,
        "depth {depth}: most intermittent errors recover: {} dropped",
        shard.io_errors
    );
    // Every reported nonce was re-verified against the real bytes by the plain path.
    assert_eq!(shard.found.len() as u64, shard.nonces_tried);
}

#[test]
fn retry_reissues_a_persistent_error_then_drops_the_nonce() {
    let fx = fixture();
    let report = assert_retry_drops_persistent_faults(&fx, DEPTH);
    assert!(
        report.io_error_messages[0].contains("retries"),
        "{}",
        report.io_error_messages[0]
    );
}

#[test]
fn retry_recovers_from_intermittent_errors() {
    assert_retry_recovers_intermittent_faults(&fixture(), DEPTH);
}

/// A batch of more than 16 completions is hashed and pushed in groups of 16 (`worker.rs`,
/// `PUSH_GROUP`); at depth 24 or 40 (not a multiple of 16) a batch ends in a partial group, and
/// the failed reads of either group are re-issued with the group they fall in: the persistent
/// and intermittent checks above hold there too.
#[test]
fn retries_cross_the_push_groups_at_a_depth_that_is_not_a_multiple_of_16() {
    for depth in [24, 40] {
        let fx = fixture();
        assert_retry_drops_persistent_faults(&fx, depth);
        assert_retry_recovers_intermittent_faults(&fx, depth);
    }
}

#[test]
fn stop_ends_the_slot_with_the_file_and_offset() {
    let fx = fixture();
    for short_read in [false, true] {
        let err = mine(&fx, OnIoError::Stop, short_read, None, &SimStats::default()).unwrap_err();
        let MineError::Read { path, offset, .. } = &err else {
            panic!("expected a read error, got {err}")
        };
        assert_eq!(path, &fx.paths[0]);
        assert!(
            *offset + 32 > BAD.0 && *offset < BAD.1,
            "offset {offset} outside the fault"
        );
        let msg = err.to_string();
        assert!(
            msg.contains(&fx.paths[0].display().to_string()) && msg.contains(&offset.to_string()),
            "{msg}"
        );
    }
}
