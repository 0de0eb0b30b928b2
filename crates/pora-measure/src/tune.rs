//! The library half of `pora tune`: measures method x threads x depth on the user's real shard
//! files with the production mining path (`pora_mine::Miner`, no valid nonces, slot = trial
//! length), cold (evicted before every trial), several trials per arm, within a time budget;
//! finds the knee; measures the device's raw random-read ceiling in the same run; predicts mining
//! power per shard and builds the profile `pora mine` picks up.
//!
//! The arm selection, knee and prediction are pure functions in [`search`]; [`raw`] runs bench's
//! random-read pass for the ceiling and for latency percentiles (the Miner reports no per-read
//! latency, so p99 comes from a raw pass at the chosen reads in flight); [`record`] is the JSON
//! shape of a run.

pub mod device;
pub mod paired;
pub mod raw;
pub mod record;
pub mod search;
pub mod sustained;

use pora_core::{keccak::keccak256, ShardSet, H256};
use pora_io::host::file_devices::FileDevices;
use pora_io::host::page_cache;
use pora_io::{BackendFactory, IoConfig, IoError, Method, SimConfig};
use pora_mine::profile::{self, Measured, Profile, PROFILE_FORMAT};
use pora_mine::{MineConfig, Miner, OnIoError, SlotRequest};
use raw::RawResult;
use search::{
    Arm, ArmStats, Choice, GridLimits, Sweep, SweepPlan, TrialError, TrialResult, TrialRunner,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A knee whose trials vary more than this (coefficient of variation) is not to be trusted.
pub const CV_TRUST: f64 = 0.10;

/// Why a tune run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TuneError {
    #[error("no access method could open the files: {0}")]
    NoMethod(String),
}

/// Everything one tune run needs, independent of the command line.
#[derive(Clone, Debug)]
pub struct TuneInput {
    pub shards: Vec<ShardSet>,
    pub methods: Vec<Method>,
    pub limits: GridLimits,
    pub budget_sec: f64,
    pub sim: SimConfig,
    pub random_checks: u32,
    /// Raw latency vs depth for the chosen method (for the chart).
    pub latency_curve: bool,
    /// The devices under the shards' files, read once where the run starts (those it does not
    /// cover are read when the run begins): every trial's `IoConfig`, the profile's fingerprint
    /// and the forecast's queues take them from here, so a run reads each device once.
    pub devices: FileDevices,
}

/// Something a running tune reports as it goes, for a progress display.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A method could not open the files and is left out.
    Skipped { method: Method, error: &'a IoError },
    /// A note about the whole run (also kept in [`TuneOutcome::notes`]).
    Note(&'a str),
    /// A raw ceiling pass finished.
    RawPass(&'a RawResult),
    /// A sweep trial finished; `elapsed_sec` since the sweep began.
    Trial { arm: &'a ArmStats, elapsed_sec: f64 },
}

/// What a tune run found.
#[derive(Clone, Debug)]
pub struct TuneOutcome {
    pub sweep: Sweep,
    pub choice: Option<Choice>,
    pub ceiling: Option<RawResult>,
    pub knee_latency: Option<RawResult>,
    pub latency_curve: Vec<RawResult>,
    pub notes: Vec<String>,
    pub interrupted: bool,
    /// The run's one reading of the devices under its files ([`TuneInput::devices`]).
    pub devices: FileDevices,
    /// Each read path's arm read for longer after the sweep ([`sustained`]): the cold rates the
    /// first slot's forecast starts from.
    pub sustained: Vec<sustained::SustainedRate>,
}

/// The methods to sweep: the asked ones (`auto` standing for every method it chooses among,
/// [`Method::auto_candidates`], since a session decides between them before every slot; repeats
/// dropped), else every available real method but `pread-shared`.
pub fn pick_methods(asked: &[Method]) -> Vec<Method> {
    if !asked.is_empty() {
        let mut m: Vec<Method> = Vec::new();
        for &asked in asked {
            let each = if asked == Method::Auto {
                Method::auto_candidates()
            } else {
                vec![asked]
            };
            for method in each {
                if !m.contains(&method) {
                    m.push(method);
                }
            }
        }
        return m;
    }
    Method::available_real()
        .into_iter()
        .filter(|m| *m != Method::PreadShared)
        .collect()
}

/// Opens factories on demand. Each trial and raw pass gets a fresh factory that is dropped
/// afterwards: a live `mmap` factory keeps pages mapped, and mapped pages cannot be evicted.
struct Opener<'a> {
    paths: &'a [PathBuf],
    sim: &'a SimConfig,
    devices: &'a FileDevices,
}

impl Opener<'_> {
    fn open(&self, method: Method) -> Result<Arc<dyn BackendFactory>, IoError> {
        pora_io::open(self.paths, &self.config(method))
    }

    /// What every trial and raw pass of `method` opens with: the run's device facts included.
    fn config(&self, method: Method) -> IoConfig {
        IoConfig {
            method,
            sim: self.sim.clone(),
            devices: self.devices.clone(),
            ..IoConfig::default()
        }
    }
}

/// What the raw passes share.
struct RawPasses<'a> {
    opener: &'a Opener<'a>,
    targets: Vec<crate::bench::Target>,
    seconds: f64,
    stop: &'a AtomicBool,
}

