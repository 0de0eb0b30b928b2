//! pora-mine: the mining scheduler. Pure logic, generic over `pora_io::Backend`: no OS code, so
//! it runs unchanged on the simulated disk in tests.
//!
//! Each worker thread owns one backend and a fixed pool of nonce chains (hash0 -> read sample 1
//! -> hash -> read sample 2 -> hash -> check) driven by completions; a finished chain takes the
//! next nonce from a shared atomic counter. The slot deadline is passed to the backend's wait.
//!
//! The API: [`MineConfig`] (knobs fixed at build time), [`Miner::new`], [`Miner::mine_slot`]
//! with a [`SlotRequest`] (what one slot mines), [`SlotReport`] / [`ShardSlotReport`].
//! [`session`] opens shards by path the way every front end does (profile, `auto`, defaults)
//! and mines a slot into a [`session::MinedSlot`]; the JSON records the CLI, the C ABI and the
//! service share are [`records`]' types, built from it (`MinedSlot::record`).

/// `with_<field>(self, value) -> Self` for each named field: the builders of the public option
/// structs, which are `#[non_exhaustive]` so that adding a knob is not a breaking change.
macro_rules! with_fields {
    ($($(#[$doc:meta])* $with:ident => $field:ident: $ty:ty),+ $(,)?) => {
        $(
            $(#[$doc])*
            pub fn $with(mut self, $field: $ty) -> Self {
                self.$field = $field;
                self
            }
        )+
    };
}

mod config;
pub mod defaults;
pub mod devices;
mod errand;
mod error;
// Public for the hot-path example only.
#[cfg(feature = "test-support")]
pub mod lanes;
#[cfg(not(feature = "test-support"))]
mod lanes;
pub mod overlay;
mod plan;
mod pool;
pub mod profile;
pub mod records;
pub mod session;
mod slot;
pub mod steer;
mod verify;
mod worker;

pub use defaults::{
    MAX_DEPTH, MAX_RANDOM_CHECKS, MAX_SLOT_LENGTH_MS, MAX_THREADS, MAX_TOTAL_CHAINS,
    NONCES_PER_SLOT, RANDOM_CHECKS, SLOT_LENGTH, SLOT_LENGTH_MS,
};
pub use error::{ErrorKind, MineError};
pub use overlay::Overlay;
// Pools built by hand and the retry bound are for pora-mine's own tests: doors open shards
// through `session`.
#[cfg(feature = "test-support")]
pub use pool::{Pool, PoolIo};
#[cfg(not(feature = "test-support"))]
pub(crate) use pool::{Pool, PoolIo};
#[cfg(feature = "test-support")]
pub use worker::MAX_RETRIES;

use pora_core::{Address, Input, NonceProof, ShardSet, H256, U256};
use pora_io::BackendFactory;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

/// Which valid nonces a shard's slot reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Find {
    /// Stop the shard's slot at its first valid nonce (es-node's behaviour).
    #[default]
    First,
    /// Try every nonce, report the one with the lowest hash1.
    Best,
    /// Try every nonce, report all valid ones.
    All,
}

/// What a failed sample read does to the slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnIoError {
    /// Re-issue the read a few times, then drop the nonce (not counted, never valid).
    #[default]
    Retry,
    /// Drop the nonce at once (not counted, never valid) and go on.
    Skip,
    /// End the slot with an error.
    Stop,
}

/// Knobs fixed when a miner is built: they size the workers, their backends and the chains.
/// Per-slot inputs (randao, nonce range, deadline, difficulty, `find`) are a [`SlotRequest`].
///
/// ```
/// let config = pora_mine::MineConfig::new(2, 256).with_random_checks(2);
/// assert_eq!((config.threads, config.depth), (2, 256));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MineConfig {
    /// Worker threads, each with its own backend.
    pub threads: usize,
    /// Nonce chains (and so reads) in flight per worker.
    pub depth: usize,
    /// Samples per nonce (2 in production).
    pub random_checks: u32,
    pub on_io_error: OnIoError,
    /// Overrides the files' miner address in hash0.
    pub miner: Option<Address>,
}

