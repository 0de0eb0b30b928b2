//! `pora bench FILE`: a random-read benchmark in the manner of fio and DiskSpd. For every
//! combination of `--method` x `--depth` x `--threads` it keeps every worker's queue full for
//! `--duration` seconds at uniformly random aligned offsets of the file (or `--range`) and reports
//! reads/s, MB/s, latency percentiles, CPU% and the reads the device really did.
//! The measurement itself is `pora_measure::bench`, the read pass `pora tune` runs too; this
//! file holds the flags, the loop over combinations and the chart.

mod report;

use crate::signals;
use anyhow::{bail, Context};
use pora_io::align::MAX_BLOCK_BYTES;
use pora_io::host::page_cache;
use pora_io::{BlockSize, IoError, Method};
use pora_measure::bench::record::RunInfo;
use pora_measure::bench::{self as measure, MeasureError, MeasureSpec, Target};
use pora_mine::{MAX_DEPTH, MAX_THREADS};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Longest accepted `--duration`: one day.
const MAX_DURATION_SECS: f64 = 86_400.0;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// The file to read (opened read-only). An es-node data file is read over its data region.
    file: PathBuf,
    /// Access method; repeat or comma-separate for several. `auto` resolves to the best available.
    #[arg(
        long = "method",
        value_name = "M",
        value_delimiter = ',',
        default_value = "auto"
    )]
    methods: Vec<Method>,
    /// Bytes per read: a power of two >= 512 (reads at offsets aligned to it, like fio's bs), or
    /// `natural`: 32-byte samples for buffered methods, one logical block for direct ones.
    #[arg(long, value_name = "BYTES", value_parser = parse_block_size, default_value = "natural")]
    block_size: BlockSize,
    /// Reads in flight per thread (1..=65536); repeat or comma-separate for several.
    #[arg(long = "depth", value_name = "N", allow_negative_numbers = true, value_delimiter = ',', default_value = "1", value_parser = parse_depth)]
    depths: Vec<usize>,
    /// Worker threads (1..=1024); repeat or comma-separate for several.
    #[arg(long = "threads", value_name = "N", allow_negative_numbers = true, value_delimiter = ',', default_value = "1", value_parser = parse_threads)]
    threads: Vec<usize>,
    /// Seconds per combination (decimals allowed).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "10", value_parser = parse_duration)]
    duration: Duration,
    /// Bytes of the file to read, `START..END` (suffixes K, M, G, T are powers of 1024).
    /// Default: the data region of an es-node data file, else the whole file.
    #[arg(long, value_name = "START..END", value_parser = parse_range)]
    range: Option<Range<u64>>,
    /// Evict the file from the page cache before each combination (POSIX_FADV_DONTNEED).
    #[arg(long)]
    cold: bool,
    /// Print one JSON object per combination per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Seed of the random offsets (default: from the clock; printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Also draw reads/s and latency percentiles vs reads in flight into this SVG file.
    #[arg(long, value_name = "SVG")]
    plot: Option<PathBuf>,
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let file_len = check_file(&args.file)?;
    let (range, range_source) = match &args.range {
        Some(r) => (check_range(r, &args.file, file_len)?, "--range"),
        None => default_range(&args.file, file_len),
    };
    let seed = args.seed.unwrap_or_else(seed_from_clock);
    let stop = signals::install("bench");
    let info = RunInfo {
        file: args.file.clone(),
        range: range.clone(),
        range_source,
        seed,
        cold: args.cold,
        duration: args.duration,
    };
    let mut out = report::Reporter::new(info, args.json);
    let mut totals = Totals::default();
    for &method in &args.methods {
        run_method(&args, method, &range, seed, stop, &mut out, &mut totals)?;
        if signals::stopped() {
            break;
        }
    }
    out.finish();
    if signals::stopped() {
        eprintln!("pora bench: interrupted");
        return Ok(signals::interrupted());
    }
    if totals.ran == 0 {
        bail!("no combination ran: every method was skipped (see SKIP lines above)");
    }
    if let Some(path) = &args.plot {
        write_plot(path, &totals.results)
            .with_context(|| format!("writing chart {}", path.display()))?;
        eprintln!("pora bench: chart written to {}", path.display());
    }
    if totals.read_errors > 0 {
        bail!(
            "{} read errors during the benchmark (first: {})",
            totals.read_errors,
            totals.first_error.unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Default)]
