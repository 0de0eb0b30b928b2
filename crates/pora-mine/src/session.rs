//! Opening shards by path the way every front end does — the `pora` CLI, the C ABI and the
//! service share this one path: group files into shards and shards by device, find each
//! device's tune profile, resolve `auto`, choose threads and depth, open one backend factory per
//! device and say what was chosen for each and why.
//!
//! `auto` is decided again before every slot (issue 28, [`crate::steer`]): from the share of
//! each device's shards in the page cache now, the memory the cache can grow into (MemAvailable
//! within the cgroup's limit, shared by every shard of the process) and what earlier slots
//! measured, the model forecasts each candidate's mining power for the next slot and once the
//! cache has settled, and the pool switches between slots when another candidate is clearly
//! better. Backends switched away from are kept open, so switching back costs nothing. A method
//! given by the caller (`--method M`, `Options.Method`) is used for every slot.

use crate::devices::{self, DeviceGroup};
use crate::profile::{self, Lookup};
use crate::records::{HashRecord, SessionRecord};
use crate::steer::model::ReadPath;
use crate::steer::{Candidate, CandidateForecast, Observation, SlotOutcome, Steering};
use crate::{MineConfig, MineError, Miner, OnIoError, Pool, PoolIo, SlotReport, SlotRequest};
use pora_core::{Address, NonceProof, ShardSet, H256, U256};
use pora_io::host::block_device::BlockDevice;
use pora_io::host::memory::CacheRoom;
use pora_io::{CacheReads, IoConfig, IoError, Method};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, PoisonError, TryLockError};
use std::time::Instant;

/// Reads in flight per thread for methods that batch (asynchronous ones, and synchronous ones on
/// a shard held in memory).
pub const DEEP_DEPTH: usize = 256;
/// Threads of a synchronous method on a cold shard: each thread has one read in flight, so it
/// takes many to keep a device queue busy.
pub const SYNC_COLD_THREADS: usize = 64;
/// Share of a shard's bytes in the page cache from which it is treated as held in memory.
pub const RESIDENT_FRACTION: f64 = 0.9;

/// Where to look for a tune profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProfileSource {
    /// `<first file>.pora-profile.toml` when it exists.
    #[default]
    BesideFirstFile,
    /// This file, which must exist and load.
    At(PathBuf),
    /// Do not use a profile.
    Ignore,
}

/// How to open a set of shards for mining.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Access method (`auto` by default) and, for `sim`, the simulated disk.
    pub io: IoConfig,
    /// Worker threads; `None`: the profile's, else the method's default.
    pub threads: Option<usize>,
    /// Reads in flight per thread; `None`: the profile's, else the method's default.
    pub depth: Option<usize>,
    pub random_checks: u32,
    pub on_io_error: OnIoError,
    /// Overrides the files' miner address in hash0.
    pub miner: Option<Address>,
    /// Shard size as log2(KVs); inferred from the files when `None`.
    pub kv_entries_bits: Option<u32>,
    pub profile: ProfileSource,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            io: IoConfig::default(),
            threads: None,
            depth: None,
            random_checks: crate::RANDOM_CHECKS,
            on_io_error: OnIoError::Retry,
            miner: None,
            kv_entries_bits: None,
            profile: ProfileSource::default(),
        }
    }
}

impl OpenOptions {
    pub fn with_method(mut self, method: Method) -> Self {
        self.io.method = method;
        self
    }
    with_fields! {
        with_threads => threads: Option<usize>,
        with_depth => depth: Option<usize>,
        with_random_checks => random_checks: u32,
        with_on_io_error => on_io_error: OnIoError,
        with_miner => miner: Option<Address>,
        with_kv_entries_bits => kv_entries_bits: Option<u32>,
        with_profile => profile: ProfileSource,
    }
}

/// The method and knobs one device's shards run with, and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Choice {
    pub method: Method,
    pub threads: usize,
    pub depth: usize,
    /// The profile used, if any.
    pub profile: Option<PathBuf>,
    /// One phrase: where the method and knobs came from.
    pub why: String,
    /// The device these shards sit on (`vda`, or `major:minor` for tmpfs), when known.
    pub device: Option<String>,
    /// The shards mined with this choice.
    pub shards: Vec<u64>,
    /// The backend factory's one-line description (method, alignment, ring features).
    pub io: String,
    /// How `auto` chose for this slot; `None` when the method was given.
    pub steering: Option<SteeringRecord>,
}

