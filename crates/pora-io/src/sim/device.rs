//! The simulated device behind [`super::SimConfig`]: its factory, the asynchronous backend (due
//! times in a heap), the synchronous mode (an inline reader that sleeps) and the dead device.
//! Compiled only with the `sim` cargo feature; what it simulates is described in [`super`].

use super::SimConfig;
use crate::inline::{InlineBackend, InlineReader};
use crate::leak::note_leaked_backend;
use crate::{
    Backend, BackendFactory, CancelOutcome, Capabilities, Completion, FactoryResult, IoConfig,
    IoError, Method, QueueFull, ReadError, ReadErrorKind, Sample, SampleRead, SAMPLE_LEN,
    TEARDOWN_WAIT,
};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) fn open(paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
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
        let block_size = pora_core::Input::BlockSize;
        return bad(&format!(
            "reads exactly one sample; {block_size} needs a block method"
        ));
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
        reads_taken: Arc::new(AtomicU64::new(0)),
    }))
}

struct SimFactory {
    files: Arc<Vec<File>>,
    config: SimConfig,
    /// Reads the device has taken, over all workers (for `dead_after_reads`).
    reads_taken: Arc<AtomicU64>,
}

impl BackendFactory for SimFactory {
    fn method(&self) -> Method {
        Method::Sim
    }
    fn describe(&self) -> String {
        let c = &self.config;
        let dead = c
            .dead_after_reads
            .map_or(String::new(), |n| format!(", dead after {n} reads"));
        let mode = if c.synchronous { ", synchronous" } else { "" };
        format!(
            "sim: latency {}..{} us (slow tail {}..{} us at p={}), {} fault range(s), seed {}{dead}{mode}",
            c.latency_us.0,
            c.latency_us.1,
            c.slow_latency_us.0,
            c.slow_latency_us.1,
            c.slow_probability,
            c.faults.len(),
            c.seed
        )
    }
    /// The synchronous mode performs reads inline, like `pread`.
    fn capabilities(&self) -> Capabilities {
        let mut capabilities = Method::Sim.capabilities();
        capabilities.completes_inline = self.config.synchronous;
        capabilities
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let depth = depth.max(1);
        let worker_no = self.config.stats.bump(|s| &s.workers_created, 1);
        let rng = Xoshiro256PlusPlus::seed_from_u64(
            self.config.seed ^ worker_no.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        );
        let device = Device {
            files: self.files.clone(),
            config: self.config.clone(),
            rng,
            reads_taken: self.reads_taken.clone(),
        };
        if self.config.synchronous {
            return Ok(Box::new(InlineBackend::new(SyncReader { device }, depth)));
        }
        Ok(Box::new(SimBackend {
            device,
            slots: vec![InFlightRead::default(); depth],
            free: (0..depth as u32).rev().collect(),
            queued: Vec::with_capacity(depth),
            due: BinaryHeap::with_capacity(depth),
            unanswered: Vec::with_capacity(depth),
            push_seq: 0,
            cancel_gave_up: false,
        }))
    }
}

/// One worker's view of the simulated device: the files, the knobs, its random generator and
/// the device-wide count of reads taken.
struct Device {
    files: Arc<Vec<File>>,
    config: SimConfig,
    rng: Xoshiro256PlusPlus,
    reads_taken: Arc<AtomicU64>,
}

/// One read's storage, reused: its latency until submitted, then its result until reaped.
#[derive(Clone, Default)]
struct InFlightRead {
    read: Option<SampleRead>,
    latency: Duration,
    result: Option<Result<Sample, ReadError>>,
}

struct SimBackend {
    device: Device,
    slots: Vec<InFlightRead>,
    /// Unused slot numbers.
    free: Vec<u32>,
    /// Pushed, not yet submitted (slot numbers, push order).
    queued: Vec<u32>,
    /// Submitted: (due time, push sequence, slot number), earliest first.
    due: BinaryHeap<Reverse<(Instant, u64, u32)>>,
    /// Submitted to the dead device: never due.
    unanswered: Vec<u32>,
    push_seq: u64,
    /// A `cancel_all` ran out of time with reads still at the device.
    cancel_gave_up: bool,
}

