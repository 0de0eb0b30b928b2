//! `auto` between slots (docs/mining.md): before every slot, for every device pool, choose the read
//! path that earns the most mining power — now and once the page cache has settled — from what
//! is observed (the shard's share in the page cache, the memory it can grow into) and what
//! earlier slots measured (the device's reads/s per path, the CPU per sample); after the slot,
//! learn from what it achieved. Pure logic (this file and `model.rs`): the session gathers the
//! facts and switches. `probe.rs` is the part that reads the device: it opens a path the model
//! has no rate for and reads it for a few tens of ms on threads of its own, in the slot's time.
//!
//! A decision never changes a slot's results, only its speed: the same nonces are tried and
//! verified whatever path reads them.

// The model and the probe serve the session only; what the doors read of a decision is
// re-exported below (`Candidate`, `Decision`, `CandidateForecast`, `RateSource`, `Outlook`).
pub(crate) mod model;
pub(crate) mod probe;

pub use model::{cold_misses, Outlook};

use model::{outlook, PathRates, ReadPath, SlotShape};
use pora_io::Method;
use serde::Serialize;

/// Slots ahead the choice is scored over: an hour of 12 s slots. A miner runs for months, so
/// what a path earns once the cache has filled outweighs a slot or two it loses while filling;
/// six slots (the first design) let a slow device, whose cache takes a dozen slots to fill,
/// keep a shard that fits in memory on direct reads for good (seen on a throttled disk). The
/// memory is observed again before every slot, so a long horizon does not make `auto` slow to
/// follow a change of memory: the next decision scores from the new facts.
pub(crate) const HORIZON_SLOTS: usize = 300;
/// Share of the best's score the path in place may trail by before a switch: switches on noise
/// would cost more than they bring. Relative, so that it means the same on a slow device
/// (every score near 0.1) as on a fast one.
pub(crate) const SWITCH_MARGIN: f64 = 0.03;
/// A path whose device rate is only assumed is tried for one slot when the model's forecast for
/// it comes within this share of the best: then the model cannot tell them apart.
pub(crate) const EXPLORE_WITHIN: f64 = 0.75;
/// Slots between two explorations of the same path.
pub(crate) const EXPLORE_EVERY_SLOTS: u64 = 64;
/// Slots after which a path's measured rate is old news (an hour): a device drifts (throttled,
/// shared, a neighbour's load), and two paths measured at different times compare the device's
/// moods as much as the paths. A path measured longer ago than this, whatever its forecast, is
/// explored for one slot where the best is short of full power: at most one slot an hour.
pub(crate) const MEASURED_STALE_AFTER_SLOTS: u64 = 300;
/// Cached fraction from which a memory map is a candidate: misses are synchronous faults, so a
/// map is only worth it for a shard held in memory.
pub(crate) const MAPPED_FROM_FRACTION: f64 = 0.98;
/// Memory the page cache can grow into, over the shard's size, from which a memory map is a
/// candidate: with less, another process taking memory mid-slot turns a map's reads into
/// synchronous faults, while buffered reads keep their queue depth.
pub(crate) const MAPPED_HEADROOM: f64 = 1.5;
/// Device reads/s assumed before anything is measured or profiled (only the ratio between
/// paths matters for the choice; records say the figure is assumed).
pub(crate) const ASSUMED_DEVICE_READS_PER_SEC: f64 = 50_000.0;
/// A synchronous page fault's service time assumed for a map's misses.
const ASSUMED_FAULT_SEC: f64 = 250e-6;

/// One method `auto` may take for a pool, with its knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub method: Method,
    pub threads: usize,
    pub depth: usize,
    pub path: ReadPath,
}

/// Where a path's device rate comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RateSource {
    /// Nothing measured yet: [`ASSUMED_DEVICE_READS_PER_SEC`], or the rate of another path of
    /// the same device once that one is measured.
    Assumed,
    /// The tune profile's cold figure.
    Profile,
    /// Measured by a short probe before the session's first slot ([`probe`]).
    Probed,
    /// Measured by this session's slots.
    Measured,
}

#[derive(Clone, Copy, Debug)]
struct PathState {
    rates: PathRates,
    source: RateSource,
    explored_at_slot: Option<u64>,
    /// The slot (counted from 1) whose outcome last measured the rate.
    measured_at_slot: Option<u64>,
}

/// What the session sees before a slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Observation {
    /// Bytes of the pool's shards.
    pub pool_bytes: u64,
    /// Share of them in the page cache now; `None` where the OS does not tell.
    pub cached_fraction: Option<f64>,
    /// Share of them the page cache can hold; `None` where the memory is not known.
    pub cacheable_fraction: Option<f64>,
    pub samples_needed: f64,
    pub slot_sec: f64,
    pub cpus: f64,
}