/// What `auto` saw, forecast and measured for one device's slot: every slot's record carries
/// it, so a user can see why the method is what it is.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SteeringRecord {
    /// Slot of the session this decision was made for (0-based).
    pub slot: u64,
    /// Share of the device's shards in the page cache when the slot started (the model's own
    /// estimate where the OS does not tell: `cachedFractionMeasured` false).
    pub cached_fraction: f64,
    pub cached_fraction_measured: bool,
    /// Share of them the page cache can hold: the memory it can grow into, shared by every
    /// shard of the process, over their size; `null` where memory is not known.
    pub cacheable_fraction: Option<f64>,
    /// `MemAvailable` (Windows: `GlobalMemoryStatusEx`'s available physical memory), and the
    /// cgroup's limit and the room inside it, when known.
    pub mem_available_bytes: Option<u64>,
    pub cgroup_limit_bytes: Option<u64>,
    pub cache_room_bytes: Option<u64>,
    /// The chosen method's forecast for this slot and once the cache has settled.
    pub predicted_mining_power: f64,
    pub predicted_steady_mining_power: f64,
    /// The share of the slot's reads the page cache served, measured after the slot (the
    /// device's completed reads against the samples read; else the backends' own count of the
    /// reads the cache served, Windows; else the residency before and after); `null` before the
    /// slot ends or where nothing tells.
    pub hit_ratio: Option<f64>,
    /// Tried for one slot because the model could not tell the candidates apart.
    pub exploring: bool,
    /// The method of the previous slot when this slot switched.
    pub switched_from: Option<Method>,
    /// Time spent deciding (facts and model) and switching backends, before the slot's clock.
    pub decision_ms: f64,
    pub switch_ms: f64,
    /// Switches and exploring slots of this device so far.
    pub switches: u64,
    pub exploring_slots: u64,
    /// Every candidate's forecast.
    pub candidates: Vec<CandidateForecast>,
}

impl SteeringRecord {
    /// The record of `decision` for slot 0 with the facts of `room` and `(decision, switch)`
    /// milliseconds; the caller sets the slot, counts and switch.
    fn new(decision: &crate::steer::Decision, room: Option<&CacheRoom>, ms: (f64, f64)) -> Self {
        SteeringRecord {
            slot: 0,
            cached_fraction: decision.cached_fraction,
            cached_fraction_measured: true,
            cacheable_fraction: decision.cacheable_fraction,
            mem_available_bytes: room.map(|r| r.mem_available_bytes),
            cgroup_limit_bytes: room.and_then(|r| r.cgroup_limit_bytes),
            cache_room_bytes: room.map(|r| r.room_bytes),
            predicted_mining_power: decision.predicted.next,
            predicted_steady_mining_power: decision.predicted.steady,
            hit_ratio: None,
            exploring: decision.exploring,
            switched_from: None,
            decision_ms: ms.0,
            switch_ms: ms.1,
            switches: 0,
            exploring_slots: 0,
            candidates: decision.forecasts.clone(),
        }
    }
}

/// One device pool's side of the session: what it reads with now, and for `auto` the
/// steering and the backends it switched away from.
struct PoolSide {
    choice: Choice,
    steering: Option<Steering>,
    parked: Vec<PoolIo>,
    paths: Vec<PathBuf>,
    bytes: u64,
    io: IoConfig,
    device: Option<BlockDevice>,
}

/// Shards opened for mining: the miner, what was chosen for each device, and notes for the user
/// (a profile that was found stale, say).
pub struct Session {
    miner: Miner,
    /// Per pool, in the miner's order; also the "one slot at a time" lock of the session.
    pools: Mutex<Vec<PoolSide>>,
    /// The pools' choices as of the last slot, readable while a slot runs (`pora_status`).
    published: Mutex<Vec<Choice>>,
    notes: Vec<String>,
    /// Bytes of every shard of the session: the page cache's room is shared by all.
    total_bytes: u64,
}

