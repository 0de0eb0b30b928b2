//! `pora tune FILE... [--budget SECONDS] [--shards N] [--json] [--plot SVG] [--profile PATH]`:
//! measures method x threads x depth on the user's real shard files with the production mining
//! path (`pora_mine::Miner`, no valid nonces, slot = trial length), cold (evicted before every
//! trial), several trials per arm, within a time budget; finds the knee; measures the device's
//! raw random-read ceiling in the same run; predicts mining power per shard; prints the closest
//! es-node flag and writes a profile that `pora mine` picks up.
//!
//! The arm selection, knee and prediction are pure functions in [`search`]; [`raw`] is the
//! fio-style read loop used for the ceiling and for latency percentiles (the Miner reports no
//! per-read latency, so p99 comes from a raw pass at the chosen reads in flight).

pub mod raw;
pub mod search;

use crate::plot::{Chart, Series};
use anyhow::Context;
use pora_core::{keccak::keccak256, ShardSet, H256, SAMPLE_SIZE};
use pora_io::{probe, BackendFactory, IoConfig, Method, SimConfig};
use pora_mine::profile::{self, Measured, Profile, PROFILE_FORMAT};
use pora_mine::{MineConfig, Miner, OnIoError, SlotRequest};
use raw::{RawResult, Region};
use search::{
    Arm, ArmStats, Choice, GridLimits, Sweep, SweepPlan, TrialError, TrialResult, TrialRunner,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct TuneArgs {
    /// Data files: one complete shard, or several files that are each a complete shard.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Seconds to spend in total (sweep and raw passes).
    #[arg(long, default_value_t = 120.0)]
    budget: f64,
    /// Shards that will share this device when mining (default: the shards given).
    #[arg(long)]
    shards: Option<usize>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Write throughput and latency charts to this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Where to write the profile (default: `<first file>.pora-profile.toml`).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Only these methods (repeatable); default every available real method but pread-shared.
    #[arg(long = "method")]
    methods: Vec<Method>,
    /// Largest depth (chains per worker) tried for asynchronous methods.
    #[arg(long, default_value_t = 256)]
    max_depth: usize,
    /// Largest thread count tried for synchronous methods.
    #[arg(long, default_value_t = 128)]
    max_threads: usize,
    /// Shard size as log2(KVs); inferred from the files when omitted.
    #[arg(long)]
    kv_entries_bits: Option<u32>,
    /// Nonces per slot in the prediction.
    #[arg(long, default_value_t = 1_048_576)]
    nonce_limit: u64,
    /// Samples per nonce.
    #[arg(long, default_value_t = 2)]
    random_checks: u32,
    /// Slot length in seconds in the prediction.
    #[arg(long, default_value_t = 12.0)]
    slot: f64,
    /// Latency range of the simulated disk for `--method sim`, microseconds (`A..B`).
    #[arg(long, value_parser = parse_latency_range, default_value = "100..100")]
    sim_latency_us: (u32, u32),
}

fn parse_latency_range(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: expected A..B microseconds"))?;
    let a: u32 = a.trim().parse().map_err(|e| format!("`{s}`: {e}"))?;
    let b: u32 = b.trim().parse().map_err(|e| format!("`{s}`: {e}"))?;
    if a > b {
        return Err(format!("`{s}`: A must not exceed B"));
    }
    Ok((a, b))
}

/// Everything one tune run needs, independent of the command line.
pub struct TuneInput {
    pub shards: Vec<ShardSet>,
    pub methods: Vec<Method>,
    pub limits: GridLimits,
    pub budget_sec: f64,
    pub sim: SimConfig,
    pub random_checks: u32,
    /// Raw latency vs depth for the chosen method (for the chart).
    pub latency_curve: bool,
    /// Print a line per trial on stderr.
    pub progress: bool,
}

/// What a tune run found.
pub struct TuneOutcome {
    pub sweep: Sweep,
    pub choice: Option<Choice>,
    pub ceiling: Option<RawResult>,
    pub knee_latency: Option<RawResult>,
    pub latency_curve: Vec<RawResult>,
    pub notes: Vec<String>,
    pub interrupted: bool,
}

pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.budget >= 5.0,
        "--budget {}: give at least 5 seconds",
        args.budget
    );
    anyhow::ensure!(
        args.slot > 0.0 && args.nonce_limit > 0,
        "--slot and --nonce-limit must be positive"
    );
    check_limits(&args)?;
    let shards = open_shards(&args.files, args.kv_entries_bits)?;
    let sharing = args.shards.unwrap_or(shards.len()).max(1);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)) {
        eprintln!("pora tune: Ctrl-C handler not installed ({e}); Ctrl-C will kill without partial results");
    }
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let input = TuneInput {
        shards,
        methods: pick_methods(&args.methods),
        limits: GridLimits {
            cpus,
            max_depth: args.max_depth.max(1),
            max_threads_sync: args.max_threads.max(1),
        },
        budget_sec: args.budget,
        sim: SimConfig {
            seed: 1,
            latency_us: args.sim_latency_us,
            ..SimConfig::default()
        },
        random_checks: args.random_checks,
        latency_curve: args.plot.is_some(),
        progress: true,
    };
    let outcome = tune(&input, &stop)?;
    let required =
        search::required_samples_per_sec(args.nonce_limit, args.random_checks, args.slot);
    let report = Report::new(&outcome, sharing, required);
    if let Some(path) = &args.plot {
        write_plot(path, &outcome).with_context(|| format!("writing chart {}", path.display()))?;
        eprintln!("chart written: {}", path.display());
    }
    let profile_path = args
        .profile
        .clone()
        .unwrap_or_else(|| profile::default_path(&args.files[0]));
    let written = match (&outcome.choice, outcome.interrupted) {
        (Some(choice), false) => {
            let p = make_profile(&outcome, choice, &report, &args.files);
            p.save(&profile_path)?;
            Some(profile_path)
        }
        _ => None,
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report.json(&outcome, written.as_ref()))?
        );
    } else {
        report.print(&outcome, written.as_ref());
    }
    if outcome.interrupted {
        eprintln!("pora tune: interrupted: partial results above, no profile written");
        std::process::exit(crate::common::EXIT_INTERRUPTED);
    }
    anyhow::ensure!(
        outcome.choice.is_some(),
        "no arm could be measured; see the notes above"
    );
    Ok(())
}

