//! The first slot on a device nothing is known of is measured, not guessed: before `auto`
//! commits it, each read path's candidate reads random samples of the pool's files for a few
//! tens of milliseconds, and the reads/s it reaches is that path's device rate for the model
//! (what a slot would otherwise learn only after it was spent on the wrong path). The probe's
//! time is the slot's own: it runs until an instant the caller derives from the slot's deadline,
//! never on a clock of its own.
//!
//! Raw reads, not mining: the model's device rate is reads/s when every read misses the cache,
//! and the CPU per sample is a separate figure the slots learn. A probe of a cold shard reads so
//! few pages (a 30 ms probe at 500k reads/s caches 15k pages of 4 KiB) that it leaves the page
//! cache's share of any real shard where it was.

use super::Candidate;
use pora_io::{Backend, BackendFactory, IoConfig, SampleRead, SAMPLE_LEN};
use std::io::{Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Time one candidate reads for, at most.
pub(crate) const PROBE_PER_CANDIDATE: Duration = Duration::from_millis(30);
/// Share of the time left before the slot's deadline that all probes together may take: a short
/// slot (a test's, or one called late) is probed for less, never spent on probing.
pub(crate) const PROBE_SHARE_OF_SLOT: f64 = 0.05;
/// A slot with less time than this left is not probed.
pub(crate) const PROBE_MIN_SLOT_LEFT: Duration = Duration::from_secs(2);
/// Time allowed per candidate, on top of its reading time, to open its backends and withdraw
/// its last reads; the probe as a whole ends by then whatever the device does.
pub(crate) const PROBE_OPEN_ALLOWANCE: Duration = Duration::from_millis(60);
/// Longest wait for a probe's reads still in flight at its end to be withdrawn.
const PROBE_DRAIN: Duration = Duration::from_millis(50);

/// What one candidate's probe measured.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Probed {
    pub candidate: Candidate,
    /// Reads/s over the probe, or why it could not run (the method does not open here, a read
    /// failed).
    pub reads_per_sec: Result<f64, String>,
}

/// The time each of `candidates` may read for, from `now` to the slot's `deadline`:
/// [`PROBE_PER_CANDIDATE`], less when [`PROBE_SHARE_OF_SLOT`] of what is left is shorter; none
/// when less than [`PROBE_MIN_SLOT_LEFT`] is left (opening the candidates would cost the slot
/// too large a share).
pub(crate) fn per_candidate(candidates: usize, now: Instant, deadline: Instant) -> Duration {
    let left = deadline.saturating_duration_since(now);
    if left < PROBE_MIN_SLOT_LEFT {
        return Duration::ZERO;
    }
    let share = left.mul_f64(PROBE_SHARE_OF_SLOT) / candidates.max(1) as u32;
    share.min(PROBE_PER_CANDIDATE)
}

/// Probes every candidate in turn, each reading for `each` once its backends are ready,
/// opening it over `paths` with `io` (its method set per candidate); nothing reads past `until`
/// whatever the device does (the reads still in flight then are withdrawn within
/// `PROBE_DRAIN`, 50 ms).
pub(crate) fn probe_candidates(
    paths: &[PathBuf],
    io: &IoConfig,
    candidates: &[Candidate],
    each: Duration,
    until: Instant,
) -> Vec<Probed> {
    let lens: Vec<u64> = paths.iter().map(|p| file_len(p).unwrap_or(0)).collect();
    candidates
        .iter()
        .map(|&candidate| {
            let config = IoConfig {
                method: candidate.method,
                ..io.clone()
            };
            let reads_per_sec = pora_io::open(paths, &config)
                .map_err(|e| e.to_string())
                .and_then(|f| reads_per_sec(f.as_ref(), &lens, candidate, each, until));
            Probed {
                candidate,
                reads_per_sec,
            }
        })
        .collect()
}