impl Session {
    /// Opens `groups` (one group of data files per shard) read-only and builds the miner: the
    /// shards are grouped by device (issue 13), and each device gets its own profile, method,
    /// threads, depth and worker pool. The miner's shards (and so every report) come device by
    /// device, in the order given within a device.
    pub fn open(groups: &[Vec<PathBuf>], options: &OpenOptions) -> Result<Session, MineError> {
        let shards = open_shards(groups, options.kv_entries_bits)?;
        let devices = devices::by_device(shards.iter().map(|s| s.files[0].path.as_path()));
        let several = devices.len() > 1;
        let total_bytes = total_file_bytes(&Miner::paths(&shards));
        let room = cache_room();
        let (mut ordered, mut pools, mut sides, mut notes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (device, members) in devices.iter().zip(devices::split(shards, &devices)) {
            let user_files: Vec<PathBuf> = device
                .members
                .iter()
                .flat_map(|&i| groups[i].iter().cloned())
                .collect();
            let opened = open_device(&members, &user_files, device, options, &room, total_bytes)?;
            let label = |note: String| {
                if several {
                    format!("{}: {note}", device.label())
                } else {
                    note
                }
            };
            notes.extend(opened.notes.into_iter().map(label));
            pools.push(opened.pool);
            sides.push(opened.side);
            ordered.extend(members);
        }
        // With no shard there is no choice; the miner then refuses with "no shard to mine".
        let (threads, depth) = sides
            .first()
            .map_or((1, 1), |s: &PoolSide| (s.choice.threads, s.choice.depth));
        let config = MineConfig::new(threads, depth)
            .with_random_checks(options.random_checks)
            .with_on_io_error(options.on_io_error)
            .with_miner(options.miner);
        let miner = Miner::with_pools(ordered, pools, config)?;
        Ok(Session {
            miner,
            published: Mutex::new(sides.iter().map(|s| s.choice.clone()).collect()),
            pools: Mutex::new(sides),
            notes,
            total_bytes,
        })
    }

    pub fn miner(&self) -> &Miner {
        &self.miner
    }

    /// One choice per device, in the miner's shard order: the choice the last slot ran with
    /// (before any slot, the opening one). Does not wait for a running slot.
    pub fn choices(&self) -> Vec<Choice> {
        self.published
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What was opened, one line per device: `<io> | <threads> threads x depth <depth> (<why>)`,
    /// prefixed with the device and its shards when the shards sit on several devices.
    pub fn opening_lines(&self) -> Vec<String> {
        let choices = self.choices();
        let several = choices.len() > 1;
        choices
            .iter()
            .map(|c| {
                let line = format!(
                    "{} | {} threads x depth {} ({})",
                    c.io, c.threads, c.depth, c.why
                );
                if !several {
                    return line;
                }
                let shards: Vec<String> = c.shards.iter().map(u64::to_string).collect();
                let device = c.device.as_deref().unwrap_or("unknown");
                format!("device {device} (shards {}): {line}", shards.join(", "))
            })
            .collect()
    }

    /// Things the user should know about how the session was opened (one line each).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Mines one slot; see [`Miner::mine_slot`]. With `auto`, each device's method, threads and
    /// depth are decided first (facts, model, switch: before the slot's clock starts) and the
    /// model learns from the slot afterwards; [`Session::choices`] then names what the slot ran
    /// with and why. A second call while one runs returns [`MineError::Busy`] at once.
    pub fn mine_slot(
        &self,
        request: &SlotRequest,
        stop: &AtomicBool,
    ) -> Result<SlotReport, MineError> {
        crate::config::validate_request(request)?;
        let mut pools = match self.pools.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(MineError::Busy),
        };
        let steered = pools.iter().any(|p| p.steering.is_some());
        let room = if steered { cache_room() } else { None };
        let mut reads_before = Vec::with_capacity(pools.len());
        for (index, side) in pools.iter_mut().enumerate() {
            if side.steering.is_some() {
                self.steer(index, side, request, room.as_ref())?;
            }
            reads_before.push((device_reads(side), self.miner.cache_reads(index)));
        }
        let mined = self.miner.mine_slot(request, stop);
        if let Ok(report) = &mined {
            for (index, (side, before)) in pools.iter_mut().zip(reads_before).enumerate() {
                let cache_reads = match (before.1, self.miner.cache_reads(index)) {
                    (Some(a), Some(b)) => Some(b.since(a)),
                    _ => None,
                };
                learn(side, report, request, before.0, cache_reads);
            }
        }
        *self
            .published
            .lock()
            .unwrap_or_else(PoisonError::into_inner) =
            pools.iter().map(|p| p.choice.clone()).collect();
        mined
    }

    /// Decides pool `index`'s method for the slot `request` asks for and switches to it.
    fn steer(
        &self,
        index: usize,
        side: &mut PoolSide,
        request: &SlotRequest,
        room: Option<&CacheRoom>,
    ) -> Result<(), MineError> {
        let started = Instant::now();
        let cached = cached_bytes(&side.paths).map(|c| c as f64 / side.bytes.max(1) as f64);
        let shards = side.choice.shards.len() as f64;
        let observation = Observation {
            pool_bytes: side.bytes,
            cached_fraction: cached,
            cacheable_fraction: room.map(|r| r.room_bytes as f64 / self.total_bytes.max(1) as f64),
            samples_needed: (request.nonces.end - request.nonces.start) as f64
                * f64::from(self.miner.config().random_checks)
                * shards,
            slot_sec: request.slot_length.as_secs_f64(),
            cpus: available_cpus() as f64,
        };
        let Some(steering) = side.steering.as_mut() else {
            return Ok(());
        };
        let previous = steering.current();
        let mut decision = steering.decide(&observation);
        let decided = started.elapsed();
        let mut switched_from = None;
        if decision.candidate != previous {
            match switch(&self.miner, index, side, decision.candidate) {
                Ok(io) => {
                    side.choice.io = io;
                    switched_from = Some(previous.method);
                }
                Err(refused) => {
                    // The candidate cannot open here (O_DIRECT refused by the file system, a
                    // ring the kernel will not make): drop it and stay.
                    let steering = side.steering.as_mut().expect("steered pool");
                    steering.forget(decision.candidate.method);
                    decision.why = format!(
                        "{}; {} cannot open here ({refused}), staying on {}",
                        decision.why, decision.candidate.method, previous.method
                    );
                    decision.candidate = previous;
                }
            }
        }
        let steering = side.steering.as_ref().expect("steered pool");
        let (_, switches, explorations) = steering.counts();
        let c = decision.candidate;
        side.choice.method = c.method;
        side.choice.threads = c.threads;
        side.choice.depth = c.depth;
        side.choice.why = decision.why.clone();
        let timing = (
            decided.as_secs_f64() * 1e3,
            (started.elapsed() - decided).as_secs_f64() * 1e3,
        );
        let mut record = SteeringRecord::new(&decision, room, timing);
        record.slot = steering.counts().0 - 1;
        record.cached_fraction_measured = cached.is_some();
        record.switched_from = switched_from;
        (record.switches, record.exploring_slots) = (switches, explorations);
        side.choice.steering = Some(record);
        Ok(())
    }

    /// One nonce of the shard with index `shard_idx` through the plain single-nonce path.
    pub fn hash(&self, shard_idx: u64, randao: &H256, nonce: u64) -> Result<NonceProof, MineError> {
        self.miner.hash(shard_idx, randao, nonce)
    }

    /// [`Session::hash`] as every door answers it: with the miner address hash0 used (the
    /// configured one, else the shard files') and, given `required`, whether the nonce is valid.
    pub fn hash_record(
        &self,
        shard_idx: u64,
        randao: &H256,
        nonce: u64,
        required: Option<U256>,
    ) -> Result<HashRecord, MineError> {
        self.hash_record_with(shard_idx, randao, nonce, required, &crate::Overlay::new())
    }

    /// [`Session::hash_record`] with the samples of `overlay`'s KVs taken from memory, as a slot
    /// with that overlay reads them (the C ABI's `pora_hash_overlay`, Go's `Engine.Hash`).
    pub fn hash_record_with(
        &self,
        shard_idx: u64,
        randao: &H256,
        nonce: u64,
        required: Option<U256>,
        overlay: &crate::Overlay,
    ) -> Result<HashRecord, MineError> {
        let files_miner = self
            .miner
            .shards()
            .iter()
            .find(|s| s.geometry.shard_idx == shard_idx)
            .map(|s| s.miner)
            .ok_or(MineError::UnknownShard(shard_idx))?;
        let proof = self.miner.hash_with(shard_idx, randao, nonce, overlay)?;
        let miner = self.miner.config().miner.unwrap_or(files_miner);
        Ok(HashRecord::new(proof, shard_idx, miner, *randao, required))
    }

    /// What was opened, as the C ABI's `pora_open` and the service's `pora_status` answer it.
    pub fn record(&self) -> SessionRecord<'_> {
        SessionRecord::new(self)
    }
}