/// Refuses absurd grid limits up front (the miner's own limits), naming the flag, instead of
/// spending the budget on arms that cannot run.
fn check_limits(args: &TuneArgs) -> anyhow::Result<()> {
    use pora_mine::{MAX_DEPTH, MAX_RANDOM_CHECKS, MAX_THREADS};
    anyhow::ensure!(
        (1..=MAX_DEPTH).contains(&args.max_depth),
        "--max-depth {}: must be between 1 and {MAX_DEPTH} reads in flight per thread",
        args.max_depth
    );
    anyhow::ensure!(
        (1..=MAX_THREADS).contains(&args.max_threads),
        "--max-threads {}: must be between 1 and {MAX_THREADS}",
        args.max_threads
    );
    anyhow::ensure!(
        (1..=MAX_RANDOM_CHECKS).contains(&args.random_checks),
        "--random-checks {}: must be between 1 and {MAX_RANDOM_CHECKS}",
        args.random_checks
    );
    Ok(())
}

/// One shard from all files, or each file its own shard.
fn open_shards(files: &[PathBuf], kv_entries_bits: Option<u32>) -> anyhow::Result<Vec<ShardSet>> {
    match ShardSet::open(files, kv_entries_bits) {
        Ok(s) => Ok(vec![s]),
        Err(together) if files.len() > 1 => files
            .iter()
            .map(|f| ShardSet::open(std::slice::from_ref(f), kv_entries_bits))
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| {
                format!("the files are neither one shard ({together}) nor one shard each")
            }),
        Err(e) => Err(e.into()),
    }
}

