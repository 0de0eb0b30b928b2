//! A session: shards opened by path the way every front end does (the `pora` CLI, the C ABI and
//! the service share it), mined one slot at a time.
//!
//! One slot's path, top to bottom ([`Session::mine_slot`], every door's way in): the miner checks
//! the request and takes its one-slot lock (`Miner::begin_slot`: a second caller gets
//! [`MineError::Busy`]), which holds each pool with its device's side; each `auto` device
//! decides its method from the page cache, the memory and what earlier slots measured, and
//! switches between slots when another is clearly better (`steering.rs`, model in
//! [`crate::steer`]); the miner mines the slot (`slot.rs`: backends taken from each pool's
//! shelf, one worker thread per backend, bounded end); each device learns from what the slot
//! achieved; the caller gets one [`MinedSlot`]: the report and the choice each device ran with.
//!
//! What touches the files on a slot's path runs within a budget: facts and switches
//! on each device's errand thread, replacements of stuck backends on each pool's; a session's
//! drop closes its files within a bound too.

mod forecast;
mod knobs;
mod open;
mod options;
mod steering;

pub use crate::records::{choice_for, Choice, SteeringRecord};
pub use forecast::{files_outlook, files_outlook_on, FilesOutlook, FirstSlot};
pub use open::{available_cpus, default_profile_path, open_shards};
pub use options::{OpenOptions, ProfileSource};

use crate::devices;
use crate::records::{HashRecord, SessionRecord, SlotRecord};
use crate::{swap_checked, MineConfig, MineError, Miner, PoolState, SlotReport, SlotRequest};
use open::{open_device, total_file_bytes};
use pora_core::{H256, U256};
use pora_io::host::Roots;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;
pub(crate) use steering::PoolSide;
use steering::{cache_room, workers_left_behind, SlotFacts};

/// Shards opened for mining: the miner, what was chosen for each device, and notes for the user
/// (a profile that was found stale, say).
pub struct Session {
    /// Its pools carry each device's side (`PoolSide`): the one per-pool list, whose lock is
    /// the one "one slot at a time" (`Miner::begin_slot`); doors do not keep their own.
    miner: Miner,
    /// The pools' choices as of the last slot, readable while a slot runs (`pora_status`).
    published: Mutex<Vec<Choice>>,
    /// Set by [`Session::cancel`]: the running slot stops; cleared when a slot starts.
    cancel: AtomicBool,
    /// Whether a slot runs now, and how many have started: readable while one runs.
    running: AtomicBool,
    slots_started: AtomicU64,
    notes: Vec<String>,
    /// Bytes of every shard of the session: the page cache's room is shared by all.
    session_bytes: u64,
}

/// One mined slot, as every door answers it: the report and the choice each device ran with.
#[derive(Clone, Debug)]
pub struct MinedSlot {
    /// The session's count of the slot (0-based).
    pub slot: u64,
    pub report: SlotReport,
    /// One per device, in the miner's shard order.
    pub choices: Vec<Choice>,
    /// The caller's deadline the slot ran to (the request's).
    pub deadline: Instant,
}

impl MinedSlot {
    /// The JSON record of this slot, numbered as the session counted it.
    pub fn record(&self) -> SlotRecord {
        self.record_numbered(self.slot)
    }

    /// The JSON record of this slot, numbered `slot` by a caller that counts its own; its
    /// `endLateMs` is measured now, when the answer is built.
    pub fn record_numbered(&self, slot: u64) -> SlotRecord {
        SlotRecord::new(slot, &self.report, &self.choices, self.end_late_ms())
    }

    /// How late (positive) or early (negative) the slot's answer is against the caller's
    /// deadline, milliseconds, as of now.
    pub fn end_late_ms(&self) -> f64 {
        crate::records::late_ms(self.deadline, Instant::now())
    }
}

