//! Deterministic simulated disk (`--method sim`): seeded latency, reordering and injected faults
//! over the real files' bytes, for tests of everything above the backend.
//!
//! The bytes are real: each read is a positional read of the file opened (read-only) when the
//! factory was created, performed when the read is submitted. What is simulated is *when* the
//! completion is delivered: every read draws a latency (uniform over `latency_us`, or over
//! `slow_latency_us` with probability `slow_probability`) when it is pushed, and becomes due at
//! submit time + latency; [`Backend::reap`] delivers due completions in due-time order (ties in
//! push order), so completions are reordered against submission exactly as the draws say.
//! Faults ([`SimFault`]) turn reads touching chosen byte ranges into EIO or short reads, always
//! or with `fault_probability`.
//!
//! Every random choice comes from one xoshiro generator per worker backend, seeded from
//! `seed` and the worker's creation number, so a run is deterministic given the seed and the
//! order of pushes. Storage for `capacity()` reads is allocated when the worker is created;
//! nothing is allocated per read. [`SimStats`] is a shared handle of counters (including the
//! most reads any one worker ever had in flight) that tests keep a clone of.

use crate::{
    Backend, BackendFactory, Completion, IoConfig, IoError, Method, QueueFull, Read, ReadError,
    ReadErrorKind, Sample, SAMPLE_LEN,
};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the simulated disk behaves.
#[derive(Clone, Debug, Default)]
pub struct SimConfig {
    /// Seed of every random choice (latency, order, probabilistic faults).
    pub seed: u64,
    /// Each read completes after a latency drawn uniformly from this range, microseconds.
    pub latency_us: (u32, u32),
    /// Injected faults.
    pub faults: Vec<SimFault>,
    /// Probability (0..=1) that a read draws its latency from `slow_latency_us` instead: a slow
    /// tail like a disk's occasional long read. 0 disables it.
    pub slow_probability: f64,
    /// Latency range of the slow tail, microseconds.
    pub slow_latency_us: (u32, u32),
    /// Probability (0..=1) that a read touching a fault's range fails; `None` means always.
    pub fault_probability: Option<f64>,
    /// Counters shared by every worker of the factory; keep a clone to read them.
    pub stats: SimStats,
}

/// A fault injected for reads that touch `[offset_start, offset_end)` of file `file`.
#[derive(Clone, Debug)]
pub struct SimFault {
    pub file: u32,
    pub offset_start: u64,
    pub offset_end: u64,
    /// `true`: a short read; `false`: EIO.
    pub short_read: bool,
}

/// Counters of a simulated disk, shared by all its workers (cloning shares them).
#[derive(Clone, Debug, Default)]
pub struct SimStats {
    inner: Arc<StatsInner>,
}

#[derive(Debug, Default)]
struct StatsInner {
    reads_pushed: AtomicU64,
    reads_submitted: AtomicU64,
    completions_reaped: AtomicU64,
    faults_injected: AtomicU64,
    max_in_flight_seen: AtomicUsize,
    workers_created: AtomicU64,
}

impl SimStats {
    /// Reads accepted by `push` on any worker.
    pub fn reads_pushed(&self) -> u64 {
        self.inner.reads_pushed.load(Ordering::Relaxed)
    }
    /// Reads handed to the simulated device by `submit`.
    pub fn reads_submitted(&self) -> u64 {
        self.inner.reads_submitted.load(Ordering::Relaxed)
    }
    /// Completions delivered by `reap`.
    pub fn completions_reaped(&self) -> u64 {
        self.inner.completions_reaped.load(Ordering::Relaxed)
    }
    /// Reads that failed because of a [`SimFault`].
    pub fn faults_injected(&self) -> u64 {
        self.inner.faults_injected.load(Ordering::Relaxed)
    }
    /// The most reads (pushed and not yet reaped) any single worker ever had at once.
    pub fn max_in_flight_seen(&self) -> usize {
        self.inner.max_in_flight_seen.load(Ordering::Relaxed)
    }
    /// Worker backends created so far.
    pub fn workers_created(&self) -> u64 {
        self.inner.workers_created.load(Ordering::Relaxed)
    }
}

