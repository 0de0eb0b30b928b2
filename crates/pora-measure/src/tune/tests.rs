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
    shard_file_at(dir, miner, 0)
}

/// Writes shard `index` of 64 KVs of 4 KiB (kvEntriesBits 6) as `shard<index>.dat`.
fn shard_file_at(dir: &std::path::Path, miner: Address, index: u64) -> PathBuf {
    let header = Header {
        version: 1,
        chunk_idx_start: 64 * index,
        chunk_idx_len: 64,
        encode_type: EncodeType::None,
        max_kv_size: 1 << 12,
        chunk_size: 1 << 12,
        meta_size: META_SIZE,
        miner,
        status: 0,
    };
    let file = dir.join(format!("shard{index}.dat"));
    let mut out = std::fs::File::create(&file).unwrap();
    out.write_all(&header.encode()).unwrap();
    let mut data = vec![0u8; (header.allocated_len().unwrap() - HEADER_SIZE) as usize];
    Xoshiro256PlusPlus::seed_from_u64(7 + index).fill_bytes(&mut data);
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
        devices: FileDevices::default(),
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

/// A 5 s tune of `shards` on the simulated disk: one worker, depths up to `max_depth`, every
/// read taking `latency_us`.
fn sim_input(shards: Vec<ShardSet>, max_depth: usize, latency_us: u32) -> TuneInput {
    TuneInput {
        shards,
        methods: vec![Method::Sim],
        limits: GridLimits {
            cpus: 1,
            max_depth,
            max_threads_sync: 1,
        },
        budget_sec: 5.0,
        sim: SimConfig {
            seed: 3,
            latency_us: (latency_us, latency_us),
            ..SimConfig::default()
        },
        random_checks: 2,
        latency_curve: false,
        devices: FileDevices::default(),
    }
}

/// A canned device (7:250, model "canned disk"), no real one: what sysfs would say of a temporary
/// directory is never this, so a fact seen here came from the run's reading.
fn canned_device(file: &std::path::Path) -> FileDevices {
    use pora_io::host::block_device::{DeviceFacts, LeafDisk, QueueFacts, ReadSpread};
    let queue = QueueFacts::default();
    let model = Some("canned disk".to_string());
    let facts = DeviceFacts {
        major: 7,
        minor: 250,
        name: "canned0".into(),
        disk: "canned0".into(),
        model: model.clone(),
        queue: queue.clone(),
        layers: Vec::new(),
        leaves: vec![LeafDisk {
            name: "canned0".into(),
            model,
            queue,
            host_served: true,
        }],
        reads: ReadSpread::Disk(0),
    };
    FileDevices::from_facts([(file.to_path_buf(), Some(facts))])
}

/// A tune run reads the devices once, where it starts: the facts it is given reach every
/// trial's `IoConfig`, the profile's fingerprint and the outcome the forecast reads, and no part
/// of the run reads the real device of the file again.
#[test]
fn the_runs_device_facts_reach_every_trial_and_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let file = shard_file(dir.path(), Address::default());
    let mut input = sim_input(
        open_files_as_shards(std::slice::from_ref(&file), None).unwrap(),
        2,
        100,
    );
    input.devices = canned_device(&file);
    let opener = Opener {
        paths: std::slice::from_ref(&file),
        sim: &input.sim,
        devices: &input.devices,
    };
    for method in [Method::Sim, Method::UringDirect, Method::Pread] {
        let config = opener.config(method);
        let facts = config.devices.facts(&file).map(|f| (f.major, f.minor));
        assert_eq!(facts, Some((7, 250)), "{method}'s trials");
    }
    let stop = AtomicBool::new(false);
    let out = tune(&input, &stop, &mut |_| {}).unwrap();
    assert_eq!(
        out.devices.facts(&file).and_then(|f| f.model.as_deref()),
        Some("canned disk"),
        "the outcome carries the run's reading"
    );
    let c = out.choice.clone().expect("a choice");
    let p = Prediction::new(&out, 1, 1000.0);
    let fingerprint = make_profile(&out, &c, &p, std::slice::from_ref(&file)).fingerprint;
    let f = &fingerprint.files[0];
    assert_eq!(f.device.as_deref(), Some("7:250"), "{f:?}");
    assert_eq!(f.model.as_deref(), Some("canned disk"), "{f:?}");
}

