//! `pora create`: writes an es-node v1 data file for one shard, the size es-node preallocates.
//!
//! The header is first written with `status = STATUS_INCOMPLETE` and only rewritten as ready
//! after the data is on disk (fsync), so a file interrupted half-way never parses as valid.
//! Existing files are never overwritten without `--force`.
//!
//! `--fill empty` writes what es-node writes for a miner's empty encodeType-3 shard: every KV's
//! BLOB_POSEIDON mask, computed on all cores, and every meta entry `0^24 ‖ 0x80 ‖ 0^7`. A KV's
//! meta entry is written only after its data was synced, so after an interruption the meta
//! region says exactly which KVs are durable: `--resume` re-checks the last of them and fills
//! the rest. `--kv-range A..B` fills only those KVs (the others stay sparse, meta all zero).

mod empty;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use pora_core::header::{Header, HEADER_SIZE, META_SIZE, STATUS_INCOMPLETE, STATUS_READY, VERSION};
use pora_core::{Address, EncodeType, SampleGeometry};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

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

/// clap parser for `--kv-range A..B`.
fn parse_kv_range(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("--kv-range `{s}`: expected A..B (end exclusive)"))?;
    let parse = |v: &str| {
        v.trim()
            .parse::<u64>()
            .map_err(|e| format!("--kv-range `{s}`: `{v}` is not a KV index: {e}"))
    };
    let (a, b) = (parse(a)?, parse(b)?);
    if a >= b {
        return Err(format!("--kv-range `{s}`: empty range (A must be below B)"));
    }
    Ok(a..b)
}

/// `--threads`, defaulting to every core.
pub fn thread_count(threads: Option<usize>) -> anyhow::Result<usize> {
    match threads {
        Some(0) => anyhow::bail!("--threads 0: need at least one thread"),
        Some(n) => Ok(n),
        None => Ok(pora_mine::session::available_cpus()),
    }
}

/// `pora create` from the command line.
pub fn run_command(cmd: CreateCommand) -> anyhow::Result<()> {
    if cmd.base.fill == Fill::Empty {
        let header = plan_header(&cmd.base)?;
        return empty::run(&cmd.base, &cmd.empty, &header);
    }
    let e = &cmd.empty;
    anyhow::ensure!(
        !e.resume && e.kv_range.is_none() && e.threads.is_none() && !e.json,
        "--resume, --kv-range, --threads and --json apply only to --fill empty"
    );
    run(cmd.base)
}

pub fn run(args: CreateArgs) -> anyhow::Result<()> {
    let header = plan_header(&args)?;
    write_file(&args, &header)?;
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

/// The header for the requested shard, with every size checked.
pub fn plan_header(args: &CreateArgs) -> anyhow::Result<Header> {
    let geometry = SampleGeometry::new(args.shard, args.kv_entries_bits, args.kv_size_bits)?;
    let kv_size = 1u64 << args.kv_size_bits;
    let chunk_size = args.chunk_size.unwrap_or(kv_size);
    anyhow::ensure!(
        chunk_size.is_power_of_two() && chunk_size <= kv_size && chunk_size >= 32,
        "--chunk-size {chunk_size}: must be a power of two between 32 and the KV size {kv_size}"
    );
    let chunks_per_shard = (1u64 << (args.kv_entries_bits + args.kv_size_bits)) / chunk_size;
    let header = Header {
        version: VERSION,
        chunk_idx_start: geometry.shard_idx * chunks_per_shard,
        chunk_idx_len: chunks_per_shard,
        encode_type: EncodeType::from_u64(args.encode_type).expect("range-checked by clap"),
        max_kv_size: kv_size,
        chunk_size,
        meta_size: META_SIZE,
        miner: args.miner,
        status: STATUS_READY,
    };
    // Round-trip through the parser: what we write must be what es-node and pora accept.
    Header::parse(&args.file, &header.encode())?;
    Ok(header)
}

fn write_file(args: &CreateArgs, header: &Header) -> anyhow::Result<()> {
    let path = &args.file;
    let mut file = open_for_create(path, args.force)?;
    let total = header
        .allocated_len()
        .context("file size overflows 64 bits")?;
    let mut wip = header.clone();
    wip.status = STATUS_INCOMPLETE;
    let ctx = || format!("writing {}", path.display());
    file.write_all(&wip.encode()).with_context(ctx)?;
    file.set_len(total).with_context(ctx)?;
    if args.fill != Fill::Sparse {
        fill_data(&mut file, header, args).with_context(ctx)?;
    }
    file.sync_all().with_context(ctx)?;
    file.seek(SeekFrom::Start(0)).with_context(ctx)?;
    file.write_all(&header.encode()).with_context(ctx)?;
    file.sync_all().with_context(ctx)?;
    Ok(())
}

pub fn open_for_create(path: &Path, force: bool) -> anyhow::Result<File> {
    let mut opts = OpenOptions::new();
    opts.write(true);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    opts.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!(
                "{}: file exists; pass --force to overwrite it (or, for --fill empty, \
                 --resume to continue filling it)",
                path.display()
            )
        } else {
            anyhow::anyhow!("{}: {e}", path.display())
        }
    })
}

/// Writes the data region sequentially in large blocks; random bytes come from one seeded
/// generator so a (seed, geometry) pair always yields the same file.
fn fill_data(file: &mut File, header: &Header, args: &CreateArgs) -> std::io::Result<()> {
    const BLOCK: usize = 8 << 20;
    let data_len = header.data_len();
    let progress = progress_bar(data_len, args.quiet);
    let mut rng =
        Xoshiro256PlusPlus::seed_from_u64(args.seed ^ header.chunk_idx_start.rotate_left(32));
    let mut buf = vec![0u8; BLOCK];
    file.seek(SeekFrom::Start(HEADER_SIZE))?;
    let mut written = 0u64;
    while written < data_len {
        let n = (data_len - written).min(BLOCK as u64) as usize;
        if args.fill == Fill::Random {
            rng.fill_bytes(&mut buf[..n]);
        }
        file.write_all(&buf[..n])?;
        written += n as u64;
        progress.set_position(written);
    }
    progress.finish_and_clear();
    Ok(())
}

fn progress_bar(len: u64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    bar.set_message("writing");
    bar
}
