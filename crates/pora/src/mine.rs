//! `pora mine`: mines slots over one or more shards with many nonces in flight (the pora-mine
//! scheduler), printing one line (or one JSON object) per slot and shard, a warning when a slot
//! ends below 100% mining power, and partial statistics on Ctrl-C / SIGTERM (exit status 130).
//!
//! Each `--file` occurrence is one shard (one or more data files). `--demo` creates a small
//! shard under `./pora-demo/` and mines one slot on it.

use crate::common::{parse_randao, DiffArgs, SessionArgs, ShardFiles};
use anyhow::Context;
use pora_core::{Address, H256, U256};
use pora_mine::records::ShardSlotRecord;
use pora_mine::session::{Choice, MinedSlot, Session};
use pora_mine::{
    random_randao, Find, SlotRequest, SlotRhythm, MAX_SLOT_LENGTH_MS, NONCES_PER_SLOT, SLOT_LENGTH,
};
use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct MineArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// The 32-byte randao mix digest, 0x-prefixed hex (the same for every slot).
    #[arg(long, value_parser = parse_randao, required_unless_present_any = ["random_randao", "demo"], conflicts_with = "random_randao")]
    randao: Option<H256>,
    /// Derive each slot's randao from --seed and the slot number (deterministic).
    #[arg(long)]
    random_randao: bool,
    /// Seed of --random-randao.
    #[arg(long, default_value_t = 1, requires = "random_randao")]
    seed: u64,
    /// Nonces of each shard's slot, A..B (B exclusive) [default: es-node's, 0..2^20].
    #[arg(long, value_parser = parse_nonce_range)]
    nonces: Option<Range<u64>>,
    /// Slot length in seconds (no read is issued after it) [default: es-node's, 12].
    #[arg(long, value_parser = parse_slot_seconds)]
    slot: Option<Duration>,
    /// Slots to mine, on a fixed rhythm: slot k (from 0) ends (k + 1) x --slot after the first
    /// began, whatever the slots before it cost (a slot that ends early, every nonce tried, lets
    /// the next start at once, with the time to its own deadline; one whose deadline passed
    /// before it started is reported with nothing tried).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    slots: u64,
    #[command(flatten)]
    diff: DiffArgs,
    /// Which valid nonces to report: first (stop the shard's slot at the first, es-node's way),
    /// best (lowest hash1) or all.
    #[arg(long, value_parser = parse_find, default_value = "first")]
    find: Find,
    /// One JSON object per slot and shard (JSON lines) instead of text.
    #[arg(long)]
    json: bool,
    /// Serve Prometheus metrics (GET /metrics) on this address while mining, e.g. 127.0.0.1:9646.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<std::net::SocketAddr>,
    /// Create ./pora-demo/shard0.dat (256 MiB, once) and mine one slot on it.
    #[arg(long)]
    demo: bool,
}