/// One candidate's forecast, as records show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateForecast {
    pub method: Method,
    pub predicted_mining_power: f64,
    pub predicted_steady_mining_power: f64,
    pub device_reads_per_sec: f64,
    pub rate_source: RateSource,
}

/// The choice for one slot.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub candidate: Candidate,
    /// Tried because the model could not tell the paths apart.
    pub exploring: bool,
    pub cached_fraction: f64,
    pub cacheable_fraction: Option<f64>,
    pub predicted: Outlook,
    pub forecasts: Vec<CandidateForecast>,
    /// One phrase for the user.
    pub why: String,
}

/// What one slot achieved, for [`Steering::learn`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SlotOutcome {
    /// Samples read from the files (not from an overlay).
    pub samples_from_files: u64,
    pub elapsed_sec: f64,
    pub mining_power: f64,
    /// The slot ran to its deadline with nonces left: the reads were the limit.
    pub read_limited: bool,
    /// Reads the pool's device completed during the slot, where the OS counts them.
    pub device_reads: Option<u64>,
    /// The share of the slot's reads its backends saw served by the page cache, where they can
    /// tell (Windows: `pora_io::CacheReads`).
    pub cache_hit_ratio: Option<f64>,
    /// The cached fraction at the end of the slot, where the OS tells.
    pub cached_fraction_end: Option<f64>,
    pub cpus: f64,
    /// Workers the slot left behind, stuck in reads the device has not given back (a stalled
    /// file system): the slot mined with fewer workers than its threads, so its rate measures
    /// the stall, not the path, and it teaches no rate.
    pub workers_left_behind: u64,
}

/// One pool's steering: its candidates, what is known of each path, what it runs now.
#[derive(Clone, Debug)]
pub(crate) struct Steering {
    candidates: Vec<Candidate>,
    paths: [PathState; 3],
    current: usize,
    /// The model's own choice, which the margin protects: after an exploring slot it is the
    /// path before it, so a path tried for one slot must win on its measured rate, not by
    /// being in place.
    incumbent: usize,
    slots: u64,
    switches: u64,
    explorations: u64,
    /// The model's own idea of the cached fraction, for OSes that do not tell.
    believed_cached_fraction: f64,
    cached_fraction_start: f64,
}

fn path_index(path: ReadPath) -> usize {
    match path {
        ReadPath::Buffered => 0,
        ReadPath::Direct => 1,
        ReadPath::Mapped => 2,
    }
}

fn default_rates(path: ReadPath) -> PathRates {
    PathRates {
        device_reads_per_sec: ASSUMED_DEVICE_READS_PER_SEC,
        cpu_sec_per_sample: match path {
            ReadPath::Buffered => 1.4e-6,
            ReadPath::Direct => 1.5e-6,
            ReadPath::Mapped => 0.35e-6,
        },
    }
}

impl Steering {
    /// Steering over `candidates` (at least one; the first of them is the start), with
    /// `profiled`, a tune profile's cold samples/s per read path (its method's first).
    pub(crate) fn new(candidates: Vec<Candidate>, profiled: &[(ReadPath, f64)]) -> Steering {
        let state = |path| PathState {
            rates: default_rates(path),
            source: RateSource::Assumed,
            explored_at_slot: None,
            measured_at_slot: None,
        };
        let mut paths = [
            state(ReadPath::Buffered),
            state(ReadPath::Direct),
            state(ReadPath::Mapped),
        ];
        for &(path, rate) in profiled.iter().filter(|(_, r)| *r > 0.0) {
            let i = path_index(path);
            if paths[i].source == RateSource::Profile {
                continue;
            }
            for p in paths.iter_mut().filter(|p| p.source == RateSource::Assumed) {
                p.rates.device_reads_per_sec = rate;
            }
            paths[i].source = RateSource::Profile;
        }
        Steering {
            candidates,
            paths,
            current: 0,
            incumbent: 0,
            slots: 0,
            switches: 0,
            explorations: 0,
            believed_cached_fraction: 0.0,
            cached_fraction_start: 0.0,
        }
    }

    pub(crate) fn current(&self) -> Candidate {
        self.candidates[self.current]
    }

    pub(crate) fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// Slots decided, switches made and exploring slots so far.
    pub(crate) fn counts(&self) -> (u64, u64, u64) {
        (self.slots, self.switches, self.explorations)
    }

    /// The candidates to probe before this decision: on a device nothing is known of (no path's
    /// rate profiled, probed or measured), one per read path the device's rate decides (not a
    /// map, whose rate follows from the cache). Empty once anything is known.
    pub(crate) fn to_probe(&self) -> Vec<Candidate> {
        if self.paths.iter().any(|p| p.source != RateSource::Assumed) {
            return Vec::new();
        }
        self.candidates
            .iter()
            .copied()
            .filter(|c| c.path != ReadPath::Mapped)
            .collect()
    }