struct Totals {
    /// Combinations started (including skipped ones).
    combinations: u64,
    ran: usize,
    read_errors: u64,
    first_error: Option<String>,
    /// What the chart needs of each finished combination.
    results: Vec<PlotPoint>,
}

/// One finished combination, for `--plot`.
struct PlotPoint {
    method: Method,
    threads: usize,
    depth: usize,
    iops: f64,
    latency_us: [f64; 3],
}

/// Runs every depth x threads combination of one method; skips the method (visibly) when it
/// cannot be opened here.
fn run_method(
    args: &BenchArgs,
    method: Method,
    range: &Range<u64>,
    seed: u64,
    stop: &AtomicBool,
    out: &mut report::Reporter,
    totals: &mut Totals,
) -> anyhow::Result<()> {
    for &depth in &args.depths {
        for &threads in &args.threads {
            if signals::stopped() {
                return Ok(());
            }
            let eviction = args.cold.then(|| evict(&args.file));
            let spec = MeasureSpec {
                targets: vec![Target {
                    path: args.file.clone(),
                    range: range.clone(),
                }],
                method,
                block_size: args.block_size,
                depth,
                threads,
                duration: args.duration,
                seed: combination_seed(seed, totals.combinations),
            };
            totals.combinations += 1;
            let mut spinner = out.spinner(&spec);
            let result = measure::run_one(&spec, stop, &mut |p| spinner.update(p));
            spinner.finish();
            match result {
                Ok(r) => {
                    totals.ran += 1;
                    totals.read_errors += r.read_errors;
                    if totals.first_error.is_none() {
                        totals.first_error = r.first_error.clone();
                    }
                    totals.results.push(PlotPoint {
                        method: r.method,
                        threads,
                        depth,
                        iops: r.iops(),
                        latency_us: [r.latency_us(0.5), r.latency_us(0.99), r.latency_us(0.999)],
                    });
                    out.result(&r, eviction.as_deref())?;
                }
                Err(MeasureError::Open(e @ IoError::Unavailable { .. })) => {
                    eprintln!("SKIP {method}: {e}");
                    return Ok(());
                }
                Err(MeasureError::Open(e)) => {
                    eprintln!("SKIP {method} depth {depth} threads {threads}: {e}");
                }
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "{method} depth {depth} threads {threads} on {}",
                            args.file.display()
                        )
                    })
                }
            }
        }
    }
    Ok(())
}

/// Reads/s per method and thread count vs reads in flight, with the best figure measured as the
/// ceiling line, then p50 / p99 / p99.9 latency per method and thread count.
fn write_plot(path: &Path, points: &[PlotPoint]) -> anyhow::Result<()> {
    use crate::plot::{Chart, HLine, Series};
    use std::collections::BTreeMap;
    let mut lines: BTreeMap<String, Vec<&PlotPoint>> = BTreeMap::new();
    for p in points {
        lines
            .entry(format!("{}, {} thread(s)", p.method, p.threads))
            .or_default()
            .push(p);
    }
    let series = |f: &dyn Fn(&PlotPoint) -> f64, suffix: &str| -> Vec<Series> {
        lines
            .iter()
            .map(|(label, ps)| Series {
                label: format!("{label}{suffix}"),
                points: ps
                    .iter()
                    .map(|p| ((p.threads * p.depth) as f64, f(p)))
                    .collect(),
            })
            .collect()
    };
    let mut throughput = Chart::throughput(
        "pora bench: random reads/s vs reads in flight",
        "reads in flight (threads x depth)",
        series(&|p| p.iops, ""),
        None,
    );
    throughput.y_label = "reads / s".into();
    let best = points.iter().map(|p| p.iops).fold(0.0, f64::max);
    throughput.hlines.push(HLine {
        label: format!("best measured {}", crate::plot::si(best)),
        y: best,
    });
    let mut latency = Vec::new();
    for (i, name) in ["p50", "p99", "p99.9"].iter().enumerate() {
        latency.extend(series(&move |p| p.latency_us[i], &format!(" {name}")));
    }
    let latency = Chart::latency(
        "pora bench: read latency vs reads in flight",
        "reads in flight (threads x depth)",
        latency,
    );
    crate::plot::write_svg(path, &[throughput, latency])
}

/// Evicts the file and describes the outcome; unverified eviction is also said on stderr.
fn evict(path: &Path) -> String {
    let text = match page_cache::evict(path) {
        Ok(e) => e.describe(),
        Err(e) => format!("eviction failed: {e}"),
    };
    if !text.starts_with("evicted") {
        eprintln!("pora bench: --cold: {text}");
    }
    text
}

