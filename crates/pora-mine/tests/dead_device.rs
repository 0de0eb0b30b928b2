//! Devices that stop answering, and slow synchronous reads (docs/io-methods.md):
//! - the simulated disk dies mid-slot (`dead_after_reads`): the slot ends at its deadline, the
//!   next slot starts (the miner replaces backends that do not drain), and dropping the miner
//!   finishes without waiting for the dead device: its backends are leaked and counted
//!   (`pora_io::leaked_backends`);
//! - a synchronous method on a slow device at depth 1024 (the simulated disk's synchronous
//!   mode, 5 ms per read): a stop request is honoured within a few reads per worker, not after
//!   the whole batch, and the deadline likewise;
//! - a real block device that stops answering (device-mapper, suspended), where the kernel has
//!   device-mapper and the test runs as root; otherwise a visible SKIP line.
//!
//! The time bounds asserted are generous (a shared CI machine); the counts are the real test.

mod common;

use common::*;
use pora_io::sim::SimStats;
use pora_io::SimConfig;
use pora_mine::Miner;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Slack allowed past a deadline on a loaded 2-core machine.
const SLACK: Duration = Duration::from_millis(500);

fn throughput_config(threads: usize, depth: usize, slot: Duration) -> TestConfig {
    let mut cfg = config(threads, depth, 0..u64::MAX);
    cfg.slot = slot;
    // No nonce is valid: nothing to re-verify, the slot only reads.
    cfg.required_diff = None;
    cfg
}

#[test]
fn a_simulated_device_that_dies_mid_slot_bounds_every_slot_and_the_teardown() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![write_shard(dir.path(), 0, 8, 11)];
    let stats = SimStats::default();
    let sim = SimConfig {
        seed: 11,
        latency_us: (500, 2_000),
        dead_after_reads: Some(3_000),
        stats: stats.clone(),
        ..Default::default()
    };
    let slot = Duration::from_millis(400);
    let threads = 2;
    let cfg = throughput_config(threads, 64, slot);
    let miner = Miner::new(
        vec![open_shard(&paths[0])],
        sim_factory(&paths, sim),
        cfg.mine(),
    )
    .unwrap();
    let leaked_at_start = pora_io::leaked_backends();

    // Slot 1: the device answers 3,000 reads, then nothing; the slot still ends at its deadline.
    let first = miner
        .mine_slot(&cfg.request(randao(1)), &AtomicBool::new(false))
        .unwrap();
    assert!(stats.reads_unanswered() > 0, "the device must have died");
    assert!(first.shards[0].samples_read <= 3_000);
    assert!(first.shards[0].samples_read > 0);
    assert!(
        first.elapsed_sec <= (slot + SLACK).as_secs_f64(),
        "{}",
        first.elapsed_sec
    );

    // Slot 2: the stuck backends are replaced after the miner's drain timeout; the slot runs
    // (and reads nothing: the device is still dead) and ends at its own deadline.
    let created = stats.workers_created();
    let second = miner
        .mine_slot(&cfg.request(randao(2)), &AtomicBool::new(false))
        .unwrap();
    assert_eq!(
        stats.workers_created(),
        created + threads as u64,
        "every stuck backend was replaced"
    );
    assert!(pora_io::leaked_backends() >= leaked_at_start + threads as u64);
    assert_eq!(second.shards[0].samples_read, 0);
    assert!(
        second.elapsed_sec <= (slot + SLACK).as_secs_f64(),
        "{}",
        second.elapsed_sec
    );
    assert!(!second.interrupted);

    // Teardown: the new backends hold reads the device will never answer; dropping the miner
    // must not wait for them.
    let leaked_before_drop = pora_io::leaked_backends();
    let dropping = Instant::now();
    drop(miner);
    let took = dropping.elapsed();
    assert!(
        took < pora_io::TEARDOWN_WAIT + SLACK,
        "dropping the miner took {took:?}"
    );
    assert!(pora_io::leaked_backends() >= leaked_before_drop + threads as u64);
}

