//! A stalled disk never costs a miner its next slot. A shard served through the FUSE
//! fault file system (`pora-faultfs`, the kernel's page cache on) stalls in the shapes a failing
//! disk takes — reads held in a few KVs until released, 8 s reads beside EIO (the table),
//! a stall that starts mid-slot and one that ends mid-slot — and `pora mine --slots N` runs
//! through it with every real access method at its default knobs. Checked per run: every slot
//! ends by its deadline plus the miner's bound, the process's own exit (its main thread's
//! `exit_group`; docs/spec/stalls.md: a thread the FUSE server holds cannot be killed, so the reap waits
//! for the server) comes within 1 s of the last record, the backends out of use stay within the
//! pool's cap (twice its threads) and the process's threads stay bounded, and once the disk
//! answers again a later slot mines with no read error at full strength.
//!
//! The quick case (`pread`, held reads) runs in the README's test command; the matrix over every
//! method and shape is `#[ignore]`d there and run by `.ci/run` (`cargo test -- --ignored`).
//! Needs root and /dev/fuse; elsewhere each test prints a visible SKIP with the reason.
#![cfg(target_os = "linux")]

#[macro_use]
mod common;
mod faultfs_common;
mod reliability_common;

use common::{http_agent, rpc_call};
use faultfs_common::{fuse_ready, mount};
use pora_faultfs::{FaultMount, MountOptions};
use reliability_common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// 16 MiB of data: 128 KVs of 128 KiB.
const KV_ENTRIES_BITS: u32 = 7;
const KV_BYTES: u64 = 128 * 1024;
/// The miner's bound past a slot's deadline (`slot.rs`: 0.5 s for workers stuck in a read plus
/// 0.5 s for re-verifying the nonces to report) and 0.25 s for scheduling on 2 loaded cores.
const OVERSHOOT_BOUND_SEC: f64 = 1.25;
/// The process's own exit after its last record.
const EXIT_BOUND_SEC: f64 = 1.0;
const RANDAO: &str = "0x2222222222222222222222222222222222222222222222222222222222222222";
/// KVs with EIO (as in the experiment) and the two whose reads stall.
const EIO_KVS: [u64; 8] = [3, 19, 35, 51, 67, 83, 99, 115];
const STALLED_KVS: [u64; 2] = [40, 90];

/// Runs are timed; the machine has 2 cores: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How the disk stalls during a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Reads in 2 KVs wait until released, from the start until slot `RELEASE_AFTER` ended.
    Held,
    /// The table: EIO in 8 KVs, reads in 2 KVs answered after 8 s, all run long.
    SlowAndFailing,
    /// Reads in 2 KVs held from the middle of slot 1 until released after slot 3.
    StartsMidSlot,
    /// Reads in 2 KVs held from the start and released in the middle of slot 2.
    EndsMidSlot,
    /// The whole file system pauses (every request, opens and closes included) from the middle
    /// of slot 1 until released after slot 3.
    MountFrozen,
    /// Reads held in half the KVs, from the start until released after slot 3: every read in
    /// flight gets stuck (64 for `pread`, up to 2 x 256 for a ring).
    HeldWide,
    /// Reads held in 2 KVs on a server answering inline with 2 threads: two stuck reads queue
    /// every other request behind them.
    SmallPool,
}

/// The slot after which held reads are released (`Held`, `StartsMidSlot`).
const RELEASE_AFTER: usize = 3;

impl Shape {
    /// Whether the stall ends now, with `done` records written and the mid-slot stall (if the
    /// shape has one) `stalled_mid`.
    fn releases_after(self, done: usize, stalled_mid: bool) -> bool {
        match self {
            Shape::Held | Shape::HeldWide | Shape::SmallPool => done > RELEASE_AFTER,
            Shape::MountFrozen | Shape::StartsMidSlot => stalled_mid && done > RELEASE_AFTER,
            Shape::EndsMidSlot => done >= 2,
            Shape::SlowAndFailing => false,
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Shape::Held => "held",
            Shape::SlowAndFailing => "slow-eio",
            Shape::StartsMidSlot => "starts-mid",
            Shape::EndsMidSlot => "ends-mid",
            Shape::MountFrozen => "frozen",
            Shape::HeldWide => "held-wide",
            Shape::SmallPool => "small-pool",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Shape::Held => "reads held in 2 KVs for 4 slots",
            Shape::SlowAndFailing => "EIO in 8 KVs, 8 s reads in 2",
            Shape::StartsMidSlot => "held from mid-slot 1 to slot 3",
            Shape::EndsMidSlot => "held until mid-slot 2",
            Shape::MountFrozen => "whole mount frozen mid-slot 1 to slot 3",
            Shape::HeldWide => "reads held in 64 of 128 KVs",
            Shape::SmallPool => "2 held reads, 2 inline server threads",
        }
    }

