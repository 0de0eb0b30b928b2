//! The JSON shape of one `pora bench` combination (one line of `--json` output), and the facts of
//! a run that every combination shares.

use super::BenchResult;
use serde::Serialize;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

/// What every combination of one `pora bench` run shares.
#[derive(Clone, Debug)]
pub struct RunInfo {
    pub file: PathBuf,
    pub range: Range<u64>,
    /// Where the range came from (`--range`, data region, whole file).
    pub range_source: &'static str,
    /// The run's `--seed`; each combination derives its own from it.
    pub seed: u64,
    pub cold: bool,
    pub duration: Duration,
}

/// The keys of a `pora bench --json` line, in the order [`BenchRecord`] writes them: scripts
/// parse these names, so the unit test holds the struct to this list and the CLI tests look for
/// each key in the binary's output.
pub const JSON_KEYS: [&str; 22] = [
    "method",
    "blockSize",
    "depth",
    "threads",
    "seconds",
    "reads",
    "iops",
    "mbps",
    "latencyUs",
    "cpuPercent",
    "deviceReads",
    "readErrors",
    "firstError",
    "interrupted",
    "cold",
    "eviction",
    "file",
    "range",
    "seed",
    "runSeed",
    "describe",
    "notes",
];

/// One combination's result as printed by `pora bench --json`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BenchRecord<'a> {
    pub method: &'static str,
    pub block_size: Option<u64>,
    pub depth: usize,
    pub threads: usize,
    pub seconds: f64,
    pub reads: u64,
    pub iops: f64,
    pub mbps: Option<f64>,
    pub latency_us: LatencyUs,
    pub cpu_percent: Option<f64>,
    pub device_reads: Option<u64>,
    pub read_errors: u64,
    pub first_error: Option<&'a str>,
    pub interrupted: bool,
    pub cold: bool,
    /// How the `--cold` eviction before this combination went.
    pub eviction: Option<&'a str>,
    pub file: String,
    pub range: [u64; 2],
    /// The combination's offset seed.
    pub seed: u64,
    /// The run's `--seed`.
    pub run_seed: u64,
    pub describe: &'a str,
    pub notes: &'a [String],
}

/// What is said of a result beside its figures, one line each (the notes under `pora bench`'s
/// table): the backend, the `--cold` eviction before it, why a figure is unknown, read errors,
/// an interruption.
pub fn result_notes(r: &BenchResult, eviction: Option<&str>) -> Vec<String> {
    let mut notes = vec![r.describe.clone()];
    if let Some(e) = eviction {
        notes.push(format!("cold: {e}"));
    }
    notes.extend(r.notes.iter().cloned());
    if let Some(e) = &r.first_error {
        notes.push(format!("{} read errors, first: {e}", r.read_errors));
    }
    if r.interrupted {
        notes.push(format!(
            "interrupted: partial result over {:.2} s",
            r.seconds
        ));
    }
    notes
}

/// Latency percentiles, mean and maximum of the reads, microseconds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct LatencyUs {
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub mean: f64,
    pub max: f64,
}

impl<'a> BenchRecord<'a> {
    pub fn new(r: &'a BenchResult, run: &RunInfo, eviction: Option<&'a str>) -> BenchRecord<'a> {
        BenchRecord {
            method: r.method.name(),
            block_size: r.block_bytes,
            depth: r.depth,
            threads: r.threads,
            seconds: r.seconds,
            reads: r.reads,
            iops: r.iops(),
            mbps: r.mbps(),
            latency_us: LatencyUs {
                p50: r.latency_us(0.50),
                p99: r.latency_us(0.99),
                p999: r.latency_us(0.999),
                mean: r.latency_ns.mean() / 1e3,
                max: r.latency_ns.max() as f64 / 1e3,
            },
            cpu_percent: r.cpu_percent,
            device_reads: r.device_reads,
            read_errors: r.read_errors,
            first_error: r.first_error.as_deref(),
            interrupted: r.interrupted,
            cold: run.cold,
            eviction,
            file: run.file.display().to_string(),
            range: [run.range.start, run.range.end],
            seed: r.seed,
            run_seed: run.seed,
            describe: &r.describe,
            notes: &r.notes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{run_one, MeasureSpec, Target};
    use pora_io::{BlockSize, Method};
    use std::sync::atomic::AtomicBool;

    /// The `--json` line keeps the field names and order scripts already parse.
    #[test]
    fn json_line_has_the_documented_fields_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, vec![7u8; 1 << 16]).unwrap();
        let spec = MeasureSpec {
            targets: vec![Target {
                path: path.clone(),
                range: 4096..1 << 16,
            }],
            method: Method::Sim,
            block_size: BlockSize::Natural,
            depth: 4,
            threads: 1,
            duration: Duration::from_millis(50),
            seed: 9,
        };
        let r = run_one(&spec, &AtomicBool::new(false), &mut |_| {}).unwrap();
        let run = RunInfo {
            file: path,
            range: 4096..1 << 16,
            range_source: "--range",
            seed: 1,
            cold: false,
            duration: spec.duration,
        };
        let v = serde_json::to_value(BenchRecord::new(&r, &run, None)).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, JSON_KEYS);
        assert_eq!(v["method"], "sim");
        assert_eq!(v["range"], serde_json::json!([4096, 65536]));
        assert_eq!(
            (v["seed"].as_u64(), v["runSeed"].as_u64()),
            (Some(9), Some(1))
        );
        assert!(v["reads"].as_u64().unwrap() > 0);
        let latency: Vec<&str> = v["latencyUs"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(latency, ["p50", "p99", "p999", "mean", "max"]);
    }
}
