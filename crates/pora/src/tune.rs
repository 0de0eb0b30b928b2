//! `pora tune --file A [B...] [--file C...] [--budget SECONDS] [--shards N] [--json] [--plot SVG] [--profile PATH]`:
//! the flags, the progress lines, the report and the chart of a tune run. The measurement (the
//! sweep on the mining path, the raw passes, the prediction and the profile) is
//! `pora_measure::tune`.

use crate::common::ShardFiles;
use crate::plot::{si, Chart, Series};
use crate::signals;
use anyhow::Context;
use pora_core::ShardSet;
use pora_io::host::file_devices::FileDevices;
use pora_io::{Method, SimConfig};
use pora_measure::open_files_as_shards;
use pora_measure::shards::one_per_file_note;
use pora_measure::tune::device::{
    files_in_given_order, tune_device as tune_device_on, DeviceAsk, DeviceTune,
};
use pora_measure::tune::raw::RawResult;
use pora_measure::tune::search::GridLimits;
use pora_measure::tune::{self, spread_trusted, Event, Prediction, TuneInput, TuneOutcome};
use pora_mine::devices;
use pora_mine::session::{available_cpus, open_shards};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct TuneArgs {
    /// `--file A B --file C`: one shard per --file, as `pora mine` takes them. Before `files`:
    /// the derive takes each field's values out of the matches in order, and `ShardFiles` looks
    /// whether positional files were given.
    #[command(flatten)]
    shard_files: ShardFiles,
    /// Data files, the older form of --file: one complete shard, or several files that are each
    /// a complete shard.
    #[arg(value_name = "FILE", conflicts_with = "file")]
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
    #[arg(long, default_value_t = pora_mine::NONCES_PER_SLOT)]
    nonce_limit: u64,
    #[command(flatten)]
    checks: crate::common::RandomChecksArg,
    /// Slot length in seconds in the prediction.
    #[arg(long, default_value_t = pora_mine::SLOT_LENGTH.as_secs_f64())]
    slot: f64,
    /// Latency range of the simulated disk for `--method sim`, microseconds (`A..B`).
    #[arg(long, value_parser = pora_measure::bench::input::parse_latency_range_us, default_value = "100..100")]
    sim_latency_us: (u32, u32),
}

pub fn run(args: TuneArgs) -> anyhow::Result<ExitCode> {
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
    let (shards, files) = given_shards(&args)?;
    // The devices under every file, read once for the run: the grouping, every trial, the
    // profile's fingerprint and the forecast take them from here.
    let facts = FileDevices::read(
        pora_mine::Miner::paths(&shards)
            .iter()
            .map(PathBuf::as_path),
        &pora_io::host::Roots::default(),
    );
    let devices = devices::by_known(shards.iter().map(|s| s.files[0].path.as_path()), &facts);
    let stop = signals::install("tune");
    if devices.len() == 1 {
        let device = tune_device(&args, shards, files, &facts, args.budget, stop)?;
        return finish(&args, std::slice::from_ref(&device));
    }
    check_several_devices(&args, &devices)?;
    let budget = args.budget / devices.len() as f64;
    let mut done = Vec::with_capacity(devices.len());
    for (group, members) in devices.iter().zip(devices::split(shards, &devices)) {
        let files = files_in_given_order(&files, &members);
        eprintln!(
            "pora tune: {} ({} of {} devices): {} shard(s), {budget:.0} s; tuned alone, one profile per device",
            group.label(),
            done.len() + 1,
            devices.len(),
            members.len()
        );
        let mut device = tune_device(&args, members, files, &facts, budget, stop)?;
        device.label = Some(group.label());
        let interrupted = device.outcome.interrupted;
        done.push(device);
        if interrupted {
            break;
        }
    }
    finish(&args, &done)
}

/// The shards to tune and their files in the order given. `--file A B --file C` groups them as
/// `pora mine` does: each `--file` one shard. The positional `FILE...` (the older form, kept)
/// reads several files as one shard each, or else all of them as one shard.
fn given_shards(args: &TuneArgs) -> anyhow::Result<(Vec<ShardSet>, Vec<PathBuf>)> {
    let groups = &args.shard_files.0;
    if groups.is_empty() {
        let shards = open_files_as_shards(&args.files, args.kv_entries_bits)?;
        if let Some(note) = one_per_file_note(&args.files, args.kv_entries_bits, &shards) {
            eprintln!("pora tune: note: {note}");
        }
        return Ok((shards, args.files.clone()));
    }
    let shards = open_shards(groups, args.kv_entries_bits)?;
    Ok((shards, groups.concat()))
}

/// Tunes `shards` (all on one device) within `budget` seconds and writes their profile beside
/// the first of `files` (or at `--profile`).
fn tune_device(
    args: &TuneArgs,
    shards: Vec<ShardSet>,
    files: Vec<PathBuf>,
    facts: &FileDevices,
    budget: f64,
    stop: &'static std::sync::atomic::AtomicBool,
) -> anyhow::Result<DeviceTune> {
    let input = TuneInput {
        shards,
        methods: tune::pick_methods(&args.methods),
        limits: GridLimits {
            cpus: available_cpus(),
            max_depth: args.max_depth.max(1),
            max_threads_sync: args.max_threads.max(1),
        },
        budget_sec: budget,
        sim: SimConfig {
            seed: 1,
            latency_us: args.sim_latency_us,
            ..SimConfig::default()
        },
        random_checks: args.checks.random_checks,
        latency_curve: args.plot.is_some(),
        devices: facts.clone(),
    };
    let ask = DeviceAsk {
        sharing: args.shards.unwrap_or(input.shards.len()),
        nonce_limit: args.nonce_limit,
        slot_sec: args.slot,
        profile: args.profile.clone(),
    };
    Ok(tune_device_on(
        &input,
        &files,
        &ask,
        stop,
        &mut print_event,
    )?)
}