impl Device {
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
    fn draw_fault(&mut self, read: &SampleRead) -> Option<ReadErrorKind> {
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

    /// Takes one read; false once the device is dead (the read will never be answered).
    fn take_read(&mut self) -> bool {
        let taken = self.reads_taken.fetch_add(1, Ordering::Relaxed);
        let alive = match self.config.dead_after_reads {
            Some(n) => taken < n,
            None => true,
        };
        if !alive {
            self.config.stats.bump(|s| &s.reads_unanswered, 1);
        }
        alive
    }

    /// The injected fault (counted) or the file error for `read`, if any; `None` means the read
    /// returns the file's bytes.
    fn planned_error(&mut self, read: &SampleRead) -> Option<ReadError> {
        let fault = self.draw_fault(read);
        let kind = match (fault, self.files.get(read.file as usize)) {
            (Some(kind), _) => {
                self.config.stats.bump(|s| &s.faults_injected, 1);
                kind
            }
            (None, None) => ReadErrorKind::OutOfBounds { file_len: 0 },
            (None, Some(_)) => return None,
        };
        Some(ReadError {
            file: read.file,
            offset: read.offset,
            kind,
        })
    }

    fn read_bytes(&self, read: &SampleRead) -> Result<Sample, ReadError> {
        crate::positional::read_sample(&self.files[read.file as usize], read.file, read.offset)
    }
}

/// The synchronous mode: each read blocks for its latency, then returns the bytes.
struct SyncReader {
    device: Device,
}

impl InlineReader for SyncReader {
    fn method(&self) -> Method {
        Method::Sim
    }
    fn read(&mut self, read: &SampleRead) -> Result<Sample, ReadError> {
        let latency = self.device.draw_latency();
        let planned = self.device.planned_error(read);
        self.device.config.stats.bump(|s| &s.reads_submitted, 1);
        if !self.device.take_read() {
            // A synchronous read on a hung device blocks its thread for good.
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        std::thread::sleep(latency);
        match planned {
            Some(e) => Err(e),
            None => self.device.read_bytes(read),
        }
    }
}

impl SimBackend {
    /// Takes off the heap the next submitted read whose latency has passed by `now`: its slot is
    /// free again, and what it held (the read and its result) goes to the caller.
    fn pop_due(&mut self, now: Instant) -> Option<InFlightRead> {
        let &Reverse((due, _, slot_no)) = self.due.peek()?;
        if due > now {
            return None;
        }
        self.due.pop();
        self.free.push(slot_no);
        Some(std::mem::take(&mut self.slots[slot_no as usize]))
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

    fn push(&mut self, read: SampleRead) -> Result<(), QueueFull> {
        let slot_no = self.free.pop().ok_or(QueueFull)?;
        let latency = self.device.draw_latency();
        // The bytes are read at submit time, like a real device.
        let result = self.device.planned_error(&read).map(Err);
        self.slots[slot_no as usize] = InFlightRead {
            read: Some(read),
            latency,
            result,
        };
        self.queued.push(slot_no);
        let stats = &self.device.config.stats;
        stats.bump(|s| &s.reads_pushed, 1);
        stats
            .inner
            .max_in_flight_seen
            .fetch_max(self.in_flight(), Ordering::Relaxed);
        Ok(())
    }

    fn submit(&mut self) -> Result<(), IoError> {
        let now = Instant::now();
        let submitted = self.queued.len() as u64;
        for slot_no in self.queued.drain(..) {
            if !self.device.take_read() {
                self.unanswered.push(slot_no);
                continue;
            }
            let slot = &mut self.slots[slot_no as usize];
            let read = slot.read.expect("a queued slot holds its read");
            if slot.result.is_none() {
                slot.result = Some(self.device.read_bytes(&read));
            }
            self.push_seq += 1;
            self.due
                .push(Reverse((now + slot.latency, self.push_seq, slot_no)));
        }
        self.device
            .config
            .stats
            .bump(|s| &s.reads_submitted, submitted);
        Ok(())
    }

    fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        min_complete: usize,
        deadline: Option<Instant>,
    ) -> Result<usize, IoError> {
        // Only submitted reads can complete; waiting for more would never end. Reads the dead
        // device took count: they are waited for until the deadline, as on a real device.
        let min_complete = min_complete.min(self.due.len() + self.unanswered.len());
        let mut appended = 0;
        loop {
            let now = Instant::now();
            while let Some(slot) = self.pop_due(now) {
                let read = slot.read.expect("a due slot holds its read");
                let result = slot.result.expect("a submitted slot holds its result");
                out.push(Completion {
                    tag: read.tag,
                    result,
                });
                appended += 1;
            }
            if appended >= min_complete || deadline.is_some_and(|d| now >= d) {
                break;
            }
            let next_due = self.due.peek().map(|&Reverse((due, _, _))| due);
            let wake = match (deadline, next_due) {
                (Some(d), Some(due)) => d.min(due),
                (Some(d), None) => d,
                (None, Some(due)) => due,
                // Only unanswered reads left and no deadline: wait, as for a hung disk.
                (None, None) => now + Duration::from_secs(3600),
            };
            std::thread::sleep(wake.saturating_duration_since(now));
        }
        self.device
            .config
            .stats
            .bump(|s| &s.completions_reaped, appended as u64);
        Ok(appended)
    }