impl MineConfig {
    /// `threads` workers with `depth` chains each; 2 samples per nonce, retry on read errors,
    /// the files' miner.
    pub fn new(threads: usize, depth: usize) -> Self {
        MineConfig {
            threads,
            depth,
            random_checks: RANDOM_CHECKS,
            on_io_error: OnIoError::Retry,
            miner: None,
        }
    }

    with_fields! {
        with_random_checks => random_checks: u32,
        with_on_io_error => on_io_error: OnIoError,
        with_miner => miner: Option<Address>,
    }
}

/// What one slot mines: the same for every shard of the miner.
///
/// ```
/// use pora_mine::{Find, SlotRequest};
/// let request = SlotRequest::new(pora_core::H256([7; 32])).with_find(Find::All);
/// assert_eq!(request.nonces, 0..1 << 20);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SlotRequest {
    pub randao: H256,
    /// Nonces of each shard's slot (`0..1_048_576` in production).
    pub nonces: Range<u64>,
    /// When the door took the call: the slot's time (`elapsedSec`) counts from it, steering
    /// included.
    pub entered: Instant,
    /// The caller's deadline: no read is issued after it, and the slot ends by it (plus the
    /// bounded straggler and verification waits) whatever steering cost. Doors derive it once,
    /// at entry; nothing inside the slot starts a clock of its own.
    pub deadline: Instant,
    pub find: Find,
    /// `None`: no nonce is valid (throughput runs such as tune and bench).
    pub required_diff: Option<U256>,
    /// KVs sampled from memory instead of the files (es-node's blob cache); `None`: none.
    pub overlay: Option<Arc<Overlay>>,
}

impl SlotRequest {
    /// es-node's slot: nonces `0..2^20`, ending 12 s from now, stop at the first valid nonce,
    /// no difficulty. Entered now.
    pub fn new(randao: H256) -> Self {
        let entered = Instant::now();
        SlotRequest {
            randao,
            nonces: 0..NONCES_PER_SLOT,
            entered,
            deadline: entered + SLOT_LENGTH,
            find: Find::First,
            required_diff: None,
            overlay: None,
        }
    }

    /// Ends the slot `length` from now (taken when called: a door calls it at entry).
    pub fn with_slot_length(self, length: Duration) -> Self {
        self.with_deadline(Instant::now() + length)
    }

    /// The time from entry to the deadline: the slot's length as the caller gave it.
    pub fn slot_length(&self) -> Duration {
        self.deadline.saturating_duration_since(self.entered)
    }

    with_fields! {
        /// Ends the slot at `deadline`, the caller's (absolute) deadline.
        with_deadline => deadline: Instant,
        /// Counts the slot's time from `entered` (the door's receipt of the call).
        with_entered => entered: Instant,
        with_nonces => nonces: Range<u64>,
        with_find => find: Find,
        with_required_diff => required_diff: Option<U256>,
        with_overlay => overlay: Option<Arc<Overlay>>,
    }
}

/// Slots on a fixed rhythm, as es-node's come: slot k (0-based) ends at `start` + (k + 1) x
/// `length`, whatever steering, stragglers or verification cost the slots before it (`pora mine
/// --slots`): each slot gets an absolute deadline, never a length started anew.
#[derive(Clone, Copy, Debug)]
pub struct SlotRhythm {
    pub start: Instant,
    pub length: Duration,
}

impl SlotRhythm {
    /// A rhythm of `length` slots starting now.
    pub fn starting_now(length: Duration) -> SlotRhythm {
        SlotRhythm {
            start: Instant::now(),
            length,
        }
    }

