//! `pora mine`: mines slots over one or more shards with many nonces in flight (the pora-mine
//! scheduler), printing one line (or one JSON object) per slot and shard, a warning when a slot
//! ends below 100% mining power, and partial statistics on Ctrl-C / SIGTERM (exit status 130).
//!
//! Each `--file` occurrence is one shard (one or more data files). `--demo` creates a small
//! shard under `./pora-demo/` and mines one slot on it.

use crate::common::{parse_miner, parse_randao, DiffArgs};
use anyhow::Context;
use clap::ArgAction;
use pora_core::keccak::keccak256;
use pora_core::{Address, ShardSet, H256, U256};
use pora_io::{IoConfig, Method};
use pora_mine::{Bottleneck, Find, MineConfig, Miner, OnIoError, ShardSlotReport, SlotReport};
use serde_json::json;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::EXIT_INTERRUPTED;

#[derive(clap::Args)]
pub struct MineArgs {
    #[command(flatten)]
    files: ShardFiles,
    /// The 32-byte randao mix digest, 0x-prefixed hex (the same for every slot).
    #[arg(long, value_parser = parse_randao, required_unless_present_any = ["random_randao", "demo"], conflicts_with = "random_randao")]
    randao: Option<H256>,
    /// Derive each slot's randao from --seed and the slot number (deterministic).
    #[arg(long)]
    random_randao: bool,
    /// Seed of --random-randao.
    #[arg(long, default_value_t = 1, requires = "random_randao")]
    seed: u64,
    /// Nonces of each shard's slot, A..B (B exclusive).
    #[arg(long, value_parser = parse_nonce_range, default_value = "0..1048576")]
    nonces: Range<u64>,
    /// Slot length in seconds (no read is issued after it).
    #[arg(long, value_parser = parse_slot_seconds, default_value = "12")]
    slot: Duration,
    /// Slots to mine.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    slots: u64,
    #[command(flatten)]
    diff: DiffArgs,
    /// Which valid nonces to report: first (stop the shard's slot at the first, es-node's way),
    /// best (lowest hash1) or all.
    #[arg(long, value_parser = parse_find, default_value = "first")]
    find: Find,
    /// Samples per nonce.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    random_checks: u32,
    /// Shard size as log2(KVs); inferred from the files when omitted.
    #[arg(long)]
    kv_entries_bits: Option<u32>,
    /// Access method (auto picks the best available; see `pora bench`).
    #[arg(long, default_value = "auto")]
    method: Method,
    /// Worker threads [default: CPUs for asynchronous methods, max(64, CPUs) for synchronous ones].
    #[arg(long)]
    threads: Option<usize>,
    /// Nonces (reads) in flight per thread [default: 256 for asynchronous methods, 1 for
    /// synchronous ones].
    #[arg(long)]
    depth: Option<usize>,
    /// What a failed sample read does: retry (3 times, then drop the nonce), skip (drop the
    /// nonce), stop (end with an error naming file and offset).
    #[arg(long, value_parser = parse_on_io_error, default_value = "retry")]
    on_io_error: OnIoError,
    /// Miner address used in hash0; defaults to the files' header.
    #[arg(long, value_parser = parse_miner)]
    miner: Option<Address>,
    /// One JSON object per slot and shard (JSON lines) instead of text.
    #[arg(long)]
    json: bool,
    /// Tune profile to use [default: `<first file>.pora-profile.toml` when present].
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Create ./pora-demo/shard0.dat (256 MiB, once) and mine one slot on it.
    #[arg(long, hide = true)]
    demo: bool,
}

/// `--file A B --file C`: one group of paths per occurrence, one shard per group. clap's derive
/// cannot group values by occurrence, so this small part is written against the builder API.
#[derive(Clone, Debug, Default)]
struct ShardFiles(Vec<Vec<PathBuf>>);