#[test]
fn a_synchronous_method_on_a_slow_device_stops_within_a_few_reads_at_depth_1024() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![write_shard(dir.path(), 0, 8, 12)];
    let stats = SimStats::default();
    let read_ms = 5;
    let sim = SimConfig {
        seed: 12,
        latency_us: (read_ms * 1000, read_ms * 1000),
        synchronous: true,
        stats: stats.clone(),
        ..Default::default()
    };
    let threads = 2;
    let cfg = throughput_config(threads, 1024, Duration::from_secs(60));
    let miner = Miner::new(
        vec![open_shard(&paths[0])],
        sim_factory(&paths, sim),
        cfg.mine(),
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    let at_stop = std::thread::scope(|scope| {
        let stopper = scope.spawn(|| {
            // Stop once both workers are inside their synchronous batches: 20 reads of 5 ms
            // performed (a batch is 1024 of them), waited for at most 30 s.
            let give_up = Instant::now() + Duration::from_secs(30);
            while stats.reads_submitted() < 20 {
                assert!(Instant::now() < give_up, "the workers never read");
                std::thread::sleep(Duration::from_millis(1));
            }
            let reads = stats.reads_submitted();
            stop.store(true, Ordering::SeqCst);
            reads
        });
        let report = miner.mine_slot(&cfg.request(randao(3)), &stop).unwrap();
        assert!(report.interrupted);
        stopper.join().unwrap()
    });
    assert!(at_stop > 0, "reads were performed before the stop");
    // After the stop a worker finishes at most the submit budget (10 ms) and one reap wait
    // (at most 50 ms) of reads before it looks at the flag: about 12 reads of 5 ms, plus a
    // few for coarse-clock ticks. Without bounded batches it would be its whole batch (1024).
    let after_stop = stats.reads_submitted() - at_stop;
    let bound = threads as u64 * (100 / read_ms as u64);
    eprintln!(
        "synchronous sim, depth 1024, {read_ms} ms reads: {after_stop} reads after the stop \
         ({threads} workers; bound {bound} = 100 ms of reads each)"
    );
    assert!(after_stop <= bound, "{after_stop} reads after the stop");
}

#[test]
fn a_synchronous_method_on_a_slow_device_ends_its_slot_at_the_deadline_at_depth_1024() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![write_shard(dir.path(), 0, 8, 13)];
    let sim = SimConfig {
        seed: 13,
        latency_us: (5_000, 5_000),
        synchronous: true,
        ..Default::default()
    };
    let slot = Duration::from_millis(300);
    let cfg = throughput_config(2, 1024, slot);
    let miner = Miner::new(
        vec![open_shard(&paths[0])],
        sim_factory(&paths, sim),
        cfg.mine(),
    )
    .unwrap();
    let report = miner
        .mine_slot(&cfg.request(randao(4)), &AtomicBool::new(false))
        .unwrap();
    // One batch of 1024 reads of 5 ms would be 5 s.
    assert!(
        report.deadline_overshoot_sec < 0.2,
        "overshoot {} s",
        report.deadline_overshoot_sec
    );
    assert!(report.shards[0].samples_read > 0);
}