    /// Takes a probe's reads/s as `path`'s device rate (the first slot's on it replaces it), and
    /// as every still-assumed path's until that one is measured.
    pub(crate) fn probed(&mut self, path: ReadPath, reads_per_sec: f64) {
        // A probe that read nothing (or NaN) says nothing about the device.
        if reads_per_sec.is_nan() || reads_per_sec <= 0.0 {
            return;
        }
        let i = path_index(path);
        let state = &mut self.paths[i];
        state.rates.device_reads_per_sec = reads_per_sec;
        state.source = RateSource::Probed;
        state.measured_at_slot = Some(self.slots);
        for (j, other) in self.paths.iter_mut().enumerate() {
            if j != i && other.source == RateSource::Assumed {
                other.rates.device_reads_per_sec = reads_per_sec;
            }
        }
    }

    fn rates_for(&self, c: &Candidate) -> (PathRates, RateSource) {
        let state = &self.paths[path_index(c.path)];
        if c.path == ReadPath::Mapped && state.source == RateSource::Assumed {
            // A map's misses are one synchronous fault per thread at a time.
            let buffered = self.paths[path_index(ReadPath::Buffered)].rates;
            let faults = c.threads as f64 / ASSUMED_FAULT_SEC;
            let rates = PathRates {
                device_reads_per_sec: buffered.device_reads_per_sec.min(faults),
                ..state.rates
            };
            return (rates, RateSource::Assumed);
        }
        (state.rates, state.source)
    }

    /// Drops the candidate `method` (it cannot open here); the current one stays current (the
    /// first left when it was the one dropped). The last candidate is never dropped.
    pub(crate) fn forget(&mut self, method: Method) {
        if self.candidates.len() <= 1 {
            return;
        }
        let (current, incumbent) = (self.current(), self.candidates[self.incumbent]);
        self.candidates.retain(|c| c.method != method);
        let at = |c: Candidate| self.candidates.iter().position(|x| *x == c).unwrap_or(0);
        (self.current, self.incumbent) = (at(current), at(incumbent));
    }

    /// Leaves `candidate` as the only one: knobs the caller fixed, or a method the files forced.
    pub(crate) fn pin(&mut self, candidate: Candidate) {
        self.candidates = vec![candidate];
        self.current = 0;
        self.incumbent = 0;
    }

    /// The steering as a session starts its first slot: the decision made at opening stays
    /// current, the counts start from zero.
    pub(crate) fn restart(mut self) -> Steering {
        self.slots = 0;
        self.switches = 0;
        self.explorations = 0;
        for p in self.paths.iter_mut() {
            p.explored_at_slot = None;
            p.measured_at_slot = None;
        }
        self
    }

    /// Chooses the candidate for the next slot and makes it current. Needs at least one
    /// candidate (a session always has one: the method it opened).
    pub(crate) fn decide(&mut self, obs: &Observation) -> Decision {
        let cached = obs
            .cached_fraction
            .unwrap_or(self.believed_cached_fraction)
            .clamp(0.0, 1.0);
        let cacheable = obs.cacheable_fraction.map(|c| c.clamp(0.0, 1.0));
        let scored = self.score(obs, cached);
        let best = self.best(&scored);
        let explore = self.to_explore(&scored, best);
        let chosen = explore.unwrap_or(best);
        let exploring = explore.is_some();
        let candidate = self.candidates[chosen];
        if exploring {
            self.explorations += 1;
            self.paths[path_index(candidate.path)].explored_at_slot = Some(self.slots);
        }
        if chosen != self.current {
            self.switches += 1;
        }
        self.current = chosen;
        if !exploring {
            self.incumbent = chosen;
        }
        self.slots += 1;
        self.cached_fraction_start = cached;
        let forecasts: Vec<CandidateForecast> = scored
            .iter()
            .map(|s| CandidateForecast {
                method: self.candidates[s.index].method,
                predicted_mining_power: s.outlook.next,
                predicted_steady_mining_power: s.outlook.steady,
                device_reads_per_sec: s.rates.device_reads_per_sec,
                rate_source: s.source,
            })
            .collect();
        let predicted = scored
            .iter()
            .find(|s| s.index == chosen)
            .map(|s| s.outlook)
            .expect("the chosen candidate was scored");
        let why = explain(
            &candidate,
            exploring,
            (cached, cacheable),
            obs,
            &forecasts,
            &predicted,
        );
        Decision {
            candidate,
            exploring,
            cached_fraction: cached,
            cacheable_fraction: cacheable,
            predicted,
            forecasts,
            why,
        }
    }

