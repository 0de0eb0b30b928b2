//! The one random-read pass of pora, in the manner of fio's random-read job: one method at one
//! depth and thread count. `pora bench` runs it per combination; `pora tune` runs it for the
//! device's raw ceiling and the latency at the chosen reads in flight ([`run_on`] with the
//! factory tune opened, e.g. on the simulated disk).
//!
//! Every worker thread owns a backend of `depth` slots and keeps it full: push until every slot
//! is used, submit, reap at least one completion, refill. Latency is submit-to-reap time taken
//! from one clock read per reap batch: every read pushed in a batch carries that batch's
//! timestamp, and every completion reaped in a batch is stamped with one `Instant::now()`, which
//! then also timestamps the refill. Nothing is allocated per read; each thread records into its
//! own log-linear histogram (hdrhistogram), merged at the end.

pub mod input;
pub mod record;
pub mod sweep;

use hdrhistogram::Histogram;
use pora_io::host::block_device::{block_device_of, BlockDevice};
use pora_io::host::cpu_time::process_cpu_time;
use pora_io::host::Unknown;
use pora_io::{
    Backend, BackendFactory, BlockSize, Capabilities, IoConfig, IoError, Method, SampleRead,
    SAMPLE_LEN,
};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Longest a worker waits in `reap` before looking at the stop flag again.
const STOP_POLL: Duration = Duration::from_millis(100);
/// How often the progress callback runs.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);
/// How often the calling thread checks whether the workers are done.
const JOIN_POLL: Duration = Duration::from_millis(10);
/// How long reads still in flight at the end may take to drain before the backend is dropped.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);
/// Highest latency the histogram resolves (longer ones are clamped): one hour in ns.
const LATENCY_MAX_NS: u64 = 3_600_000_000_000;
/// Significant digits of the histogram: buckets within 1%, like fio's log-linear bins.
const LATENCY_SIGFIG: u8 = 2;

/// One file and the byte range of it to read.
#[derive(Clone, Debug)]
pub struct Target {
    pub path: PathBuf,
    pub range: Range<u64>,
}

/// What one measurement runs.
#[derive(Clone, Debug)]
pub struct MeasureSpec {
    /// Files read, offsets uniform over the union of their ranges.
    pub targets: Vec<Target>,
    pub method: Method,
    pub block_size: BlockSize,
    /// Reads in flight per thread.
    pub depth: usize,
    pub threads: usize,
    pub duration: Duration,
    /// Seed of the offset stream; thread `i` uses the `i`-th xoshiro jump of it.
    pub seed: u64,
}

/// Progress of a running measurement, for a progress line.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub reads: u64,
    pub elapsed: Duration,
}

/// The outcome of one measurement.
#[derive(Clone, Debug)]
pub struct BenchResult {
    /// The concrete method (never `auto`).
    pub method: Method,
    /// The backend's own description (alignment, ring features).
    pub describe: String,
    /// Bytes moved per read; `None` when a direct method's block size is unknown.
    pub block_bytes: Option<u64>,
    pub depth: usize,
    pub threads: usize,
    /// Wall time from the first worker's start to the last worker's last reap.
    pub seconds: f64,
    /// Reads completed without error.
    pub reads: u64,
    pub read_errors: u64,
    pub first_error: Option<String>,
    /// Submit-to-reap latency of every successful read, nanoseconds.
    pub latency_ns: Histogram<u64>,
    /// User + system CPU of the whole process over the wall time, percent of one core.
    pub cpu_percent: Option<f64>,
    /// Reads the file's block device completed during the run (page-cache hits do not count).
    pub device_reads: Option<u64>,
    /// Why `device_reads` or `cpu_percent` is unknown.
    pub notes: Vec<String>,
    /// The stop flag ended the run early: a partial result.
    pub interrupted: bool,
    /// The offset seed used ([`MeasureSpec::seed`]).
    pub seed: u64,
}