pub(crate) fn open(
    paths: &[PathBuf],
    config: &IoConfig,
) -> Result<Arc<dyn BackendFactory>, IoError> {
    let sim = &config.sim;
    let bad = |what: &str| Err(IoError::Config(format!("sim: {what}")));
    if sim.latency_us.0 > sim.latency_us.1 || sim.slow_latency_us.0 > sim.slow_latency_us.1 {
        return bad("latency range must be (low, high) with low <= high");
    }
    if !(0.0..=1.0).contains(&sim.slow_probability)
        || !(0.0..=1.0).contains(&sim.fault_probability.unwrap_or(1.0))
    {
        return bad("probabilities must be between 0 and 1");
    }
    if let Some(f) = sim
        .faults
        .iter()
        .find(|f| f.file as usize >= paths.len() || f.offset_start >= f.offset_end)
    {
        return bad(&format!("fault {f:?} names no file or an empty range"));
    }
    if config.block_size != crate::BlockSize::Natural {
        return bad("reads exactly one sample; --block-size needs a block method");
    }
    let files = paths
        .iter()
        .map(|p| {
            File::open(p).map_err(|source| IoError::Open {
                path: p.clone(),
                source,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(SimFactory {
        files: Arc::new(files),
        config: sim.clone(),
    }))
}

struct SimFactory {
    files: Arc<Vec<File>>,
    config: SimConfig,
}

impl BackendFactory for SimFactory {
    fn method(&self) -> Method {
        Method::Sim
    }
    fn describe(&self) -> String {
        let c = &self.config;
        format!(
            "sim: latency {}..{} us (slow tail {}..{} us at p={}), {} fault range(s), seed {}",
            c.latency_us.0,
            c.latency_us.1,
            c.slow_latency_us.0,
            c.slow_latency_us.1,
            c.slow_probability,
            c.faults.len(),
            c.seed
        )
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let depth = depth.max(1);
        let worker_no = self
            .config
            .stats
            .inner
            .workers_created
            .fetch_add(1, Ordering::Relaxed);
        let rng = Xoshiro256PlusPlus::seed_from_u64(
            self.config.seed ^ worker_no.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        );
        Ok(Box::new(SimBackend {
            files: self.files.clone(),
            config: self.config.clone(),
            rng,
            slots: vec![Slot::default(); depth],
            free: (0..depth as u32).rev().collect(),
            queued: Vec::with_capacity(depth),
            due: BinaryHeap::with_capacity(depth),
            push_seq: 0,
        }))
    }
}

/// One read's storage, reused: its latency until submitted, then its result until reaped.
#[derive(Clone, Default)]
struct Slot {
    read: Option<Read>,
    latency: Duration,
    result: Option<Result<Sample, ReadError>>,
}

struct SimBackend {
    files: Arc<Vec<File>>,
    config: SimConfig,
    rng: Xoshiro256PlusPlus,
    slots: Vec<Slot>,
    /// Unused slot numbers.
    free: Vec<u32>,
    /// Pushed, not yet submitted (slot numbers, push order).
    queued: Vec<u32>,
    /// Submitted: (due time, push sequence, slot number), earliest first.
    due: BinaryHeap<Reverse<(Instant, u64, u32)>>,
    push_seq: u64,
}

impl SimBackend {
    /// Uniform in `[0, 1)` from 53 random bits.
    fn unit(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn uniform_us(&mut self, (low, high): (u32, u32)) -> Duration {
        let span = u64::from(high - low) + 1;
        Duration::from_micros(u64::from(low) + self.rng.next_u64() % span)
    }

    fn draw_latency(&mut self) -> Duration {
        if self.config.slow_probability > 0.0 && self.unit() < self.config.slow_probability {
            self.uniform_us(self.config.slow_latency_us)
        } else {
            self.uniform_us(self.config.latency_us)
        }
    }

    /// The injected fault for `read`, drawn in push order (so it is deterministic).
    fn draw_fault(&mut self, read: &Read) -> Option<ReadErrorKind> {
        let end = read.offset.saturating_add(SAMPLE_LEN as u64);
        let fault =
            self.config.faults.iter().find(|f| {
                f.file == read.file && read.offset < f.offset_end && f.offset_start < end
            })?;
        let short = fault
            .short_read
            .then(|| fault.offset_start.saturating_sub(read.offset) as u32);
        if let Some(p) = self.config.fault_probability {
            if self.unit() >= p {
                return None;
            }
        }
        Some(match short {
            Some(got) => ReadErrorKind::ShortRead {
                got,
                wanted: SAMPLE_LEN as u32,
            },
            None => eio(),
        })
    }
}

#[cfg(unix)]
fn eio() -> ReadErrorKind {
    ReadErrorKind::Os(libc::EIO)
}

#[cfg(not(unix))]
fn eio() -> ReadErrorKind {
    ReadErrorKind::Injected
}

impl Backend for SimBackend {
    fn method(&self) -> Method {
        Method::Sim
    }

    fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    fn push(&mut self, read: Read) -> Result<(), QueueFull> {
        let slot_no = self.free.pop().ok_or(QueueFull)?;
        let latency = self.draw_latency();
        let fault = self.draw_fault(&read);
        let result = match (fault, self.files.get(read.file as usize)) {
            (Some(kind), _) => {
                self.config
                    .stats
                    .inner
                    .faults_injected
                    .fetch_add(1, Ordering::Relaxed);
                Some(Err(ReadError {
                    file: read.file,
                    offset: read.offset,
                    kind,
                }))
            }
            (None, None) => Some(Err(ReadError {
                file: read.file,
                offset: read.offset,
                kind: ReadErrorKind::OutOfBounds { file_len: 0 },
            })),
            // The bytes are read at submit time, like a real device.
            (None, Some(_)) => None,
        };
        self.slots[slot_no as usize] = Slot {
            read: Some(read),
            latency,
            result,
        };
        self.queued.push(slot_no);
        let stats = &self.config.stats.inner;
        stats.reads_pushed.fetch_add(1, Ordering::Relaxed);
        stats
            .max_in_flight_seen
            .fetch_max(self.in_flight(), Ordering::Relaxed);
        Ok(())
    }

    fn submit(&mut self) -> Result<(), IoError> {
        let now = Instant::now();
        let submitted = self.queued.len() as u64;
        for slot_no in self.queued.drain(..) {
            let slot = &mut self.slots[slot_no as usize];
            let read = slot.read.expect("a queued slot holds its read");
            if slot.result.is_none() {
                slot.result = Some(crate::positional::read_sample(
                    &self.files[read.file as usize],
                    read.file,
                    read.offset,
                ));
            }
            self.push_seq += 1;
            self.due
                .push(Reverse((now + slot.latency, self.push_seq, slot_no)));
        }
        self.config
            .stats
            .inner
            .reads_submitted
            .fetch_add(submitted, Ordering::Relaxed);
        Ok(())
    }

    fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        min_complete: usize,
        deadline: Option<Instant>,
    ) -> Result<usize, IoError> {
        // Only submitted reads can complete; waiting for more would never end.
        let min_complete = min_complete.min(self.due.len());
        let mut appended = 0;
        loop {
            let now = Instant::now();
            while let Some(&Reverse((due, _, slot_no))) = self.due.peek() {
                if due > now {
                    break;
                }
                self.due.pop();
                let slot = &mut self.slots[slot_no as usize];
                let read = slot.read.take().expect("a due slot holds its read");
                let result = slot
                    .result
                    .take()
                    .expect("a submitted slot holds its result");
                out.push(Completion {
                    tag: read.tag,
                    result,
                });
                self.free.push(slot_no);
                appended += 1;
            }
            if appended >= min_complete || deadline.is_some_and(|d| now >= d) {
                break;
            }
            let Some(&Reverse((next_due, _, _))) = self.due.peek() else {
                break;
            };
            let wake = deadline.map_or(next_due, |d| d.min(next_due));
            std::thread::sleep(wake.saturating_duration_since(now));
        }
        self.config
            .stats
            .inner
            .completions_reaped
            .fetch_add(appended as u64, Ordering::Relaxed);
        Ok(appended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(len: usize) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        f.write_all(&bytes).unwrap();
        f
    }

    fn open_sim(f: &tempfile::NamedTempFile, sim: SimConfig) -> Arc<dyn BackendFactory> {
        crate::open(
            &[f.path().to_path_buf()],
            &IoConfig {
                method: Method::Sim,
                sim,
                ..Default::default()
            },
        )
        .unwrap()
    }

    fn drain(b: &mut dyn Backend) -> Vec<Completion> {
        let mut out = Vec::with_capacity(b.capacity());
        while b.in_flight() > 0 {
            b.reap(&mut out, 1, None).unwrap();
        }
        out
    }

    #[test]
    fn delivers_real_bytes_reordered_by_seeded_latency_and_deterministically() {
        let f = file_of(1 << 16);
        let order = |seed| {
            let sim = SimConfig {
                seed,
                latency_us: (100, 3000),
                ..Default::default()
            };
            let mut b = open_sim(&f, sim).worker(64).unwrap();
            for tag in 0..64u32 {
                b.push(Read {
                    tag,
                    file: 0,
                    offset: u64::from(tag) * 100,
                })
                .unwrap();
            }
            assert_eq!(
                b.push(Read {
                    tag: 99,
                    file: 0,
                    offset: 0
                }),
                Err(QueueFull)
            );
            b.submit().unwrap();
            let done = drain(b.as_mut());
            for c in &done {
                let sample = c.result.as_ref().unwrap();
                assert_eq!(sample[0], ((c.tag as usize * 100) % 251) as u8);
            }
            done.iter().map(|c| c.tag).collect::<Vec<_>>()
        };
        let a = order(7);
        assert_ne!(
            a,
            (0..64).collect::<Vec<_>>(),
            "completions must be reordered"
        );
        assert_eq!(a, order(7), "same seed, same pushes: same order");
        assert_ne!(a, order(8));
    }

    #[test]
    fn faults_stats_and_deadline() {
        let f = file_of(1 << 16);
        let stats = SimStats::default();
        let sim = SimConfig {
            latency_us: (50_000, 50_000),
            faults: vec![
                SimFault {
                    file: 0,
                    offset_start: 1000,
                    offset_end: 1001,
                    short_read: false,
                },
                SimFault {
                    file: 0,
                    offset_start: 2010,
                    offset_end: 3000,
                    short_read: true,
                },
            ],
            stats: stats.clone(),
            ..Default::default()
        };
        let mut b = open_sim(&f, sim).worker(4).unwrap();
        for (tag, offset) in [(0, 990), (1, 1001), (2, 2000), (3, 5000)] {
            b.push(Read {
                tag,
                file: 0,
                offset,
            })
            .unwrap();
        }
        b.submit().unwrap();
        let mut out = Vec::new();
        let t = Instant::now();
        assert_eq!(
            b.reap(&mut out, 1, Some(t + Duration::from_millis(5)))
                .unwrap(),
            0
        );
        assert!(
            t.elapsed() < Duration::from_millis(40),
            "reap must return at its deadline"
        );
        let mut done = drain(b.as_mut());
        done.sort_by_key(|c| c.tag);
        let kinds: Vec<_> = done
            .iter()
            .map(|c| c.result.as_ref().err().map(|e| e.kind))
            .collect();
        assert_eq!(kinds[0], Some(eio()));
        assert_eq!(kinds[1], None);
        assert_eq!(
            kinds[2],
            Some(ReadErrorKind::ShortRead {
                got: 10,
                wanted: 32
            })
        );
        assert_eq!(kinds[3], None);
        assert_eq!(
            (
                stats.faults_injected(),
                stats.max_in_flight_seen(),
                stats.completions_reaped()
            ),
            (2, 4, 4)
        );
    }
}