fn pick_methods(asked: &[Method]) -> Vec<Method> {
    if !asked.is_empty() {
        let mut m: Vec<Method> = asked
            .iter()
            .map(|m| {
                if *m == Method::Auto {
                    Method::resolve_auto()
                } else {
                    *m
                }
            })
            .collect();
        m.dedup();
        return m;
    }
    Method::available_real()
        .into_iter()
        .filter(|m| *m != Method::PreadShared)
        .collect()
}

/// Opens factories on demand. Each trial and raw pass gets a fresh factory that is dropped
/// afterwards: a live `mmap` factory keeps pages mapped, and mapped pages cannot be evicted.
struct Opener<'a> {
    paths: &'a [PathBuf],
    sim: &'a SimConfig,
}

impl Opener<'_> {
    fn open(&self, method: Method) -> Result<Arc<dyn BackendFactory>, pora_io::IoError> {
        let config = IoConfig {
            method,
            sim: self.sim.clone(),
            ..IoConfig::default()
        };
        pora_io::open(self.paths, &config)
    }
}

/// Runs the raw ceiling pass, the sweep and the knee's latency pass.
pub fn tune(input: &TuneInput, stop: &AtomicBool) -> anyhow::Result<TuneOutcome> {
    let paths = Miner::paths(&input.shards);
    let opener = Opener {
        paths: &paths,
        sim: &input.sim,
    };
    let mut notes = Vec::new();
    let mut methods = Vec::new();
    for &m in &input.methods {
        match opener.open(m) {
            Ok(_) => methods.push(m),
            Err(e) => {
                eprintln!("SKIP {m}: {e}");
                notes.push(format!("{m} skipped: {e}"));
            }
        }
    }
    anyhow::ensure!(
        !methods.is_empty(),
        "no access method could open the files: {}",
        notes.join("; ")
    );
    if let Some(note) = fits_in_ram_note(&paths) {
        eprintln!("note: {note}");
        notes.push(note);
    }
    let region = Region {
        samples_per_file: input
            .shards
            .iter()
            .flat_map(|s| &s.files)
            .map(|f| f.header.data_len() / SAMPLE_SIZE)
            .collect(),
    };
    let raw_sec = (input.budget_sec * 0.04).clamp(0.5, 3.0);
    let ceiling = ceiling_pass(input, &methods, &opener, &region, raw_sec, stop, &mut notes);
    let lines = search::grid(&methods, input.limits);
    let arms: usize = lines.iter().map(Vec::len).sum();
    let curve_sec = if input.latency_curve {
        5.0 * raw_sec / 2.0
    } else {
        0.0
    };
    let sweep_budget = (input.budget_sec - 4.0 * raw_sec - curve_sec).max(input.budget_sec * 0.5);
    let plan = SweepPlan::for_budget(sweep_budget, arms);
    let mut runner = MiningRunner {
        shards: &input.shards,
        opener: &opener,
        stop,
        random_checks: input.random_checks,
        trial: 0,
        unverified_evictions: 0,
    };
    let started = Instant::now();
    let mut progress = |a: &ArmStats, spent: f64| {
        if input.progress {
            let arm = a.arm;
            eprintln!(
                "  [{:>5.1}s] {:<13} threads {:>3} depth {:>4}: {:>9} samples/s (trial {})",
                started.elapsed().as_secs_f64().max(spent),
                arm.method.name(),
                arm.threads,
                arm.depth,
                crate::plot::si(*a.trials.last().unwrap_or(&0.0)),
                a.trials.len()
            );
        }
    };
    let sweep = search::sweep(&lines, &plan, &mut runner, &mut progress);
    if runner.unverified_evictions > 0 {
        notes.push(format!(
            "{} file evictions could not be verified (pages mapped by another process, or the file system keeps them): those trials may be partly warm",
            runner.unverified_evictions
        ));
    }
    let choice = search::choose(&sweep.arms, plan.knee_margin);
    let mut interrupted = sweep.interrupted || stop.load(Ordering::Relaxed);
    let mut knee_latency = None;
    let mut latency_curve = Vec::new();
    if let (Some(c), false) = (&choice, interrupted) {
        let k = c.knee.arm;
        knee_latency = raw_pass(
            &opener, k.method, &region, k.threads, k.depth, raw_sec, stop, &mut notes,
        );
        if input.latency_curve {
            latency_curve = latency_sweep(
                c,
                &opener,
                &region,
                input.limits,
                raw_sec / 2.0,
                stop,
                &mut notes,
            );
        }
        interrupted = stop.load(Ordering::Relaxed);
    }
    Ok(TuneOutcome {
        sweep,
        choice,
        ceiling,
        knee_latency,
        latency_curve,
        notes,
        interrupted,
    })
}