impl clap::FromArgMatches for ShardFiles {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let groups = matches
            .get_occurrences::<PathBuf>("file")
            .map(|occ| occ.map(|g| g.cloned().collect()).collect());
        Ok(ShardFiles(groups.unwrap_or_default()))
    }
    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for ShardFiles {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.arg(
            clap::Arg::new("file")
                .long("file")
                .value_name("FILE")
                .num_args(1..)
                .action(ArgAction::Append)
                .value_parser(clap::value_parser!(PathBuf))
                .required_unless_present("demo")
                .help("Data files of one shard; repeat --file for each further shard mined in the same slot"),
        )
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

fn parse_nonce_range(s: &str) -> Result<Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("--nonces {s}: expected A..B, e.g. 0..1048576"))?;
    let parse = |v: &str| {
        v.trim()
            .parse::<u64>()
            .map_err(|e| format!("--nonces {s}: `{v}` is not a nonce ({e})"))
    };
    let (start, end) = (parse(a)?, parse(b)?);
    if start >= end {
        return Err(format!(
            "--nonces {s}: the range is empty (B must be greater than A)"
        ));
    }
    Ok(start..end)
}

fn parse_slot_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|e| format!("--slot {s}: not a number of seconds ({e})"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!(
            "--slot {s}: must be more than 0 and at most 86400 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_find(s: &str) -> Result<Find, String> {
    match s {
        "first" => Ok(Find::First),
        "best" => Ok(Find::Best),
        "all" => Ok(Find::All),
        _ => Err(format!("--find {s}: one of first, best, all")),
    }
}

fn parse_on_io_error(s: &str) -> Result<OnIoError, String> {
    match s {
        "retry" => Ok(OnIoError::Retry),
        "skip" => Ok(OnIoError::Skip),
        "stop" => Ok(OnIoError::Stop),
        _ => Err(format!("--on-io-error {s}: one of retry, skip, stop")),
    }
}

/// Methods that complete reads inside `submit` (one at a time per thread): their parallelism
/// comes from threads, not depth.
fn is_synchronous(method: Method) -> bool {
    matches!(
        method,
        Method::Pread | Method::PreadShared | Method::Direct | Method::Mmap
    )
}

/// The default knobs for a concrete method: asynchronous methods keep 256 reads in flight per
/// thread with one thread per CPU; synchronous ones read one sample at a time per thread, so
/// they get at least 64 threads to keep a device queue busy.
fn default_knobs(method: Method) -> (usize, usize) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if is_synchronous(method) {
        (cpus.max(64), 1)
    } else {
        (cpus, 256)
    }
}

/// The tune profile's method / threads / depth for these files (`--profile PATH`, or
/// `<first file>.pora-profile.toml` when present), said on stderr. A profile measured on other
/// files, another device or file system is not used, and the user is told to re-tune.
/// Flags given explicitly on the command line always win over the profile.
fn tuned_knobs(
    user_files: &[PathBuf],
    explicit: Option<&Path>,
) -> anyhow::Result<Option<(Method, usize, usize)>> {
    match crate::profile::lookup(user_files, explicit)? {
        crate::profile::Lookup::Absent => Ok(None),
        crate::profile::Lookup::Stale { path, why } => {
            eprintln!(
                "pora mine: not using profile {}: {why}; re-run `pora tune`",
                path.display()
            );
            Ok(None)
        }
        crate::profile::Lookup::Use { path, profile: p } => {
            eprintln!(
                "pora mine: using profile {} ({}, {} threads, depth {}, tuned {})",
                path.display(),
                p.method,
                p.threads,
                p.depth,
                p.created
            );
            Ok(Some((p.method, p.threads, p.depth)))
        }
    }
}

/// Set by Ctrl-C / SIGTERM; a second signal exits at once.
static STOP: AtomicBool = AtomicBool::new(false);

fn install_stop_handler() {
    let installed = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(EXIT_INTERRUPTED);
        }
    });
    if let Err(e) = installed {
        eprintln!(
            "pora: warning: cannot catch Ctrl-C ({e}); an interrupt will not print statistics"
        );
    }
}