/// Runs the raw ceiling pass, the sweep and the knee's latency pass; `on_event` sees progress.
pub fn tune(
    input: &TuneInput,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(Event),
) -> Result<TuneOutcome, TuneError> {
    let paths = Miner::paths(&input.shards);
    let devices = input
        .devices
        .covering(&paths, &pora_io::host::Roots::default());
    let opener = Opener {
        paths: &paths,
        sim: &input.sim,
        devices: &devices,
    };
    let mut notes = Vec::new();
    let mut methods = Vec::new();
    for &m in &input.methods {
        match opener.open(m) {
            Ok(_) => methods.push(m),
            Err(error) => {
                on_event(Event::Skipped {
                    method: m,
                    error: &error,
                });
                notes.push(format!("{m} skipped: {error}"));
            }
        }
    }
    if methods.is_empty() {
        return Err(TuneError::NoMethod(notes.join("; ")));
    }
    if let Some(note) = fits_in_memory_note(&paths) {
        on_event(Event::Note(&note));
        notes.push(note);
    }
    let raw = RawPasses {
        opener: &opener,
        targets: raw::data_regions(&input.shards),
        seconds: (input.budget_sec * 0.04).clamp(0.5, 3.0),
        stop,
    };
    let ceiling = ceiling_pass(input, &methods, &raw, &mut notes, on_event);
    let lines = search::grid(&methods, input.limits);
    let arms: usize = lines.iter().map(Vec::len).sum();
    let curve_sec = if input.latency_curve {
        5.0 * raw.seconds / 2.0
    } else {
        0.0
    };
    let sustained_sec = sustained::sustained_sec(input.budget_sec);
    let sweep_budget = (input.budget_sec
        - 4.0 * raw.seconds
        - curve_sec
        - sustained::READ_PATHS as f64 * sustained_sec)
        .max(input.budget_sec * 0.5);
    let plan = SweepPlan::for_budget(sweep_budget, arms);
    let mut runner = MiningRunner {
        shards: &input.shards,
        opener: &opener,
        stop,
        random_checks: input.random_checks,
        trial: 0,
        unverified_evictions: 0,
    };
    let started = Instant::now();
    let mut progress = |a: &ArmStats, spent: f64| {
        on_event(Event::Trial {
            arm: a,
            elapsed_sec: started.elapsed().as_secs_f64().max(spent),
        })
    };
    let sweep = search::sweep(&lines, &plan, &mut runner, &mut progress);
    if runner.unverified_evictions > 0 {
        notes.push(format!(
            "{} file evictions could not be verified (pages mapped by another process, or the file system keeps them): those trials may be partly warm",
            runner.unverified_evictions
        ));
    }
    for said in sweep
        .paired
        .iter()
        .filter_map(|c| c.disagreement(plan.knee_margin))
    {
        on_event(Event::Note(&said));
        notes.push(said);
    }
    let choice = search::choose(&sweep.arms, plan.knee_margin);
    let mut interrupted = sweep.interrupted || stop.load(Ordering::Relaxed);
    let mut knee_latency = None;
    let mut latency_curve = Vec::new();
    let mut sustained = Vec::new();
    if let (Some(c), false) = (&choice, interrupted) {
        let (pages, cacheable) = pages_and_cacheable(&paths);
        let arms = sustained::arms_per_path(c, &sweep.arms);
        match sustained::measure(&mut runner, &arms, sustained_sec, pages, cacheable) {
            Ok(rates) => sustained = rates,
            Err(_) => interrupted = true,
        }
        for r in &sustained {
            let line = r.line();
            on_event(Event::Note(&line));
            notes.push(line);
        }
    }
    if let (Some(c), false) = (&choice, interrupted) {
        let k = c.knee.arm;
        knee_latency = raw.pass(k.method, k.threads, k.depth, raw.seconds, &mut notes);
        if input.latency_curve {
            latency_curve = latency_sweep(c, &raw, input.limits, &mut notes);
        }
        interrupted = stop.load(Ordering::Relaxed);
    }
    // The trials' pages leave with them: the forecast (and a `pora mine` started next) sees the
    // files as cold as every trial began, not the last trial's share of them.
    if let Some(c) = &choice {
        evict_all(&paths, c.knee.arm.method);
    }
    Ok(TuneOutcome {
        sweep,
        choice,
        ceiling,
        knee_latency,
        latency_curve,
        notes,
        interrupted,
        devices,
        sustained,
    })
}

