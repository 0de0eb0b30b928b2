//! A raw random-read pass, fio-style, straight through `pora_io`: `threads` workers each keep
//! `depth` 32-byte reads at uniformly random sample offsets of the shards' data regions in
//! flight until the time is up, and record every read's latency. It gives `pora tune` the
//! device's ceiling (reads/s with no hashing) and the latency at the chosen reads in flight.
//! (The bench helper's richer loop may replace this one.)

use hdrhistogram::Histogram;
use pora_core::HEADER_SIZE;
use pora_io::{BackendFactory, Completion, Read};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Where samples may be read: per file, the number of 32-byte samples after the header.
#[derive(Clone, Debug)]
pub struct Region {
    pub samples_per_file: Vec<u64>,
}

impl Region {
    /// (file, offset) of global sample `i` of the region.
    fn locate(&self, mut i: u64) -> (u32, u64) {
        for (f, n) in self.samples_per_file.iter().enumerate() {
            if i < *n {
                return (f as u32, HEADER_SIZE + i * 32);
            }
            i -= n;
        }
        (0, HEADER_SIZE)
    }

    fn total(&self) -> u64 {
        self.samples_per_file.iter().sum()
    }
}

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

/// Runs the pass for `seconds` (or until `stop`).
pub fn run(
    factory: &dyn BackendFactory,
    region: &Region,
    threads: usize,
    depth: usize,
    seconds: f64,
    stop: &AtomicBool,
) -> anyhow::Result<RawResult> {
    anyhow::ensure!(region.total() > 0, "no samples to read");
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(seconds);
    let results: Vec<anyhow::Result<(u64, u64, Histogram<u64>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    worker(
                        factory,
                        region,
                        depth,
                        deadline,
                        stop,
                        0x5eed_0000 + t as u64,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("raw read worker panicked")))
            })
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let mut hist = Histogram::<u64>::new(3)?;
    let (mut reads, mut errors) = (0, 0);
    for r in results {
        let (n, e, h) = r?;
        reads += n;
        errors += e;
        hist.add(h)?;
    }
    let q = |p: f64| hist.value_at_quantile(p) as f64 / 1000.0;
    Ok(RawResult {
        method: factory.method().to_string(),
        threads,
        depth,
        reads,
        errors,
        seconds,
        iops: reads as f64 / seconds.max(1e-9),
        latency_us_p50: q(0.5),
        latency_us_p99: q(0.99),
        latency_us_p999: q(0.999),
        interrupted: stop.load(Ordering::Relaxed),
    })
}

/// One worker: keeps `depth` reads in flight; returns (reads, errors, latency ns histogram).
fn worker(
    factory: &dyn BackendFactory,
    region: &Region,
    depth: usize,
    deadline: Instant,
    stop: &AtomicBool,
    seed: u64,
) -> anyhow::Result<(u64, u64, Histogram<u64>)> {
    let mut backend = factory.worker(depth)?;
    let depth = backend.capacity().min(depth).max(1);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    let mut issued_at = vec![Instant::now(); depth];
    let mut free: Vec<u32> = (0..depth as u32).collect();
    let mut out: Vec<Completion> = Vec::with_capacity(depth);
    let total = region.total();
    let (mut reads, mut errors) = (0u64, 0u64);
    loop {
        let now = Instant::now();
        let running = now < deadline && !stop.load(Ordering::Relaxed);
        if running {
            while let Some(tag) = free.pop() {
                let (file, offset) = region.locate(rng.next_u64() % total);
                issued_at[tag as usize] = now;
                if backend.push(Read { tag, file, offset }).is_err() {
                    free.push(tag);
                    break;
                }
            }
            backend.submit()?;
        }
        if backend.in_flight() == 0 {
            break;
        }
        out.clear();
        // After the deadline, drain without a deadline so nothing is abandoned mid-flight.
        backend.reap(&mut out, 1, running.then_some(deadline))?;
        let done = Instant::now();
        for c in &out {
            if c.result.is_ok() {
                reads += 1;
                let ns = done.duration_since(issued_at[c.tag as usize]).as_nanos() as u64;
                hist.saturating_record(ns.max(1));
            } else {
                errors += 1;
            }
            free.push(c.tag);
        }
    }
    Ok((reads, errors, hist))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_locates_across_files() {
        let r = Region {
            samples_per_file: vec![10, 5],
        };
        assert_eq!(r.locate(0), (0, HEADER_SIZE));
        assert_eq!(r.locate(9), (0, HEADER_SIZE + 9 * 32));
        assert_eq!(r.locate(10), (1, HEADER_SIZE));
        assert_eq!(r.locate(14), (1, HEADER_SIZE + 4 * 32));
        assert_eq!(r.total(), 15);
    }
}
