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
pub mod lanes;
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
pub use pool::{Pool, PoolIo};
pub use worker::MAX_RETRIES;

use pool::PoolState;
use pora_core::{Address, Input, NonceProof, ShardSet, H256, U256};
use pora_io::BackendFactory;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
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
    /// device answers; a pool has at most twice its threads in workers ([`PoolIo::workers_cap`]).
    pub stuck_backends: u64,
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
/// pool's reading side can be replaced ([`Miner::swap_io`]): what `auto` does when the page
/// cache changes what reads fastest.
pub struct Miner {
    shards: Vec<ShardSet>,
    config: MineConfig,
    /// The pools with their backends (also the "one slot at a time" lock).
    pools: Mutex<Vec<PoolState>>,
    plans: Vec<plan::ShardPlan>,
    /// Index of each shard's first file in [`Miner::paths`].
    file_bases: Vec<u32>,
    paths: Vec<PathBuf>,
    /// `None` only while the miner is being dropped.
    verifier: Mutex<Option<verify::Verifier>>,
    /// The thread the verifier reads on, and closes its files on (`slot.rs`).
    verify_errands: errand::Errands,
}

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
        Miner::with_pools(shards, vec![pool], config)
    }

    /// A miner whose shards are split into `pools` (one per device), each with its own factory,
    /// threads and depth; `config`'s threads and depth are not used.
    pub fn with_pools(
        shards: Vec<ShardSet>,
        pools: Vec<Pool>,
        config: MineConfig,
    ) -> Result<Miner, MineError> {
        let paths = Miner::paths(&shards);
        if paths.len() > u32::MAX as usize {
            return Err(MineError::config(
                Input::Files,
                paths.len(),
                "too many files",
            ));
        }
        let mut file_bases = Vec::with_capacity(shards.len());
        let mut next = 0u32;
        for shard in &shards {
            file_bases.push(next);
            next += shard.files.len() as u32;
        }
        let pools = pool_states(pools, &file_bases, &config)?;
        let plans = shards
            .iter()
            .zip(&file_bases)
            .map(|(s, &base)| plan::ShardPlan::new(s, base, config.miner))
            .collect();
        let verifier = verify::Verifier::new(paths.clone())?;
        Ok(Miner {
            verifier: Mutex::new(Some(verifier)),
            verify_errands: errand::Errands::new("pora-verifier"),
            shards,
            config,
            pools: Mutex::new(pools),
            plans,
            file_bases,
            paths,
        })
    }

    /// Replaces pool `pool`'s reading side with `io` (opened over exactly the pool's files, in
    /// [`Miner::paths`] order) and returns the one it had, to be kept for a later switch back.
    /// Between slots only: [`MineError::Busy`] while a slot runs. A slot's results never depend
    /// on the reading side, only its speed does.
    pub fn swap_io(&self, pool: usize, io: PoolIo) -> Result<PoolIo, MineError> {
        let mut pools = match self.pools.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Err(MineError::Busy),
        };
        let count = pools.len();
        let state = pools.get_mut(pool).ok_or_else(|| {
            MineError::config(
                Input::Pools,
                format!("pool {pool}"),
                format!("the miner has {count}"),
            )
        })?;
        let knobs = MineConfig {
            threads: io.threads,
            depth: io.depth,
            ..self.config.clone()
        };
        config::validate(&knobs, state.shards.len())?;
        let old = std::mem::replace(&mut state.io, io);
        Ok(old)
    }

    fn lock_pools(&self) -> std::sync::MutexGuard<'_, Vec<PoolState>> {
        self.pools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The configuration this miner runs with.
    pub fn config(&self) -> &MineConfig {
        &self.config
    }

    /// The reads pool `pool`'s backends have classified as cache hits or not, cumulative, where
    /// its factory counts them ([`pora_io::BackendFactory::cache_reads`]); `None` elsewhere or for
    /// a pool the miner does not have. Blocks while a slot runs.
    pub fn cache_reads(&self, pool: usize) -> Option<pora_io::CacheReads> {
        self.lock_pools().get(pool)?.io.factory().cache_reads()
    }

    /// The backend factories' one-line descriptions (method, alignment, ring features), one per
    /// pool, joined by "; ".
    pub fn describe_io(&self) -> String {
        let pools = self.lock_pools();
        let each: Vec<String> = pools.iter().map(|p| p.io.factory().describe()).collect();
        each.join("; ")
    }

    /// One nonce of shard `shard_idx` through the plain single-nonce path (the files opened with
    /// the miner, one read at a time): what `pora hash` prints and a proof needs.
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
        let s = self
            .plans
            .iter()
            .position(|p| p.shard_idx == shard_idx)
            .ok_or(MineError::UnknownShard(shard_idx))?;
        let mut guard = self
            .verifier
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let verifier = guard.as_mut().ok_or(MineError::Busy)?;
        let (shard, plan, base) = (&self.shards[s], &self.plans[s], self.file_bases[s]);
        let view = overlay.for_shard(&shard.geometry)?;
        let checks = self.config.random_checks;
        verifier
            .proof(shard, plan, base, checks, randao, nonce, &view)?
            .map_err(verify::Unconfirmed::into_sample_error)
    }

    /// The shards this miner mines, in report order.
    pub fn shards(&self) -> &[ShardSet] {
        &self.shards
    }

    /// Mines one slot for every shard, until all nonces are tried, the slot time passes or
    /// `stop` is set. A second call while one runs returns [`MineError::Busy`] at once.
    pub fn mine_slot(
        &self,
        request: &SlotRequest,
        stop: &AtomicBool,
    ) -> Result<SlotReport, MineError> {
        self.mine_slot_until(request, &[stop])
    }

    /// [`Miner::mine_slot`] stopped by whichever of `stops` is set first.
    pub fn mine_slot_until(
        &self,
        request: &SlotRequest,
        stops: &[&AtomicBool],
    ) -> Result<SlotReport, MineError> {
        config::validate_request(request)?;
        slot::mine_slot(self, request, stops)
    }
}

/// How long dropping a miner waits for the verifier's files to close: closing a file of a
/// stalled disk waits for the device (FUSE flushes on close), and `Close`, `pora serve`'s stop
/// and process exit must not. A healthy disk closes long before this, so callers see the usual
/// synchronous close.
const CLOSE_WAIT: Duration = Duration::from_millis(200);

impl Drop for Miner {
    /// The pools' workers end on their own threads and their files close on their errand
    /// threads (`pool.rs`); the verifier's close on its own.
    fn drop(&mut self) {
        let verifier = self
            .verifier
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if cfg!(windows) {
            // Windows refuses to delete a file a handle holds: close on the caller's thread
            // (as a pool does there, pool.rs).
            drop(verifier);
        } else {
            self.verify_errands.dispose(verifier, CLOSE_WAIT);
        }
    }
}

/// Checks that `pools` partition the shards in order and that each pool's threads and depth are
/// valid for its shards.
fn pool_states(
    pools: Vec<Pool>,
    file_bases: &[u32],
    config: &MineConfig,
) -> Result<Vec<PoolState>, MineError> {
    if file_bases.is_empty() {
        // The same "no shard" message as a single pool gets.
        config::validate(config, 0)?;
    }
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