impl BenchResult {
    /// The header of `pora bench`'s table, whose rows are [`BenchResult::table_row`].
    pub fn table_header() -> String {
        format!(
            "{:>3} {:<15} {:>6} {:>5} {:>7} {:>6} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6} {:>9} {:>6}",
            "#", "method", "block", "depth", "threads", "secs", "reads", "IOPS", "MB/s", "p50 µs", "p99 µs", "p99.9 µs", "CPU%",
            "devReads", "errors"
        )
    }

    /// This result as row `n` of `pora bench`'s table (`?` where a value is not known).
    pub fn table_row(&self, n: usize) -> String {
        let or_unknown = |v: Option<String>| v.unwrap_or_else(|| "?".into());
        format!(
            "{:>3} {:<15} {:>6} {:>5} {:>7} {:>6.2} {:>10} {:>9.0} {:>8} {:>8.1} {:>8.1} {:>8.1} {:>6} {:>9} {:>6}{}",
            n,
            self.method.name(),
            or_unknown(self.block_bytes.map(|b| b.to_string())),
            self.depth,
            self.threads,
            self.seconds,
            self.reads,
            self.iops(),
            or_unknown(self.mbps().map(|m| format!("{m:.1}"))),
            self.latency_us(0.50),
            self.latency_us(0.99),
            self.latency_us(0.999),
            or_unknown(self.cpu_percent.map(|c| format!("{c:.1}"))),
            or_unknown(self.device_reads.map(|d| d.to_string())),
            self.read_errors,
            if self.interrupted { "  (interrupted)" } else { "" }
        )
    }

    /// Successful reads per second.
    pub fn iops(&self) -> f64 {
        per_second(self.reads as f64, self.seconds)
    }

    /// Decimal megabytes per second (reads x block bytes / 10^6).
    pub fn mbps(&self) -> Option<f64> {
        self.block_bytes
            .map(|b| per_second(self.reads as f64 * b as f64, self.seconds) / 1e6)
    }

    /// Latency at quantile `q` (0..=1), microseconds; 0 when nothing completed.
    pub fn latency_us(&self, q: f64) -> f64 {
        self.latency_ns.value_at_quantile(q) as f64 / 1e3
    }
}

fn per_second(count: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count / seconds
    } else {
        0.0
    }
}

/// Why a measurement could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// The spec is unusable (no blocks in the range, zero threads, ...).
    #[error("{0}")]
    Spec(String),
    /// The method could not be opened for these files (unavailable, unsupported block size).
    #[error("{0}")]
    Open(IoError),
    /// A worker's backend failed (not a single read: those are counted in the result).
    #[error("worker failed: {0}")]
    Worker(IoError),
}

