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

/// A shard file written for a test, its pages dropped from the page cache so that `auto` sees
/// a cold device it knows nothing of (the probe's case); `None` (with a SKIP line) where the
/// OS does not drop them.
fn cold_shard(dir: &std::path::Path, label: &str) -> Option<PathBuf> {
    let path = write_shard(dir, 2, 8, 63);
    // Dirty pages are not dropped: written back first.
    std::fs::File::open(&path)
        .and_then(|f| f.sync_all())
        .unwrap();
    match pora_io::host::page_cache::evict(&path) {
        Ok(_) => Some(path),
        Err(e) => {
            skip_note!("SKIP {label}: the shard's pages cannot be dropped here ({e})");
            None
        }
    }
}

/// On a cold device with nothing known, the probe measures threads x depth variants of each
/// read path and the first slot mines with the knobs it adopted for the chosen path: the
/// choice's threads and depth are the ones the record's `why` says the probe adopted.
#[test]
fn auto_mines_with_the_knobs_its_probe_adopted() {
    let label = "auto_mines_with_the_knobs_its_probe_adopted";
    let dir = test_dir();
    let Some(path) = cold_shard(dir.path(), label) else {
        return;
    };
    let auto = Session::open(
        &[vec![path]],
        &OpenOptions::default().with_profile(ProfileSource::Ignore),
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    let request = SlotRequest::new(randao(1)).with_nonces(0..3000);
    auto.mine_slot(&request, &stop).unwrap();
    let choice = &auto.choices()[0];
    let why = &choice.why;
    if !why.contains("probed in") {
        skip_note!("SKIP {label}: no probe ran here (one read path opens, or the shard stayed in the page cache): {why}");
        return;
    }
    if choice.method.read_path() == pora_io::ReadPath::Mapped {
        skip_note!("SKIP {label}: the first slot took a map, whose knobs are not probed: {why}");
        return;
    }
    let entry = [": ", "), "]
        .iter()
        .find_map(|before| why.find(&format!("{before}{} ", choice.method)))
        .unwrap_or_else(|| panic!("the probe names {}: {why}", choice.method));
    let adopted = format!("with {}x{} (", choice.threads, choice.depth);
    let first_with = why[entry..].find("with ").map(|i| entry + i);
    assert_eq!(
        first_with,
        why[entry..].find(&adopted).map(|i| entry + i),
        "{} mines with {}x{}: {why}",
        choice.method,
        choice.threads,
        choice.depth
    );
}

/// Threads and depth the caller gave are never replaced by a probe's: `auto` on a cold device
/// keeps them slot after slot.
#[test]
fn auto_keeps_the_callers_threads_and_depth() {
    let label = "auto_keeps_the_callers_threads_and_depth";
    let dir = test_dir();
    let Some(path) = cold_shard(dir.path(), label) else {
        return;
    };
    let mut options = OpenOptions::default().with_profile(ProfileSource::Ignore);
    (options.threads, options.depth) = (Some(1), Some(3));
    let auto = Session::open(&[vec![path]], &options).unwrap();
    let stop = AtomicBool::new(false);
    for slot in 0..2u8 {
        let request = SlotRequest::new(randao(slot)).with_nonces(0..3000);
        auto.mine_slot(&request, &stop).unwrap();
        let choice = &auto.choices()[0];
        assert_eq!((choice.threads, choice.depth), (1, 3), "{}", choice.why);
        assert!(!choice.why.contains("probed in"), "{}", choice.why);
    }
}