/// Reads/s of `factory` with the candidate's threads x depth on random samples of files of
/// `lens` bytes, over `each` from the moment its backends are ready (opening a ring and
/// registering its buffers is not the device's time), never past `until`. The time the reads
/// still in flight take to be withdrawn afterwards is not counted either.
pub(crate) fn reads_per_sec(
    factory: &dyn BackendFactory,
    lens: &[u64],
    candidate: Candidate,
    each: Duration,
    until: Instant,
) -> Result<f64, String> {
    if lens.iter().all(|&l| l < SAMPLE_LEN as u64) {
        return Err("the files hold no sample".into());
    }
    let backends = (0..candidate.threads.max(1))
        .map(|_| factory.worker(candidate.depth.max(1)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let end = (started + each).min(until);
    if end <= started {
        return Err("no time left to read in".into());
    }
    let counts = std::thread::scope(|scope| {
        let handles: Vec<_> = backends
            .into_iter()
            .enumerate()
            .map(|(i, mut backend)| {
                scope.spawn(move || read_until(backend.as_mut(), lens, i as u64, end))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect::<Result<Vec<(u64, Instant)>, String>>()
    })?;
    let stopped = counts.iter().map(|&(_, at)| at).max().unwrap_or(end);
    let elapsed = stopped.saturating_duration_since(started).as_secs_f64();
    if elapsed <= 0.0 {
        return Err("no time to read in".into());
    }
    Ok(counts.iter().map(|&(n, _)| n).sum::<u64>() as f64 / elapsed)
}

/// One worker of a probe: keeps its backend full of random sample reads until `end`; returns the
/// reads completed and when it stopped counting them. A failed read fails the probe (the slot's
/// own error handling, not the probe's, decides what a failing disk costs).
fn read_until(
    backend: &mut dyn Backend,
    lens: &[u64],
    seed: u64,
    end: Instant,
) -> Result<(u64, Instant), String> {
    let mut offsets = Offsets::new(lens, seed);
    let mut free: Vec<u32> = (0..backend.capacity() as u32).collect();
    let mut out = Vec::with_capacity(backend.capacity());
    let mut done = 0u64;
    let result = loop {
        while let Some(tag) = free.pop() {
            let (file, offset) = offsets.next();
            if backend.push(SampleRead { tag, file, offset }).is_err() {
                free.push(tag);
                break;
            }
        }
        if let Err(e) = backend.submit() {
            break Err(e.to_string());
        }
        out.clear();
        if let Err(e) = backend.reap(&mut out, 1, Some(end)) {
            break Err(e.to_string());
        }
        for c in &out {
            if let Err(e) = &c.result {
                return Err(e.to_string());
            }
            free.push(c.tag);
        }
        done += out.len() as u64;
        let now = Instant::now();
        if now >= end {
            break Ok((done, now));
        }
    };
    backend.cancel_all(PROBE_DRAIN);
    result
}

/// Uniform random sample offsets over files of the given lengths (splitmix64: the probe needs
/// spread, not statistics).
struct Offsets<'a> {
    lens: &'a [u64],
    total: u64,
    state: u64,
}

impl<'a> Offsets<'a> {
    fn new(lens: &'a [u64], seed: u64) -> Offsets<'a> {
        let samples = |l: u64| l / SAMPLE_LEN as u64;
        Offsets {
            lens,
            total: lens.iter().map(|&l| samples(l)).sum(),
            state: 0x9E37_79B9_7F4A_7C15 ^ seed.wrapping_mul(0xBF58_476D_1CE4_E5B9),
        }
    }

    fn next(&mut self) -> (u32, u64) {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let mut pick = z % self.total.max(1);
        for (file, &len) in self.lens.iter().enumerate() {
            let samples = len / SAMPLE_LEN as u64;
            if pick < samples {
                return (file as u32, pick * SAMPLE_LEN as u64);
            }
            pick -= samples;
        }
        (0, 0)
    }
}

/// A file's length, or a block device's (whose metadata says 0).
fn file_len(path: &PathBuf) -> std::io::Result<u64> {
    std::fs::File::open(path)?.seek(SeekFrom::End(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steer::model::ReadPath;
    use crate::steer::{Observation, Steering};
    use pora_io::{Method, SimConfig};

    fn sim(paths: &[PathBuf], latency_us: u32) -> std::sync::Arc<dyn BackendFactory> {
        let config = IoConfig {
            method: Method::Sim,
            sim: SimConfig {
                seed: 5,
                latency_us: (latency_us, latency_us),
                ..SimConfig::default()
            },
            ..IoConfig::default()
        };
        pora_io::open(paths, &config).expect("the simulated disk opens")
    }

    fn candidate(path: ReadPath) -> Candidate {
        Candidate {
            method: Method::Sim,
            threads: 1,
            depth: 16,
            path,
        }
    }

    /// A cold shard far larger than its memory on a device nothing is known of. Guessed (both
    /// rates assumed alike), the first slot goes to the buffered path, which the cache helps a
    /// little; probed, it goes to whichever path the device serves faster: here the direct one,
    /// 10x faster on the simulated disk, as uring-direct is ahead of buffered uring on a fast
    /// NVMe-class device.
    #[test]
    fn the_first_slot_takes_the_faster_candidate_the_probe_measured() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shard.dat");
        std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
        let paths = vec![file];
        let lens = [1u64 << 20];
        let (buffered, direct) = (candidate(ReadPath::Buffered), candidate(ReadPath::Direct));
        let observation = Observation {
            pool_bytes: 4 << 30,
            cached_fraction: Some(0.0),
            cacheable_fraction: Some(0.25),
            samples_needed: (8u64 << 20) as f64,
            slot_sec: 12.0,
            cpus: 2.0,
        };
        let guessed = Steering::new(vec![buffered, direct], &[]).decide(&observation);
        assert_eq!(
            guessed.candidate.path,
            ReadPath::Buffered,
            "{}",
            guessed.why
        );

        let mut steering = Steering::new(vec![buffered, direct], &[]);
        assert_eq!(steering.to_probe(), vec![buffered, direct]);
        let until = Instant::now() + Duration::from_secs(5);
        let probe = |latency_us, c| {
            let each = PROBE_PER_CANDIDATE;
            reads_per_sec(sim(&paths, latency_us).as_ref(), &lens, c, each, until).unwrap()
        };
        let (slow, fast) = (probe(2000, buffered), probe(200, direct));
        // 16 in flight: 8k reads/s at 2 ms, 80k at 0.2 ms (less on a busy machine).
        assert!(fast > 3.0 * slow, "probe: {slow:.0} vs {fast:.0} reads/s");
        steering.probed(ReadPath::Buffered, slow);
        steering.probed(ReadPath::Direct, fast);
        assert!(steering.to_probe().is_empty(), "probed once");
        let d = steering.decide(&observation);
        assert_eq!(d.candidate.path, ReadPath::Direct, "{}", d.why);
        assert!(!d.exploring, "{}", d.why);
        assert!(d
            .forecasts
            .iter()
            .all(|f| f.rate_source == crate::steer::RateSource::Probed));
    }

    /// The probe's time is the slot's: 30 ms each on a 12 s slot, a share of what is left on
    /// a shorter one, nothing on a slot of under 2 s or past the deadline.
    #[test]
    fn the_probe_spends_a_small_share_of_the_slot_left() {
        let now = Instant::now();
        assert_eq!(
            per_candidate(2, now, now + Duration::from_secs(12)),
            PROBE_PER_CANDIDATE
        );
        let four = per_candidate(4, now, now + Duration::from_secs(2));
        assert_eq!(four, Duration::from_millis(25));
        assert!(per_candidate(2, now, now + Duration::from_millis(1999)).is_zero());
        assert!(per_candidate(2, now, now).is_zero());
    }

    /// A candidate that cannot open is reported, not fatal: each candidate gets its own answer,
    /// in order, and the error is the operating system's for the file named (ENOENT for a path
    /// that does not exist), not a generic failure; the probe returns at once, long before
    /// `until`.
    #[test]
    fn a_candidate_that_does_not_open_is_named() {
        let path = "/nonexistent/pora-probe/shard.dat";
        let missing = vec![PathBuf::from(path)];
        let called = Instant::now();
        let until = called + Duration::from_secs(5);
        let got = probe_candidates(
            &missing,
            &IoConfig::default(),
            &[candidate(ReadPath::Buffered), candidate(ReadPath::Direct)],
            PROBE_PER_CANDIDATE,
            until,
        );
        assert!(called.elapsed() < Duration::from_secs(1), "{got:?}");
        let paths: Vec<ReadPath> = got.iter().map(|p| p.candidate.path).collect();
        assert_eq!(paths, [ReadPath::Buffered, ReadPath::Direct]);
        // ENOENT's text where the OS's error numbers are POSIX's.
        let enoent = std::io::Error::from_raw_os_error(2).to_string();
        for probed in &got {
            let why = probed.reads_per_sec.as_ref().expect_err("no file to read");
            assert!(why.contains(path), "{why}");
            assert!(!cfg!(unix) || why.contains(&enoent), "{why}");
        }
    }
}
