//! Tune's raw passes: the device's ceiling (reads/s with no hashing) and the latency at the
//! chosen reads in flight, measured by the same random-read pass as `pora bench`
//! ([`crate::bench::run_on`]) over the shards' data regions, 32-byte samples at uniformly random
//! offsets. Only the summary tune reports is kept.

use crate::bench::{self, BenchResult, MeasureError, MeasureSpec, Target};
use pora_core::{ShardSet, HEADER_SIZE, SAMPLE_SIZE};
use pora_io::{BackendFactory, BlockSize};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Seed of every raw pass's offsets (each pass starts cold, so repeating offsets is harmless).
const RAW_SEED: u64 = 0x5eed_0000;

/// What one raw pass measured.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RawResult {
    pub method: String,
    pub threads: usize,
    pub depth: usize,
    pub reads: u64,
    pub errors: u64,
    pub seconds: f64,
    pub iops: f64,
    pub latency_us_p50: f64,
    pub latency_us_p99: f64,
    pub latency_us_p999: f64,
    pub interrupted: bool,
}

impl From<&BenchResult> for RawResult {
    fn from(r: &BenchResult) -> RawResult {
        RawResult {
            method: r.method.to_string(),
            threads: r.threads,
            depth: r.depth,
            reads: r.reads,
            errors: r.read_errors,
            seconds: r.seconds,
            iops: r.iops(),
            latency_us_p50: r.latency_us(0.5),
            latency_us_p99: r.latency_us(0.99),
            latency_us_p999: r.latency_us(0.999),
            interrupted: r.interrupted,
        }
    }
}

/// The data regions of the shards' files, in the order of `Miner::paths`.
pub fn data_regions(shards: &[ShardSet]) -> Vec<Target> {
    shards
        .iter()
        .flat_map(|s| &s.files)
        .map(|f| {
            let samples = f.header.data_len() / SAMPLE_SIZE;
            Target {
                path: f.path.clone(),
                range: HEADER_SIZE..HEADER_SIZE + samples * SAMPLE_SIZE,
            }
        })
        .collect()
}

/// One raw pass of `threads` x `depth` reads in flight for `seconds` (or until `stop`) on a
/// factory opened over the targets' files.
pub fn run(
    factory: &dyn BackendFactory,
    targets: &[Target],
    threads: usize,
    depth: usize,
    seconds: f64,
    stop: &AtomicBool,
) -> Result<RawResult, MeasureError> {
    let spec = MeasureSpec {
        targets: targets.to_vec(),
        method: factory.method(),
        block_size: BlockSize::Natural,
        depth,
        threads,
        duration: Duration::from_secs_f64(seconds),
        seed: RAW_SEED,
    };
    let result = bench::run_on(factory, &spec, stop, &mut |_| {})?;
    Ok(RawResult::from(&result))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pora_core::Address;
    use pora_io::{IoConfig, Method, SimConfig};

    #[test]
    fn raw_pass_on_the_sim_reads_the_data_region() {
        let dir = tempfile::tempdir().unwrap();
        let file = super::super::tests::shard_file(dir.path(), Address::default());
        let shards = vec![ShardSet::open(std::slice::from_ref(&file), None).unwrap()];
        let targets = data_regions(&shards);
        assert_eq!(targets.len(), 1);
        assert_eq!(targets[0].range.start, HEADER_SIZE);
        assert_eq!(
            targets[0].range.end - HEADER_SIZE,
            shards[0].files[0].header.data_len() / SAMPLE_SIZE * SAMPLE_SIZE
        );
        let config = IoConfig {
            method: Method::Sim,
            sim: SimConfig {
                seed: 1,
                latency_us: (200, 200),
                ..SimConfig::default()
            },
            ..IoConfig::default()
        };
        let factory = pora_io::open(&[file], &config).unwrap();
        let r = run(
            factory.as_ref(),
            &targets,
            1,
            4,
            0.2,
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!((r.method.as_str(), r.threads, r.depth), ("sim", 1, 4));
        assert!(r.reads > 0 && r.errors == 0, "{r:?}");
        assert!(
            r.latency_us_p50 >= 150.0,
            "p50 {} µs below the sim's 200",
            r.latency_us_p50
        );
    }
}