#[test]
fn stop_flag_interrupts_without_a_choice_being_forced() {
    let dir = tempfile::tempdir().unwrap();
    let file = shard_file(dir.path(), Address::default());
    let input = sim_input(open_files_as_shards(&[file], None).unwrap(), 4, 100);
    let stop = AtomicBool::new(true);
    let out = tune(&input, &stop, &mut |_| {}).unwrap();
    assert!(out.interrupted);
    assert!(out.choice.is_none());
}

/// Four files that are shards 0..3 (and together would also cover one shard four times larger,
/// the layout of BENCHMARKS' fast-device runs) are four shards sharing the device: the
/// prediction, `auto`'s forecast and the profile all divide the device's measured samples/s
/// among the four.
#[test]
fn four_shard_files_are_four_shards_sharing_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..4)
        .map(|i| shard_file_at(dir.path(), Address::default(), i))
        .collect();
    let shards = open_files_as_shards(&files, None).unwrap();
    assert_eq!(shards.len(), 4);
    let note = crate::shards::one_per_file_note(&files, None, &shards).expect("ambiguity noted");
    assert!(
        note.contains("4 shards") && note.contains("--kv-entries-bits 8"),
        "{note}"
    );
    // Told the shard size, the files are one shard of 256 KVs, and nothing is ambiguous.
    let one = open_files_as_shards(&files, Some(8)).unwrap();
    assert_eq!(one.len(), 1);
    assert!(crate::shards::one_per_file_note(&files, Some(8), &one).is_none());

    let input = sim_input(shards, 8, 1000);
    let stop = AtomicBool::new(false);
    let out = tune(&input, &stop, &mut |_| {}).unwrap();
    let c = out.choice.clone().expect("a choice");
    let device_rate = c.knee.mean();
    assert!(device_rate > 0.0);
    let required = search::required_samples_per_sec(
        pora_mine::NONCES_PER_SLOT,
        pora_mine::RANDOM_CHECKS,
        pora_mine::SLOT_LENGTH.as_secs_f64(),
    );
    // es-node's slot, worked by hand: 2^20 nonces x 2 samples in 12 s.
    assert!((required - 174_762.666_7).abs() < 0.01, "{required}");
    let p = Prediction::new(&out, input.shards.len(), required);
    assert_eq!(p.shards, 4);
    // Four shards share the device: together they are given what it reads (the simulated disk is
    // far below es-node's need, so nothing is clamped).
    assert!(device_rate < 4.0 * 174_762.666_7, "{device_rate}");
    let shared = p.power * 4.0 * 174_762.666_7;
    // What each of the four gets, by hand: the device's rate over 4 x es-node's need.
    let per_shard = device_rate / (4.0 * 174_762.666_7);
    assert!(
        (shared - device_rate).abs() <= 1e-6 * device_rate,
        "power {} x 4 shards x 174762.67 samples/s = {shared}, the device reads {device_rate}",
        p.power
    );
    assert_eq!(make_profile(&out, &c, &p, &files).shards, 4);

    // `auto`'s forecast: a direct read path costs the device one read per sample whatever the
    // page cache holds, so its first slot is the device's rate over the four shards' needs.
    let direct_first_slot = |shards: usize| {
        let o = steady_outlook(&out, &c, &files, shards);
        o.decision
            .forecasts
            .iter()
            .find(|f| f.method.is_unbuffered())
            .map(|f| f.predicted_mining_power)
            .expect("a direct candidate on this platform")
    };
    let four = direct_first_slot(4);
    assert!(
        (four - per_shard).abs() <= 0.10 * per_shard,
        "forecast {four} vs {per_shard} per shard"
    );
    let alone = direct_first_slot(1);
    assert!(
        (alone - 4.0 * four).abs() <= 0.05 * alone,
        "one shard {alone} vs four {four}"
    );
    // `--json` carries the first slot's inputs: the chosen path's cold rate, the memory counted,
    // the hit ratio expected at the slot's end (the tiny files fit: a buffered path hits by then
    // at least as often as over the slot).
    let o = steady_outlook(&out, &c, &files, 4);
    let json = serde_json::to_value(record::TuneForecast::new(&o)).unwrap();
    let first = &json["firstSlot"];
    assert_eq!(first["method"], json["method"]);
    assert_eq!(first["miningPower"], json["firstSlotMiningPower"]);
    let chosen = o
        .decision
        .forecasts
        .iter()
        .find(|f| f.method == o.decision.candidate.method)
        .unwrap();
    assert_eq!(first["coldReadsPerSec"], chosen.device_reads_per_sec);
    let bytes: u64 = files.iter().map(|f| f.metadata().unwrap().len()).sum();
    assert_eq!(first["shardBytes"], bytes);
    assert_eq!(
        first["memoryCountedBytes"].as_u64(),
        o.room.as_ref().map(|r| r.room_bytes)
    );
    let (hit, end) = (
        first["hitRatio"].as_f64().unwrap(),
        first["hitRatioAtSlotEnd"].as_f64().unwrap(),
    );
    assert!((0.0..=1.0).contains(&hit) && end >= hit, "{first}");
    // The text says the same figures: the headline, one line per candidate, the inputs' line.
    let lines = o.lines();
    assert_eq!(lines.len(), 2 + o.decision.forecasts.len(), "{lines:?}");
    let percent = format!(
        "{:.1}% mining power in the first slot",
        o.decision.predicted.next * 100.0
    );
    assert!(lines[0].contains(&percent), "{lines:?}");
    assert!(
        lines
            .last()
            .unwrap()
            .contains(&format!("{:.0}% by its end", end * 100.0)),
        "{lines:?}"
    );
}