    /// The FUSE server: the table on a libfuse-like server (10 threads answering inline,
    /// the kernel's page cache on); the small pool on 2 threads; the others on the default.
    fn mount_options(self) -> MountOptions {
        match self {
            Shape::SlowAndFailing => MountOptions::libfuse_like(),
            Shape::SmallPool => MountOptions {
                server_threads: 2,
                ..MountOptions::libfuse_like()
            },
            _ => MountOptions::default(),
        }
    }

    fn slots(self) -> usize {
        match self {
            Shape::SlowAndFailing => 3,
            // Rings give back hundreds of released reads over a few seconds.
            _ => 8,
        }
    }

    fn slot_sec(self) -> f64 {
        match self {
            Shape::SlowAndFailing => 6.0,
            _ => 1.0,
        }
    }

    /// The first slot that may find the disk answering every read again (none for the slow
    /// disk, whose 8 s reads last the whole run).
    fn healthy_from(self) -> Option<usize> {
        match self {
            Shape::Held
            | Shape::StartsMidSlot
            | Shape::MountFrozen
            | Shape::HeldWide
            | Shape::SmallPool => Some(RELEASE_AFTER + 1),
            Shape::EndsMidSlot => Some(3),
            Shape::SlowAndFailing => None,
        }
    }
}

fn kv_range(data_start: u64, kv: u64) -> String {
    let start = data_start + kv * KV_BYTES;
    format!("{start} {}", start + KV_BYTES)
}

fn held_rules(data_start: u64) -> String {
    STALLED_KVS
        .iter()
        .map(|&kv| format!("hold {}\n", kv_range(data_start, kv)))
        .collect()
}

fn held_wide_rules(data_start: u64) -> String {
    (0..128u64)
        .step_by(2)
        .map(|kv| format!("hold {}\n", kv_range(data_start, kv)))
        .collect()
}

fn slow_and_failing_rules(data_start: u64) -> String {
    let eio: String = EIO_KVS
        .iter()
        .map(|&kv| format!("eio {}\n", kv_range(data_start, kv)))
        .collect();
    let slow: String = STALLED_KVS
        .iter()
        .map(|&kv| format!("delay {} 8000\n", kv_range(data_start, kv)))
        .collect();
    eio + &slow
}

/// What every test here starts from: the one-at-a-time lock, a directory with an intact shard
/// and where its data starts.
struct StallSetup {
    dir: tempfile::TempDir,
    intact: PathBuf,
    data_start: u64,
    /// Declared last: released after the directory is gone.
    _one: std::sync::MutexGuard<'static, ()>,
}

/// The setup of a test of `what`, or `None` (after printing SKIP) where FUSE cannot run.
fn stall_setup(what: &str) -> Option<StallSetup> {
    if !fuse_ready(what) {
        return None;
    }
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (intact, data_start) = intact_shard(dir.path());
    Some(StallSetup {
        dir,
        intact,
        data_start,
        _one: one,
    })
}

fn intact_shard(dir: &Path) -> (PathBuf, u64) {
    faultfs_common::intact_shard(dir, KV_ENTRIES_BITS, 36)
}

/// The complete lines of `path` now (the child may be writing the next).
fn lines_in(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    json_lines(complete)
}

/// `pora serve` over `fs`'s shard with `method`, skipping reads that fail, logged in `dir` as
/// `tag`: the process and its address once it listens.
fn serve_mounted(fs: &FaultMount, dir: &Path, tag: &str, method: &str) -> (Running, String) {
    let mut cmd = pora();
    cmd.args(["serve", "--file", s(fs.path()), "--listen", "127.0.0.1:0"]);
    cmd.args(["--method", method, "--on-io-error", "skip"]);
    let mut served = spawn_logged(cmd, dir, tag);
    let addr = served_address(&mut served, dir, tag);
    (served, addr)
}

/// Notes, on this test's clock (the caller's), when each record of `out` not seen before
/// appeared; returns how many records there are.
fn note_new_records(out: &Path, seen: &mut Vec<Instant>) -> usize {
    let done = lines_in(out).len();
    while seen.len() < done {
        seen.push(Instant::now());
    }
    done
}

/// `exit_group` on this architecture (`/proc/PID/syscall` names the call a thread is inside).
#[cfg(target_arch = "x86_64")]
const EXIT_GROUP: &str = "231";
#[cfg(target_arch = "aarch64")]
const EXIT_GROUP: &str = "94";
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const EXIT_GROUP: &str = "";

/// Whether process `pid` has made its own exit: reaped, its main thread a zombie, or its main
/// thread inside `exit_group` (where the kernel waits for the threads a FUSE server holds).
fn has_exited(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    let syscall = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
    state == Some('Z') || (!EXIT_GROUP.is_empty() && syscall.split(' ').next() == Some(EXIT_GROUP))
}