/// Runs one random-read measurement: `spec.threads` workers, each keeping `spec.depth` reads in
/// flight, for `spec.duration` or until `stop` is set (then the result says `interrupted`).
/// `progress` is called from the calling thread about five times a second.
pub fn run_one(
    spec: &MeasureSpec,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<BenchResult, MeasureError> {
    check_spec(spec)?;
    OffsetGrid::new(&spec.targets, offset_unit(spec.block_size))?;
    let paths: Vec<PathBuf> = spec.targets.iter().map(|t| t.path.clone()).collect();
    let config = IoConfig {
        method: spec.method,
        block_size: spec.block_size,
        ..Default::default()
    };
    let factory = pora_io::open(&paths, &config).map_err(MeasureError::Open)?;
    run_on(factory.as_ref(), spec, stop, progress)
}

/// [`run_one`] on a factory the caller opened over the targets' files, in their order, with
/// `spec.block_size` (`spec.method` is not looked at: the factory's method is measured).
pub fn run_on(
    factory: &dyn BackendFactory,
    spec: &MeasureSpec,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<BenchResult, MeasureError> {
    check_spec(spec)?;
    let grid = OffsetGrid::new(&spec.targets, offset_unit(spec.block_size))?;
    let paths: Vec<PathBuf> = spec.targets.iter().map(|t| t.path.clone()).collect();
    let backends = (0..spec.threads)
        .map(|_| factory.worker(spec.depth))
        .collect::<Result<Vec<_>, _>>()
        .map_err(MeasureError::Open)?;
    let mut notes = Vec::new();
    let devices = Devices::of(&paths, &mut notes);
    let block_bytes = block_bytes(
        factory.capabilities(),
        spec.block_size,
        &devices,
        &mut notes,
    );
    let run = run_workers(spec, &grid, backends, stop, progress);
    let workers = run.workers.map_err(MeasureError::Worker)?;
    Ok(summarize(
        spec,
        factory.method(),
        factory.describe(),
        block_bytes,
        workers,
        run.cpu,
        devices,
        notes,
        stop,
    ))
}

fn check_spec(spec: &MeasureSpec) -> Result<(), MeasureError> {
    if spec.threads == 0 || spec.depth == 0 || spec.targets.is_empty() {
        return Err(MeasureError::Spec(
            "threads, depth and targets must be non-zero".into(),
        ));
    }
    Ok(())
}

/// Offsets are multiples of this: the block size, or the sample size for natural reads.
fn offset_unit(block: BlockSize) -> u64 {
    match block {
        BlockSize::Natural => SAMPLE_LEN as u64,
        BlockSize::Bytes(b) => u64::from(b),
    }
}

/// The read unit of a run for MB/s: the block size, 32 B for natural buffered reads, the
/// device's logical block for natural direct reads.
fn block_bytes(
    capabilities: Capabilities,
    block: BlockSize,
    devices: &Devices,
    notes: &mut Vec<String>,
) -> Option<u64> {
    match block {
        BlockSize::Bytes(b) => Some(u64::from(b)),
        BlockSize::Natural if !capabilities.needs_alignment => Some(SAMPLE_LEN as u64),
        BlockSize::Natural => match devices.logical_block_size() {
            Ok(b) => Some(u64::from(b)),
            Err(e) => {
                notes.push(format!(
                    "MB/s unknown: logical block size of the device is unknown ({e})"
                ));
                None
            }
        },
    }
}

/// The aligned blocks of every target, as one index space.
#[derive(Clone, Debug)]
struct OffsetGrid {
    /// Per file: offset of the first aligned block and number of blocks.
    files: Vec<(u64, u64)>,
    unit: u64,
    total_blocks: u64,
}

impl OffsetGrid {
    fn new(targets: &[Target], unit: u64) -> Result<OffsetGrid, MeasureError> {
        let mut files = Vec::with_capacity(targets.len());
        for t in targets {
            let first = t.range.start.div_ceil(unit) * unit;
            let blocks = t.range.end.saturating_sub(first) / unit;
            if blocks == 0 {
                return Err(MeasureError::Spec(format!(
                    "{}: range {}..{} holds no whole {unit}-byte block",
                    t.path.display(),
                    t.range.start,
                    t.range.end
                )));
            }
            files.push((first, blocks));
        }
        let total_blocks = files.iter().map(|f| f.1).sum();
        Ok(OffsetGrid {
            files,
            unit,
            total_blocks,
        })
    }
}

/// A uniform stream of aligned offsets over an [`OffsetGrid`]; no allocation per offset.
struct OffsetStream<'a> {
    grid: &'a OffsetGrid,
    rng: Xoshiro256PlusPlus,
}

impl<'a> OffsetStream<'a> {
    /// Thread `index`'s stream: the seed's generator advanced by `index` jumps (2^128 draws each),
    /// so threads never share offsets.
    fn new(grid: &'a OffsetGrid, seed: u64, index: usize) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        for _ in 0..index {
            rng.jump();
        }
        OffsetStream { grid, rng }
    }

    #[inline]
    fn next(&mut self) -> (u32, u64) {
        // Multiply-shift maps 64 random bits onto 0..total without a division.
        let mut block =
            ((u128::from(self.rng.next_u64()) * u128::from(self.grid.total_blocks)) >> 64) as u64;
        for (file, &(first, blocks)) in self.grid.files.iter().enumerate() {
            if block < blocks {
                return (file as u32, first + block * self.grid.unit);
            }
            block -= blocks;
        }
        unreachable!("block index below total_blocks")
    }
}