/// The choice among `choices` that mines shard `shard`.
pub fn choice_for(choices: &[Choice], shard: u64) -> Option<&Choice> {
    choices.iter().find(|c| c.shards.contains(&shard))
}

/// One device's shards, opened: its pool for the miner, its side of the session and the notes.
struct OpenedDevice {
    pool: Pool,
    side: PoolSide,
    notes: Vec<String>,
}

/// Switches pool `index` to `to`: a backend set kept from earlier, else newly opened. Returns
/// the new factory's description.
fn switch(
    miner: &Miner,
    index: usize,
    side: &mut PoolSide,
    to: Candidate,
) -> Result<String, MineError> {
    let kept = side
        .parked
        .iter()
        .position(|p| p.method() == to.method && p.threads == to.threads && p.depth == to.depth);
    let io = match kept {
        Some(i) => side.parked.swap_remove(i),
        None => {
            let config = IoConfig {
                method: to.method,
                ..side.io.clone()
            };
            let factory =
                pora_io::open(&side.paths, &config).map_err(|source| MineError::Open {
                    method: to.method,
                    source,
                })?;
            PoolIo::open(factory, to.threads, to.depth)?
        }
    };
    let describe = io.factory.describe();
    let old = miner.swap_io(index, io)?;
    side.parked.push(old);
    Ok(describe)
}