/// The files' 4 KiB pages and the share of them the memory the page cache can grow into holds
/// (all of them where the OS does not tell), as the first slot's model counts them.
fn pages_and_cacheable(paths: &[PathBuf]) -> (f64, f64) {
    let bytes = files_bytes(paths) as f64;
    let room = pora_io::host::memory::cache_room_here().map_or(bytes, |r| r.room_bytes as f64);
    (
        bytes / 4096.0,
        if bytes > 0.0 {
            (room / bytes).min(1.0)
        } else {
            1.0
        },
    )
}

impl RawPasses<'_> {
    /// One cold raw pass on a fresh factory; failures become notes.
    fn pass(
        &self,
        method: Method,
        threads: usize,
        depth: usize,
        seconds: f64,
        notes: &mut Vec<String>,
    ) -> Option<RawResult> {
        evict_all(self.opener.paths, method);
        let result = self
            .opener
            .open(method)
            .map_err(|e| e.to_string())
            .and_then(|f| {
                raw::run(
                    f.as_ref(),
                    &self.targets,
                    threads,
                    depth,
                    seconds,
                    self.stop,
                )
                .map_err(|e| e.to_string())
            });
        match result {
            Ok(r) => Some(r),
            Err(e) => {
                notes.push(format!("raw pass {method} {threads}x{depth} failed: {e}"));
                None
            }
        }
    }
}