/// One cold raw pass on a fresh factory; failures become notes.
#[allow(clippy::too_many_arguments)]
fn raw_pass(
    opener: &Opener,
    method: Method,
    region: &Region,
    threads: usize,
    depth: usize,
    seconds: f64,
    stop: &AtomicBool,
    notes: &mut Vec<String>,
) -> Option<RawResult> {
    evict_all(opener.paths, method);
    let result = opener
        .open(method)
        .map_err(anyhow::Error::from)
        .and_then(|f| raw::run(f.as_ref(), region, threads, depth, seconds, stop));
    match result {
        Ok(r) => Some(r),
        Err(e) => {
            notes.push(format!("raw pass {method} {threads}x{depth} failed: {e:#}"));
            None
        }
    }
}

/// The device's raw ceiling: the best available asynchronous method (even one not swept), else
/// many threads of a synchronous one, at a few deep queues; the highest reads/s wins.
fn ceiling_pass(
    input: &TuneInput,
    methods: &[Method],
    opener: &Opener,
    region: &Region,
    seconds: f64,
    stop: &AtomicBool,
    notes: &mut Vec<String>,
) -> Option<RawResult> {
    let order = [
        Method::UringDirect,
        Method::Uring,
        Method::IocpUnbuffered,
        Method::Iocp,
        Method::Direct,
        Method::Pread,
        Method::Mmap,
    ];
    let method = if methods == [Method::Sim] {
        Method::Sim
    } else {
        let async_real = order[..4].iter().copied().find(|m| opener.open(*m).is_ok());
        async_real.or_else(|| order.iter().copied().find(|m| methods.contains(m)))?
    };
    let threads = input.limits.cpus.clamp(1, 2);
    let configs: Vec<(usize, usize)> = if search::is_async(method) {
        [32usize, 128, 256]
            .iter()
            .map(|total| {
                (
                    threads,
                    (total / threads).min(input.limits.max_depth.max(1)),
                )
            })
            .collect()
    } else {
        vec![(16, 1), (64, 1)]
    };
    let mut best: Option<RawResult> = None;
    for (t, d) in configs {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(r) = raw_pass(opener, method, region, t, d, seconds, stop, notes) {
            if input.progress {
                eprintln!(
                    "  raw {method} {t} threads x depth {d}: {} reads/s, p99 {:.0} µs",
                    crate::plot::si(r.iops),
                    r.latency_us_p99
                );
            }
            if best.as_ref().is_none_or(|b| r.iops > b.iops) {
                best = Some(r);
            }
        }
    }
    best
}

/// Raw latency at increasing reads in flight on the chosen method, for the latency chart.
fn latency_sweep(
    c: &Choice,
    opener: &Opener,
    region: &Region,
    limits: GridLimits,
    seconds: f64,
    stop: &AtomicBool,
    notes: &mut Vec<String>,
) -> Vec<RawResult> {
    let arm = c.knee.arm;
    let configs: Vec<(usize, usize)> = if search::is_async(arm.method) {
        [1usize, 4, 16, 64, 256]
            .iter()
            .filter(|d| **d <= limits.max_depth.max(1))
            .map(|d| (arm.threads, *d))
            .collect()
    } else {
        [1usize, 4, 16, 64]
            .iter()
            .filter(|t| **t <= limits.max_threads_sync.max(1))
            .map(|t| (*t, 1))
            .collect()
    };
    let mut out = Vec::new();
    for (t, d) in configs {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        out.extend(raw_pass(
            opener, arm.method, region, t, d, seconds, stop, notes,
        ));
    }
    out
}