/// Root, loop devices, device-mapper and io_uring: what the real-device test needs, or why not.
fn real_device_missing() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0");
    if !root {
        return Some("needs root (loop and device-mapper devices)".into());
    }
    if !std::path::Path::new("/dev/loop-control").exists() {
        return Some("no /dev/loop-control (loop driver missing)".into());
    }
    let devices = std::fs::read_to_string("/proc/devices").unwrap_or_default();
    if !devices.lines().any(|l| l.ends_with(" device-mapper")) {
        return Some(
            "this kernel has no device-mapper (not in /proc/devices; modprobe dm_mod)".into(),
        );
    }
    match std::process::Command::new("dmsetup")
        .arg("version")
        .output()
    {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            return Some(format!(
                "dmsetup version failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
        Err(e) => return Some(format!("dmsetup not runnable: {e}")),
    }
    pora_io::Method::UringDirect
        .availability()
        .err()
        .map(|u| format!("uring-direct unavailable: {}", u.0))
}

/// Runs a command, returning its stderr on failure.
fn run(program: &str, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    let mut input = child.stdin.take().expect("piped stdin");
    input
        .write_all(stdin.unwrap_or("").as_bytes())
        .map_err(|e| format!("{program}: {e}"))?;
    drop(input);
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{program}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A read-only loop device with a linear device-mapper device on top; resumed, removed and
/// detached on drop, also when an assertion fails.
struct SuspendableDevice {
    loop_dev: String,
    dm_name: String,
}

impl SuspendableDevice {
    fn create(file: &std::path::Path, len: u64) -> Result<SuspendableDevice, String> {
        let file = file.to_str().expect("utf-8 path");
        let loop_dev = run("losetup", &["--find", "--show", "--read-only", file], None)?;
        let mut dev = SuspendableDevice {
            loop_dev,
            dm_name: String::new(),
        };
        let name = format!("pora-dead-{}", std::process::id());
        let table = format!("0 {} linear {} 0\n", len / 512, dev.loop_dev);
        run("dmsetup", &["create", &name, "--readonly"], Some(&table))?;
        dev.dm_name = name;
        if !dev.path().exists() {
            // Without udev (containers) the node may need creating by hand.
            let _ = run("dmsetup", &["mknodes", &dev.dm_name], None);
        }
        Ok(dev)
    }

    fn path(&self) -> PathBuf {
        PathBuf::from(format!("/dev/mapper/{}", self.dm_name))
    }

    /// From now on every read waits in device-mapper's queue until `resume`.
    fn suspend(&self) {
        run("dmsetup", &["suspend", "--noflush", &self.dm_name], None).expect("dmsetup suspend");
    }

    fn resume(&self) {
        let _ = run("dmsetup", &["resume", &self.dm_name], None);
    }
}

impl Drop for SuspendableDevice {
    fn drop(&mut self) {
        if !self.dm_name.is_empty() {
            self.resume();
            for _ in 0..20 {
                if run("dmsetup", &["remove", &self.dm_name], None).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let _ = run("losetup", &["-d", &self.loop_dev], None);
    }
}

/// A real block device stops answering between two slots (device-mapper `suspend`: reads queue
/// and never complete until `resume`), mined with uring-direct.
#[test]
fn a_suspended_device_mapper_device_bounds_every_slot_and_the_teardown() {
    if let Some(why) = real_device_missing() {
        skip_note!("SKIP real dead device (device-mapper suspend): {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = write_shard(dir.path(), 0, 8, 14);
    let len = std::fs::metadata(&file).unwrap().len();
    let device = SuspendableDevice::create(&file, len).expect("loop + dm device");
    let paths = vec![device.path()];
    let factory = pora_io::open(
        &paths,
        &pora_io::IoConfig {
            method: pora_io::Method::UringDirect,
            ..Default::default()
        },
    )
    .expect("uring-direct on the dm device");
    let slot = Duration::from_millis(400);
    let threads = 2;
    let cfg = throughput_config(threads, 32, slot);
    let miner = Miner::new(vec![open_shard(&paths[0])], factory, cfg.mine()).unwrap();
    let live = miner
        .mine_slot(&cfg.request(randao(5)), &AtomicBool::new(false))
        .unwrap();
    assert!(live.shards[0].samples_read > 0);
    device.suspend();
    let leaked_before = pora_io::leaked_backends();
    // Watchdog: if the kernel keeps a worker thread (or the teardown) waiting for the suspended
    // device, resume it after a minute so the test fails instead of hanging CI.
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let give_up = Instant::now() + Duration::from_secs(60);
            while !done.load(Ordering::SeqCst) && Instant::now() < give_up {
                std::thread::sleep(Duration::from_millis(100));
            }
            if !done.load(Ordering::SeqCst) {
                eprintln!("watchdog: resuming the suspended device after 60 s");
                device.resume();
            }
        });
        let started = Instant::now();
        for seed in 6..8 {
            let dead = miner
                .mine_slot(&cfg.request(randao(seed)), &AtomicBool::new(false))
                .unwrap();
            assert_eq!(dead.shards[0].samples_read, 0);
            assert!(dead.elapsed_sec <= (slot + SLACK).as_secs_f64());
        }
        drop(miner);
        let took = started.elapsed();
        done.store(true, Ordering::SeqCst);
        // Two slots, one drain timeout (2 s) and at most TEARDOWN_WAIT per dropped backend.
        let bound = 2 * (slot + SLACK)
            + Duration::from_secs(2)
            + 2 * threads as u32 * pora_io::TEARDOWN_WAIT
            + SLACK;
        eprintln!(
            "suspended dm device: two slots and the teardown took {took:?} (bound {bound:?})"
        );
        assert!(took < bound, "took {took:?}");
    });
    assert!(pora_io::leaked_backends() > leaked_before);
}