    /// Slot `slot`'s deadline; `None` when it lies beyond what this system's clock reaches.
    pub fn deadline(&self, slot: u64) -> Option<Instant> {
        let k = u32::try_from(slot.checked_add(1)?).ok()?;
        self.start.checked_add(self.length.checked_mul(k)?)
    }
}

/// The randao of slot `slot` of a run with `--random-randao --seed seed`:
/// keccak256("pora-random-randao" || be64(seed) || be64(slot)), deterministic.
pub fn random_randao(seed: u64, slot: u64) -> H256 {
    H256(pora_core::keccak::keccak256(&[
        b"pora-random-randao",
        &seed.to_be_bytes(),
        &slot.to_be_bytes(),
    ]))
}

/// Which resource ended a slot below 100% power.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bottleneck {
    /// Every nonce was tried: nothing limited the slot.
    None,
    /// Workers spent most of the slot waiting for reads (latency / IOPS bound).
    Disk,
    /// Workers were busy hashing and bookkeeping (CPU bound).
    Cpu,
}

/// One shard's result for one slot.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardSlotReport {
    pub shard: u64,
    pub randao: H256,
    pub nonce_limit: u64,
    pub nonces_tried: u64,
    /// `noncesTried / nonceLimit`, 0..1.
    pub mining_power: f64,
    pub elapsed_sec: f64,
    pub samples_read: u64,
    pub samples_per_sec: f64,
    /// Of `samplesRead`, those taken from the slot's overlay (KVs in memory), not the files.
    pub samples_from_overlay: u64,
    /// Nonces dropped because a sample read failed.
    pub io_errors: u64,
    /// Candidates whose samples changed between the mining read and the verification read (a
    /// blob written into a live shard): reported only when still valid with the bytes now on
    /// disk, never as an error.
    pub changed_during_slot: u64,
    /// Valid nonces, each re-verified by the single-nonce path.
    pub found: Vec<NonceProof>,
}

/// All shards' results for one slot.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlotReport {
    pub shards: Vec<ShardSlotReport>,
    pub elapsed_sec: f64,
    /// How long after the deadline the last worker returned (0 when the slot ended early).
    pub deadline_overshoot_sec: f64,
    pub bottleneck: Bottleneck,
    /// Share of the workers' wall time spent waiting in the backend (submit + reap), 0..1.
    pub io_wait_fraction: f64,
    /// The workers' busy (hashing, bookkeeping) wall time over `min(threads, CPUs) x elapsed`,
    /// 0..1: at 0.5 or more the bottleneck is the CPU, below it the disk.
    pub cpu_busy_fraction: f64,
    /// First few read errors, with file path and offset, for the user.
    pub io_error_messages: Vec<String>,
    /// Whether the slot was cut short by the stop flag (Ctrl-C).
    pub interrupted: bool,
    /// Backends this process gave up on so far (reads stuck in the kernel of a dead or very slow
    /// device after the bounded wait), leaked rather than waited for: 0 on a healthy device.
    pub leaked_backends: u64,
    /// Workers (each with its backend) out of use when the slot ended: still inside a read, or
    /// draining reads the device has not given back. They come back by themselves when the
    /// device answers; a pool has at most twice its threads in workers (`PoolIo::workers_cap`).
    pub stuck_backends: u64,
}

impl SlotReport {
    /// Why `shard` (one of this report's) ended below 100% mining power, one phrase for the user.
    pub fn why_below_full_power(&self, shard: &ShardSlotReport) -> String {
        let (wait, busy) = (
            self.io_wait_fraction * 100.0,
            self.cpu_busy_fraction * 100.0,
        );
        match self.bottleneck {
            Bottleneck::Disk => format!(
                "the disk was the limit (workers waited for reads {wait:.0}% of the time, CPUs {busy:.0}% busy): a tune run (`pora tune`) measures whether more reads in flight or another access method ({}) help, or the disk is at its ceiling",
                pora_core::Input::Method
            ),
            Bottleneck::Cpu => format!("the CPU was the limit (hashing kept the usable CPUs {busy:.0}% busy): more threads than cores will not help"),
            Bottleneck::None if self.interrupted => "the slot was interrupted".into(),
            Bottleneck::None => format!("{} nonces were dropped on read errors", shard.io_errors),
        }
    }
}