/// Buffered trials of a shard that fits in RAM warm the cache as they run, so say so.
fn fits_in_ram_note(paths: &[PathBuf]) -> Option<String> {
    let total: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let mem = probe::meminfo(&probe::Roots::default()).ok()?;
    (total < mem.available_bytes).then(|| {
        format!(
            "the files ({} MiB) fit in the {} MiB of available RAM: each trial starts cold, but buffered methods (pread, mmap, uring) warm the cache as they run, so their figures are optimistic for a production shard larger than RAM",
            total >> 20,
            mem.available_bytes >> 20
        )
    })
}

/// Evicts every file (not for the simulated disk, which has no cache to be cold in).
fn evict_all(paths: &[PathBuf], method: Method) -> usize {
    if method == Method::Sim {
        return 0;
    }
    paths
        .iter()
        .filter(|p| !matches!(probe::evict(p), Ok(true)))
        .count()
}

/// Runs trials through the production mining path.
struct MiningRunner<'a> {
    shards: &'a [ShardSet],
    opener: &'a Opener<'a>,
    stop: &'a AtomicBool,
    random_checks: u32,
    trial: u64,
    unverified_evictions: usize,
}

impl TrialRunner for MiningRunner<'_> {
    fn run(&mut self, arm: &Arm, seconds: f64) -> Result<TrialResult, TrialError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(TrialError::Interrupted);
        }
        let started = Instant::now();
        self.unverified_evictions += evict_all(self.opener.paths, arm.method);
        let config = MineConfig::new(arm.threads, arm.depth)
            .with_random_checks(self.random_checks)
            .with_on_io_error(OnIoError::Retry);
        let factory = self
            .opener
            .open(arm.method)
            .map_err(|e| TrialError::Arm(e.to_string()))?;
        let miner = Miner::new(self.shards.to_vec(), factory, config)
            .map_err(|e| TrialError::Arm(e.to_string()))?;
        // A fresh randao per trial: different samples, so no trial reuses another's cache.
        self.trial += 1;
        let randao = H256(keccak256(&[b"pora tune", &self.trial.to_be_bytes()]));
        // More nonces than any trial can try: the slot time ends it.
        let request = SlotRequest::new(randao)
            .with_nonces(0..1 << 40)
            .with_slot(Duration::from_secs_f64(seconds));
        let report = miner
            .mine_slot(&request, self.stop)
            .map_err(|e| TrialError::Arm(e.to_string()))?;
        if report.interrupted {
            return Err(TrialError::Interrupted);
        }
        let samples: u64 = report.shards.iter().map(|s| s.samples_read).sum();
        Ok(TrialResult {
            samples_per_sec: samples as f64 / report.elapsed_sec.max(1e-9),
            elapsed_sec: started.elapsed().as_secs_f64(),
        })
    }
}

/// The figures derived from an outcome for printing, JSON and the profile.
struct Report {
    shards: usize,
    required_per_shard: f64,
    power: f64,
    ceiling_ratio: Option<f64>,
    esnode_threads: usize,
}

const CV_TRUST: f64 = 0.10;

impl Report {
    fn new(o: &TuneOutcome, shards: usize, required_per_shard: f64) -> Report {
        let sps = o.choice.as_ref().map_or(0.0, |c| c.knee.mean());
        Report {
            shards,
            required_per_shard,
            power: search::predicted_power(sps, shards, required_per_shard),
            ceiling_ratio: o
                .ceiling
                .as_ref()
                .filter(|c| c.iops > 0.0)
                .map(|c| sps / c.iops),
            esnode_threads: o
                .choice
                .as_ref()
                .map_or(1, |c| search::esnode_threads_per_shard(&c.knee.arm, shards)),
        }
    }