    /// The outlook of every candidate eligible for this slot (a map only when the cache holds
    /// enough of the files and has room for the rest, or when maps are all there is).
    fn score(&self, obs: &Observation, cached: f64) -> Vec<Scored> {
        let shape = SlotShape {
            pages: obs.pool_bytes as f64 / model::PAGE_BYTES,
            cached_fraction: cached,
            cacheable_fraction: obs.cacheable_fraction.map_or(0.0, |c| c.clamp(0.0, 1.0)),
            samples_needed: obs.samples_needed,
            slot_sec: obs.slot_sec,
            cpus: obs.cpus,
        };
        let only_mapped = self.candidates.iter().all(|c| c.path == ReadPath::Mapped);
        let mapped_eligible = only_mapped
            || (cached >= MAPPED_FROM_FRACTION
                && obs.cacheable_fraction.is_some_and(|c| c >= MAPPED_HEADROOM));
        self.candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.path != ReadPath::Mapped || mapped_eligible)
            .map(|(index, c)| {
                let (rates, source) = self.rates_for(c);
                Scored {
                    index,
                    outlook: outlook(c.path, &rates, &shape, HORIZON_SLOTS),
                    rates,
                    source,
                }
            })
            .collect()
    }

    /// The best by the horizon's mean, staying with the incumbent (from the second slot on)
    /// unless the best is clearly better (or is the map, as good and cheaper). On a tie a map
    /// goes first (where it is a candidate, it reads cached samples for a fraction of the CPU),
    /// then buffered before direct. Scores are compared relative to each other: when no candidate can finish the slot
    /// (a nonce range no device reads in a slot) every score is tiny, and the faster path must
    /// still win rather than tie.
    fn best(&self, scored: &[Scored]) -> usize {
        let score_of = |i: usize| {
            scored
                .iter()
                .find(|s| s.index == i)
                .map(|s| s.outlook.horizon_mean)
        };
        let rank = |i: usize| match self.candidates[i].path {
            ReadPath::Mapped => 0,
            ReadPath::Buffered => 1,
            ReadPath::Direct => 2,
        };
        let mut best = scored[0].index;
        for s in &scored[1..] {
            let (score, top) = (s.outlook.horizon_mean, score_of(best).unwrap_or(0.0));
            let tie = 1e-6 * score.abs().max(top.abs());
            if score > top + tie || (score >= top - tie && rank(s.index) < rank(best)) {
                best = s.index;
            }
        }
        // The margin protects a path that has mined. Before the first slot the incumbent is only
        // what the pool opened with, chosen before the probe measured anything, so the first
        // slot takes the best as scored (in the fast-device setup a 3% margin kept buffered
        // reads predicted at 0.47 over direct ones at 0.49, which then mined 0.41 against 0.55).
        if self.slots == 0 {
            return best;
        }
        if let Some(incumbent) = score_of(self.incumbent) {
            let to_map = self.candidates[best].path == ReadPath::Mapped
                && self.candidates[self.incumbent].path != ReadPath::Mapped;
            if !to_map && incumbent >= score_of(best).unwrap_or(0.0) * (1.0 - SWITCH_MARGIN) {
                best = self.incumbent;
            }
        }
        best
    }

    /// A path worth one exploring slot instead of `best`, when `best` does not promise the whole
    /// slot: one whose rate is only assumed yet could come close, or whose measurement is stale,
    /// and that was not explored lately. Never a map (its rate follows from the cache).
    fn to_explore(&self, scored: &[Scored], best: usize) -> Option<usize> {
        let b = scored.iter().find(|s| s.index == best)?.outlook;
        if self.slots == 0 || b.next >= 0.999 {
            return None;
        }
        scored
            .iter()
            .find(|s| {
                let c = &self.candidates[s.index];
                let state = &self.paths[path_index(c.path)];
                let unknown = s.source == RateSource::Assumed
                    && s.outlook.horizon_mean >= EXPLORE_WITHIN * b.horizon_mean;
                let stale = s.source == RateSource::Measured
                    && state
                        .measured_at_slot
                        .is_some_and(|at| self.slots - at >= MEASURED_STALE_AFTER_SLOTS);
                s.index != best
                    && c.path != ReadPath::Mapped
                    && (unknown || stale)
                    && state
                        .explored_at_slot
                        .is_none_or(|at| self.slots - at >= EXPLORE_EVERY_SLOTS)
            })
            .map(|s| s.index)
    }

    /// Learns from the slot the current candidate just ran; returns the hit ratio it measured:
    /// 0 for a path that bypasses the cache (it hits nothing), `None` when neither the device's
    /// read counter, the backends' own count nor the residency says.
    pub(crate) fn learn(&mut self, outcome: &SlotOutcome) -> Option<f64> {
        let candidate = self.current();
        let samples = outcome.samples_from_files as f64;
        let end = outcome.cached_fraction_end;
        // Best first: the device's own count of reads against the samples read (Linux), then
        // the backends' count of reads the cache served (Windows), then the residency.
        let hit_ratio = match candidate.path {
            ReadPath::Direct => Some(0.0),
            _ => match (outcome.device_reads, outcome.cache_hit_ratio, end) {
                (Some(reads), _, _) if samples > 0.0 => {
                    Some(1.0 - (reads as f64 / samples).min(1.0))
                }
                (_, Some(ratio), _) => Some(ratio.clamp(0.0, 1.0)),
                (_, _, Some(end)) => Some((self.cached_fraction_start + end) / 2.0),
                _ => None,
            },
        };
        let i = path_index(candidate.path);
        let full_pool = outcome.workers_left_behind == 0;
        if full_pool && outcome.read_limited && outcome.elapsed_sec > 0.0 && samples > 0.0 {
            let misses_per_sec = samples * (1.0 - hit_ratio.unwrap_or(0.0)) / outcome.elapsed_sec;
            let slots = self.slots;
            let state = &mut self.paths[i];
            // A recent measurement is averaged with this one (slots are noisy); a stale one is
            // replaced (it measured the device as it was).
            let recent = state
                .measured_at_slot
                .is_some_and(|at| slots - at < MEASURED_STALE_AFTER_SLOTS);
            state.rates.device_reads_per_sec = match state.source {
                RateSource::Measured if recent => {
                    0.5 * (state.rates.device_reads_per_sec + misses_per_sec)
                }
                _ => misses_per_sec,
            };
            state.source = RateSource::Measured;
            state.measured_at_slot = Some(slots);
            // Until measured, the other paths of the device are assumed as fast as this one.
            for (j, other) in self.paths.iter_mut().enumerate() {
                if j != i && other.source == RateSource::Assumed {
                    other.rates.device_reads_per_sec = misses_per_sec;
                }
            }
        } else if full_pool
            && outcome.mining_power >= 0.999
            && hit_ratio.is_some_and(|h| h >= 0.95)
            && outcome.elapsed_sec > 0.0
            && samples > 0.0
        {
            // Every nonce tried from the cache: the CPUs set the pace.
            let cpu = outcome.cpus * outcome.elapsed_sec / samples;
            let rates = &mut self.paths[i].rates;
            rates.cpu_sec_per_sample = 0.5 * (rates.cpu_sec_per_sample + cpu);
        }
        self.believed_cached_fraction = end.unwrap_or(match (candidate.path, hit_ratio) {
            (ReadPath::Direct, _) | (_, None) => self.believed_cached_fraction,
            // The slot's hit ratio is the mean of a cached share that grew from where it began:
            // it ends about as far above the mean as it began below it (never below the mean).
            (_, Some(h)) => (2.0 * h - self.cached_fraction_start).clamp(h, 1.0),
        });
        hit_ratio
    }
}