pub fn run(mut args: MineArgs) -> anyhow::Result<()> {
    if args.demo {
        prepare_demo(&mut args)?;
    }
    let shards = open_shards(&args)?;
    let paths = Miner::paths(&shards);
    let user_files: Vec<PathBuf> = args.files.0.iter().flatten().cloned().collect();
    let tuned = tuned_knobs(&user_files, args.profile.as_deref())?;
    let method = match (args.method, tuned) {
        (Method::Auto, Some((m, _, _))) => m,
        (m, _) => m,
    };
    let factory = pora_io::open(
        &paths,
        &IoConfig {
            method,
            ..Default::default()
        },
    )
    .with_context(|| format!("opening the shard files with --method {method}"))?;
    let method = factory.method();
    let (default_threads, default_depth) = match tuned {
        Some((m, t, d)) if m == method => (t, d),
        _ => default_knobs(method),
    };
    let config = MineConfig {
        threads: args.threads.unwrap_or(default_threads),
        depth: args.depth.unwrap_or(default_depth),
        random_checks: args.random_checks,
        nonces: args.nonces.clone(),
        slot: args.slot,
        find: args.find,
        required_diff: args.diff.required()?,
        on_io_error: args.on_io_error,
        miner: args.miner,
    };
    let (threads, depth) = (config.threads, config.depth);
    let miner = Miner::new(shards, factory, config)?;
    if !args.json {
        eprintln!(
            "pora mine: {} | {threads} threads x depth {depth}",
            miner.describe_io()
        );
    }
    install_stop_handler();
    for slot in 0..args.slots {
        let randao = slot_randao(&args, slot);
        let report = miner.mine_slot(&randao, &STOP)?;
        let knobs = Knobs {
            method,
            threads,
            depth,
            find: args.find,
        };
        print_report(slot, &report, &knobs, args.json)?;
        if report.interrupted {
            eprintln!("pora mine: interrupted during slot {slot}; statistics above are partial");
            std::process::exit(EXIT_INTERRUPTED);
        }
    }
    Ok(())
}

fn open_shards(args: &MineArgs) -> anyhow::Result<Vec<ShardSet>> {
    let mut shards: Vec<ShardSet> = Vec::with_capacity(args.files.0.len());
    for (group, files) in args.files.0.iter().enumerate() {
        let shard = ShardSet::open(files, args.kv_entries_bits)
            .with_context(|| format!("--file group {} (shard files)", group + 1))?;
        if let Some(other) = shards
            .iter()
            .position(|s| s.geometry.shard_idx == shard.geometry.shard_idx)
        {
            anyhow::bail!(
                "--file groups {} and {} both hold shard {}: mine each shard once",
                other + 1,
                group + 1,
                shard.geometry.shard_idx
            );
        }
        shards.push(shard);
    }
    Ok(shards)
}

/// `--randao`, or with `--random-randao` keccak256("pora-random-randao" || seed || slot).
fn slot_randao(args: &MineArgs, slot: u64) -> H256 {
    match args.randao {
        Some(r) => r,
        None => H256(keccak256(&[
            b"pora-random-randao",
            &args.seed.to_be_bytes(),
            &slot.to_be_bytes(),
        ])),
    }
}

struct Knobs {
    method: Method,
    threads: usize,
    depth: usize,
    find: Find,
}

fn print_report(slot: u64, report: &SlotReport, knobs: &Knobs, json: bool) -> anyhow::Result<()> {
    for shard in &report.shards {
        if json {
            println!(
                "{}",
                serde_json::to_string(&shard_json(slot, shard, report, knobs))?
            );
        } else {
            print_human(slot, shard, knobs);
        }
        // `--find first` ends a shard's slot early on purpose once it has its nonce.
        let found_first = knobs.find == Find::First && !shard.found.is_empty();
        if shard.mining_power < 1.0 && !found_first {
            warn_below_full_power(slot, shard, report);
        }
    }
    for msg in &report.io_error_messages {
        eprintln!("pora mine: read error: {msg}");
    }
    Ok(())
}