/// The device's raw ceiling: the best available asynchronous method (even one not swept), else
/// many threads of a synchronous one, at a few deep queues; the highest reads/s wins. Methods
/// are ranked by what they state ([`ceiling_rank`]), not by a list here.
fn ceiling_pass(
    input: &TuneInput,
    methods: &[Method],
    raw: &RawPasses,
    notes: &mut Vec<String>,
    on_event: &mut dyn FnMut(Event),
) -> Option<RawResult> {
    let mut order: Vec<Method> = Method::ALL
        .into_iter()
        .filter(|m| m.auto_preference().is_some())
        .collect();
    order.sort_by_key(|m| std::cmp::Reverse(ceiling_rank(*m)));
    let method = if methods == [Method::Sim] {
        Method::Sim
    } else {
        let async_real = order
            .iter()
            .copied()
            .filter(|m| !m.capabilities().completes_inline)
            .find(|m| raw.opener.open(*m).is_ok());
        async_real.or_else(|| order.iter().copied().find(|m| methods.contains(m)))?
    };
    let threads = input.limits.cpus.clamp(1, 2);
    let configs: Vec<(usize, usize)> = if !method.capabilities().completes_inline {
        [32usize, 128, 256]
            .iter()
            .map(|total| {
                (
                    threads,
                    (total / threads).min(input.limits.max_depth.max(1)),
                )
            })
            .collect()
    } else {
        vec![(16, 1), (64, 1)]
    };
    let mut best: Option<RawResult> = None;
    for (t, d) in configs {
        if raw.stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(r) = raw.pass(method, t, d, raw.seconds, notes) {
            on_event(Event::RawPass(&r));
            if best.as_ref().is_none_or(|b| r.iops > b.iops) {
                best = Some(r);
            }
        }
    }
    best
}

/// How well a method shows the device's raw ceiling: asynchronous before synchronous (deep
/// queues from few threads), around the page cache before through it (every read reaches the
/// device), then `auto`'s preference; a map last (a fault per miss).
fn ceiling_rank(method: Method) -> (bool, bool, bool, Option<u8>) {
    let c = method.capabilities();
    (
        method.read_path() != pora_io::ReadPath::Mapped,
        !c.completes_inline,
        c.bypasses_page_cache,
        method.auto_preference(),
    )
}

/// Raw latency at increasing reads in flight on the chosen method, for the latency chart.
fn latency_sweep(
    c: &Choice,
    raw: &RawPasses,
    limits: GridLimits,
    notes: &mut Vec<String>,
) -> Vec<RawResult> {
    let arm = c.knee.arm;
    let configs: Vec<(usize, usize)> = if !arm.method.capabilities().completes_inline {
        [1usize, 4, 16, 64, 256]
            .iter()
            .filter(|d| **d <= limits.max_depth.max(1))
            .map(|d| (arm.threads, *d))
            .collect()
    } else {
        [1usize, 4, 16, 64]
            .iter()
            .filter(|t| **t <= limits.max_threads_sync.max(1))
            .map(|t| (*t, 1))
            .collect()
    };
    let mut out = Vec::new();
    for (t, d) in configs {
        if raw.stop.load(Ordering::Relaxed) {
            break;
        }
        out.extend(raw.pass(arm.method, t, d, raw.seconds / 2.0, notes));
    }
    out
}

/// Buffered trials of files that fit in the memory the page cache can grow into warm the cache
/// as they run, so say so. The room is the one `pora mine` decides with
/// ([`pora_io::host::memory::cache_room_here`]: `MemAvailable` within the memory cgroup's limit,
/// v1 or v2), so inside a 1 GiB cgroup 4 GiB of files do not "fit" whatever the machine has.
fn fits_in_memory_note(paths: &[PathBuf]) -> Option<String> {
    let room = pora_io::host::memory::cache_room_here().ok()?;
    fits_in_memory(files_bytes(paths), &room)
}