/// The decision in one phrase: the choice, the cache and room it saw (`page_cache`: the cached
/// and cacheable fractions), every candidate's forecast and, on a path through the cache, how
/// often the chosen one's reads hit by the slot's end (the first slot's own reads fill it).
fn explain(
    chosen: &Candidate,
    exploring: bool,
    page_cache: (f64, Option<f64>),
    obs: &Observation,
    forecasts: &[CandidateForecast],
    predicted: &Outlook,
) -> String {
    let (cached, cacheable) = page_cache;
    let room = match cacheable {
        Some(c) => format!("room for {:.0}% of it", c * 100.0),
        None => "memory unknown".to_string(),
    };
    let seen = if obs.cached_fraction.is_some() {
        "in the page cache"
    } else {
        "believed cached"
    };
    let each: Vec<String> = forecasts
        .iter()
        .map(|f| {
            format!(
                "{} {:.2} now / {:.2} steady",
                f.method, f.predicted_mining_power, f.predicted_steady_mining_power
            )
        })
        .collect();
    let lead = if exploring {
        format!(
            "auto explores {} for one slot (its rate is unmeasured and close)",
            chosen.method
        )
    } else {
        format!("auto: {}", chosen.method)
    };
    let filling = if chosen.path == ReadPath::Direct {
        String::new()
    } else {
        format!(
            "; {} reads hit {:.0}% by the slot's end",
            chosen.method,
            predicted.next_hit_ratio_end * 100.0
        )
    };
    format!(
        "{lead}: {:.0}% of the shard {seen}, {room}; predicted {}{filling}",
        cached * 100.0,
        each.join(", ")
    )
}