/// The file's length; a clear error when it is missing, not a regular file or empty.
fn check_file(path: &Path) -> anyhow::Result<u64> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    if !meta.is_file() {
        bail!("{}: not a regular file", path.display());
    }
    if meta.len() == 0 {
        bail!("{}: the file is empty", path.display());
    }
    Ok(meta.len())
}

fn check_range(range: &Range<u64>, path: &Path, file_len: u64) -> anyhow::Result<Range<u64>> {
    if range.end > file_len {
        bail!(
            "--range {}..{}: the end is past the end of {} ({file_len} bytes)",
            range.start,
            range.end,
            path.display()
        );
    }
    Ok(range.clone())
}

/// An es-node data file's data region (header skipped); any other file's whole length.
fn default_range(path: &Path, file_len: u64) -> (Range<u64>, &'static str) {
    match pora_core::DataFile::open(path) {
        Ok(f) => (
            pora_core::header::HEADER_SIZE..f.header.min_file_len().min(file_len),
            "data region of an es-node data file",
        ),
        Err(_) => (0..file_len, "whole file"),
    }
}

/// Combination `n`'s seed: different offsets per combination, so one combination does not find
/// the pages an earlier one read, yet the whole run repeats with the same `--seed`.
fn combination_seed(seed: u64, n: u64) -> u64 {
    seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn seed_from_clock() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.as_nanos() as u64
}

/// A byte count with an optional binary suffix: `4096`, `4k`, `4KiB`, `1G`.
fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, suffix) = s.split_at(digits_end);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a byte count"))?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => {
            return Err(format!(
                "`{s}`: unknown suffix `{suffix}` (use K, M, G or T)"
            ))
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{s}` is too large"))
}

fn parse_block_size(s: &str) -> Result<BlockSize, String> {
    if s.eq_ignore_ascii_case("natural") {
        return Ok(BlockSize::Natural);
    }
    let bytes = parse_bytes(s)?;
    if !bytes.is_power_of_two() || !(512..=u64::from(MAX_BLOCK_BYTES)).contains(&bytes) {
        return Err(format!(
            "{bytes} bytes: must be a power of two from 512 to {MAX_BLOCK_BYTES}, or `natural`"
        ));
    }
    Ok(BlockSize::Bytes(bytes as u32))
}

fn parse_count(s: &str, max: usize) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number"))?;
    if n == 0 || n > max {
        return Err(format!("must be from 1 to {max}"));
    }
    Ok(n)
}

fn parse_depth(s: &str) -> Result<usize, String> {
    parse_count(s, MAX_DEPTH)
}

fn parse_threads(s: &str) -> Result<usize, String> {
    parse_count(s, MAX_THREADS)
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= MAX_DURATION_SECS) {
        return Err(format!(
            "must be more than 0 and at most {MAX_DURATION_SECS} seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_range(s: &str) -> Result<Range<u64>, String> {
    let (start, end) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: expected START..END"))?;
    let (start, end) = (parse_bytes(start)?, parse_bytes(end)?);
    if start >= end {
        return Err(format!("`{s}`: START must be below END"));
    }
    Ok(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_with_suffixes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("4k"), Ok(4096));
        assert_eq!(parse_bytes("4KiB"), Ok(4096));
        assert_eq!(parse_bytes("1G"), Ok(1 << 30));
        assert!(parse_bytes("4x").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }

    #[test]
    fn block_sizes() {
        assert_eq!(parse_block_size("natural"), Ok(BlockSize::Natural));
        assert_eq!(parse_block_size("4k"), Ok(BlockSize::Bytes(4096)));
        assert_eq!(parse_block_size("512"), Ok(BlockSize::Bytes(512)));
        assert!(parse_block_size("256").is_err());
        assert!(parse_block_size("3000").is_err());
        assert!(parse_block_size("1T").is_err());
    }

    #[test]
    fn counts_durations_ranges() {
        assert_eq!(parse_depth("65536"), Ok(65536));
        assert!(parse_depth("0").is_err() && parse_depth("65537").is_err());
        assert!(parse_threads("0").is_err() && parse_threads("1025").is_err());
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert!(
            parse_duration("0").is_err()
                && parse_duration("-1").is_err()
                && parse_duration("nan").is_err()
        );
        assert_eq!(parse_range("4k..1M"), Ok(4096..1 << 20));
        assert!(parse_range("10..10").is_err() && parse_range("10").is_err());
    }
}