/// tune's note about the files fitting in memory uses the room `pora mine` decides with: inside
/// a 1 GiB cgroup 4 GiB of files do not fit, whatever the machine has available.
#[test]
fn the_memory_note_counts_the_cgroup_limit() {
    use pora_io::host::memory::CacheRoom;
    const GIB: u64 = 1 << 30;
    let in_cgroup = CacheRoom {
        mem_available_bytes: 18 * GIB,
        mem_total_bytes: 24 * GIB,
        cgroup_limit_bytes: Some(GIB),
        cgroup_room_bytes: Some(GIB - (64 << 20)),
        room_bytes: GIB - (64 << 20),
    };
    assert_eq!(super::fits_in_memory(4 * GIB, &in_cgroup), None);
    let note = super::fits_in_memory(GIB / 2, &in_cgroup).expect("half a GiB fits");
    assert!(
        note.contains("960 MiB") && note.contains("cgroup"),
        "{note}"
    );
    let machine = CacheRoom {
        cgroup_limit_bytes: None,
        cgroup_room_bytes: None,
        room_bytes: 18 * GIB,
        ..in_cgroup
    };
    let note = super::fits_in_memory(4 * GIB, &machine).expect("fits in 18 GiB");
    assert!(
        note.contains("18432 MiB") && !note.contains("cgroup"),
        "{note}"
    );
}

/// The predicted power, worked by hand for a device reading 349,525.33 samples/s (twice what one
/// es-node shard needs, 2^20 nonces x 2 samples / 12 s = 174,762.67): two shards get all they
/// need, four get half, eight a quarter; one shard alone is capped at full power, not 2; no
/// shards count as one, and a need of nothing is met.
#[test]
fn predicted_power_is_the_share_of_the_device_each_shard_needs_worked_by_hand() {
    let need = search::required_samples_per_sec(1 << 20, 2, 12.0);
    assert!((need - 174_762.666_7).abs() < 0.01, "{need}");
    let device = 349_525.333_3;
    for (shards, want) in [(1, 1.0), (2, 1.0), (4, 0.5), (8, 0.25), (0, 1.0)] {
        let got = search::predicted_power(device, shards, need);
        assert!(
            (got - want).abs() < 1e-6,
            "{shards} shards: {got}, want {want}"
        );
    }
    assert_eq!(search::predicted_power(0.0, 4, need), 0.0);
    assert_eq!(search::predicted_power(1000.0, 4, 0.0), 1.0);
}

/// Two read paths on the simulated disk: direct reads take 1.5-2.5 ms, buffered ones 3-5 ms (so
/// at any depth buffered reads 0.5x what direct reads; spread, so that a worker's reads do not
/// come back in lockstep), and from trial `spell_from` on, the device is slow: every read takes
/// four times as long, whichever arm runs (a spell in time).
struct TwoPathsOnSim<'a> {
    shards: &'a [ShardSet],
    paths: &'a [PathBuf],
    stop: &'a AtomicBool,
    calls: u64,
    spell_from: u64,
}