/// One candidate's outlook for the coming slots and the rates it was computed from.
struct Scored {
    /// Index into the steering's candidates.
    index: usize,
    outlook: Outlook,
    rates: PathRates,
    source: RateSource,
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn candidates() -> Vec<Candidate> {
        vec![
            Candidate {
                method: Method::Uring,
                threads: 2,
                depth: 256,
                path: ReadPath::Buffered,
            },
            Candidate {
                method: Method::UringDirect,
                threads: 2,
                depth: 256,
                path: ReadPath::Direct,
            },
            Candidate {
                method: Method::Mmap,
                threads: 2,
                depth: 256,
                path: ReadPath::Mapped,
            },
        ]
    }

    fn observe(cached: f64, cacheable: f64) -> Observation {
        Observation {
            pool_bytes: 8 * GIB,
            cached_fraction: Some(cached),
            cacheable_fraction: Some(cacheable),
            samples_needed: (2u64 << 20) as f64,
            slot_sec: 12.0,
            cpus: 2.0,
        }
    }

    fn limited(samples: u64, device_reads: u64, end: f64) -> SlotOutcome {
        SlotOutcome {
            samples_from_files: samples,
            elapsed_sec: 12.0,
            mining_power: samples as f64 / (2u64 << 20) as f64,
            read_limited: true,
            device_reads: Some(device_reads),
            cache_hit_ratio: None,
            cached_fraction_end: Some(end),
            cpus: 2.0,
            workers_left_behind: 0,
        }
    }

    /// A read-limited slot that left workers stuck in a stalled file system measured the stall:
    /// it changes no learnt rate, where the same slot with every worker back does.
    #[test]
    fn a_slot_that_left_workers_behind_teaches_no_rate() {
        let buffered = path_index(ReadPath::Buffered);
        let learnt = |left_behind: u64| {
            let mut s = Steering::new(candidates(), &[]);
            s.probed(ReadPath::Buffered, 100_000.0);
            s.probed(ReadPath::Direct, 100_000.0);
            s.decide(&observe(0.0, 0.1));
            assert_eq!(s.current().path, ReadPath::Buffered);
            // 120k samples in 12 s, every one a miss: 10k reads/s, a tenth of the probe.
            s.learn(&SlotOutcome {
                workers_left_behind: left_behind,
                ..limited(120_000, 120_000, 0.0)
            });
            (
                s.paths[buffered].rates.device_reads_per_sec,
                s.paths[buffered].source,
            )
        };
        assert_eq!(
            learnt(0),
            (10_000.0, RateSource::Measured),
            "a normal slot teaches"
        );
        assert_eq!(
            learnt(3),
            (100_000.0, RateSource::Probed),
            "a stalled slot does not"
        );
    }

    /// A nonce range no device reads in one slot: every candidate's forecast is near 0, and
    /// the faster measured path must still win (it used to tie, and the tie went to buffered).
    #[test]
    fn when_no_candidate_can_finish_the_slot_the_faster_rate_wins() {
        let mut s = Steering::new(candidates(), &[]);
        s.probed(ReadPath::Buffered, 293_000.0);
        s.probed(ReadPath::Direct, 847_000.0);
        // `--nonces 0..2^44`, two samples each: every forecast is below 1e-6.
        let unbounded = Observation {
            samples_needed: (1u64 << 45) as f64,
            ..observe(0.0, 0.1)
        };
        let d = s.decide(&unbounded);
        assert!(d.predicted.next < 1e-6, "{}", d.why);
        assert_eq!(d.candidate.method, Method::UringDirect, "{}", d.why);
    }

    /// Four 1 GiB shards on one device in a 1 GiB memory cgroup, probed as a run of the fast
    /// device measured them: direct reads score a little higher than buffered ones, within the
    /// switch margin. The first slot takes them although the pool opened buffered; from the
    /// second slot on, the margin keeps the path in place.
    #[test]
    fn the_first_slot_takes_the_best_scored_path_without_the_margin() {
        let four_shards = Observation {
            pool_bytes: 4 * GIB,
            samples_needed: (8u64 << 20) as f64,
            ..observe(0.0, 0.25)
        };
        let mut s = Steering::new(candidates(), &[]);
        s.probed(ReadPath::Buffered, 251_000.0);
        s.probed(ReadPath::Direct, 344_000.0);
        let d = s.decide(&four_shards);
        let steady = |m: Method| {
            d.forecasts
                .iter()
                .find(|f| f.method == m)
                .map_or(0.0, |f| f.predicted_steady_mining_power)
        };
        let (buffered, direct) = (steady(Method::Uring), steady(Method::UringDirect));
        assert!(
            buffered < direct && buffered >= direct * (1.0 - SWITCH_MARGIN),
            "the setup must put buffered within the margin below direct: {}",
            d.why
        );
        assert_eq!(d.candidate.method, Method::UringDirect, "{}", d.why);

        let mut s = Steering::new(candidates(), &[]);
        s.probed(ReadPath::Buffered, 251_000.0);
        s.probed(ReadPath::Direct, 251_000.0);
        assert_eq!(s.decide(&four_shards).candidate.method, Method::Uring);
        s.probed(ReadPath::Direct, 344_000.0);
        let d = s.decide(&four_shards);
        assert_eq!(
            d.candidate.method,
            Method::Uring,
            "second slot: the margin holds, {}",
            d.why
        );
    }