fn files_bytes(paths: &[PathBuf]) -> u64 {
    paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// [`fits_in_memory_note`] for `total` bytes of files and the memory facts `room`.
fn fits_in_memory(total: u64, room: &pora_io::host::memory::CacheRoom) -> Option<String> {
    let within = match room.cgroup_limit_bytes {
        Some(limit) => format!(" (within the memory cgroup's limit of {} MiB)", limit >> 20),
        None => String::new(),
    };
    (total < room.room_bytes).then(|| {
        format!(
            "the files ({} MiB) fit in the {} MiB the page cache can grow into{within}: each trial starts cold, but buffered methods (pread, mmap, uring, iocp) warm the cache as they run, so their figures are optimistic for a production shard larger than memory",
            total >> 20,
            room.room_bytes >> 20
        )
    })
}

/// Evicts every file (not for the simulated disk, which has no cache to be cold in); returns
/// how many evictions could not be verified.
fn evict_all(paths: &[PathBuf], method: Method) -> usize {
    if method == Method::Sim {
        return 0;
    }
    paths
        .iter()
        .filter(|p| !page_cache::evict(p).is_ok_and(|e| e.is_verified()))
        .count()
}

/// Runs trials through the production mining path.
struct MiningRunner<'a> {
    shards: &'a [ShardSet],
    opener: &'a Opener<'a>,
    stop: &'a AtomicBool,
    random_checks: u32,
    trial: u64,
    unverified_evictions: usize,
}

impl TrialRunner for MiningRunner<'_> {
    fn run(&mut self, arm: &Arm, seconds: f64) -> Result<TrialResult, TrialError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(TrialError::Interrupted);
        }
        let started = Instant::now();
        self.unverified_evictions += evict_all(self.opener.paths, arm.method);
        let config = MineConfig::new(arm.threads, arm.depth)
            .with_random_checks(self.random_checks)
            .with_on_io_error(OnIoError::Retry);
        let factory = self
            .opener
            .open(arm.method)
            .map_err(|e| TrialError::Arm(e.to_string()))?;
        let miner = Miner::new(self.shards.to_vec(), factory, config)
            .map_err(|e| TrialError::Arm(e.to_string()))?;
        // A fresh randao per trial: different samples, so no trial reuses another's cache.
        self.trial += 1;
        let randao = H256(keccak256(&[b"pora tune", &self.trial.to_be_bytes()]));
        // More nonces than any trial can try: the slot time ends it.
        let request = SlotRequest::new(randao)
            .with_nonces(0..1 << 40)
            .with_slot_length(Duration::from_secs_f64(seconds));
        let report = miner
            .mine_slot(&request, self.stop)
            .map_err(|e| TrialError::Arm(e.to_string()))?;
        if report.interrupted {
            return Err(TrialError::Interrupted);
        }
        let samples: u64 = report.shards.iter().map(|s| s.samples_read).sum();
        Ok(TrialResult {
            samples_per_sec: samples as f64 / report.elapsed_sec.max(1e-9),
            elapsed_sec: started.elapsed().as_secs_f64(),
        })
    }
}

/// The figures derived from an outcome for printing, JSON and the profile.
#[derive(Clone, Debug)]
pub struct Prediction {
    /// Shards that will share the device.
    pub shards: usize,
    pub required_per_shard: f64,
    /// Predicted mining power per shard (0..=1).
    pub power: f64,
    /// The knee's samples/s over the raw ceiling's reads/s.
    pub ceiling_ratio: Option<f64>,
    /// es-node's `--miner.threads-per-shard` closest to the knee.
    pub esnode_threads: usize,
}

impl Prediction {
    pub fn new(o: &TuneOutcome, shards: usize, required_per_shard: f64) -> Prediction {
        let sps = o.choice.as_ref().map_or(0.0, |c| c.knee.rate());
        Prediction {
            shards,
            required_per_shard,
            power: search::predicted_power(sps, shards, required_per_shard),
            ceiling_ratio: o
                .ceiling
                .as_ref()
                .filter(|c| c.iops > 0.0)
                .map(|c| sps / c.iops),
            esnode_threads: o
                .choice
                .as_ref()
                .map_or(1, |c| search::esnode_threads_per_shard(&c.knee.arm, shards)),
        }
    }