impl TrialRunner for TwoPathsOnSim<'_> {
    fn run(&mut self, arm: &Arm, seconds: f64) -> Result<TrialResult, search::TrialError> {
        self.calls += 1;
        let (mut low, mut high) = match arm.method.read_path() {
            pora_io::ReadPath::Direct => (1500, 2500),
            _ => (3000, 5000),
        };
        if self.calls >= self.spell_from {
            (low, high) = (4 * low, 4 * high);
        }
        let sim = SimConfig {
            seed: self.calls,
            latency_us: (low, high),
            ..SimConfig::default()
        };
        let opener = Opener {
            paths: self.paths,
            sim: &sim,
            devices: &FileDevices::default(),
        };
        let mut runner = MiningRunner {
            shards: self.shards,
            opener: &opener,
            stop: self.stop,
            random_checks: 2,
            trial: self.calls,
            unverified_evictions: 0,
        };
        runner.run(
            &Arm {
                method: Method::Sim,
                ..*arm
            },
            seconds,
        )
    }
}

/// The fast device's failure, on the simulated disk: the knee (direct, depth 4) has one or two
/// trials before a slow spell and the rest in it, so its spread is not trusted and it gets more
/// trials, all in the spell. Rated on its own trials against buffered reads' trials from before
/// the spell, direct reads looked slower than buffered ones (their mean about 0.34-0.44x of
/// their rate, against buffered reads' 0.5x) and the forecast named the slower path. Compared on rounds taken back to back, both in the spell,
/// buffered reads stay at 0.5x direct ones: the choice and the rates the forecast is made from
/// keep their order.
#[test]
fn a_slow_spell_on_the_knees_extra_trials_does_not_flip_the_methods() {
    let dir = tempfile::tempdir().unwrap();
    let file = shard_file(dir.path(), Address::default());
    let shards = open_files_as_shards(std::slice::from_ref(&file), None).unwrap();
    let paths = Miner::paths(&shards);
    let lines = search::grid(
        &[Method::Uring, Method::UringDirect],
        GridLimits {
            cpus: 1,
            max_depth: 4,
            max_threads_sync: 1,
        },
    );
    // Round 1 takes the six arms (trials 1-6, the knee last), the later rounds (up to 3 trials
    // an arm) the arms left from 7 on: the spell begins within them, so the knee's trials there
    // are spread. The budget leaves room for the paired rounds on a loaded machine.
    let plan = search::SweepPlan {
        budget_sec: 12.0,
        trial_sec: 0.25,
        max_trials: 3,
        max_trials_untrusted: 8,
        ..search::SweepPlan::for_budget(12.0, 6)
    };
    let stop = AtomicBool::new(false);
    let mut runner = TwoPathsOnSim {
        shards: &shards,
        paths: &paths,
        stop: &stop,
        calls: 0,
        spell_from: 8,
    };
    let sweep = search::sweep(&lines, &plan, &mut runner, &mut |_, _| {});
    let choice = search::choose(&sweep.arms, plan.knee_margin).expect("a choice");
    let knee = &choice.knee;
    assert_eq!(knee.arm.method, Method::UringDirect, "{:?}", sweep.arms);
    assert!(
        knee.trials.len() > 3,
        "the spell leaves the knee untrusted, so it gets more trials: {:?}",
        sweep.arms
    );
    let outcome = TuneOutcome {
        sweep,
        choice: Some(choice.clone()),
        ceiling: None,
        knee_latency: None,
        latency_curve: Vec::new(),
        notes: Vec::new(),
        interrupted: false,
        devices: FileDevices::default(),
        sustained: Vec::new(),
    };
    let rates = best_by_method(&outcome);
    assert_eq!(rates[0].method, Method::UringDirect, "{rates:?}");
    let buffered = rates
        .iter()
        .find(|r| r.method == Method::Uring)
        .expect("buffered rated");
    let ratio = buffered.samples_per_sec / rates[0].samples_per_sec;
    // Scheduling delays on a loaded machine lengthen the faster path's reads more, relatively.
    assert!(
        (0.35..0.75).contains(&ratio),
        "buffered at {ratio:.2}x direct (0.5x on the simulated disk): {rates:?} {:?} {:?}",
        outcome.sweep.paired,
        outcome.sweep.arms
    );
    let paired = &outcome.sweep.paired;
    assert!(
        paired
            .iter()
            .any(|c| c.arm.method == Method::Uring && c.reference == knee.arm),
        "{paired:?}"
    );
}
