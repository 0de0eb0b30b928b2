//! One device's side of a session: what it reads with now and, for `auto`, the steering that
//! decides again before every slot and learns after it (docs/mining.md; [`crate::steer`] holds the
//! model).
//!
//! The facts a decision needs (how much of the shard the page cache holds) and the backends a
//! switch opens touch the shard's files, and on a stalled device that waits as long as its
//! slowest read (docs/spec/stalls.md). They run on this device's errand thread within a budget: a fact that
//! does not come in time is decided without (the model's own estimate), a switch that cannot
//! open in time is not made this slot. The budgets are the slot's own time: the slot's deadline
//! is the caller's, fixed before steering, so a slow decision shortens the mining, never
//! lengthens the slot, and no budget runs past the deadline.

use crate::defaults::available_cpus;
use crate::errand::Errands;
use crate::records::{Choice, SteeringRecord};
use crate::steer::model::ReadPath;
use crate::steer::{probe, Candidate, Observation, SlotOutcome, Steering};
use crate::{MineError, PoolIo, SlotReport, SlotRequest};
use pora_io::host::block_device::BlockDevice;
use pora_io::host::memory::CacheRoom;
use pora_io::{CacheReads, IoConfig};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Longest wait for the page cache's answer about a device's shards before a decision is made
/// without it. Sampled `cachestat` costs 0.1-5 ms on a healthy device.
const FACTS_WAIT: Duration = Duration::from_millis(250);
/// Longest wait for a switch's backends to open before the slot stays on the current ones.
const SWITCH_WAIT: Duration = Duration::from_millis(500);

/// One device pool's side of the session: what it reads with now, and for `auto` the
/// steering and the backends it switched away from.
pub(crate) struct PoolSide {
    pub choice: Choice,
    pub steering: Option<Steering>,
    pub parked: Vec<PoolIo>,
    pub paths: Vec<PathBuf>,
    pub bytes: u64,
    pub io: IoConfig,
    pub device: Option<BlockDevice>,
    /// Facts and switches that touch the files, off the caller's thread.
    pub errands: Errands,
}

/// Puts a reading side in the pool being steered and gives back the one it had (the slot's
/// lock is held: no other slot or switch runs).
pub(crate) type Swap<'a> = &'a mut dyn FnMut(PoolIo) -> Result<PoolIo, MineError>;

/// What a slot of the whole session asks of each device's decision.
pub(crate) struct SlotFacts<'a> {
    pub request: &'a SlotRequest,
    pub random_checks: u32,
    pub room: Option<&'a CacheRoom>,
    /// Bytes of every shard of the session: the page cache's room is shared by all.
    pub session_bytes: u64,
}