    /// One sentence that separates "software" from "buy a faster disk".
    fn verdict(&self) -> String {
        match self.ceiling_ratio {
            None => "no raw ceiling was measured, so software and disk limits cannot be told apart".into(),
            Some(r) if r > 1.1 => format!("mining read {r:.2}x the raw ceiling: the page cache served part of it, so the cold figure is lower"),
            Some(r) if r >= 0.85 => format!("mining reaches {:.0}% of the device's raw reads/s: more power needs a faster disk or fewer shards on it", r * 100.0),
            Some(r) => format!("mining gets only {:.0}% of the device's raw reads/s: the limit is software/CPU (see `pora doctor`), not the disk", r * 100.0),
        }
    }

    fn print(&self, o: &TuneOutcome, profile: Option<&PathBuf>) {
        if o.interrupted {
            println!("INTERRUPTED: partial results from the trials that finished");
        }
        println!(
            "pora tune: {} arms measured in {:.0} s",
            o.sweep.arms.iter().filter(|a| !a.trials.is_empty()).count(),
            o.sweep.spent_sec
        );
        if let Some(c) = &o.ceiling {
            println!(
                "device ceiling: {} reads/s (raw 32-byte random reads, {} {} threads x depth {}, p99 {:.0} µs)",
                crate::plot::si(c.iops),
                c.method,
                c.threads,
                c.depth,
                c.latency_us_p99
            );
        }
        println!(
            "{:<13} {:>7} {:>6} {:>12} {:>7} {:>6}  status",
            "method", "threads", "depth", "samples/s", "cv", "trials"
        );
        for a in o.sweep.arms.iter().filter(|a| !a.trials.is_empty()) {
            let status = a.dropped.as_deref().unwrap_or("kept");
            println!(
                "{:<13} {:>7} {:>6} {:>12} {:>6.1}% {:>6}  {status}",
                a.arm.method.name(),
                a.arm.threads,
                a.arm.depth,
                crate::plot::si(a.mean()),
                a.cv() * 100.0,
                a.trials.len()
            );
        }
        let Some(c) = &o.choice else {
            println!("no configuration could be measured");
            return;
        };
        let k = &c.knee;
        println!(
            "chosen: --method {} --threads {} --depth {}  ({} samples/s, cv {:.1}% over {} trials; best {} at threads {} depth {})",
            k.arm.method,
            k.arm.threads,
            k.arm.depth,
            crate::plot::si(k.mean()),
            k.cv() * 100.0,
            k.trials.len(),
            crate::plot::si(c.best.mean()),
            c.best.arm.threads,
            c.best.arm.depth
        );
        if k.cv() > CV_TRUST || k.trials.len() < 2 {
            println!("  warning: the spread is too large to trust (cv {:.1}%, {} trials): re-run on a quiet machine or with a larger --budget", k.cv() * 100.0, k.trials.len());
        }
        match &o.knee_latency {
            Some(l) => println!(
                "  raw read latency at {} in flight: p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs (I/O only; the mining path reports no per-read latency)",
                k.arm.reads_in_flight(),
                l.latency_us_p50,
                l.latency_us_p99,
                l.latency_us_p999
            ),
            None => println!("  latency: not measured (the mining path reports samples/s only)"),
        }
        println!(
            "prediction: {:.1}% mining power per shard with {} shard(s) on this device (each needs {} samples/s)",
            self.power * 100.0,
            self.shards,
            crate::plot::si(self.required_per_shard)
        );
        println!("  {}", self.verdict());
        println!("es-node: --miner.threads-per-shard {} (one blocking read per goroutine: keeps about {} reads in flight)", self.esnode_threads, k.arm.reads_in_flight());
        for n in &o.notes {
            println!("note: {n}");
        }
        match profile {
            Some(p) => println!(
                "profile written: {} (`pora mine` uses it when present)",
                p.display()
            ),
            None => println!("no profile written"),
        }
    }