/// What one worker thread measured.
struct WorkerResult {
    latency_ns: Histogram<u64>,
    reads: u64,
    read_errors: u64,
    first_error: Option<String>,
    started: Instant,
    ended: Instant,
}

/// A counter on its own cache line so threads publishing progress do not contend.
#[repr(align(128))]
#[derive(Default)]
struct PaddedCounter(AtomicU64);

struct WorkersRun {
    workers: Result<Vec<WorkerResult>, IoError>,
    /// CPU time and wall time spent from the start barrier to the last join.
    cpu: Result<(Duration, Duration), Unknown>,
}

fn run_workers(
    spec: &MeasureSpec,
    grid: &OffsetGrid,
    backends: Vec<Box<dyn Backend>>,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> WorkersRun {
    let counters: Vec<PaddedCounter> = (0..backends.len())
        .map(|_| PaddedCounter::default())
        .collect();
    let barrier = Barrier::new(backends.len() + 1);
    let halt = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let handles: Vec<_> = backends
            .into_iter()
            .enumerate()
            .map(|(i, mut backend)| {
                let (counter, barrier, halt) = (&counters[i].0, &barrier, &halt);
                let offsets = OffsetStream::new(grid, spec.seed, i);
                scope.spawn(move || {
                    barrier.wait();
                    let ctx = WorkerCtx {
                        duration: spec.duration,
                        stop,
                        halt,
                        counter,
                    };
                    let result = worker_loop(backend.as_mut(), offsets, &ctx);
                    if result.is_err() {
                        halt.store(true, Ordering::Relaxed);
                    }
                    result
                })
            })
            .collect();
        let cpu_before = process_cpu_time();
        let wall_start = Instant::now();
        barrier.wait();
        let mut last_progress = wall_start;
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(JOIN_POLL);
            if last_progress.elapsed() >= PROGRESS_EVERY {
                last_progress = Instant::now();
                let reads = counters.iter().map(|c| c.0.load(Ordering::Relaxed)).sum();
                progress(Progress {
                    reads,
                    elapsed: wall_start.elapsed(),
                });
            }
        }
        let workers = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect::<Result<Vec<_>, _>>();
        let cpu =
            cpu_before.and_then(|before| Ok((process_cpu_time()? - before, wall_start.elapsed())));
        WorkersRun { workers, cpu }
    })
}

/// What a worker shares with the others.
struct WorkerCtx<'a> {
    duration: Duration,
    /// Set by the caller (Ctrl-C).
    stop: &'a AtomicBool,
    /// Set when another worker failed.
    halt: &'a AtomicBool,
    /// This worker's successful reads so far, for the progress line.
    counter: &'a AtomicU64,
}