/// Flags that name one thing cannot serve several devices: refused up front, naming the flag.
fn check_several_devices(args: &TuneArgs, devices: &[devices::DeviceGroup]) -> anyhow::Result<()> {
    let names: Vec<String> = devices.iter().map(|d| d.label()).collect();
    anyhow::ensure!(
        args.profile.is_none(),
        "--profile names one file, but the shards sit on {} devices ({}); leave it out: each device's profile is written beside its first shard",
        devices.len(),
        names.join(", ")
    );
    anyhow::ensure!(
        args.plot.is_none(),
        "--plot draws one device, but the shards sit on {} devices ({}); tune each device's shards on their own to chart them",
        devices.len(),
        names.join(", ")
    );
    anyhow::ensure!(
        args.budget / devices.len() as f64 >= 5.0,
        "--budget {}: the shards sit on {} devices, each tuned alone; give at least 5 seconds per device",
        args.budget,
        devices.len()
    );
    Ok(())
}

/// Prints every device's report (or one JSON object: the record itself for one device, else
/// `{"devices":[...]}`), writes the chart and sets the exit status.
fn finish(args: &TuneArgs, devices: &[DeviceTune]) -> anyhow::Result<ExitCode> {
    if let (Some(path), [one]) = (&args.plot, devices) {
        write_plot(path, &one.outcome)
            .with_context(|| format!("writing chart {}", path.display()))?;
        eprintln!("pora tune: chart written to {}", path.display());
    }
    if args.json {
        let text = match devices {
            [one] => serde_json::to_string_pretty(&one.record())?,
            several => {
                let each: Vec<_> = several
                    .iter()
                    .map(|d| serde_json::json!({"device": d.label, "tune": d.record()}))
                    .collect();
                serde_json::to_string_pretty(&serde_json::json!({ "devices": each }))?
            }
        };
        println!("{text}");
    } else {
        for d in devices {
            if let Some(label) = &d.label {
                println!("== {label}");
            }
            if let Some(o) = &d.steady {
                print_forecast(o);
            }
            print_report(&d.outcome, &d.prediction, d.written.as_deref());
        }
    }
    if devices.iter().any(|d| d.outcome.interrupted) {
        eprintln!("pora tune: interrupted: partial results above, no profile written for the device it was tuning");
        return Ok(signals::interrupted());
    }
    anyhow::ensure!(
        devices.iter().all(|d| d.outcome.choice.is_some()),
        "no arm could be measured; see the notes above"
    );
    Ok(ExitCode::SUCCESS)
}

/// Refuses absurd grid limits up front (the miner's own limits), naming the flag, instead of
/// spending the budget on arms that cannot run.
fn check_limits(args: &TuneArgs) -> anyhow::Result<()> {
    use pora_mine::{MAX_DEPTH, MAX_THREADS};
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
    Ok(())
}

/// Progress on stderr while the run goes.
fn print_event(event: Event) {
    match event {
        Event::Skipped { method, error } => eprintln!("SKIP {method}: {error}"),
        Event::Note(note) => eprintln!("pora tune: note: {note}"),
        Event::RawPass(r) => eprintln!(
            "  raw {} {} threads x depth {}: {} reads/s, p99 {:.0} µs",
            r.method,
            r.threads,
            r.depth,
            si(r.iops),
            r.latency_us_p99
        ),
        Event::Trial {
            arm: a,
            elapsed_sec,
        } => eprintln!(
            "  [{:>5.1}s] {:<13} threads {:>3} depth {:>4}: {:>9} samples/s (trial {})",
            elapsed_sec,
            a.arm.method.name(),
            a.arm.threads,
            a.arm.depth,
            si(*a.trials.last().unwrap_or(&0.0)),
            a.trials.len()
        ),
        _ => {}
    }
}

/// The headline: what `pora mine` will do with this profile, from `auto`'s forecast with the
/// rates just measured (the model and facts its first slot decides from), then each candidate
/// and what the first slot's figure was worked from.
fn print_forecast(o: &pora_mine::session::FilesOutlook) {
    o.lines().iter().for_each(|line| println!("{line}"));
}

fn print_report(o: &TuneOutcome, p: &Prediction, profile: Option<&Path>) {
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
            si(c.iops),
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
            si(a.mean()),
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
        si(k.mean()),
        k.cv() * 100.0,
        k.trials.len(),
        si(c.best.mean()),
        c.best.arm.threads,
        c.best.arm.depth
    );
    if !spread_trusted(k) {
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
        "knee method alone, cold: {:.1}% mining power per shard with {} shard(s) on this device (each needs {} samples/s)",
        p.power * 100.0,
        p.shards,
        si(p.required_per_shard)
    );
    println!("  {}", p.verdict());
    println!("es-node: --miner.threads-per-shard {} (one blocking read per goroutine: keeps about {} reads in flight)", p.esnode_threads, k.arm.reads_in_flight());
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

/// Throughput vs reads in flight per method line, with the ceiling; raw latency percentiles.
fn write_plot(path: &Path, o: &TuneOutcome) -> anyhow::Result<()> {
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for a in o.sweep.arms.iter().filter(|a| !a.trials.is_empty()) {
        let label = if a.arm.method.capabilities().completes_inline {
            format!("{} (threads)", a.arm.method)
        } else {
            format!("{}, {} thread(s)", a.arm.method, a.arm.threads)
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