fn parse_nonce_range(s: &str) -> Result<Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("--nonces {s}: expected A..B, e.g. 0..{NONCES_PER_SLOT}"))?;
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
    let max = MAX_SLOT_LENGTH_MS as f64 / 1000.0;
    if !(secs > 0.0 && secs <= max) {
        return Err(format!(
            "--slot {s}: must be more than 0 and at most {max} seconds"
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

pub fn run(mut args: MineArgs) -> anyhow::Result<ExitCode> {
    if args.demo {
        prepare_demo(&mut args)?;
    }
    let session = Session::open(&args.session.files.0, &args.session.open_options())?;
    for note in session.notes() {
        eprintln!("pora mine: {note}");
    }
    if !args.json {
        for line in session.opening_lines() {
            eprintln!("pora mine: {line}");
        }
    }
    let required_diff = args.diff.required()?;
    let metrics = crate::serve::start_metrics(args.metrics_listen, &session)?;
    let stop = crate::signals::install("mine");
    let rhythm = SlotRhythm::starting_now(args.slot.unwrap_or(SLOT_LENGTH));
    for slot in 0..args.slots {
        let Some(deadline) = rhythm.deadline(slot) else {
            anyhow::bail!(
                "--slots {}: slot {slot} would end further out than this system's clock reaches",
                args.slots
            );
        };
        let entered = Instant::now();
        if entered >= deadline {
            // The slot before ran past this slot's whole length: this one is mined with no time
            // (nothing tried, endLateMs > 0), as es-node would miss it, and the rhythm holds.
            eprintln!(
                "pora mine: slot {slot} has no time: its deadline passed {:.0} ms before the slot before it ended",
                (entered - deadline).as_secs_f64() * 1e3
            );
        }
        let request = SlotRequest::new(slot_randao(&args, slot))
            .with_entered(entered)
            .with_deadline(deadline)
            .with_nonces(args.nonces.clone().unwrap_or(0..NONCES_PER_SLOT))
            .with_find(args.find)
            .with_required_diff(required_diff);
        if let Some(m) = &metrics {
            m.slot_started();
        }
        let mined = session.mine_slot(&request, stop)?;
        if let Some(m) = &metrics {
            m.record_slot(&mined);
        }
        if !args.json {
            print_switches(slot, &mined.choices);
        }
        print_report(slot, &mined, args.find, args.json)?;
        if mined.report.interrupted {
            eprintln!("pora mine: interrupted during slot {slot}; statistics above are partial");
            return Ok(crate::signals::interrupted());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--randao`, or with `--random-randao` [`random_randao`] of `--seed` and the slot.
fn slot_randao(args: &MineArgs, slot: u64) -> H256 {
    args.randao
        .unwrap_or_else(|| random_randao(args.seed, slot))
}

/// One line per device whose method `auto` changed for this slot, with the reason.
fn print_switches(slot: u64, choices: &[Choice]) {
    for choice in choices {
        let Some(steering) = &choice.steering else {
            continue;
        };
        let Some(from) = steering.switched_from else {
            continue;
        };
        let device = choice.device.as_deref().unwrap_or("unknown");
        eprintln!(
            "pora mine: slot {slot}, device {device}: switched {from} -> {} {}x{} in {:.1} ms ({})",
            choice.method, choice.threads, choice.depth, steering.switch_ms, choice.why
        );
    }
}

fn print_report(slot: u64, mined: &MinedSlot, find: Find, json: bool) -> anyhow::Result<()> {
    let report = &mined.report;
    let end_late_ms = mined.end_late_ms();
    for record in ShardSlotRecord::from_report(slot, report, &mined.choices, end_late_ms) {
        let shard = &record.report;
        if json {
            println!("{}", serde_json::to_string(&record)?);
        } else {
            record
                .text_lines()
                .iter()
                .for_each(|line| println!("{line}"));
        }
        if shard.changed_during_slot > 0 {
            eprintln!(
                "pora mine: warning: slot {slot} shard {}: {} candidate nonces changed under the slot (blobs written into the shard); re-verified from the bytes on disk now",
                shard.shard, shard.changed_during_slot
            );
        }
        // `--find first` ends a shard's slot early on purpose once it has its nonce.
        let found_first = find == Find::First && !shard.found.is_empty();
        if shard.mining_power < 1.0 && !found_first {
            eprintln!(
                "pora mine: warning: slot {slot} shard {} ended at {:.2}% mining power: {}",
                shard.shard,
                shard.mining_power * 100.0,
                report.why_below_full_power(shard)
            );
        }
    }
    for msg in &report.io_error_messages {
        eprintln!("pora mine: read error: {msg}");
    }
    if report.leaked_backends > 0 {
        eprintln!(
            "pora mine: warning: {} backends were given up with reads stuck in the kernel (a dead or very slow device) and left allocated rather than waited for",
            report.leaked_backends
        );
    }
    Ok(())
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
    args.session.files = ShardFiles(vec![vec![path]]);
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