impl PoolSide {
    /// Decides this pool's method for the slot and switches the pool to it through `swap`
    /// (which puts a reading side in the pool and gives back the one it had).
    pub fn steer(&mut self, swap: Swap<'_>, facts: &SlotFacts<'_>) {
        if self.steering.is_none() {
            return;
        }
        let started = Instant::now();
        let request = facts.request;
        let facts_wait = FACTS_WAIT.min(request.deadline.saturating_duration_since(started));
        let cached = bounded_cached_fraction(&self.errands, &self.paths, self.bytes, facts_wait);
        let probed = self.probe(request.deadline, cached);
        let steering = self.steering.as_mut().expect("steered pool");
        let observation = observe(
            self.bytes,
            cached,
            facts.room,
            facts.session_bytes,
            (request.nonces.end - request.nonces.start) as f64
                * f64::from(facts.random_checks)
                * self.choice.shards.len() as f64,
            // The time the slot has left to mine in, as of this decision.
            request
                .deadline
                .saturating_duration_since(Instant::now())
                .as_secs_f64(),
        );
        let previous = steering.current();
        let mut decision = steering.decide(&observation);
        let decided = started.elapsed();
        let mut switched_from = None;
        if decision.candidate != previous {
            match self.switch(swap, decision.candidate, request.deadline) {
                Ok(io) => {
                    self.choice.io = io;
                    switched_from = Some(previous.method);
                }
                Err(refused) => {
                    // The candidate cannot open here (O_DIRECT refused by the file system, a
                    // ring the kernel will not make, a device too slow to open in time):
                    // stay.
                    let steering = self.steering.as_mut().expect("steered pool");
                    if refused.permanent {
                        steering.forget(decision.candidate.method);
                    }
                    decision.why = format!(
                        "{}; {} {} ({}), staying on {}",
                        decision.why,
                        decision.candidate.method,
                        if refused.permanent {
                            "cannot open here"
                        } else {
                            "did not open in time"
                        },
                        refused.why,
                        previous.method
                    );
                    decision.candidate = previous;
                }
            }
        }
        if let Some(probed) = probed {
            decision.why = format!("{}; {probed}", decision.why);
        }
        let steering = self.steering.as_ref().expect("steered pool");
        let (slots, switches, explorations) = steering.counts();
        let c = decision.candidate;
        (self.choice.method, self.choice.threads, self.choice.depth) =
            (c.method, c.threads, c.depth);
        self.choice.why = decision.why.clone();
        let timing = (
            decided.as_secs_f64() * 1e3,
            (started.elapsed() - decided).as_secs_f64() * 1e3,
        );
        let mut record = SteeringRecord::new(&decision, facts.room, timing);
        record.slot = slots - 1;
        record.cached_fraction_measured = cached.is_some();
        record.switched_from = switched_from;
        (record.switches, record.exploring_slots) = (switches, explorations);
        self.choice.steering = Some(record);
    }

    /// Before the first slot on a device nothing is known of (no profile, no slot measured):
    /// each read path's candidate probed for a few tens of ms ([`crate::steer::probe`]) on the
    /// errand thread, within the slot's own time before `deadline`, and its reads/s given to
    /// the steering. A buffered probe's hits are taken out (`cached`: the share of the files in
    /// the page cache); a shard held in memory is not probed (the cache decides there, not the
    /// device). Returns what was measured, for the record's `why`.
    fn probe(&mut self, deadline: Instant, cached: Option<f64>) -> Option<String> {
        let steering = self.steering.as_mut()?;
        let candidates = steering.to_probe();
        let cached = cached.unwrap_or(0.0).clamp(0.0, 1.0);
        if candidates.len() < 2 || cached >= crate::steer::MAPPED_FROM_FRACTION {
            return None;
        }
        let now = Instant::now();
        let each = probe::per_candidate(candidates.len(), now, deadline);
        if each.is_zero() {
            return None;
        }
        // Each candidate reads for `each` once open; opening (a ring, registered buffers) and
        // withdrawing the last reads come on top, bounded here.
        let bound = (each + probe::PROBE_OPEN_ALLOWANCE) * candidates.len() as u32;
        let until = now + bound;
        let (paths, io, list) = (self.paths.clone(), self.io.clone(), candidates.clone());
        let asked = self
            .errands
            .ask(bound + probe::PROBE_OPEN_ALLOWANCE, move || {
                probe::probe_candidates(&paths, &io, &list, each, until)
            });
        let Some(probed) = asked else {
            return Some(format!(
                "probe of {} candidates did not answer in time",
                candidates.len()
            ));
        };
        let steering = self.steering.as_mut()?;
        let mut said = Vec::with_capacity(probed.len());
        for p in &probed {
            match &p.reads_per_sec {
                Ok(rate) => {
                    let misses = match p.candidate.path {
                        ReadPath::Buffered => rate * (1.0 - cached),
                        _ => *rate,
                    };
                    steering.probed(p.candidate.path, misses);
                    said.push(format!("{} {:.0}k reads/s", p.candidate.method, rate / 1e3));
                }
                Err(why) => said.push(format!("{} not probed ({why})", p.candidate.method)),
            }
        }
        Some(format!(
            "probed in {:.0} ms: {}",
            now.elapsed().as_secs_f64() * 1e3,
            said.join(", ")
        ))
    }

