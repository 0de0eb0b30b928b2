//! `auto` (docs/mining.md) may change a device's method between slots. A switch must never change a
//! slot's results, only its speed: the same randao over the same nonces finds the same valid
//! nonces, tries the same nonces and reads the same samples whichever method reads them, and
//! whatever method the previous slot used (backends switched away from and back to are reused
//! with their state). Here every available real method takes a turn, slot after slot, through
//! `Miner::swap_io`, the mechanism the session's steering uses; and a session opened with
//! `auto` reports the same results as one pinned to a method, with a steering record per slot.

/// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod common;

use common::*;
use pora_core::{H256, U256};
use pora_io::{IoConfig, Method};
use pora_mine::session::{OpenOptions, ProfileSource, Session};
use pora_mine::{Find, Miner, PoolIo, SlotReport, SlotRequest};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

fn test_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(
        std::env::var_os("PORA_TEST_DIR").unwrap_or_else(|| std::env::temp_dir().into()),
    )
    .unwrap()
}

/// (nonce, hash1) found, nonces tried and samples read, per shard.
type Results = Vec<(Vec<(u64, H256)>, u64, u64)>;

fn results(report: &SlotReport) -> Results {
    report
        .shards
        .iter()
        .map(|s| {
            let found = s.found.iter().map(|p| (p.nonce, p.hash1)).collect();
            (found, s.nonces_tried, s.samples_read)
        })
        .collect()
}

/// The real methods that open over `paths` here, each with its knobs for the test.
fn openable(paths: &[PathBuf]) -> Vec<PoolIo> {
    let mut ios = Vec::new();
    for method in Method::available_real() {
        let config = IoConfig {
            method,
            ..Default::default()
        };
        match pora_io::open(paths, &config) {
            Ok(factory) => {
                let depth = if factory.capabilities().completes_inline {
                    4
                } else {
                    64
                };
                ios.push(PoolIo::open(factory, 2, depth).unwrap());
            }
            Err(e) => skip_note!("SKIP {method}: {e}"),
        }
    }
    ios
}

#[test]
fn a_switch_between_slots_changes_no_found_nonce_count_or_sample() {
    let dir = test_dir();
    let paths = vec![
        write_shard(dir.path(), 1, 8, 61),
        write_shard(dir.path(), 6, 9, 62),
    ];
    let shards: Vec<_> = paths.iter().map(|p| open_shard(p)).collect();
    let required = U256::MAX / U256::from(64u64);
    let mut ios = openable(&paths);
    assert!(!ios.is_empty(), "no real method opens here");
    let first = ios.remove(0);
    let first_method = first.method();
    let mut cfg = config(first.threads, first.depth, 0..3000);
    cfg.required_diff = Some(required);
    cfg.find = Find::All;
    let miner = Miner::new(shards.clone(), first.factory().clone(), cfg.mine()).unwrap();
    let stop = AtomicBool::new(false);
    let want: Vec<Results> = (0..2)
        .map(|r| results(&miner.mine_slot(&cfg.request(randao(r)), &stop).unwrap()))
        .collect();
    assert!(want[0][0].0.len() > 20, "the range holds valid nonces");
    // Every other method in turn, then back to the first: two randaos each.
    let mut order: Vec<Method> = vec![first_method];
    for io in ios {
        let method = io.method();
        let old = miner.swap_io(0, io).unwrap();
        order.push(method);
        for (r, want) in want.iter().enumerate() {
            let got = results(
                &miner
                    .mine_slot(&cfg.request(randao(r as u8)), &stop)
                    .unwrap(),
            );
            assert_eq!(&got, want, "slot after switching to {method}, randao {r}");
        }
        drop(old);
    }
    eprintln!("ok: identical results across {order:?}");
    // A switch is refused while the pool count is wrong, never silently applied elsewhere.
    let again = PoolIo::open(first.factory().clone(), 2, 4).unwrap();
    assert!(miner.swap_io(1, again).is_err());
}

#[test]
fn auto_reports_what_a_pinned_method_reports_with_a_steering_record_per_slot() {
    let dir = test_dir();
    let paths = vec![write_shard(dir.path(), 2, 8, 63)];
    let groups = vec![paths.clone()];
    let required = U256::MAX / U256::from(64u64);
    let request = |slot: u8| {
        SlotRequest::new(randao(slot))
            .with_nonces(0..3000)
            .with_find(Find::All)
            .with_required_diff(Some(required))
    };
    let auto = Session::open(
        &groups,
        &OpenOptions::default().with_profile(ProfileSource::Ignore),
    )
    .unwrap();
    let pinned = Session::open(
        &groups,
        &OpenOptions::default()
            .with_method(Method::Pread)
            .with_profile(ProfileSource::Ignore),
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    for slot in 0..4u8 {
        let a = auto.mine_slot(&request(slot), &stop).unwrap().report;
        let p = pinned.mine_slot(&request(slot), &stop).unwrap().report;
        assert_eq!(results(&a), results(&p), "slot {slot}");
        let choice = &auto.choices()[0];
        let steering = choice.steering.as_ref().expect("auto records its decision");
        assert_eq!(steering.slot, u64::from(slot));
        assert!(steering.predicted_mining_power > 0.0);
        assert!(!steering.candidates.is_empty());
        assert!(choice.why.starts_with("auto"), "{}", choice.why);
        // A path through the page cache measures what it hit, on every OS: Linux from the
        // device's counter or the residency, Windows from the backends' own count.
        if !choice.method.is_unbuffered() {
            let hit = steering
                .hit_ratio
                .expect("a buffered or mapped slot measures its hits");
            assert!((0.0..=1.0).contains(&hit), "{hit}");
        }
        // A pinned method has no steering, and says why it is what it is.
        let pinned_choice = &pinned.choices()[0];
        assert!(pinned_choice.steering.is_none());
        assert_eq!(pinned_choice.method, Method::Pread);
    }
}
