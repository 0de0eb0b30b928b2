//! `pora bench FILE`: a random-read benchmark in the manner of fio and DiskSpd. For every
//! combination of `--method` x `--depth` x `--threads` it keeps every worker's queue full for
//! `--duration` seconds at uniformly random aligned offsets of the file (or `--range`) and reports
//! reads/s, MB/s, latency percentiles, CPU% and the reads the device really did.
//! The measurement and the loop over combinations are `pora_measure::bench` (the read pass
//! `pora tune` runs too); this file holds the flags, the outcome's exit status and the chart.

mod report;

use crate::signals;
use anyhow::{bail, Context};
use pora_io::{BlockSize, Method};
use pora_measure::bench::input::{
    parse_block_size, parse_depth, parse_duration, parse_range, parse_threads, seed_from_clock,
    target_range,
};
use pora_measure::bench::record::RunInfo;
use pora_measure::bench::sweep::Sweep;
use pora_measure::BenchResult;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

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
    let (range, range_source) = target_range(&args.file, args.range.as_ref())?;
    let seed = args.seed.unwrap_or_else(seed_from_clock);
    let stop = signals::install("bench");
    let sweep = Sweep {
        info: RunInfo {
            file: args.file.clone(),
            range,
            range_source,
            seed,
            cold: args.cold,
            duration: args.duration,
        },
        methods: args.methods,
        block_size: args.block_size,
        depths: args.depths,
        threads: args.threads,
    };
    let mut out = report::Reporter::new(sweep.info.clone(), args.json);
    let totals = sweep.run(stop, &mut out)?;
    out.finish();
    if signals::stopped() {
        eprintln!("pora bench: interrupted");
        return Ok(signals::interrupted());
    }
    if totals.results.is_empty() {
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

/// Reads/s per method and thread count vs reads in flight, with the best figure measured as the
/// ceiling line, then p50 / p99 / p99.9 latency per method and thread count.
fn write_plot(path: &Path, points: &[BenchResult]) -> anyhow::Result<()> {
    use crate::plot::{Chart, HLine, Series};
    use std::collections::BTreeMap;
    let mut lines: BTreeMap<String, Vec<&BenchResult>> = BTreeMap::new();
    for p in points {
        lines
            .entry(format!("{}, {} thread(s)", p.method, p.threads))
            .or_default()
            .push(p);
    }
    let series = |f: &dyn Fn(&BenchResult) -> f64, suffix: &str| -> Vec<Series> {
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
        series(&|p| p.iops(), ""),
        None,
    );
    throughput.y_label = "reads / s".into();
    let best = points.iter().map(|p| p.iops()).fold(0.0, f64::max);
    throughput.hlines.push(HLine {
        label: format!("best measured {}", crate::plot::si(best)),
        y: best,
    });
    let mut latency = Vec::new();
    for (q, name) in [(0.5, "p50"), (0.99, "p99"), (0.999, "p99.9")] {
        latency.extend(series(&move |p| p.latency_us(q), &format!(" {name}")));
    }
    let latency = Chart::latency(
        "pora bench: read latency vs reads in flight",
        "reads in flight (threads x depth)",
        latency,
    );
    crate::plot::write_svg(path, &[throughput, latency])
}