    /// Switches the pool to `to`: a backend set kept from earlier, else one opened on the
    /// errand thread within [`SWITCH_WAIT`] and before `deadline`. Returns the new factory's
    /// description.
    fn switch(
        &mut self,
        swap: Swap<'_>,
        to: Candidate,
        deadline: Instant,
    ) -> Result<String, Refused> {
        let kept = self.parked.iter().position(|p| {
            p.method() == to.method && p.threads == to.threads && p.depth == to.depth
        });
        let io = match kept {
            Some(i) => self.parked.swap_remove(i),
            None => self.open_candidate(to, deadline)?,
        };
        let describe = io.factory().describe();
        match swap(io) {
            Ok(old) => {
                self.parked.push(old);
                Ok(describe)
            }
            Err(e) => Err(Refused {
                why: e.to_string(),
                permanent: false,
            }),
        }
    }

    fn open_candidate(&self, to: Candidate, deadline: Instant) -> Result<PoolIo, Refused> {
        let config = IoConfig {
            method: to.method,
            ..self.io.clone()
        };
        let paths = self.paths.clone();
        let wait = SWITCH_WAIT.min(deadline.saturating_duration_since(Instant::now()));
        let opened = self.errands.ask(wait, move || {
            let factory = pora_io::open(&paths, &config).map_err(|source| MineError::Open {
                method: to.method,
                source,
            })?;
            PoolIo::open(factory, to.threads, to.depth)
        });
        match opened {
            Some(Ok(io)) => Ok(io),
            Some(Err(e)) => Err(Refused {
                why: e.to_string(),
                permanent: true,
            }),
            None => Err(Refused {
                why: format!(
                    "opening its backends took over {} ms (the switch's budget, or the slot's time left), or the device is still busy with an earlier errand",
                    wait.as_millis()
                ),
                permanent: false,
            }),
        }
    }