/// One nonce of `shard` through the plain single-nonce path (its files opened read-only for this
/// call, one read at a time): what `pora hash` prints. `miner` overrides the files' address.
pub fn hash_nonce(
    shard: &ShardSet,
    miner: Option<Address>,
    random_checks: u32,
    randao: &H256,
    nonce: u64,
) -> Result<NonceProof, MineError> {
    let mut verifier = verify::Verifier::new(shard.paths())?;
    let plan = plan::ShardPlan::new(shard, 0, miner);
    let none = overlay::ShardOverlay::default();
    verifier
        .proof(shard, &plan, 0, random_checks, randao, nonce, &none)?
        .map_err(verify::Unconfirmed::into_sample_error)
}

/// A configured miner over a set of shards and one opened backend factory per device pool.
///
/// The worker backends are created once in [`Miner::new`] and reused by every slot; reads a slot
/// abandoned at its deadline are drained before the next slot takes its workers. Between slots a
/// pool's reading side can be replaced (`swap_checked`): what `auto` does when the page
/// cache changes what reads fastest.
///
/// One slot at a time: `Miner::begin_slot` is the one place that checks a slot's request and
/// takes the pools' lock (a second caller gets [`MineError::Busy`]). [`Miner::mine_slot`] and
/// [`session::Session::mine_slot`] (every door's way in, which steers while it holds the lock)
/// both go through it.
pub struct Miner {
    /// What every slot reads (shards, plans, files, verifier): the slot's own data. Declared
    /// before `pools` so that the verifier is put away before the pools close.
    data: slot::SlotData,
    /// The pools, one per device, each with its reading side and (in a session) the device's
    /// steering: the only per-pool list. Its lock is the "one slot at a time" lock.
    pools: Mutex<Vec<PoolState>>,
}

/// A pool as the miner holds it: its reading side, where its shards and files sit in the
/// miner's lists, and, in a session, the device's side (its choice and `auto`'s steering).
pub(crate) struct PoolState {
    pub io: PoolIo,
    /// The pool's shards (indices into the miner's shards).
    pub shards: Range<usize>,
    /// Index in [`Miner::paths`] of the pool's first file: the factory's file 0.
    pub first_file: u32,
    /// `None` for a miner built directly ([`Miner::new`]); a session sets every pool's.
    pub side: Option<session::PoolSide>,
}

/// The pools as the one-slot lock holds them.
pub(crate) type SlotLock<'a> = MutexGuard<'a, Vec<PoolState>>;

impl Miner {
    /// The file list the factory must be opened over: every shard's files, in shard order.
    pub fn paths(shards: &[ShardSet]) -> Vec<PathBuf> {
        shards.iter().flat_map(|s| s.paths()).collect()
    }

    /// Checks the configuration (threads, depth, nonce range) and builds the miner: one pool of
    /// `config.threads` workers reading every shard through `factory`.
    pub fn new(
        shards: Vec<ShardSet>,
        factory: Arc<dyn BackendFactory>,
        config: MineConfig,
    ) -> Result<Miner, MineError> {
        let pool = Pool {
            shards: shards.len(),
            factory,
            threads: config.threads,
            depth: config.depth,
        };
        Miner::from_pools(shards, vec![pool], config)
    }

    /// A miner whose shards are split into `pools` (one per device), each with its own factory,
    /// threads and depth; `config`'s threads and depth are not used. Public for tests only
    /// (`test-support`): a session builds its pools itself.
    #[cfg(feature = "test-support")]
    pub fn with_pools(
        shards: Vec<ShardSet>,
        pools: Vec<Pool>,
        config: MineConfig,
    ) -> Result<Miner, MineError> {
        Miner::from_pools(shards, pools, config)
    }