    /// Queued reads never reached the device: their slots are freed and nothing is read.
    fn drop_queued(&mut self) -> usize {
        let dropped = self.queued.len();
        for slot_no in self.queued.drain(..) {
            self.slots[slot_no as usize] = InFlightRead::default();
            self.free.push(slot_no);
        }
        dropped
    }

    /// Queued reads are dropped; reads at the device cannot be cancelled, so they are waited
    /// for (until due, at most `within`) and discarded; the dead device's never come back.
    fn cancel_all(&mut self, within: Duration) -> CancelOutcome {
        let give_up = Instant::now() + within;
        let before = self.in_flight();
        self.drop_queued();
        loop {
            let now = Instant::now();
            // Reads at the device that are due are discarded.
            while self.pop_due(now).is_some() {}
            match self.due.peek() {
                Some(&Reverse((due, _, _))) if now < give_up => {
                    std::thread::sleep(due.min(give_up).saturating_duration_since(now));
                }
                _ => break,
            }
        }
        let still = self.in_flight();
        self.cancel_gave_up |= still > 0;
        CancelOutcome {
            discarded: before - still,
            still_in_flight: still,
        }
    }
}

impl Drop for SimBackend {
    /// Models a real backend's bounded teardown without waiting: reads the device would not
    /// answer within [`TEARDOWN_WAIT`] (never, on a dead device) make it a leaked backend.
    fn drop(&mut self) {
        let wait = if self.cancel_gave_up {
            Duration::ZERO
        } else {
            TEARDOWN_WAIT
        };
        let give_up = Instant::now() + wait;
        let late = self.due.iter().any(|&Reverse((due, _, _))| due > give_up);
        if late || !self.unanswered.is_empty() {
            note_leaked_backend();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SimFault, SimStats};
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
            push_n_every(b.as_mut(), 64, 100);
            assert_eq!(
                b.push(SampleRead {
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

    /// A simulated disk with `latency_us` and the counters the test reads.
    fn counted(latency_us: (u32, u32)) -> (SimConfig, SimStats) {
        let stats = SimStats::default();
        let sim = SimConfig {
            latency_us,
            stats: stats.clone(),
            ..Default::default()
        };
        (sim, stats)
    }

    /// Pushes reads tagged `0..n` of file 0, the one tagged `tag` at `tag * stride`.
    fn push_n_every(b: &mut dyn Backend, n: u32, stride: u64) {
        for tag in 0..n {
            b.push(SampleRead {
                tag,
                file: 0,
                offset: u64::from(tag) * stride,
            })
            .unwrap();
        }
    }

    fn push_n(b: &mut dyn Backend, n: u32) {
        push_n_every(b, n, 64);
    }

    /// Reads dropped by `drop_queued` never reach the device (the device counts what it is
    /// handed); the submitted ones still complete, and the dropped slots are reused.
    #[test]
    fn drop_queued_reads_never_reach_the_device() {
        let f = file_of(1 << 16);
        let (sim, stats) = counted((100, 500));
        let mut b = open_sim(&f, sim).worker(8).unwrap();
        push_n(b.as_mut(), 3);
        b.submit().unwrap();
        for tag in 10..15 {
            b.push(SampleRead {
                tag,
                file: 0,
                offset: 0,
            })
            .unwrap();
        }
        assert_eq!(b.drop_queued(), 5);
        assert_eq!(b.in_flight(), 3);
        b.submit().unwrap();
        let mut tags: Vec<u32> = drain(b.as_mut()).iter().map(|c| c.tag).collect();
        tags.sort_unstable();
        assert_eq!(tags, [0, 1, 2]);
        assert_eq!((stats.reads_pushed(), stats.reads_submitted()), (8, 3));
        push_n(b.as_mut(), 8);
        b.submit().unwrap();
        assert_eq!(drain(b.as_mut()).len(), 8);
    }

    /// A backend that keeps the trait's default `cancel_all`, over the simulated disk.
    struct DefaultCancel(Box<dyn Backend>);

    forward_backend!(DefaultCancel, 0, {
        fn method(&self) -> Method {
            self.0.method()
        }
    });

    /// The trait's default `cancel_all` drops queued reads instead of submitting them only to
    /// throw their completions away: the device is handed only the reads submitted before.
    #[test]
    fn the_default_cancel_all_never_submits_queued_reads() {
        let f = file_of(1 << 16);
        let (sim, stats) = counted((1000, 3000));
        let mut b = DefaultCancel(open_sim(&f, sim).worker(8).unwrap());
        push_n(&mut b, 3);
        b.submit().unwrap();
        push_n(&mut b, 2);
        let outcome = b.cancel_all(Duration::from_secs(5));
        assert_eq!(
            outcome,
            CancelOutcome {
                discarded: 5,
                still_in_flight: 0
            }
        );
        assert_eq!(stats.reads_submitted(), 3, "queued reads were submitted");
        let mut out = Vec::new();
        assert_eq!(b.reap(&mut out, 1, Some(Instant::now())).unwrap(), 0);
    }

    /// The factory says what its workers do: the synchronous mode completes reads inline.
    #[test]
    fn the_synchronous_mode_reports_inline_completion() {
        let f = file_of(4096);
        for synchronous in [false, true] {
            let sim = SimConfig {
                synchronous,
                ..Default::default()
            };
            let capabilities = open_sim(&f, sim).capabilities();
            assert_eq!(capabilities.completes_inline, synchronous);
            assert!(!capabilities.cancels_in_flight);
        }
        assert!(!Method::Sim.capabilities().completes_inline);
    }

    /// After `dead_after_reads` reads the device never answers: a reap waits until its deadline
    /// and gets only the earlier reads, `cancel_all` gives up, and dropping counts a leak.
    #[test]
    fn a_dead_device_never_answers_and_its_backend_is_leaked() {
        let f = file_of(1 << 16);
        let stats = SimStats::default();
        let sim = SimConfig {
            latency_us: (100, 200),
            dead_after_reads: Some(3),
            stats: stats.clone(),
            ..Default::default()
        };
        let factory = open_sim(&f, sim);
        let mut b = factory.worker(8).unwrap();
        push_n(b.as_mut(), 6);
        b.submit().unwrap();
        let mut out = Vec::new();
        let deadline = Instant::now() + Duration::from_millis(50);
        while Instant::now() < deadline {
            b.reap(&mut out, 6, Some(deadline)).unwrap();
        }
        assert_eq!(out.len(), 3, "only the reads before the device died");
        assert!(out.iter().all(|c| c.result.is_ok()));
        assert_eq!((b.in_flight(), stats.reads_unanswered()), (3, 3));
        let outcome = b.cancel_all(Duration::from_millis(10));
        assert_eq!(
            outcome,
            CancelOutcome {
                discarded: 0,
                still_in_flight: 3
            }
        );
        // A new worker of the same device is just as dead.
        let mut fresh = factory.worker(2).unwrap();
        push_n(fresh.as_mut(), 1);
        fresh.submit().unwrap();
        assert_eq!(stats.reads_unanswered(), 4);
        let leaked = crate::leaked_backends();
        drop(b);
        drop(fresh);
        assert!(crate::leaked_backends() >= leaked + 2);
    }

    /// `cancel_all` on a live device drops queued reads, waits for the ones at the device and
    /// leaves the backend idle (not leaked).
    #[test]
    fn cancel_all_on_a_live_device_waits_for_reads_at_the_device() {
        let f = file_of(1 << 16);
        let sim = SimConfig {
            latency_us: (1000, 3000),
            ..Default::default()
        };
        let mut b = open_sim(&f, sim).worker(8).unwrap();
        push_n(b.as_mut(), 5);
        b.submit().unwrap();
        push_n(b.as_mut(), 2);
        let outcome = b.cancel_all(Duration::from_secs(5));
        assert_eq!(
            outcome,
            CancelOutcome {
                discarded: 7,
                still_in_flight: 0
            }
        );
        let mut out = Vec::new();
        assert_eq!(b.reap(&mut out, 1, Some(Instant::now())).unwrap(), 0);
        push_n(b.as_mut(), 8);
        b.submit().unwrap();
        assert_eq!(drain(b.as_mut()).len(), 8);
    }

    /// Synchronous mode at depth 1,000 with 5 ms reads: one `submit` performs only what fits
    /// its budget, a reap whose deadline has passed performs none, and one with 30 ms left
    /// performs a handful, not the batch; every read returns the file's bytes.
    #[test]
    fn synchronous_mode_honours_deadlines_inside_a_batch() {
        let f = file_of(1 << 16);
        let stats = SimStats::default();
        let sim = SimConfig {
            latency_us: (5000, 5000),
            synchronous: true,
            stats: stats.clone(),
            ..Default::default()
        };
        let mut b = open_sim(&f, sim).worker(1000).unwrap();
        push_n(b.as_mut(), 1000);
        b.submit().unwrap();
        // Each read blocks >= 5 ms and the clock is read after each one: at most budget / 5 ms
        // + 1 reads, + 2 for one tick of the coarse clock.
        let per_budget = (crate::inline::SUBMIT_BUDGET.as_millis() / 5) as u64 + 3;
        assert!(
            stats.reads_submitted() <= per_budget,
            "{}",
            stats.reads_submitted()
        );
        let mut out = Vec::new();
        let performed = stats.reads_submitted();
        b.reap(
            &mut out,
            1000,
            Some(Instant::now() - Duration::from_millis(1)),
        )
        .unwrap();
        assert_eq!(
            stats.reads_submitted(),
            performed,
            "deadline passed: no read"
        );
        b.reap(
            &mut out,
            1000,
            Some(Instant::now() + Duration::from_millis(30)),
        )
        .unwrap();
        let after_deadline = stats.reads_submitted() - performed;
        assert!(after_deadline <= 30 / 5 + 3, "{after_deadline} reads");
        assert_eq!(out.len() as u64, stats.reads_submitted());
        for c in &out {
            let sample = c.result.as_ref().unwrap();
            assert_eq!(sample[0], ((c.tag as usize * 64) % 251) as u8);
        }
        assert!(b.cancel_all(Duration::ZERO).is_idle());
        assert_eq!(b.in_flight(), 0);
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
            b.push(SampleRead {
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
