//! `pora create`: the flags of a new es-node v1 data file, its progress bar and its summary.
//! Writing the file (incomplete until synced, never overwritten without `--force`) and the
//! `--fill empty` mask fill (all cores, `--resume`, `--kv-range`) are `pora_prepare`'s.

use indicatif::{ProgressBar, ProgressStyle};
use pora_core::Address;
use pora_prepare::create::{self as prepare, CreateSpec};
use pora_prepare::empty::{parse_kv_range, EmptyFill, EmptyFillOptions};
use std::path::PathBuf;

/// How the data region is filled.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Deterministic pseudo-random bytes from --seed.
    Random,
    /// Zero bytes, written (allocated on disk).
    Zero,
    /// Nothing written: a sparse file that reads as zeros (huge address-space tests).
    Sparse,
    /// Every KV's BLOB_POSEIDON mask for --miner, as es-node writes an empty shard
    /// (needs --encode-type 3).
    Empty,
}

#[derive(clap::Args, Clone)]
pub struct CreateArgs {
    /// The data file to write.
    pub file: PathBuf,
    /// Shard index.
    #[arg(long)]
    pub shard: u64,
    /// log2 of the KVs in a shard (13 = 1 GiB with 128 KiB KVs).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=40))]
    pub kv_entries_bits: u32,
    /// log2 of the KV size.
    #[arg(long, default_value_t = 17, value_parser = clap::value_parser!(u32).range(5..=30))]
    pub kv_size_bits: u32,
    /// Chunk size in bytes (power of two, at most the KV size); defaults to the KV size.
    #[arg(long)]
    pub chunk_size: Option<u64>,
    /// Miner address written in the header.
    #[arg(long, value_parser = crate::common::parse_miner, default_value = "0x0000000000000000000000000000000000000000")]
    pub miner: Address,
    /// encodeType: 0 none, 1 keccak-256, 2 ethash, 3 blob-poseidon (bytes are not masked by pora).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=3))]
    pub encode_type: u64,
    /// How to fill the data region.
    #[arg(long, value_enum, default_value_t = Fill::Random)]
    pub fill: Fill,
    /// Seed of the random fill.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Overwrite an existing file.
    #[arg(long)]
    pub force: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `pora create` as parsed: the plain flags plus those only `--fill empty` uses (kept apart so
/// that code building a [`CreateArgs`] directly needs none of them).
#[derive(clap::Args, Clone)]
pub struct CreateCommand {
    #[command(flatten)]
    pub base: CreateArgs,
    #[command(flatten)]
    pub empty: EmptyFillArgs,
}

/// Flags of `--fill empty`.
#[derive(clap::Args, Clone, Default)]
pub struct EmptyFillArgs {
    /// --fill empty: worker threads computing masks (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// --fill empty: continue an interrupted fill of FILE (or fill another --kv-range of it).
    #[arg(long)]
    pub resume: bool,
    /// --fill empty: fill only the global KV indices A..B (end exclusive) of the shard.
    #[arg(long, value_parser = parse_kv_range)]
    pub kv_range: Option<std::ops::Range<u64>>,
    /// Print a JSON summary (--fill empty).
    #[arg(long)]
    pub json: bool,
}

/// `pora create` from the command line.
pub fn run_command(cmd: CreateCommand) -> anyhow::Result<()> {
    if cmd.base.fill == Fill::Empty {
        return run_empty(&cmd.base, &cmd.empty);
    }
    let e = &cmd.empty;
    anyhow::ensure!(
        !e.resume && e.kv_range.is_none() && e.threads.is_none() && !e.json,
        "--resume, --kv-range, --threads and --json apply only to --fill empty"
    );
    run(cmd.base)
}

pub fn run(args: CreateArgs) -> anyhow::Result<()> {
    let spec = spec(&args);
    let header = prepare::plan_header(&spec)?;
    // A sparse file has no data to write, so no bar.
    let quiet = args.quiet || args.fill == Fill::Sparse;
    let counts = "{bytes}/{total_bytes} {bytes_per_sec}";
    let bar = progress_bar(header.data_len(), quiet, "writing", counts);
    let written = prepare::create(&spec, &header, &|n| bar.inc(n));
    bar.finish_and_clear();
    written?;
    if !args.quiet {
        eprintln!(
            "created {}: shard {}, {} chunks of {} bytes, {} bytes on disk",
            args.file.display(),
            args.shard,
            header.chunk_idx_len,
            header.chunk_size,
            header.allocated_len().unwrap_or(0)
        );
    }
    Ok(())
}

/// `--fill empty`: every KV's mask, with a KV progress bar and a summary (or `--json`).
fn run_empty(args: &CreateArgs, opts: &EmptyFillArgs) -> anyhow::Result<()> {
    let spec = spec(args);
    let header = prepare::plan_header(&spec)?;
    let options = EmptyFillOptions {
        threads: crate::common::thread_count(opts.threads)?,
        resume: opts.resume,
        kv_range: opts.kv_range.clone(),
    };
    let fill = EmptyFill::open(&spec, &header, &options)?;
    if fill.refilled > 0 && !args.quiet {
        eprintln!(
            "resume: {} filled KVs did not hold their mask; re-filling them",
            fill.refilled
        );
    }
    let counts = "{pos}/{len} KVs {per_sec}";
    let bar = progress_bar(fill.kvs() as u64, args.quiet, "masking", counts);
    let summary = fill.run(&|n| bar.inc(n));
    bar.finish_and_clear();
    let summary = summary?;
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else if !args.quiet {
        eprintln!(
            "filled {} KVs of {} in {:.2} s on {} threads ({:.2} ms per KV per core)",
            summary.kvs,
            args.file.display(),
            summary.seconds,
            summary.threads,
            summary.ms_per_kv_per_core
        );
    }
    Ok(())
}

/// What to create, from the flags.
fn spec(args: &CreateArgs) -> CreateSpec {
    CreateSpec {
        file: args.file.clone(),
        shard: args.shard,
        kv_entries_bits: args.kv_entries_bits,
        kv_size_bits: args.kv_size_bits,
        chunk_size: args.chunk_size,
        miner: args.miner,
        encode_type: args.encode_type,
        fill: match args.fill {
            Fill::Random => prepare::Fill::Random,
            Fill::Zero => prepare::Fill::Zero,
            Fill::Sparse => prepare::Fill::Sparse,
            Fill::Empty => prepare::Fill::Empty,
        },
        seed: args.seed,
        force: args.force,
    }
}

/// A progress bar saying `message`, with `counts` (indicatif's keys) after the bar; hidden with
/// `--quiet`.
fn progress_bar(len: u64, quiet: bool, message: &'static str, counts: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let template = format!("{{msg}} [{{bar:40}}] {counts} eta {{eta}}");
    bar.set_style(
        ProgressStyle::with_template(&template)
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}