/// Keeps `backend` full until the deadline or a stop, recording each read's latency.
fn worker_loop(
    backend: &mut dyn Backend,
    mut offsets: OffsetStream,
    ctx: &WorkerCtx,
) -> Result<WorkerResult, IoError> {
    let depth = backend.capacity();
    let mut latency_ns = Histogram::new_with_bounds(1, LATENCY_MAX_NS, LATENCY_SIGFIG)
        .map_err(|e| IoError::Config(format!("latency histogram: {e}")))?;
    let mut free_tags: Vec<u32> = (0..depth as u32).rev().collect();
    let mut out = Vec::with_capacity(depth);
    let started = Instant::now();
    let mut pushed_at = vec![started; depth];
    let deadline = started + ctx.duration;
    let (mut reads, mut read_errors, mut first_error) = (0u64, 0u64, None);
    let mut now = started;
    loop {
        while let Some(tag) = free_tags.pop() {
            let (file, offset) = offsets.next();
            if backend.push(SampleRead { tag, file, offset }).is_err() {
                free_tags.push(tag);
                break;
            }
            pushed_at[tag as usize] = now;
        }
        backend.submit()?;
        out.clear();
        backend.reap(&mut out, 1, Some(deadline.min(now + STOP_POLL)))?;
        now = Instant::now();
        for c in out.drain(..) {
            let sent = *pushed_at.get(c.tag as usize).ok_or_else(|| {
                IoError::Config(format!("backend returned unknown tag {}", c.tag))
            })?;
            match c.result {
                Ok(_) => {
                    latency_ns
                        .saturating_record(now.saturating_duration_since(sent).as_nanos() as u64);
                    reads += 1;
                }
                Err(e) => {
                    read_errors += 1;
                    first_error.get_or_insert_with(|| e.to_string());
                }
            }
            free_tags.push(c.tag);
        }
        ctx.counter.store(reads, Ordering::Relaxed);
        if now >= deadline || ctx.stop.load(Ordering::Relaxed) || ctx.halt.load(Ordering::Relaxed) {
            break;
        }
    }
    drain(backend, &mut out);
    Ok(WorkerResult {
        latency_ns,
        reads,
        read_errors,
        first_error,
        started,
        ended: now,
    })
}

/// Lets reads still in flight finish (uncounted: they ended after the measured interval), so no
/// backend is dropped with the kernel still writing into its buffers.
fn drain(backend: &mut dyn Backend, out: &mut Vec<pora_io::Completion>) {
    let limit = Instant::now() + DRAIN_LIMIT;
    while backend.in_flight() > 0 && Instant::now() < limit {
        out.clear();
        if backend.reap(out, backend.in_flight(), Some(limit)).is_err() {
            break;
        }
    }
}

/// The block devices under the targets, for read counters.
struct Devices {
    devices: Result<Vec<BlockDevice>, Unknown>,
    reads_before: Option<u64>,
}

impl Devices {
    fn of(paths: &[PathBuf], notes: &mut Vec<String>) -> Devices {
        let devices = paths
            .iter()
            .map(|p| block_device_of(p))
            .collect::<Result<Vec<_>, _>>()
            .map(|mut d| {
                d.sort_by_key(|d| (d.major, d.minor));
                d.dedup_by_key(|d| (d.major, d.minor));
                d
            });
        let mut devs = Devices {
            devices,
            reads_before: None,
        };
        devs.reads_before = devs.reads_completed(notes);
        devs
    }

    fn reads_completed(&self, notes: &mut Vec<String>) -> Option<u64> {
        let sum = match &self.devices {
            Ok(devices) => devices
                .iter()
                .map(|d| d.reads_completed())
                .sum::<Result<u64, _>>(),
            Err(e) => Err(e.clone()),
        };
        sum.map_err(|e| notes.push(format!("device reads unknown: {e}")))
            .ok()
    }

    fn logical_block_size(&self) -> Result<u32, Unknown> {
        match &self.devices {
            Ok(d) => d
                .first()
                .ok_or_else(|| Unknown("no device".into()))?
                .logical_block_size(),
            Err(e) => Err(e.clone()),
        }
    }

    /// Reads completed since [`Devices::of`].
    fn reads_since(&self, notes: &mut Vec<String>) -> Option<u64> {
        let before = self.reads_before?;
        Some(self.reads_completed(notes)?.saturating_sub(before))
    }
}