/// After a slot: what the pool's slot achieved, for the model, and the measured hit ratio into
/// the record. `reads_before` is the device's read counter before the slot; `cache_reads` what
/// the pool's backends classified during it (Windows).
fn learn(
    side: &mut PoolSide,
    report: &SlotReport,
    request: &SlotRequest,
    reads_before: Option<u64>,
    cache_reads: Option<CacheReads>,
) {
    if side.steering.is_none() {
        return;
    }
    let mine: Vec<_> = report
        .shards
        .iter()
        .filter(|s| side.choice.shards.contains(&s.shard))
        .collect();
    if mine.is_empty() {
        return;
    }
    let samples_from_files: u64 = mine
        .iter()
        .map(|s| s.samples_read.saturating_sub(s.samples_from_overlay))
        .sum();
    let mining_power = mine.iter().map(|s| s.mining_power).sum::<f64>() / mine.len() as f64;
    let slot_sec = request.slot_length.as_secs_f64();
    let device_reads = match (reads_before, device_reads(side)) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let cached_end = cached_bytes(&side.paths).map(|c| c as f64 / side.bytes.max(1) as f64);
    let outcome = SlotOutcome {
        samples_from_files,
        elapsed_sec: report.elapsed_sec,
        mining_power,
        read_limited: !report.interrupted
            && mining_power < 0.98
            && report.elapsed_sec >= 0.5 * slot_sec,
        device_reads,
        cache_hit_ratio: cache_reads.and_then(CacheReads::hit_ratio),
        cached_fraction_end: cached_end,
        cpus: available_cpus() as f64,
    };
    let Some(steering) = side.steering.as_mut() else {
        return;
    };
    let hit_ratio = steering.learn(&outcome);
    if let Some(record) = side.choice.steering.as_mut() {
        record.hit_ratio = hit_ratio;
    }
}

/// The completed-read counter of the pool's device, where the OS keeps one.
fn device_reads(side: &PoolSide) -> Option<u64> {
    side.device.as_ref()?.reads_completed().ok()
}

/// Bytes of `paths` in the page cache now ([`pora_io::host::page_cache::residency_now`]);
/// `None` where the OS does not tell.
fn cached_bytes(paths: &[PathBuf]) -> Option<u64> {
    paths.iter().try_fold(0u64, |sum, p| {
        pora_io::host::page_cache::residency_now(p)
            .ok()
            .map(|r| sum + r.cached_bytes)
    })
}