fn shard_json(
    slot: u64,
    shard: &ShardSlotReport,
    report: &SlotReport,
    knobs: &Knobs,
) -> serde_json::Value {
    json!({
        "slot": slot,
        "shard": shard.shard,
        "randao": shard.randao,
        "nonceLimit": shard.nonce_limit,
        "noncesTried": shard.nonces_tried,
        "miningPower": shard.mining_power,
        "elapsedSec": shard.elapsed_sec,
        "samplesRead": shard.samples_read,
        "samplesPerSec": shard.samples_per_sec,
        "method": knobs.method.name(),
        "threads": knobs.threads,
        "depth": knobs.depth,
        "ioErrors": shard.io_errors,
        "bottleneck": report.bottleneck,
        "ioWaitFraction": report.io_wait_fraction,
        "cpuBusyFraction": report.cpu_busy_fraction,
        "interrupted": report.interrupted,
        "found": shard.found,
    })
}

fn print_human(slot: u64, s: &ShardSlotReport, k: &Knobs) {
    println!(
        "slot {slot} shard {}: tried {}/{} nonces, mining power {:.2}% ({} bps), {:.3} s, {} samples ({:.0}/s), {} {}x{}, found {}{}",
        s.shard,
        s.nonces_tried,
        s.nonce_limit,
        s.mining_power * 100.0,
        (s.mining_power * 10_000.0).floor(),
        s.elapsed_sec,
        s.samples_read,
        s.samples_per_sec,
        k.method,
        k.threads,
        k.depth,
        s.found.len(),
        if s.io_errors > 0 { format!(", {} nonces dropped on read errors", s.io_errors) } else { String::new() }
    );
    for p in &s.found {
        println!("  nonce {} hash1 {}", p.nonce, p.hash1);
        for i in 0..p.sample_idxs.len() {
            println!(
                "    sample {i}: idx {} kv {} in-kv {} = {}",
                p.sample_idxs[i], p.kv_idxs[i], p.sample_idxs_in_kv[i], p.encoded_samples[i]
            );
        }
    }
}

fn warn_below_full_power(slot: u64, s: &ShardSlotReport, report: &SlotReport) {
    let (wait, busy) = (
        report.io_wait_fraction * 100.0,
        report.cpu_busy_fraction * 100.0,
    );
    let why = match report.bottleneck {
        Bottleneck::Disk => format!(
            "the disk was the limit (workers waited for reads {wait:.0}% of the time, CPUs {busy:.0}% busy): `pora tune` measures whether more reads in flight or another --method help, or the disk is at its ceiling"
        ),
        Bottleneck::Cpu => format!("the CPU was the limit (hashing kept the usable CPUs {busy:.0}% busy): more threads than cores will not help"),
        Bottleneck::None if report.interrupted => "the slot was interrupted".into(),
        Bottleneck::None => format!("{} nonces were dropped on read errors", s.io_errors),
    };
    eprintln!(
        "pora mine: warning: slot {slot} shard {} ended at {:.2}% mining power: {why}",
        s.shard,
        s.mining_power * 100.0
    );
}

/// `--demo`: a 256 MiB random shard 0 at ./pora-demo/shard0.dat (created once), one slot with
/// a random randao and a difficulty that finds a few nonces in 2^20.
fn prepare_demo(args: &mut MineArgs) -> anyhow::Result<()> {
    let path = PathBuf::from("pora-demo/shard0.dat");
    if !path.exists() {
        std::fs::create_dir_all("pora-demo").context("creating ./pora-demo")?;
        eprintln!(
            "pora mine --demo: creating {} (256 MiB of random data, shard 0)",
            path.display()
        );
        crate::create::run(crate::create::CreateArgs {
            file: path.clone(),
            shard: 0,
            kv_entries_bits: 11,
            kv_size_bits: 17,
            chunk_size: None,
            miner: Address([0; 20]),
            encode_type: 0,
            fill: crate::create::Fill::Random,
            seed: 1,
            force: false,
            quiet: false,
        })?;
    }
    args.files = ShardFiles(vec![vec![path]]);
    args.randao = None;
    args.random_randao = true;
    if args.diff.required_diff.is_none() && args.diff.difficulty.is_none() {
        // About 5 valid nonces expected among 1,048,576.
        args.diff.required_diff = Some(U256::MAX / U256::from(200_000u64));
    }
    if args.find == Find::First {
        args.find = Find::All;
    }
    Ok(())
}