    /// One sentence that separates "software" from "buy a faster disk".
    pub fn verdict(&self) -> String {
        match self.ceiling_ratio {
            None => "no raw ceiling was measured, so software and disk limits cannot be told apart".into(),
            Some(r) if r > 1.1 => format!("mining read {r:.2}x the raw ceiling: the page cache served part of it, so the cold figure is lower"),
            Some(r) if r >= 0.85 => format!("mining reaches {:.0}% of the device's raw reads/s: more power needs a faster disk or fewer shards on it", r * 100.0),
            Some(r) => format!("mining gets only {:.0}% of the device's raw reads/s: the limit is software/CPU (see `pora doctor`), not the disk", r * 100.0),
        }
    }
}

/// Whether the knee's spread is small enough to trust.
pub fn spread_trusted(knee: &ArmStats) -> bool {
    knee.cv() <= CV_TRUST && knee.trials.len() >= 2
}

/// The best cold samples/s of every method the sweep measured ([`ArmStats::rate`]: on the same
/// moments as the knee, and only those arms, once arms were compared with it), fastest first.
pub fn best_by_method(o: &TuneOutcome) -> Vec<pora_mine::profile::MethodRate> {
    let mut best: Vec<pora_mine::profile::MethodRate> = Vec::new();
    for a in search::comparable(&o.sweep.arms).filter(|a| !a.trials.is_empty()) {
        let rate = a.rate();
        match best.iter_mut().find(|b| b.method == a.arm.method) {
            Some(b) if b.samples_per_sec >= rate => {}
            Some(b) => b.samples_per_sec = rate,
            None => best.push(pora_mine::profile::MethodRate {
                method: a.arm.method,
                samples_per_sec: rate,
            }),
        }
    }
    best.sort_by(|a, b| b.samples_per_sec.total_cmp(&a.samples_per_sec));
    best
}

/// What `auto` forecasts for `files`, the files of `shards` shards sharing the device, with the
/// rates this run measured (the device's samples/s for all of them together): each shard's
/// mining power in the first (cold) slot and in the steady state once the page cache has
/// settled, with the memory there is now.
pub fn steady_outlook(
    o: &TuneOutcome,
    c: &Choice,
    files: &[PathBuf],
    shards: usize,
) -> pora_mine::session::FilesOutlook {
    let rates = pora_mine::profile::ordered_rates(
        (c.knee.arm.method, c.knee.rate()),
        &o.sustained
            .iter()
            .map(|r| (r.arm.method, r.cold_reads_per_sec))
            .collect::<Vec<_>>(),
        &best_by_method(o)
            .iter()
            .map(|r| (r.method, r.samples_per_sec))
            .collect::<Vec<_>>(),
    );
    pora_mine::session::files_outlook_on(files, &o.devices, shards, &rates)
}

/// The profile `pora mine` loads for `files`, from the knee of a finished run.
pub fn make_profile(o: &TuneOutcome, c: &Choice, p: &Prediction, files: &[PathBuf]) -> Profile {
    let (created, created_unix_sec) = profile::now_rfc3339();
    Profile {
        format: PROFILE_FORMAT,
        created,
        created_unix_sec,
        method: c.knee.arm.method,
        threads: c.knee.arm.threads,
        depth: c.knee.arm.depth,
        shards: p.shards,
        measured: Measured {
            samples_per_sec: c.knee.rate(),
            samples_per_sec_cv: c.knee.cv(),
            trials: c.knee.trials.len(),
            latency_us_p99: o.knee_latency.as_ref().map(|l| l.latency_us_p99),
            device_ceiling_iops: o.ceiling.as_ref().map(|x| x.iops),
            predicted_mining_power: p.power,
            by_method: best_by_method(o),
            sustained: o
                .sustained
                .iter()
                .map(|r| pora_mine::profile::MethodRate {
                    method: r.arm.method,
                    samples_per_sec: r.cold_reads_per_sec,
                })
                .collect(),
            predicted_steady_mining_power: Some(
                steady_outlook(o, c, files, p.shards)
                    .decision
                    .predicted
                    .steady,
            ),
        },
        fingerprint: profile::fingerprint_on(files, &o.devices),
    }
}

#[cfg(test)]
mod tests;