impl Session {
    /// Opens `groups` (one group of data files per shard) read-only and builds the miner: the
    /// shards are grouped by device (docs/mining.md), and each device gets its own profile, method,
    /// threads, depth and worker pool. The miner's shards (and so every report) come device by
    /// device, in the order given within a device.
    ///
    /// The devices under every file are read once, here (those `options.io.devices` does not
    /// already cover), and that one reading serves every rule that needs them: the grouping by
    /// device, each pool's depth and its rings' submission rhythm, in every slot after.
    pub fn open(groups: &[Vec<PathBuf>], options: &OpenOptions) -> Result<Session, MineError> {
        let shards = open_shards(groups, options.kv_entries_bits)?;
        let paths = Miner::paths(&shards);
        let mut options = options.clone();
        options.io.devices = options.io.devices.covering(&paths, &Roots::default());
        let options = &options;
        let devices = devices::by_known(
            shards.iter().map(|s| s.files[0].path.as_path()),
            &options.io.devices,
        );
        let several = devices.len() > 1;
        let session_bytes = total_file_bytes(&paths);
        let room = cache_room();
        let (mut ordered, mut pools, mut sides, mut notes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (device, members) in devices.iter().zip(devices::split(shards, &devices)) {
            let user_files: Vec<PathBuf> = device
                .members
                .iter()
                .flat_map(|&i| groups[i].iter().cloned())
                .collect();
            let opened = open_device(
                &members,
                &user_files,
                device,
                options,
                room.as_ref(),
                session_bytes,
            )?;
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
        let mut miner = Miner::from_pools(ordered, pools, config)?;
        let published = Mutex::new(sides.iter().map(|s| s.choice.clone()).collect());
        miner.set_sides(sides);
        Ok(Session {
            miner,
            published,
            notes,
            session_bytes,
            cancel: AtomicBool::new(false),
            running: AtomicBool::new(false),
            slots_started: AtomicU64::new(0),
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

    /// Mines one slot by the request's deadline (the caller's, fixed at entry): decides each
    /// `auto` device's method (facts, model, switch: each bounded, on the slot's own time), mines until every nonce is tried, the slot's time
    /// passes, `stop` is set or [`Session::cancel`] is called, and learns from it. A second call
    /// while one runs returns [`MineError::Busy`] at once.
    pub fn mine_slot(
        &self,
        request: &SlotRequest,
        stop: &AtomicBool,
    ) -> Result<MinedSlot, MineError> {
        self.mine_slot_until(request, &[stop])
    }

    /// [`Session::mine_slot`] stopped by whichever of `stops` is set first (the C ABI passes its
    /// cancel token and its handle's closed flag).
    pub fn mine_slot_until(
        &self,
        request: &SlotRequest,
        stops: &[&AtomicBool],
    ) -> Result<MinedSlot, MineError> {
        let mut pools = self.miner.begin_slot(request)?;
        self.cancel.store(false, Ordering::Release);
        let slot = self.slots_started.fetch_add(1, Ordering::AcqRel);
        let _running = Running::start(&self.running);
        let steered = pools
            .iter()
            .any(|p| p.side.as_ref().is_some_and(|s| s.steering.is_some()));
        let room = if steered { cache_room() } else { None };
        let config = self.miner.config();
        let facts = SlotFacts {
            request,
            random_checks: config.random_checks,
            room: room.as_ref(),
            session_bytes: self.session_bytes,
        };
        let mut reads_before = Vec::with_capacity(pools.len());
        for pool in pools.iter_mut() {
            let PoolState {
                io, shards, side, ..
            } = pool;
            let Some(side) = side.as_mut() else {
                reads_before.push((None, None, 0));
                continue;
            };
            let shards = shards.len();
            side.steer(&mut |new| swap_checked(io, new, shards, config), &facts);
            reads_before.push((side.device_reads(), io.factory().cache_reads(), io.stuck()));
        }
        let mut all_stops = stops.to_vec();
        all_stops.push(&self.cancel);
        let report = self.miner.run_slot(&pools, request, &all_stops)?;
        for (pool, before) in pools.iter_mut().zip(reads_before) {
            let cache_reads = match (before.1, pool.io.factory().cache_reads()) {
                (Some(a), Some(b)) => Some(b.since(a)),
                _ => None,
            };
            let left_behind = workers_left_behind(before.2, pool.io.stuck(), pool.io.workers_cap());
            if let Some(side) = pool.side.as_mut() {
                side.learn(&report, request, before.0, cache_reads, left_behind);
            }
        }
        let choices: Vec<Choice> = pools
            .iter()
            .filter_map(|p| p.side.as_ref().map(|s| s.choice.clone()))
            .collect();
        drop(pools);
        *self
            .published
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = choices.clone();
        Ok(MinedSlot {
            slot,
            report,
            choices,
            deadline: request.deadline,
        })
    }

    /// Stops the running slot, if any: it ends within its bound with partial counts. Returns
    /// whether one was running.
    pub fn cancel(&self) -> bool {
        self.cancel.store(true, Ordering::Release);
        self.slot_running()
    }

    /// Whether a slot runs now (deciding, mining or learning).
    pub fn slot_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Slots started so far.
    pub fn slots_started(&self) -> u64 {
        self.slots_started.load(Ordering::Acquire)
    }

    /// One nonce of the shard with index `shard_idx` through the plain single-nonce path, as every
    /// door answers it (`pora hash`, the C ABI's `pora_hash` and `pora_hash_overlay`, Go's
    /// `Engine.Hash`, `pora_hash` of the service): with the miner address hash0 used (the
    /// configured one, else the shard files'), whether the nonce is valid given `required`, and
    /// the samples of `overlay`'s KVs taken from memory as a slot with that overlay reads them.
    pub fn hash_record(
        &self,
        shard_idx: u64,
        randao: &H256,
        nonce: u64,
        required: Option<U256>,
        overlay: Option<&crate::Overlay>,
    ) -> Result<HashRecord, MineError> {
        let files_miner = self
            .miner
            .shards()
            .iter()
            .find(|s| s.geometry.shard_idx == shard_idx)
            .map(|s| s.miner)
            .ok_or(MineError::UnknownShard(shard_idx))?;
        let proof = match overlay {
            Some(overlay) => self.miner.hash_with(shard_idx, randao, nonce, overlay)?,
            None => self.miner.hash(shard_idx, randao, nonce)?,
        };
        let miner = self.miner.config().miner.unwrap_or(files_miner);
        Ok(HashRecord::new(proof, shard_idx, miner, *randao, required))
    }

    /// What was opened, as the C ABI's `pora_open` and the service's `pora_status` answer it.
    pub fn record(&self) -> SessionRecord<'_> {
        SessionRecord::new(
            self.miner.shards(),
            self.choices(),
            self.miner.config().random_checks,
            &self.notes,
        )
    }
}

/// Marks a slot as running until dropped (also when the slot panics).
struct Running<'a>(&'a AtomicBool);

impl<'a> Running<'a> {
    fn start(flag: &'a AtomicBool) -> Running<'a> {
        flag.store(true, Ordering::Release);
        Running(flag)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