    #[test]
    fn cold_shard_with_room_starts_buffered_and_stays() {
        let mut s = Steering::new(candidates(), &[]);
        let d = s.decide(&observe(0.0, 1.0));
        assert_eq!(d.candidate.method, Method::Uring);
        assert!(!d.exploring);
        s.learn(&limited(1_300_000, 1_000_000, 0.45));
        let d = s.decide(&observe(0.45, 1.0));
        assert_eq!(d.candidate.method, Method::Uring, "{}", d.why);
        assert!(!d.exploring, "buffered is far ahead: nothing to explore");
    }

    #[test]
    fn shard_far_larger_than_memory_explores_direct_once_then_takes_the_faster() {
        let mut s = Steering::new(candidates(), &[]);
        let d = s.decide(&observe(0.0, 0.1));
        assert_eq!(d.candidate.method, Method::Uring);
        // Buffered under reclaim: only 40k misses/s.
        s.learn(&limited(500_000, 480_000, 0.1));
        let d = s.decide(&observe(0.1, 0.1));
        assert_eq!(d.candidate.method, Method::UringDirect);
        assert!(d.exploring, "{}", d.why);
        assert_eq!(s.counts(), (2, 1, 1));
        // Direct measures 90k reads/s: it wins from now on.
        s.learn(&limited(1_080_000, 1_080_000, 0.1));
        for _ in 0..5 {
            let d = s.decide(&observe(0.1, 0.1));
            assert_eq!(d.candidate.method, Method::UringDirect, "{}", d.why);
            assert!(!d.exploring);
            s.learn(&limited(1_080_000, 1_080_000, 0.1));
        }
        assert_eq!(s.counts().2, 1, "explored once");
    }

    /// The bench of 2026-12-02 (BENCHMARKS §23): the first slot met a throttled disk (12k
    /// reads/s). Scored over six slots, direct then looked as good as buffered and the shard,
    /// which fits in memory, was read direct for good; over the long run the cache wins.
    #[test]
    fn a_slow_first_slot_does_not_keep_a_shard_that_fits_off_the_cache() {
        let mut s = Steering::new(candidates(), &[]);
        let d = s.decide(&observe(0.0, 1.0));
        assert_eq!(d.candidate.method, Method::Uring);
        s.learn(&limited(150_000, 144_000, 0.06));
        let mut cached = 0.06;
        for _ in 0..6 {
            let d = s.decide(&observe(cached, 1.0));
            assert_eq!(d.candidate.method, Method::Uring, "{}", d.why);
            assert!(!d.exploring, "{}", d.why);
            assert!(d.predicted.steady > 0.999, "{}", d.why);
            cached += 0.07;
            s.learn(&limited(160_000, 144_000, cached));
        }
        assert_eq!(s.counts(), (7, 0, 0));
    }

    /// A path tried for one slot wins on its measured rate, not by being in place.
    #[test]
    fn after_exploring_the_path_before_it_keeps_its_place() {
        let mut s = Steering::new(candidates(), &[]);
        s.decide(&observe(0.0, 0.1));
        // Buffered under reclaim: 40k misses/s.
        s.learn(&limited(500_000, 480_000, 0.1));
        let d = s.decide(&observe(0.1, 0.1));
        assert!(
            d.exploring && d.candidate.method == Method::UringDirect,
            "{}",
            d.why
        );
        // Direct measures 42k reads/s: buffered's 40k / 0.9 is ~6% more; back to buffered.
        s.learn(&limited(504_000, 504_000, 0.1));
        let d = s.decide(&observe(0.1, 0.1));
        assert_eq!(d.candidate.method, Method::Uring, "{}", d.why);
        assert!(!d.exploring);
        assert_eq!(s.counts(), (3, 2, 1));
    }