    /// [`Miner::new`] with one factory per pool: what a session opens.
    pub(crate) fn from_pools(
        shards: Vec<ShardSet>,
        pools: Vec<Pool>,
        config: MineConfig,
    ) -> Result<Miner, MineError> {
        if shards.is_empty() {
            // The same "no shard" message as a single pool gets, before any file is opened.
            config::validate(&config, 0)?;
        }
        let data = slot::SlotData::new(shards, config)?;
        let pools = pool_states(pools, &data.file_bases, &data.config)?;
        Ok(Miner {
            data,
            pools: Mutex::new(pools),
        })
    }

    /// Replaces pool `pool`'s reading side with `io` (opened over exactly the pool's files, in
    /// [`Miner::paths`] order) and returns the one it had, to be kept for a later switch back.
    /// Between slots only: [`MineError::Busy`] while a slot runs. A slot's results never depend
    /// on the reading side, only its speed does. For tests (`test-support`): a session swaps
    /// through `swap_checked` under the lock it already holds.
    #[cfg(feature = "test-support")]
    pub fn swap_io(&self, pool: usize, io: PoolIo) -> Result<PoolIo, MineError> {
        let mut pools = self.lock_slot()?;
        let count = pools.len();
        let state = pools.get_mut(pool).ok_or_else(|| {
            MineError::config(
                Input::Pools,
                format!("pool {pool}"),
                format!("the miner has {count}"),
            )
        })?;
        swap_checked(&mut state.io, io, state.shards.len(), self.config())
    }

    /// The one-slot lock: [`MineError::Busy`] at once while a slot (or a switch) holds it. The
    /// only such guard: [`Miner::begin_slot`] and `Miner::swap_io` take it here.
    fn lock_slot(&self) -> Result<SlotLock<'_>, MineError> {
        match self.pools.try_lock() {
            Ok(guard) => Ok(guard),
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(TryLockError::WouldBlock) => Err(MineError::Busy),
        }
    }

    /// The way into a slot: checks `request` (the only check of it) and takes the one-slot
    /// lock. The slot runs with the pools the lock holds ([`Miner::run_slot`]).
    pub(crate) fn begin_slot(&self, request: &SlotRequest) -> Result<SlotLock<'_>, MineError> {
        config::validate_request(request)?;
        self.lock_slot()
    }

    /// Mines one slot with `pools` (from [`Miner::begin_slot`]), stopped by whichever of `stops`
    /// is set first.
    pub(crate) fn run_slot(
        &self,
        pools: &[PoolState],
        request: &SlotRequest,
        stops: &[&AtomicBool],
    ) -> Result<SlotReport, MineError> {
        slot::mine_slot(&self.data, pools, request, stops)
    }

    /// Sets each pool's session side, in pool order (when a session opens).
    pub(crate) fn set_sides(&mut self, sides: Vec<session::PoolSide>) {
        let pools = self
            .pools
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (pool, side) in pools.iter_mut().zip(sides) {
            pool.side = Some(side);
        }
    }

    /// The pools, waiting for a running slot (only `describe_io`, a test's, waits so).
    #[cfg(feature = "test-support")]
    fn lock_pools(&self) -> MutexGuard<'_, Vec<PoolState>> {
        self.pools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The configuration this miner runs with.
    pub fn config(&self) -> &MineConfig {
        &self.data.config
    }

    /// The backend factories' one-line descriptions (method, alignment, ring features), one per
    /// pool, joined by "; ". For tests (`test-support`).
    #[cfg(feature = "test-support")]
    pub fn describe_io(&self) -> String {
        let pools = self.lock_pools();
        let each: Vec<String> = pools.iter().map(|p| p.io.factory().describe()).collect();
        each.join("; ")
    }

    /// One nonce of shard `shard_idx` through the plain single-nonce path (the files opened with
    /// the miner, one read at a time): what `pora hash` prints and a proof needs. Runs on the
    /// caller's thread and answers when the disk does; a slot running beside it is not held by
    /// its reads (it reads through a backend of its own).
    pub fn hash(&self, shard_idx: u64, randao: &H256, nonce: u64) -> Result<NonceProof, MineError> {
        self.hash_with(shard_idx, randao, nonce, &Overlay::new())
    }

    /// [`Miner::hash`] with the samples of `overlay`'s KVs taken from memory, as a slot with that
    /// overlay reads them.
    pub fn hash_with(
        &self,
        shard_idx: u64,
        randao: &H256,
        nonce: u64,
        overlay: &Overlay,
    ) -> Result<NonceProof, MineError> {
        let data = &self.data;
        let s = data
            .plans
            .iter()
            .position(|p| p.shard_idx == shard_idx)
            .ok_or(MineError::UnknownShard(shard_idx))?;
        // A verifier of this call's own over the miner's open files: the lock is held only to
        // fork it, never during the reads. A slot re-verifying its nonces takes the same lock
        // without a time limit (`slot.rs`), so a read the disk holds here must not hold it.
        let mut verifier = data
            .verifier()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .ok_or(MineError::Busy)?
            .fork();
        let (shard, plan, base) = (&data.shards[s], &data.plans[s], data.file_bases[s]);
        let view = overlay.for_shard(&shard.geometry)?;
        let checks = data.config.random_checks;
        verifier
            .proof(shard, plan, base, checks, randao, nonce, &view)?
            .map_err(verify::Unconfirmed::into_sample_error)
    }

    /// The shards this miner mines, in report order.
    pub fn shards(&self) -> &[ShardSet] {
        &self.data.shards
    }

    /// Mines one slot for every shard, with no steering (the engine as tune and the tests drive
    /// it), until all nonces are tried, the slot time passes or `stop` is set. A second call
    /// while one runs returns [`MineError::Busy`] at once.
    pub fn mine_slot(
        &self,
        request: &SlotRequest,
        stop: &AtomicBool,
    ) -> Result<SlotReport, MineError> {
        let pools = self.begin_slot(request)?;
        self.run_slot(&pools, request, &[stop])
    }
}