    fn json(&self, o: &TuneOutcome, profile: Option<&PathBuf>) -> serde_json::Value {
        let knee = o.choice.as_ref().map(|c| &c.knee);
        json!({
            "method": knee.map(|k| k.arm.method.name()),
            "threads": knee.map(|k| k.arm.threads),
            "depth": knee.map(|k| k.arm.depth),
            "samplesPerSec": knee.map(ArmStats::mean),
            "samplesPerSecCv": knee.map(ArmStats::cv),
            "trials": knee.map(|k| k.trials.len()),
            "spreadTrusted": knee.map(|k| k.cv() <= CV_TRUST && k.trials.len() >= 2),
            "best": o.choice.as_ref().map(|c| json!({"method": c.best.arm.method.name(), "threads": c.best.arm.threads, "depth": c.best.arm.depth, "samplesPerSec": c.best.mean()})),
            "latencyUs": o.knee_latency.as_ref().map(|l| json!({"p50": l.latency_us_p50, "p99": l.latency_us_p99, "p999": l.latency_us_p999, "source": "raw read pass at the chosen reads in flight"})),
            "deviceCeilingIops": o.ceiling.as_ref().map(|c| c.iops),
            "ceiling": o.ceiling,
            "ceilingRatio": self.ceiling_ratio,
            "verdict": self.verdict(),
            "predictedMiningPower": self.power,
            "shards": self.shards,
            "requiredSamplesPerSecPerShard": self.required_per_shard,
            "esNode": {"flag": "--miner.threads-per-shard", "value": self.esnode_threads},
            "arms": o.sweep.arms,
            "latencyCurve": o.latency_curve,
            "notes": o.notes,
            "spentSec": o.sweep.spent_sec,
            "interrupted": o.interrupted,
            "profile": profile.map(|p| p.display().to_string()),
        })
    }
}

fn make_profile(o: &TuneOutcome, c: &Choice, r: &Report, files: &[PathBuf]) -> Profile {
    let (created, created_unix_sec) = profile::now_rfc3339();
    Profile {
        format: PROFILE_FORMAT,
        created,
        created_unix_sec,
        method: c.knee.arm.method,
        threads: c.knee.arm.threads,
        depth: c.knee.arm.depth,
        shards: r.shards,
        measured: Measured {
            samples_per_sec: c.knee.mean(),
            samples_per_sec_cv: c.knee.cv(),
            trials: c.knee.trials.len(),
            latency_us_p99: o.knee_latency.as_ref().map(|l| l.latency_us_p99),
            device_ceiling_iops: o.ceiling.as_ref().map(|x| x.iops),
            predicted_mining_power: r.power,
        },
        fingerprint: profile::fingerprint(files),
    }
}

/// Throughput vs reads in flight per method line, with the ceiling; raw latency percentiles.
fn write_plot(path: &std::path::Path, o: &TuneOutcome) -> anyhow::Result<()> {
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for a in o.sweep.arms.iter().filter(|a| !a.trials.is_empty()) {
        let label = if search::is_async(a.arm.method) {
            format!("{}, {} thread(s)", a.arm.method, a.arm.threads)
        } else {
            format!("{} (threads)", a.arm.method)
        };
        lines
            .entry(label)
            .or_default()
            .push((a.arm.reads_in_flight() as f64, a.mean()));
    }
    let series = lines
        .into_iter()
        .map(|(label, points)| Series { label, points })
        .collect();
    let mut charts = vec![Chart::throughput(
        "pora tune: mining samples/s vs reads in flight (cold)",
        "reads in flight (threads x depth)",
        series,
        o.ceiling.as_ref().map(|c| c.iops),
    )];
    if !o.latency_curve.is_empty() {
        let method = &o.latency_curve[0].method;
        let pct = |name: &str, f: fn(&RawResult) -> f64| Series {
            label: format!("{method} {name}"),
            points: o
                .latency_curve
                .iter()
                .map(|r| ((r.threads * r.depth) as f64, f(r)))
                .collect(),
        };
        charts.push(Chart::latency(
            "raw random-read latency vs reads in flight",
            "reads in flight (threads x depth)",
            vec![
                pct("p50", |r| r.latency_us_p50),
                pct("p99", |r| r.latency_us_p99),
                pct("p99.9", |r| r.latency_us_p999),
            ],
        ));
    }
    crate::plot::write_svg(path, &charts)
}

#[cfg(test)]
mod tests;