    /// Buffered measured while the disk was throttled, direct after it recovered: compared as
    /// they stand, buffered would look slow for good. An hour on, it is measured again.
    #[test]
    fn a_rate_measured_long_ago_is_measured_again() {
        let mut s = Steering::new(candidates(), &[]);
        s.decide(&observe(0.0, 0.2));
        // Buffered while the disk is throttled: 16k misses/s.
        s.learn(&limited(200_000, 192_000, 0.2));
        let d = s.decide(&observe(0.2, 0.2));
        assert!(
            d.exploring && d.candidate.method == Method::UringDirect,
            "{}",
            d.why
        );
        // The disk recovers: direct measures 90k reads/s, and runs.
        for _ in 0..MEASURED_STALE_AFTER_SLOTS {
            s.learn(&limited(1_080_000, 1_080_000, 0.2));
            let d = s.decide(&observe(0.2, 0.2));
            if d.exploring {
                break;
            }
            assert_eq!(d.candidate.method, Method::UringDirect, "{}", d.why);
        }
        let (slots, _, explorations) = s.counts();
        assert_eq!(explorations, 2, "buffered explored again");
        assert_eq!(slots, MEASURED_STALE_AFTER_SLOTS + 2);
        assert_eq!(s.current().method, Method::Uring);
        // It now reads 80k misses/s at a 20% hit ratio: 100k samples/s beats direct's 90k.
        s.learn(&limited(1_200_000, 960_000, 0.2));
        let d = s.decide(&observe(0.2, 0.2));
        assert_eq!(d.candidate.method, Method::Uring, "{}", d.why);
        assert!(!d.exploring);
    }

    #[test]
    fn a_map_only_for_a_shard_held_in_memory_with_headroom() {
        let mut s = Steering::new(candidates(), &[(ReadPath::Direct, 90_000.0)]);
        // Held in memory, but the cache could hold only 1.2x the shard: a map would turn into
        // synchronous faults if memory were taken mid-slot, so buffered reads stay.
        let d = s.decide(&observe(1.0, 1.2));
        assert_eq!(d.candidate.method, Method::Uring, "{}", d.why);
        // With room to spare the map reads cached samples for less CPU: as good, so taken.
        let d = s.decide(&observe(1.0, 3.0));
        assert_eq!(d.candidate.method, Method::Mmap, "{}", d.why);
        // Half the memory goes: the map is no longer a candidate.
        let d = s.decide(&observe(0.9, 0.5));
        assert_eq!(d.candidate.method, Method::Uring, "{}", d.why);
    }

    #[test]
    fn the_model_follows_what_the_slots_measure() {
        let mut s = Steering::new(candidates(), &[(ReadPath::Direct, 90_000.0)]);
        let d = s.decide(&observe(0.0, 0.3));
        assert_eq!(d.candidate.method, Method::Uring);
        assert_eq!(d.forecasts[1].rate_source, RateSource::Profile);
        // Buffered turns out to get 1/3 of direct's device rate (reclaim): switch to direct.
        s.learn(&limited(400_000, 300_000, 0.3));
        let d = s.decide(&observe(0.3, 0.3));
        assert_eq!(d.candidate.method, Method::UringDirect, "{}", d.why);
        assert!(!d.exploring, "direct's rate is the profile's, not assumed");
    }

    #[test]
    fn hit_ratio_comes_from_device_reads_else_from_residency() {
        let mut s = Steering::new(candidates(), &[]);
        s.decide(&observe(0.2, 1.0));
        let h = s.learn(&limited(1_000_000, 600_000, 0.5)).unwrap();
        assert!((h - 0.4).abs() < 1e-9);
        s.decide(&observe(0.5, 1.0));
        let mut no_counter = limited(1_000_000, 0, 0.7);
        no_counter.device_reads = None;
        let h = s.learn(&no_counter).unwrap();
        assert!((h - 0.6).abs() < 1e-9, "{h}");
    }

    /// Windows: no residency, no device counter; the backends' own hit count carries the model.
    #[test]
    fn without_residency_the_backends_hit_ratio_moves_the_belief() {
        let mut s = Steering::new(candidates(), &[(ReadPath::Direct, 90_000.0)]);
        let blind = |cacheable| Observation {
            cached_fraction: None,
            ..observe(0.0, cacheable)
        };
        let d = s.decide(&blind(3.0));
        assert_eq!(d.candidate.method, Method::Uring);
        let slot = |hit: f64| SlotOutcome {
            device_reads: None,
            cache_hit_ratio: Some(hit),
            cached_fraction_end: None,
            ..limited(1_500_000, 0, 0.0)
        };
        // The first slot hit 40% on average: the cache ended near 80%.
        assert_eq!(s.learn(&slot(0.4)), Some(0.4));
        let d = s.decide(&blind(3.0));
        assert!((d.cached_fraction - 0.8).abs() < 1e-9, "{}", d.why);
        assert!(d.why.contains("believed cached"), "{}", d.why);
        // Every read a hit: believed whole, and with room to spare the map becomes the choice.
        s.learn(&slot(1.0));
        let d = s.decide(&blind(3.0));
        assert_eq!(d.cached_fraction, 1.0);
        assert_eq!(d.candidate.method, Method::Mmap, "{}", d.why);
    }
}