    /// After a slot: what the pool's slot achieved, for the model, and the measured hit ratio
    /// into the record. `reads_before` is the device's read counter before the slot;
    /// `cache_reads` what the pool's backends classified during it (Windows);
    /// `workers_left_behind` the pool's workers the slot left stuck or mined without.
    pub fn learn(
        &mut self,
        report: &SlotReport,
        request: &SlotRequest,
        reads_before: Option<u64>,
        cache_reads: Option<CacheReads>,
        workers_left_behind: u64,
    ) {
        // A slot that had no time (its deadline passed before it started) says nothing about
        // the device.
        if self.steering.is_none() || request.slot_length().is_zero() {
            return;
        }
        let mine: Vec<_> = report
            .shards
            .iter()
            .filter(|s| self.choice.shards.contains(&s.shard))
            .collect();
        if mine.is_empty() {
            return;
        }
        let samples_from_files: u64 = mine
            .iter()
            .map(|s| s.samples_read.saturating_sub(s.samples_from_overlay))
            .sum();
        let mining_power = mine.iter().map(|s| s.mining_power).sum::<f64>() / mine.len() as f64;
        let slot_sec = request.slot_length().as_secs_f64();
        let device_reads = match (reads_before, self.device_reads()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        let outcome = SlotOutcome {
            samples_from_files,
            elapsed_sec: report.elapsed_sec,
            mining_power,
            read_limited: !report.interrupted
                && mining_power < 0.98
                && report.elapsed_sec >= 0.5 * slot_sec,
            device_reads,
            cache_hit_ratio: cache_reads.and_then(CacheReads::hit_ratio),
            cached_fraction_end: bounded_cached_fraction(
                &self.errands,
                &self.paths,
                self.bytes,
                FACTS_WAIT.min(end_budget(request.deadline)),
            ),
            cpus: available_cpus() as f64,
            workers_left_behind,
        };
        let Some(steering) = self.steering.as_mut() else {
            return;
        };
        let hit_ratio = steering.learn(&outcome);
        if let Some(record) = self.choice.steering.as_mut() {
            record.hit_ratio = hit_ratio;
        }
    }

    /// The completed-read counter of the pool's device, where the OS keeps one (sysfs: never
    /// the shard's file system).
    pub fn device_reads(&self) -> Option<u64> {
        self.device.as_ref()?.reads_completed().ok()
    }
}

/// Why a switch was not made.
struct Refused {
    why: String,
    /// The method cannot open here at all (forget it), rather than not in time.
    permanent: bool,
}

/// What `auto` decides from: the pool's bytes and cached share, the session's room in the page
/// cache, and what the slot asks. The one place an [`Observation`] is made.
pub(crate) fn observe(
    pool_bytes: u64,
    cached_fraction: Option<f64>,
    room: Option<&CacheRoom>,
    session_bytes: u64,
    samples_needed: f64,
    slot_sec: f64,
) -> Observation {
    Observation {
        pool_bytes,
        cached_fraction,
        cacheable_fraction: room.map(|r| r.room_bytes as f64 / session_bytes.max(1) as f64),
        samples_needed,
        slot_sec,
        cpus: available_cpus() as f64,
    }
}

/// Share of `bytes` (the files of `paths`) in the page cache now
/// ([`pora_io::host::page_cache::residency_now`]); `None` where the OS does not tell.
pub(crate) fn cached_fraction(paths: &[PathBuf], bytes: u64) -> Option<f64> {
    let cached = paths.iter().try_fold(0u64, |sum, p| {
        pora_io::host::page_cache::residency_now(p)
            .ok()
            .map(|r| sum + r.cached_bytes)
    })?;
    Some(cached as f64 / bytes.max(1) as f64)
}

/// [`cached_fraction`] asked on `errands` within `within`: `None` when the files do not answer
/// in time.
fn bounded_cached_fraction(
    errands: &Errands,
    paths: &[PathBuf],
    bytes: u64,
    within: Duration,
) -> Option<f64> {
    let paths = paths.to_vec();
    errands
        .ask(within, move || cached_fraction(&paths, bytes))
        .flatten()
}

/// What is left, after a slot with `deadline`, of the bound it ends by (the deadline plus
/// [`crate::slot::STRAGGLER_WAIT`] and [`crate::slot::VERIFY_WAIT`]): learning from the slot
/// waits no longer, so the caller still has its answer within that bound.
fn end_budget(deadline: Instant) -> Duration {
    (deadline + crate::slot::STRAGGLER_WAIT + crate::slot::VERIFY_WAIT)
        .saturating_duration_since(Instant::now())
}

/// The memory the page cache can grow into, where the OS tells.
pub(crate) fn cache_room() -> Option<CacheRoom> {
    pora_io::host::memory::cache_room_here().ok()
}

/// The workers a slot of a pool left stuck in reads (away at its end and not before it), and
/// those it mined without: away before it beyond what replacements make up, the pool having
/// at most `workers_cap` (twice its threads) workers in all.
pub(crate) fn workers_left_behind(
    stuck_before: usize,
    stuck_after: usize,
    workers_cap: usize,
) -> u64 {
    let threads = workers_cap / 2;
    (stuck_after.saturating_sub(stuck_before) + stuck_before.saturating_sub(threads)) as u64
}

#[cfg(test)]
mod tests {
    use super::workers_left_behind;

    /// Two threads, a cap of four workers: by hand.
    #[test]
    fn a_slot_is_short_when_workers_stick_in_it_or_too_many_are_away() {
        assert_eq!(workers_left_behind(0, 0, 4), 0, "a healthy slot");
        assert_eq!(workers_left_behind(0, 2, 4), 2, "two stuck in this slot");
        assert_eq!(
            workers_left_behind(2, 2, 4),
            0,
            "two away, two replacements mined"
        );
        assert_eq!(workers_left_behind(2, 0, 4), 0, "the stuck came back");
        assert_eq!(
            workers_left_behind(3, 3, 4),
            1,
            "three away: one thread had no worker"
        );
    }
}