#[allow(clippy::too_many_arguments)]
fn summarize(
    spec: &MeasureSpec,
    method: Method,
    describe: String,
    block_bytes: Option<u64>,
    workers: Vec<WorkerResult>,
    cpu: Result<(Duration, Duration), Unknown>,
    devices: Devices,
    mut notes: Vec<String>,
    stop: &AtomicBool,
) -> BenchResult {
    let device_reads = devices.reads_since(&mut notes);
    let cpu_percent = match cpu {
        Ok((cpu, wall)) if !wall.is_zero() => Some(100.0 * cpu.as_secs_f64() / wall.as_secs_f64()),
        Ok(_) => None,
        Err(e) => {
            notes.push(format!("CPU% unknown: {e}"));
            None
        }
    };
    let mut latency_ns = Histogram::new_with_bounds(1, LATENCY_MAX_NS, LATENCY_SIGFIG)
        .expect("constant bounds are valid");
    let started = workers.iter().map(|w| w.started).min();
    let ended = workers.iter().map(|w| w.ended).max();
    let (mut reads, mut read_errors, mut first_error) = (0, 0, None);
    for w in workers {
        latency_ns
            .add(&w.latency_ns)
            .expect("histograms with equal bounds merge");
        reads += w.reads;
        read_errors += w.read_errors;
        first_error = first_error.or(w.first_error);
    }
    let seconds = match (started, ended) {
        (Some(s), Some(e)) => e.saturating_duration_since(s).as_secs_f64(),
        _ => 0.0,
    };
    BenchResult {
        method,
        describe,
        block_bytes,
        depth: spec.depth,
        threads: spec.threads,
        seconds,
        reads,
        read_errors,
        first_error,
        latency_ns,
        cpu_percent,
        device_reads,
        notes,
        interrupted: stop.load(Ordering::Relaxed),
        seed: spec.seed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(ranges: &[(u64, u64)], unit: u64) -> Result<OffsetGrid, MeasureError> {
        let targets: Vec<_> = ranges
            .iter()
            .map(|r| Target {
                path: "f".into(),
                range: r.0..r.1,
            })
            .collect();
        OffsetGrid::new(&targets, unit)
    }

    #[test]
    fn offsets_are_aligned_and_inside_the_range() {
        let g = grid(&[(4096, 1_000_000)], 4096).expect("grid");
        let mut s = OffsetStream::new(&g, 7, 0);
        for _ in 0..10_000 {
            let (file, off) = s.next();
            assert_eq!(file, 0);
            assert_eq!(off % 4096, 0);
            assert!(off >= 4096 && off + 4096 <= 1_000_000, "{off}");
        }
    }

    #[test]
    fn unaligned_range_start_rounds_up_and_every_block_is_hit() {
        let g = grid(&[(100, (100 + 32 * 8))], 32).expect("grid");
        assert_eq!(g.files, vec![(128, 7)]);
        let mut s = OffsetStream::new(&g, 1, 0);
        let mut seen = [false; 7];
        for _ in 0..1000 {
            seen[((s.next().1 - 128) / 32) as usize] = true;
        }
        assert!(seen.iter().all(|&x| x));
    }

    #[test]
    fn several_files_share_one_uniform_space() {
        let g = grid(&[(0, 32 * 10), (0, 32 * 30)], 32).expect("grid");
        let mut s = OffsetStream::new(&g, 3, 0);
        let second = (0..40_000).filter(|_| s.next().0 == 1).count();
        // Expected 30_000 of 40_000; 5 sigma is about 430.
        assert!((29_000..31_000).contains(&second), "{second}");
    }

    #[test]
    fn threads_get_different_streams() {
        let g = grid(&[(0, 1 << 40)], 32).expect("grid");
        let a: Vec<_> = (0..8)
            .scan(OffsetStream::new(&g, 5, 0), |s, _| Some(s.next()))
            .collect();
        let b: Vec<_> = (0..8)
            .scan(OffsetStream::new(&g, 5, 1), |s, _| Some(s.next()))
            .collect();
        assert_ne!(a, b);
    }

    #[test]
    fn range_without_a_block_is_an_error() {
        assert!(matches!(
            grid(&[(1, 4096)], 4096),
            Err(MeasureError::Spec(_))
        ));
    }
}