/// Replaces `current` with `io` after checking `io`'s threads and depth for a pool of `shards`
/// shards; returns the replaced reading side.
pub(crate) fn swap_checked(
    current: &mut PoolIo,
    io: PoolIo,
    shards: usize,
    config: &MineConfig,
) -> Result<PoolIo, MineError> {
    let knobs = MineConfig {
        threads: io.threads,
        depth: io.depth,
        ..config.clone()
    };
    config::validate(&knobs, shards)?;
    Ok(std::mem::replace(current, io))
}

/// Checks that `pools` partition the shards in order and that each pool's threads and depth are
/// valid for its shards.
fn pool_states(
    pools: Vec<Pool>,
    file_bases: &[u32],
    config: &MineConfig,
) -> Result<Vec<PoolState>, MineError> {
    let mut states = Vec::with_capacity(pools.len());
    let mut start = 0usize;
    for pool in pools {
        let knobs = MineConfig {
            threads: pool.threads,
            depth: pool.depth,
            ..config.clone()
        };
        config::validate(&knobs, pool.shards)?;
        let shards = start..start + pool.shards;
        let first_file = *file_bases.get(start).ok_or_else(|| {
            MineError::config(
                Input::Pools,
                format!("name {} shards", shards.end),
                format!("the miner has {}", file_bases.len()),
            )
        })?;
        start = shards.end;
        states.push(PoolState {
            io: PoolIo::open(pool.factory, pool.threads, pool.depth)?,
            shards,
            first_file,
            side: None,
        });
    }
    if start != file_bases.len() {
        return Err(MineError::config(
            Input::Pools,
            format!("name {start} shards"),
            format!("the miner has {}", file_bases.len()),
        ));
    }
    Ok(states)
}