/// The process's thread count now.
fn proc_threads(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
}

/// What one (shape, method) run showed.
struct Cell {
    shape: Shape,
    method: String,
    worst_overshoot_sec: f64,
    exit_after_last_sec: f64,
    reaped_after_last_sec: f64,
    max_stuck: u64,
    threads_cap: u64,
    max_threads: u64,
    recovered: Option<usize>,
    tried_per_slot: Vec<u64>,
}

/// Mines `shape.slots()` slots with `method` at its default knobs on a shard that stalls as
/// `shape` says, and checks the bounds.
fn run_stalled(dir: &Path, intact: &Path, data_start: u64, shape: Shape, method: &str) -> Cell {
    let tag = format!("{}-{method}", shape.tag());
    let fs = mount(dir, intact, &tag, shape.mount_options());
    let file = fs.path().to_path_buf();
    let slots = shape.slots();
    match shape {
        Shape::Held | Shape::EndsMidSlot | Shape::SmallPool => {
            fs.set_rules(&held_rules(data_start)).unwrap()
        }
        Shape::HeldWide => fs.set_rules(&held_wide_rules(data_start)).unwrap(),
        Shape::SlowAndFailing => fs.set_rules(&slow_and_failing_rules(data_start)).unwrap(),
        Shape::StartsMidSlot | Shape::MountFrozen => fs.set_rules("").unwrap(),
    }
    let slot_arg = format!("{}", shape.slot_sec());
    let slots_arg = slots.to_string();
    let mut cmd = pora();
    cmd.args([
        "mine",
        "--file",
        s(&file),
        "--method",
        method,
        "--randao",
        RANDAO,
        "--slot",
        &slot_arg,
        "--slots",
        &slots_arg,
        "--on-io-error",
        "skip",
        "--nonces",
        "0..20000",
    ]);
    cmd.args(FIND_ALL_EASY);
    let mut run = spawn_logged(cmd, dir, &tag);
    let pid = run.pid();
    let out = dir.join(format!("{tag}.out"));
    let limit =
        Duration::from_secs_f64(slots as f64 * (shape.slot_sec() + OVERSHOOT_BOUND_SEC) + 30.0);
    let started = Instant::now();
    let (mut max_threads, mut released, mut stalled_mid) = (0u64, false, false);
    let half_slot = Duration::from_secs_f64(shape.slot_sec() / 2.0);
    // The rules of a stall that starts in the middle of slot 1.
    let mid_slot_stall = match shape {
        Shape::MountFrozen => Some("freeze\n".to_string()),
        Shape::StartsMidSlot => Some(held_rules(data_start)),
        _ => None,
    };
    let mut last_line_at = None;
    // When each record appeared, on this test's clock (the caller's).
    let mut line_times: Vec<Instant> = Vec::new();
    while last_line_at.is_none() {
        assert!(
            started.elapsed() < limit,
            "{tag}: {} of {slots} slots after {:?}",
            lines_in(&out).len(),
            started.elapsed()
        );
        max_threads = max_threads.max(proc_threads(pid).unwrap_or(0));
        let done = note_new_records(&out, &mut line_times);
        if let Some(rules) = mid_slot_stall
            .as_deref()
            .filter(|_| !stalled_mid && done >= 1)
        {
            // Half a slot into slot 1.
            std::thread::sleep(half_slot);
            fs.set_rules(rules).unwrap();
            stalled_mid = true;
        } else if !released && shape.releases_after(done, stalled_mid) {
            if shape == Shape::EndsMidSlot {
                // Half a slot into slot 2.
                std::thread::sleep(half_slot);
            }
            fs.set_rules("").unwrap();
            released = true;
        }
        if done >= slots {
            last_line_at = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let last_line_at = last_line_at.expect("loop ends with it");
    // pora's own exit: the main thread's exit_group (state Z while held threads wait), or gone.
    let exited_at = loop {
        if !run.is_running() || has_exited(pid) {
            break Instant::now();
        }
        assert!(
            last_line_at.elapsed() < Duration::from_secs(30),
            "{tag}: still running 30 s after its last slot"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    // Let whatever the server holds go, so the process can be reaped.
    fs.set_rules("").unwrap();
    let done = run.finish(limit + Duration::from_secs(30));
    let reaped_after_last_sec = done.took.as_secs_f64() - (last_line_at - started).as_secs_f64();
    done.assert_no_signal(&tag);
    assert!(done.status.success(), "{tag}: {}", done.stderr);
    let lines = done.json_lines();
    assert_eq!(lines.len(), slots, "{tag}: {}", done.stderr);
    let threads_cap = lines[0]["threads"].as_u64().unwrap();
    let mut cell = Cell {
        shape,
        method: method.to_string(),
        worst_overshoot_sec: 0.0,
        exit_after_last_sec: (exited_at - last_line_at).as_secs_f64(),
        reaped_after_last_sec,
        max_stuck: 0,
        threads_cap,
        max_threads,
        recovered: None,
        tried_per_slot: Vec::new(),
    };
    for (slot, line) in lines.iter().enumerate() {
        let late = slot_end_late_sec(&lines, &line_times, slot, shape.slot_sec());
        cell.worst_overshoot_sec = cell.worst_overshoot_sec.max(late);
        assert!(
            late <= OVERSHOOT_BOUND_SEC,
            "{tag}: slot {slot} ended {late:.2} s past its deadline (endLateMs {}, or on this test's clock), past the bound of {OVERSHOOT_BOUND_SEC} s; stderr: {}",
            line["endLateMs"],
            done.stderr
        );
        assert_found_are_valid(line, intact, EASY_DIFF, 2);
        let stuck = line["stuckBackends"].as_u64().unwrap();
        cell.max_stuck = cell.max_stuck.max(stuck);
        let tried = line["noncesTried"].as_u64().unwrap();
        cell.tried_per_slot.push(tried);
        // From the first slot the disk may answer every read in (a loaded 2-core machine can
        // leave a later slot a few nonces short on a 2-thread FUSE server: speed, not the bound).
        let healthy = shape.healthy_from().is_some_and(|h| slot >= h);
        let full = line["ioErrors"].as_u64() == Some(0)
            && stuck == 0
            && line["noncesTried"] == line["nonceLimit"];
        if healthy && full && cell.recovered.is_none() {
            cell.recovered = Some(slot);
        }
    }
    // A pool has at most twice its threads in workers (`PoolIo::workers_cap`).
    assert!(
        cell.max_stuck <= 2 * threads_cap,
        "{tag}: {} workers out of use, past the pool's cap of {}",
        cell.max_stuck,
        2 * threads_cap
    );
    // Each worker is a thread, at most twice the pool's threads of them; io_uring's kernel
    // workers for the reads a worker's ring holds are threads of the process too (at most its
    // depth, and one more); plus the verifier, the errand, signal and main threads.
    let depth = lines[0]["depth"].as_u64().unwrap();
    let per_worker = if method.starts_with("uring") {
        2 + depth
    } else {
        1
    };
    let thread_bound = 2 * threads_cap * per_worker + 12;
    assert!(
        max_threads <= thread_bound,
        "{tag}: {max_threads} threads, past {thread_bound}"
    );
    assert!(
        cell.exit_after_last_sec <= EXIT_BOUND_SEC,
        "{tag}: exited {:.2} s after its last slot; stderr: {}",
        cell.exit_after_last_sec,
        done.stderr
    );
    if shape.healthy_from().is_some() {
        assert!(
            cell.recovered.is_some(),
            "{tag}: no slot after the disk came back mined every nonce with every worker: {:?}",
            cell.tried_per_slot
        );
    }
    cell
}

/// How late slot `slot` of a `pora mine --slots` run ended against its deadline, seconds: the
/// larger of the record's own `endLateMs` and the lateness seen on this test's clock. pora mines
/// on a fixed rhythm (slot k ends at its start + (k + 1) x the slot length), so slot k's deadline
/// is slot 0's plus k slot lengths; slot 0's deadline on this clock is when its record appeared
/// less its `endLateMs` (the only use of pora's clock, and only to place the first deadline).
fn slot_end_late_sec(lines: &[Value], seen: &[Instant], slot: usize, slot_sec: f64) -> f64 {
    let own = lines[slot]["endLateMs"].as_f64().expect("endLateMs") / 1e3;
    let first_late = lines[0]["endLateMs"].as_f64().expect("endLateMs") / 1e3;
    let since_first = (seen[slot] - seen[0]).as_secs_f64();
    let on_our_clock = since_first + first_late - slot as f64 * slot_sec;
    own.max(on_our_clock)
}

const TABLE_HEAD: &str = "| stall | method | worst slot end past deadline | exit after last slot | reaped after | most workers out of use (threads) | most threads | first full slot after | nonces tried per slot |";

/// One row of the table in docs/RELIABILITY.md.
fn print_row(c: &Cell) {
    skip_note!(
        "| {} | {} | {:+.2} s | {:.2} s | {:.1} s | {} ({}) | {} | {} | {:?} |",
        c.shape.name(),
        c.method,
        c.worst_overshoot_sec,
        c.exit_after_last_sec,
        c.reaped_after_last_sec,
        c.max_stuck,
        c.threads_cap,
        c.max_threads,
        c.recovered.map_or("—".to_string(), |s| s.to_string()),
        c.tried_per_slot
    );
}

#[test]
fn pread_through_held_reads_keeps_every_slot_bounded_and_recovers() {
    let Some(setup) = stall_setup("stalls, pread") else {
        return;
    };
    let (dir, intact, data_start) = (&setup.dir, &setup.intact, setup.data_start);
    let cell = run_stalled(dir.path(), intact, data_start, Shape::Held, "pread");
    skip_note!("{TABLE_HEAD}");
    print_row(&cell);
}

#[test]
#[ignore = "long (every method x every stall shape): .ci/run runs it with --ignored"]
fn every_method_through_every_stall_shape_keeps_its_bounds() {
    let Some(setup) = stall_setup("stall x method matrix") else {
        return;
    };
    let (dir, intact, data_start) = (&setup.dir, &setup.intact, setup.data_start);
    let started = Instant::now();
    skip_note!("{TABLE_HEAD}");
    let mut runs = 0;
    for shape in [
        Shape::SlowAndFailing,
        Shape::Held,
        Shape::HeldWide,
        Shape::SmallPool,
        Shape::MountFrozen,
        Shape::StartsMidSlot,
        Shape::EndsMidSlot,
    ] {
        for method in pora_io::Method::available_real() {
            print_row(&run_stalled(
                dir.path(),
                intact,
                data_start,
                shape,
                method.name(),
            ));
            runs += 1;
        }
    }
    skip_note!(
        "stall x method: {runs} runs in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// The service door: `pora serve` mines consecutive `pora_mineSlot` calls of 1 s through reads
/// held in 2 KVs (the default 64 `pread` workers all end up in a held read, then their
/// replacements), each answered by its deadline plus the bound; once the reads are released a
/// later slot tries every nonce with every worker; SIGTERM with reads held again ends the
/// process's own life within 1 s.
#[test]
#[ignore = "long (8 slots through the service): .ci/run runs it with --ignored"]
fn serve_keeps_every_slot_bounded_through_held_reads_and_exits_on_time() {
    let Some(setup) = stall_setup("stalls, pora serve") else {
        return;
    };
    let (dir, intact, data_start) = (&setup.dir, &setup.intact, setup.data_start);
    let fs = mount(dir.path(), intact, "serve", MountOptions::default());
    fs.set_rules(&held_rules(data_start)).unwrap();
    let (mut served, addr) = serve_mounted(&fs, dir.path(), "serve", "pread");
    let pid = served.pid();
    let agent = http_agent(Duration::from_secs(30));
    let slot = serde_json::json!({
        "randao": RANDAO, "nonceStart": 0, "nonceEnd": 20000, "requiredDiff": EASY_DIFF, "slotMs": 1000, "find": "all"
    });
    let mine = || -> (f64, Value) {
        let t = Instant::now();
        let (_, answer) = rpc_call(&agent, &addr, 1, "pora_mineSlot", &slot);
        (
            t.elapsed().as_secs_f64(),
            answer["result"]["shards"][0].clone(),
        )
    };
    let mut tried = Vec::new();
    let mut recovered = None;
    for n in 0..8 {
        if n == RELEASE_AFTER + 1 {
            fs.set_rules("").unwrap();
        }
        let (answered, shard) = mine();
        // Judged against the caller's deadline (slotMs after the request was sent): pora's own
        // endLateMs and this test's clock.
        let end_late = shard["endLateMs"].as_f64().unwrap_or(f64::MAX) / 1e3;
        assert!(
            end_late <= OVERSHOOT_BOUND_SEC && answered <= 1.0 + OVERSHOOT_BOUND_SEC,
            "serve slot {n}: endLateMs {:.0}, answered after {answered:.2} s: {shard}",
            end_late * 1e3
        );
        assert!(
            shard["stuckBackends"].as_u64().unwrap() <= 2 * shard["threads"].as_u64().unwrap(),
            "serve slot {n}: past the pool's cap: {shard}"
        );
        assert_found_are_valid(&shard, intact, EASY_DIFF, 2);
        let full = shard["noncesTried"] == shard["nonceLimit"]
            && shard["stuckBackends"].as_u64() == Some(0)
            && shard["ioErrors"].as_u64() == Some(0);
        if n > RELEASE_AFTER && full && recovered.is_none() {
            recovered = Some(n);
        }
        tried.push(shard["noncesTried"].as_u64().unwrap());
    }
    assert!(
        recovered.is_some(),
        "serve: no full slot after the reads were released: {tried:?}"
    );
    // SIGTERM while a slot mines through held reads: the service's own exit within 1 s of the
    // slot's bound.
    fs.set_rules(&held_rules(data_start)).unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // The answer (partial counts) or a closed connection: either is fine here.
            let _ = rpc_call(&agent, &addr, 2, "pora_mineSlot", &slot);
        });
        fs.wait_for(|c| c.held_now > 0, Duration::from_secs(20))
            .expect("a read held before SIGTERM");
        let signalled = Instant::now();
        served.signal(libc::SIGTERM);
        let until = Instant::now() + Duration::from_secs(30);
        while !has_exited(pid) && served.is_running() {
            assert!(
                Instant::now() < until,
                "serve still running 30 s after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let exit_sec = signalled.elapsed().as_secs_f64();
        assert!(
            exit_sec <= OVERSHOOT_BOUND_SEC + EXIT_BOUND_SEC,
            "serve exited {exit_sec:.2} s after SIGTERM"
        );
        fs.set_rules("").unwrap();
        skip_note!(
            "serve through held reads: nonces tried per slot {tried:?}, first full slot after the release {recovered:?}, exit {exit_sec:.2} s after SIGTERM"
        );
    });
    let done = served.finish(Duration::from_secs(60));
    done.assert_no_signal("serve");
}

/// `pora mine --slots` holds its rhythm when steering waits on the device: `auto` on a mount
/// whose every request (open, the page-cache facts' open, a switch's opens, each read) is
/// answered 200 ms late. The facts take 200 ms or their 250 ms budget; a switch
/// the model asks for waits up to 500 ms for its backends to open; the reads run 200 ms each.
/// Measured on this test's clock from when each record appears: slot k ends by slot 0's
/// deadline + k slot lengths + 1 s, and the steering each slot records (its facts and switch
/// time) is spent inside the slot, not after it.
#[test]
fn auto_steering_on_a_stalling_mount_keeps_the_slots_rhythm() {
    let Some(setup) = stall_setup("stalls, auto steering rhythm") else {
        return;
    };
    let (dir, intact) = (&setup.dir, &setup.intact);
    let fs = mount(dir.path(), intact, "rhythm", MountOptions::default());
    // From the start: slot k + 1 steers right after slot k's record, before this test could
    // change the rules between them.
    fs.set_rules("stall 200\n").unwrap();
    const SLOTS: usize = 5;
    const SLOT_SEC: f64 = 1.5;
    let mut cmd = pora();
    cmd.args([
        "mine",
        "--file",
        s(fs.path()),
        "--method",
        "auto",
        "--randao",
        RANDAO,
        "--slot",
        "1.5",
        "--slots",
        "5",
        "--on-io-error",
        "skip",
        "--json",
    ]);
    let run = spawn_logged(cmd, dir.path(), "rhythm");
    let out = dir.path().join("rhythm.out");
    let limit = Duration::from_secs(60);
    let started = Instant::now();
    let mut seen: Vec<Instant> = Vec::new();
    while seen.len() < SLOTS {
        assert!(started.elapsed() < limit, "rhythm: {} records", seen.len());
        note_new_records(&out, &mut seen);
        std::thread::sleep(Duration::from_millis(2));
    }
    fs.set_rules("").unwrap();
    let done = run.finish(limit);
    done.assert_no_signal("rhythm");
    assert!(done.status.success(), "rhythm: {}", done.stderr);
    let lines = done.json_lines();
    assert_eq!(lines.len(), SLOTS, "{}", done.stderr);
    // Slot 0 ran to its deadline (a million nonces do not fit in 1.5 s here): its record places
    // the first deadline on this clock.
    assert!(
        lines[0]["endLateMs"].as_f64().unwrap() >= 0.0,
        "{}",
        lines[0]
    );
    let mut worst = f64::MIN;
    let mut steering_ms = Vec::new();
    for (slot, line) in lines.iter().enumerate() {
        let late = slot_end_late_sec(&lines, &seen, slot, SLOT_SEC);
        worst = worst.max(late);
        assert!(
            late <= 1.0,
            "rhythm: slot {slot} ended {late:.3} s past the caller's deadline: {line}; stderr: {}",
            done.stderr
        );
        let steering = &line["steering"];
        steering_ms.push(
            steering["decisionMs"].as_f64().unwrap() + steering["switchMs"].as_f64().unwrap(),
        );
    }
    // The stalled mount held steering up (facts at least 200 ms late, or their budget) in at
    // least one slot, and the rhythm above absorbed it.
    let held = steering_ms.iter().cloned().fold(0.0, f64::max);
    assert!(
        held >= 150.0,
        "rhythm: steering never waited on the stalled mount: {steering_ms:?}"
    );
    skip_note!(
        "auto through a 200 ms stall: steering ms per slot {steering_ms:?}, worst end past the caller's deadline {:+.3} s",
        worst
    );
}

/// `pora_mineSlot` counts the slot from the request's receipt: `pora serve` with `auto` on a
/// mount whose every request is answered 200 ms late (from the second call on), so steering
/// waits on the device (the facts' open, a switch's opens). Each answer comes by the caller's
/// deadline + 1 s on this test's clock: `slotMs` after the request was sent, or the wall-clock
/// `deadlineUnixMs` it named.
#[test]
fn serve_answers_by_the_callers_deadline_while_steering_waits_on_a_stalling_mount() {
    let Some(setup) = stall_setup("stalls, pora_mineSlot deadline") else {
        return;
    };
    let (dir, intact) = (&setup.dir, &setup.intact);
    let fs = mount(
        dir.path(),
        intact,
        "serve-deadline",
        MountOptions::default(),
    );
    fs.set_rules("").unwrap();
    let (served, addr) = serve_mounted(&fs, dir.path(), "serve-deadline", "auto");
    let agent = http_agent(Duration::from_secs(30));
    const SLOT_MS: u64 = 1500;
    let mut steering_ms = Vec::new();
    let mut worst = f64::MIN;
    for n in 0..4u64 {
        if n == 1 {
            fs.set_rules("stall 200\n").unwrap();
        }
        let sent = Instant::now();
        let mut params = serde_json::json!({ "randao": RANDAO });
        if n == 3 {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64;
            params["deadlineUnixMs"] = (now_ms + SLOT_MS).into();
        } else {
            params["slotMs"] = SLOT_MS.into();
        }
        let (_, answer) = rpc_call(&agent, &addr, n, "pora_mineSlot", &params);
        let late = sent.elapsed().as_secs_f64() - SLOT_MS as f64 / 1e3;
        let shard = &answer["result"]["shards"][0];
        let end_late_ms = shard["endLateMs"].as_f64().unwrap_or(f64::MAX);
        // deadlineUnixMs is whole milliseconds of the wall clock: 2 ms of slack for its rounding.
        assert!(
            late <= 1.0 && end_late_ms <= 1000.0 && end_late_ms <= late * 1e3 + 2.0,
            "call {n}: answered {late:.3} s past the caller's deadline, endLateMs {end_late_ms}: {answer}"
        );
        worst = worst.max(late);
        let steering = &shard["steering"];
        steering_ms.push(
            steering["decisionMs"].as_f64().unwrap() + steering["switchMs"].as_f64().unwrap(),
        );
    }
    fs.set_rules("").unwrap();
    let held = steering_ms[1..].iter().cloned().fold(0.0, f64::max);
    assert!(
        held >= 150.0,
        "serve: steering never waited on the stalled mount: {steering_ms:?} ms"
    );
    served.signal(libc::SIGTERM);
    let done = served.finish(Duration::from_secs(60));
    done.assert_no_signal("serve-deadline");
    skip_note!(
        "pora_mineSlot, auto through a 200 ms stall: steering ms per call {steering_ms:?}, worst answer past the caller's deadline {worst:+.3} s"
    );
}

/// The byte range of the 4 KiB page holding the first sample nonce `nonce` of `randao` reads on
/// the intact shard at `intact`: a `hold` there holds the single-nonce path's first read.
fn first_sample_page(intact: &Path, randao: [u8; 32], nonce: u64) -> (u64, u64) {
    let shard = pora_core::ShardSet::open(&[intact.to_path_buf()], None).unwrap();
    let proof = pora_mine::hash_nonce(&shard, None, 2, &pora_core::H256(randao), nonce).unwrap();
    let offset = shard.locate(proof.sample_idxs[0]).unwrap().offset;
    let page = offset & !4095;
    (page, page + 4096)
}

/// A slot beside `hashes` `pora_hash` calls stuck on held reads, through `pora serve`
/// (`pread`): nonces 5, 6, ... whose first samples lie in distinct 4 KiB pages, those pages held
/// once the shard is open; once `held` reads are held, a `pora_mineSlot` of 2 s that finds nonces
/// to re-verify (1 in 64) is sent. The hold ends at the slot's answer or 5 s past its deadline,
/// so a slot the hashes hold answers late and the failure says how late. Asserted: the slot
/// answered by its deadline + 1 s on this test's clock, it re-verified nonces (valid on the
/// intact file), and each hash, released, answers the intact shard's hash1.
fn slot_beside_stuck_hashes(setup: &StallSetup, tag: &str, hashes: usize, held: u64) {
    let (dir, intact) = (&setup.dir, &setup.intact);
    let randao = [0x22u8; 32];
    let mut nonces: Vec<(u64, (u64, u64))> = Vec::new();
    for nonce in 5.. {
        let page = first_sample_page(intact, randao, nonce);
        if nonces.iter().all(|(_, p)| *p != page) {
            nonces.push((nonce, page));
        }
        if nonces.len() == hashes {
            break;
        }
    }
    let fs = mount(dir.path(), intact, tag, MountOptions::default());
    fs.set_rules("").unwrap();
    let (served, addr) = serve_mounted(&fs, dir.path(), tag, "pread");
    // Held only now that the shard is open: opening reads the header, and the kernel's readahead
    // of that read must not take a held page into the cache.
    let rules: String = nonces
        .iter()
        .map(|(_, (start, end))| format!("hold {start} {end}\n"))
        .collect();
    fs.set_rules(&rules).unwrap();
    let agent = http_agent(Duration::from_secs(120));
    const SLOT_MS: u64 = 2000;
    let (agent, addr) = (&agent, addr.as_str());
    let (hash_answers, slot_late, slot_answer) = std::thread::scope(|scope| {
        let hashed: Vec<_> = nonces
            .iter()
            .map(|&(nonce, _)| {
                scope.spawn(move || {
                    let params = serde_json::json!({ "randao": RANDAO, "nonce": nonce });
                    rpc_call(agent, addr, nonce, "pora_hash", &params).1
                })
            })
            .collect();
        fs.wait_for(|c| c.held_now >= held, Duration::from_secs(20))
            .expect("the hashes' first reads held");
        let sent = Instant::now();
        let mined = scope.spawn(move || {
            let params = serde_json::json!({
                "randao": RANDAO, "nonceStart": 0, "nonceEnd": 20000, "requiredDiff": EASY_DIFF,
                "slotMs": SLOT_MS, "find": "all"
            });
            let answer = rpc_call(agent, addr, 0, "pora_mineSlot", &params).1;
            (sent.elapsed().as_secs_f64(), answer)
        });
        let bound = Duration::from_millis(SLOT_MS) + Duration::from_secs(5);
        while !mined.is_finished() && sent.elapsed() < bound {
            std::thread::sleep(Duration::from_millis(2));
        }
        fs.set_rules("").unwrap();
        let (late, slot) = mined.join().unwrap();
        let hashes: Vec<Value> = hashed.into_iter().map(|h| h.join().unwrap()).collect();
        (hashes, late - SLOT_MS as f64 / 1e3, slot)
    });
    served.signal(libc::SIGTERM);
    let done = served.finish(Duration::from_secs(60));
    done.assert_no_signal(tag);
    let shard = &slot_answer["result"]["shards"][0];
    assert!(
        slot_late <= 1.0,
        "{tag}: the slot beside {hashes} held pora_hash calls answered {slot_late:.3} s past the caller's deadline: {slot_answer}"
    );
    assert!(
        shard["found"].as_array().is_some_and(|f| !f.is_empty())
            || !slot_answer["result"]["ioErrorMessages"]
                .as_array()
                .unwrap()
                .is_empty(),
        "{tag}: the slot verified no candidate (the door was not exercised): {slot_answer}"
    );
    assert_found_are_valid(shard, intact, EASY_DIFF, 2);
    for ((nonce, _), answer) in nonces.iter().zip(&hash_answers) {
        let (want, _) = hash_nonce(intact, RANDAO, *nonce, EASY_DIFF);
        assert_eq!(
            answer["result"]["hash1"].as_str(),
            Some(want.as_str()),
            "{tag}: nonce {nonce}'s hash once its read was released: {answer}"
        );
    }
    skip_note!(
        "{tag}: {hashes} pora_hash held on pages {:?}: the slot beside them answered {slot_late:+.3} s past its deadline, found {}",
        nonces.iter().map(|(_, (p, _))| *p).collect::<Vec<_>>(),
        shard["found"].as_array().map_or(0, Vec::len)
    );
}

/// The side door: a `pora_hash` whose first read the disk holds must not hold a slot started
/// beside it (`Miner::hash` held the verifier's lock through its reads, and a slot re-verifying
/// its nonces takes that lock: on 3ae8b57 a 3 s slot answered after 39.3 s with a 40 s hold).
#[test]
fn serve_slot_beside_a_hash_stuck_on_a_held_read_ends_by_its_deadline() {
    let Some(setup) = stall_setup("stalls, pora_hash beside pora_mineSlot") else {
        return;
    };
    slot_beside_stuck_hashes(&setup, "side-door", 1, 1);
}

/// More stuck hashes than the service has blocking threads (4): the hashes read at most 2 at a
/// time (`MAX_HASHES_AT_ONCE`), so the slot still finds a thread; once the 2 that read are held
/// the slot is sent. Before the turns, 4 hashes took every thread and the slot waited for one.
#[test]
fn serve_slot_beside_more_stuck_hashes_than_threads_ends_by_its_deadline() {
    let Some(setup) = stall_setup("stalls, 4 pora_hash beside pora_mineSlot") else {
        return;
    };
    slot_beside_stuck_hashes(&setup, "side-door-4", 4, 2);
}