fn total_file_bytes(paths: &[PathBuf]) -> u64 {
    paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// The memory the page cache can grow into, where the OS tells.
fn cache_room() -> Option<CacheRoom> {
    pora_io::host::memory::cache_room_here().ok()
}

/// Per read path the first rate `rates` gives for one of its methods.
fn path_rates(rates: &[(Method, f64)]) -> Vec<(ReadPath, f64)> {
    rates.iter().map(|&(m, r)| (read_path(m), r)).collect()
}

/// The read path a method takes.
pub fn read_path(method: Method) -> ReadPath {
    if method == Method::Mmap {
        ReadPath::Mapped
    } else if method.is_unbuffered() {
        ReadPath::Direct
    } else {
        ReadPath::Buffered
    }
}

/// The methods `auto` chooses among here: a buffered one, a direct one and (on Unix) a map,
/// each the best this platform has; a profile's method replaces the platform's default of its
/// path, with the profile's knobs.
fn candidates(tuned: Option<&Tuned>) -> Vec<Candidate> {
    let first_available =
        |methods: &[Method]| methods.iter().copied().find(|m| m.availability().is_ok());
    // A map only where a failing disk's fault under it fails the read instead of ending the
    // process: Unix contains SIGBUS, Windows x86_64 the in-page error (docs/io-methods.md).
    let maps: &[Method] = if pora_io::mapped_faults_contained() {
        &[Method::Mmap]
    } else {
        &[]
    };
    let defaults = [
        first_available(&[Method::Uring, Method::Iocp, Method::Pread]),
        first_available(&[Method::UringDirect, Method::IocpUnbuffered, Method::Direct]),
        first_available(maps),
    ];
    defaults
        .into_iter()
        .flatten()
        .map(|method| {
            let path = read_path(method);
            match tuned.filter(|t| read_path(t.method) == path) {
                Some(t) => Candidate {
                    method: t.method,
                    threads: t.threads,
                    depth: t.depth,
                    path,
                },
                None => {
                    let (threads, depth) = default_knobs(method, path == ReadPath::Mapped);
                    Candidate {
                        method,
                        threads,
                        depth,
                        path,
                    }
                }
            }
        })
        .collect()
}

/// Finds the device's profile (beside its first file), resolves the method (for `auto`, the
/// steering's first decision), opens the factory over its shards' files and picks threads and
/// depth.
fn open_device(
    shards: &[ShardSet],
    user_files: &[PathBuf],
    device: &DeviceGroup,
    options: &OpenOptions,
    room: &Option<CacheRoom>,
    total_bytes: u64,
) -> Result<OpenedDevice, MineError> {
    let paths = Miner::paths(shards);
    let (tuned, notes) = find_profile(user_files, &options.profile)?;
    let bytes = total_file_bytes(&paths);
    let shard_ids: Vec<u64> = shards.iter().map(|s| s.geometry.shard_idx).collect();
    let mut steering = (options.io.method == Method::Auto).then(|| {
        let profiled = path_rates(tuned.as_ref().map_or(&[][..], |t| &t.rates));
        Steering::new(candidates(tuned.as_ref()), &profiled)
    });
    let observation = Observation {
        pool_bytes: bytes,
        cached_fraction: cached_bytes(&paths).map(|c| c as f64 / bytes.max(1) as f64),
        cacheable_fraction: room
            .as_ref()
            .map(|r| r.room_bytes as f64 / total_bytes.max(1) as f64),
        samples_needed: (crate::NONCES_PER_SLOT
            * u64::from(options.random_checks)
            * shards.len() as u64) as f64,
        slot_sec: crate::SLOT_LENGTH.as_secs_f64(),
        cpus: available_cpus() as f64,
    };
    let open = |method: Method| {
        let io = IoConfig {
            method,
            ..options.io.clone()
        };
        pora_io::open(&paths, &io).map_err(|source| MineError::Open { method, source })
    };
    // `auto`: the steering's first decision; a candidate the files refuse (O_DIRECT on a file
    // system without it) is forgotten and the next best taken.
    let mut first_decision = None;
    let (factory, why) = loop {
        let Some(st) = steering.as_mut().filter(|st| !st.candidates().is_empty()) else {
            let method = options.io.method;
            let why = match method {
                Method::Auto => "auto: no candidate opens here, the documented rule".to_string(),
                m => format!("{} {m}", pora_core::Input::Method),
            };
            break (open(method)?, why);
        };
        let decision = st.decide(&observation);
        match open(decision.candidate.method) {
            Ok(factory) => {
                let why = decision.why.clone();
                first_decision = Some(decision);
                break (factory, why);
            }
            Err(MineError::Open {
                source: IoError::Unavailable { .. },
                ..
            }) if st.candidates().len() > 1 => st.forget(decision.candidate.method),
            Err(e) => return Err(e),
        }
    };
    let method = factory.method();
    let (threads, depth, why) = match &first_decision {
        Some(d) if d.candidate.method == method => (
            options.threads.unwrap_or(d.candidate.threads),
            options.depth.unwrap_or(d.candidate.depth),
            why,
        ),
        _ => knobs(method, why, tuned.as_ref(), &paths, options),
    };
    if let Some(st) = steering.as_mut() {
        // Knobs the caller fixed, or a method the files forced, leave one candidate: the one
        // opened. Otherwise the steering starts from the candidate opened.
        let opened = Candidate {
            method,
            threads,
            depth,
            path: read_path(method),
        };
        if options.threads.is_some() || options.depth.is_some() || first_decision.is_none() {
            st.pin(opened);
        }
    }
    let steering_record = first_decision
        .as_ref()
        .map(|d| SteeringRecord::new(d, room.as_ref(), (0.0, 0.0)));
    let choice = Choice {
        method,
        threads,
        depth,
        profile: tuned.filter(|t| t.method == method).map(|t| t.path),
        why,
        device: device.device.clone(),
        shards: shard_ids,
        io: factory.describe(),
        steering: steering_record,
    };
    let pool = Pool {
        shards: shards.len(),
        factory,
        threads,
        depth,
    };
    let side = PoolSide {
        choice,
        steering: steering.map(|st| st.restart()),
        parked: Vec::new(),
        device: pora_io::host::block_device::block_device_of(&paths[0]).ok(),
        paths,
        bytes,
        io: options.io.clone(),
    };
    Ok(OpenedDevice { pool, side, notes })
}

/// One [`ShardSet`] per group; a shard given twice is refused.
pub fn open_shards(
    groups: &[Vec<PathBuf>],
    kv_entries_bits: Option<u32>,
) -> Result<Vec<ShardSet>, MineError> {
    let mut shards: Vec<ShardSet> = Vec::with_capacity(groups.len());
    for (group, files) in groups.iter().enumerate() {
        let shard = ShardSet::open(files, kv_entries_bits).map_err(|source| MineError::Shard {
            group: group + 1,
            source,
        })?;
        let shard_idx = shard.geometry.shard_idx;
        if let Some(first) = shards
            .iter()
            .position(|s| s.geometry.shard_idx == shard_idx)
        {
            return Err(MineError::DuplicateShard {
                first: first + 1,
                second: group + 1,
                shard: shard_idx,
            });
        }
        shards.push(shard);
    }
    Ok(shards)
}

/// A profile that matches the files now, and the notes to print about what was found.
struct Tuned {
    path: PathBuf,
    method: Method,
    threads: usize,
    depth: usize,
    /// The profile's cold samples/s per method: its own first, then the sweep's best of the
    /// others.
    rates: Vec<(Method, f64)>,
}

fn find_profile(
    files: &[PathBuf],
    source: &ProfileSource,
) -> Result<(Option<Tuned>, Vec<String>), MineError> {
    let explicit = match source {
        ProfileSource::Ignore => return Ok((None, Vec::new())),
        ProfileSource::At(path) => Some(path.as_path()),
        ProfileSource::BesideFirstFile => None,
    };
    match profile::lookup(files, explicit)? {
        Lookup::Absent => Ok((None, Vec::new())),
        Lookup::Stale { path, why } => Ok((
            None,
            vec![format!(
                "not using profile {}: {why}; re-run `pora tune`",
                path.display()
            )],
        )),
        Lookup::Use { path, profile: p } => {
            let note = format!(
                "using profile {} ({}, {} threads, depth {}, tuned {})",
                path.display(),
                p.method,
                p.threads,
                p.depth,
                p.created
            );
            let tuned = Tuned {
                path,
                method: p.method,
                threads: p.threads,
                depth: p.depth,
                rates: std::iter::once((p.method, p.measured.samples_per_sec))
                    .chain(
                        p.measured
                            .by_method
                            .iter()
                            .map(|r| (r.method, r.samples_per_sec)),
                    )
                    .collect(),
            };
            Ok((Some(tuned), vec![note]))
        }
    }
}

/// Share of the files' bytes in the page cache, when the OS tells: mincore over a fixed sample of
/// windows, so the check costs the same for a 1 GiB and a 1 TiB shard.
fn resident_percent(paths: &[PathBuf]) -> Option<f64> {
    let (mut cached, mut total) = (0u64, 0u64);
    for path in paths {
        let r = pora_io::host::page_cache::residency_sampled(path).ok()?;
        cached += r.cached_bytes;
        total += r.file_bytes;
    }
    (total > 0).then(|| cached as f64 * 100.0 / total as f64)
}

/// Threads and depth: explicit values win, then the profile's (for its own method), then the
/// method's defaults for a resident or a cold shard.
fn knobs(
    method: Method,
    why: String,
    tuned: Option<&Tuned>,
    paths: &[PathBuf],
    options: &OpenOptions,
) -> (usize, usize, String) {
    let (threads, depth, why) = match tuned {
        Some(t) if t.method == method => (t.threads, t.depth, why),
        _ => {
            // O_DIRECT reads bypass the page cache: residency says nothing about them; and with
            // both knobs given it would not change anything.
            let both_given = options.threads.is_some() && options.depth.is_some();
            let capabilities = method.capabilities();
            let resident = capabilities.completes_inline
                && !capabilities.bypasses_page_cache
                && !both_given
                && resident_percent(paths).is_some_and(|p| p >= RESIDENT_FRACTION * 100.0);
            let (t, d) = default_knobs(method, resident);
            let shape = if !capabilities.completes_inline {
                "asynchronous: few threads, deep queues"
            } else if resident {
                "synchronous on a shard in memory: few threads, deep batches"
            } else {
                "synchronous on a cold shard: many threads, one read each"
            };
            (t, d, format!("{why}; {shape}"))
        }
    };
    (
        options.threads.unwrap_or(threads),
        options.depth.unwrap_or(depth),
        why,
    )
}

/// The default (threads, depth) of a concrete method.
pub fn default_knobs(method: Method, resident: bool) -> (usize, usize) {
    let cpus = available_cpus();
    if method.capabilities().completes_inline && !resident {
        (cpus.max(SYNC_COLD_THREADS), 1)
    } else {
        (cpus, DEEP_DEPTH)
    }
}

/// CPUs this process may use (1 when the OS does not say).
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The path of the profile `pora tune` writes for `first_file`.
pub fn default_profile_path(first_file: &Path) -> PathBuf {
    profile::default_path(first_file)
}

/// What `auto` expects of a shard's files on this machine now (for `pora doctor` and `pora
/// tune`): the facts it decides from and its forecast for the first slot and the steady state.
#[derive(Clone, Debug)]
pub struct FilesOutlook {
    pub file_bytes: u64,
    /// Share of the files in the page cache now, where the OS tells.
    pub cached_fraction: Option<f64>,
    pub room: Option<CacheRoom>,
    /// The decision `auto` would take for a first slot of 2^20 nonces, 12 s.
    pub decision: crate::steer::Decision,
}

/// [`FilesOutlook`] for `paths` (one shard), with a tune profile's cold samples/s per method
/// (its chosen method first).
pub fn outlook(paths: &[PathBuf], profiled: &[(Method, f64)]) -> FilesOutlook {
    let file_bytes = total_file_bytes(paths);
    let room = cache_room();
    let cached_fraction = cached_bytes(paths).map(|c| c as f64 / file_bytes.max(1) as f64);
    let mut steering = Steering::new(candidates(None), &path_rates(profiled));
    let decision = steering.decide(&Observation {
        pool_bytes: file_bytes,
        cached_fraction,
        cacheable_fraction: room
            .as_ref()
            .map(|r| r.room_bytes as f64 / file_bytes.max(1) as f64),
        samples_needed: (crate::NONCES_PER_SLOT * u64::from(crate::RANDOM_CHECKS)) as f64,
        slot_sec: crate::SLOT_LENGTH.as_secs_f64(),
        cpus: available_cpus() as f64,
    });
    FilesOutlook {
        file_bytes,
        cached_fraction,
        room,
        decision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `auto` weighs a buffered path, a direct one and a map wherever a failing disk under the
    /// map fails a read instead of ending the process: Unix (SIGBUS) and Windows x86_64 (the
    /// in-page error).
    #[test]
    fn auto_weighs_a_map_where_its_faults_are_contained() {
        let paths: Vec<ReadPath> = candidates(None).iter().map(|c| c.path).collect();
        assert!(paths.contains(&ReadPath::Buffered), "{paths:?}");
        let contained = cfg!(unix) || cfg!(all(windows, target_arch = "x86_64"));
        assert_eq!(paths.contains(&ReadPath::Mapped), contained, "{paths:?}");
    }
}
