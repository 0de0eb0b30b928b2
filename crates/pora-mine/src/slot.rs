//! One slot: drain what the previous slot abandoned, run one scoped thread per
//! worker backend of every device pool, sum their counts, re-verify the nonces to report and
//! build the report.
//!
//! Live shards: es-node writes new blobs into the shards it mines. A candidate whose samples
//! changed between the mining read and the verification read is expected, not an error: the
//! verification recomputes the nonce from the bytes on disk now (the bytes a proof will use),
//! reports it only if it is still valid, and counts it in `changedDuringSlot`.

use crate::errand::Errands;
use crate::lanes::Hash0Prefix;
use crate::overlay::ShardOverlay;
use crate::plan::ShardPlan;
use crate::pool::{Handoff, Reply, SlotJob, WorkerThread};
use crate::verify::{Unconfirmed, Verifier};
use crate::worker::{
    Assignment, End, Published, ShardTally, SlotShared, ValidNonce, WorkerOutcome,
};
use crate::{
    Bottleneck, Find, MineConfig, MineError, OnIoError, PoolState, ShardSlotReport, SlotReport,
    SlotRequest,
};
use pora_core::difficulty::meets;
use pora_core::{Input, NonceProof, ShardSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long past its deadline (or past a stop, or another worker's failure) a slot waits for a
/// worker stuck inside one read before leaving it behind: the bound on a slot's overshoot that
/// no disk can stretch (plus the re-verification of the nonces to report).
pub const STRAGGLER_WAIT: Duration = Duration::from_millis(500);
/// How long past the later of the deadline and the workers' end the slot waits for the
/// re-verification of the nonces it reports. With [`STRAGGLER_WAIT`]: a slot ends at most 1 s
/// past its deadline whatever the disk does.
pub const VERIFY_WAIT: Duration = Duration::from_millis(500);
/// How often the slot looks at the caller's stop flag while its workers run.
const POLL_WORKERS: Duration = Duration::from_millis(10);
/// Largest block of nonces a worker claims from a shard's counter at once.
const MAX_CLAIM_BLOCK: u64 = 64;
/// Read-error messages kept in a report.
const MAX_REPORTED_MESSAGES: usize = 16;

/// How long dropping a miner waits for the verifier's files to close: closing a file of a
/// stalled disk waits for the device (FUSE flushes on close), and `Close`, `pora serve`'s stop
/// and process exit must not. A healthy disk closes long before this, so callers see the usual
/// synchronous close.
const CLOSE_WAIT: Duration = Duration::from_millis(200);

/// What every slot of a miner reads, fixed when the miner is built: the shards, their plans and
/// files, the knobs, and the verifier that re-reads the nonces a slot reports. The pools (the
/// reading side, which a switch replaces) are not here: a slot gets them from the one-slot lock.
pub(crate) struct SlotData {
    pub shards: Vec<ShardSet>,
    pub config: MineConfig,
    pub plans: Vec<ShardPlan>,
    /// Index of each shard's first file in `paths`.
    pub file_bases: Vec<u32>,
    /// Every shard's files, in shard order ([`crate::Miner::paths`]).
    pub paths: Vec<PathBuf>,
    /// `None` only while the miner is being dropped.
    verifier: Mutex<Option<Verifier>>,
    /// The thread the verifier reads on, and closes its files on.
    verify_errands: Errands,
}

impl SlotData {
    /// Plans the shards and opens the verifier over their files (read-only).
    pub fn new(shards: Vec<ShardSet>, config: MineConfig) -> Result<SlotData, MineError> {
        let paths = crate::Miner::paths(&shards);
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
        let plans = shards
            .iter()
            .zip(&file_bases)
            .map(|(s, &base)| ShardPlan::new(s, base, config.miner))
            .collect();
        let verifier = Verifier::new(paths.clone())?;
        Ok(SlotData {
            verifier: Mutex::new(Some(verifier)),
            verify_errands: Errands::new("pora-verifier"),
            shards,
            config,
            plans,
            file_bases,
            paths,
        })
    }

    /// The verifier (`None` only while the miner is being dropped): the single-nonce path of
    /// [`crate::Miner::hash`] forks it (same open files, a backend of its own) and reads
    /// through the fork, so the lock is never held during a read but by the slot's own
    /// verification, which hands the verifier to its thread and waits on it within a bound.
    pub fn verifier(&self) -> &Mutex<Option<Verifier>> {
        &self.verifier
    }
}

impl Drop for SlotData {
    /// The verifier's files close on its errand thread, within [`CLOSE_WAIT`] (the pools' close
    /// on theirs, `pool.rs`).
    fn drop(&mut self) {
        let verifier = self
            .verifier
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
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

/// What worker `index` of `pool` mines: the pool's shards and files, its depth.
fn assignment(pool: &PoolState, index: usize) -> Assignment {
    Assignment {
        shards: pool.shards.clone(),
        first_file: pool.first_file,
        inline_reads: pool.io.factory().capabilities().completes_inline,
        depth: pool.io.depth,
        index,
    }
}

/// Mines one slot with `pools`, the miner's pools as its one-slot lock holds them (the caller
/// has checked the request and holds the lock: see [`crate::Miner::begin_slot`]).
pub(crate) fn mine_slot(
    data: &SlotData,
    pools: &[PoolState],
    request: &SlotRequest,
    stops: &[&AtomicBool],
) -> Result<SlotReport, MineError> {
    let config = &data.config;
    let randao = &request.randao;
    // The slot runs on the caller's clock: its deadline was fixed when the door took the call,
    // so steering and taking the backends (bounded: nothing here opens, closes or waits for the
    // device; see `pool`) spend the slot's own time.
    let taken = take_workers(pools, request.deadline, stops);
    let short: Vec<String> = taken.iter().filter_map(|t| t.short.clone()).collect();
    let shards = data.plans.len();
    let overlays = shard_overlays(data, request)?;
    let nonce_count = request.nonces.end - request.nonces.start;
    let chains: u64 = pools
        .iter()
        .zip(&taken)
        .map(|(p, t)| (t.workers.len() * p.io.depth) as u64)
        .sum::<u64>()
        .max(1);
    let shared = Arc::new(SlotShared {
        plans: data.plans.clone(),
        prefixes: data
            .plans
            .iter()
            .map(|p| p.prefix(randao))
            .collect::<Vec<Hash0Prefix>>(),
        paths: data.paths.clone(),
        overlays,
        nonces: request.nonces.clone(),
        claimed: (0..shards).map(|_| AtomicU64::new(0)).collect(),
        found_first: (0..shards).map(|_| AtomicBool::new(false)).collect(),
        // Small ranges get small blocks so every chain has work; large ones amortise the claim.
        claim_block: (nonce_count / (chains * 4)).clamp(1, MAX_CLAIM_BLOCK),
        random_checks: config.random_checks as u8,
        required: request.required_diff.map(|r| r.to_be_bytes::<32>()),
        find: request.find,
        on_io_error: config.on_io_error,
        deadline: request.deadline,
        stop: AtomicBool::new(stopped(stops)),
        abort: AtomicBool::new(false),
    });
    let (results, stragglers) = run_workers(data, pools, taken, &shared, stops);
    let ended = Instant::now();
    let stuck_backends = pools.iter().map(|p| p.io.stuck() as u64).sum();
    let outcomes = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    let mut report = summarize(
        data,
        request,
        &outcomes,
        ended.saturating_duration_since(request.entered),
        ended.saturating_duration_since(shared.deadline),
    );
    report.io_error_messages.extend(short);
    report.io_error_messages.extend(stragglers);
    attach_found(data, request, &outcomes, &shared, &mut report)?;
    report.leaked_backends = pora_io::leaked_backends();
    report.stuck_backends = stuck_backends;
    Ok(report)
}

/// Every pool's workers for the slot. When no pool has one (every worker held by a device that
/// stopped answering), the slot waits for the first to come back until its deadline and mines the
/// rest of its time with what came: a stalled disk keeps the slot's rhythm, and a disk that
/// comes back mid-slot is mined at once.
fn take_workers(
    pools: &[PoolState],
    deadline: Instant,
    stops: &[&AtomicBool],
) -> Vec<crate::pool::Taken> {
    loop {
        let taken: Vec<_> = pools.iter().map(|p| p.io.take_for_slot()).collect();
        let none = taken.iter().all(|t| t.workers.is_empty());
        if !none || Instant::now() >= deadline || stopped(stops) {
            return taken;
        }
        std::thread::sleep(POLL_WORKERS.min(deadline.saturating_duration_since(Instant::now())));
    }
}

/// Whether any of the caller's stop flags is set.
fn stopped(stops: &[&AtomicBool]) -> bool {
    stops.iter().any(|s| s.load(Ordering::Relaxed))
}

/// A worker the slot handed a job to.
struct Started {
    pool: usize,
    index: usize,
    worker: WorkerThread,
    published: Arc<Mutex<Published>>,
    handoff: Arc<Handoff>,
    /// Its reply: whether no read of its backend is left in the kernel.
    replied: Option<bool>,
}

/// Hands one job to every taken worker and collects their outcomes, waiting at most until the
/// deadline (or the stop, or another worker's failure) plus [`STRAGGLER_WAIT`]. A worker still
/// inside a read then (a synchronous read that the OS holds: a hung disk, a FUSE or network file
/// system that does not answer) is left behind: it comes back to its pool by itself when the
/// read returns (`pool.rs`), and what it counted up to its last batch is kept ([`Published`]).
/// Nothing here starts a thread, opens, closes or joins anything that waits for the device.
/// Returns the outcomes and one message per worker left behind.
fn run_workers(
    data: &SlotData,
    pools: &[PoolState],
    taken: Vec<crate::pool::Taken>,
    shared: &Arc<SlotShared>,
    stops: &[&AtomicBool],
) -> (Vec<Result<WorkerOutcome, MineError>>, Vec<String>) {
    let (tx, rx) = mpsc::channel::<Reply>();
    let mut results = Vec::new();
    let mut started = hand_out_jobs(pools, taken, shared, tx, &mut results);
    let panic = collect(&mut started, &rx, shared, stops, &mut results);
    // Whoever is still out ends at its next look at the flags.
    shared.abort.store(true, Ordering::Relaxed);
    let mut messages = Vec::new();
    let mut late = Vec::new();
    for (place, s) in started.into_iter().enumerate() {
        let pool = &pools[s.pool].io;
        if let Some(idle) = s.replied {
            pool.settle(s.worker, idle);
            continue;
        }
        match pool.leave_behind(s.worker, &s.handoff) {
            Ok(()) => {}
            // It returned in the meantime: its reply is in the channel.
            Err(worker) => {
                late.push((s.pool, place, worker));
                continue;
            }
        }
        // What it counted up to its last batch is reported; the read it is stuck in (and that
        // read's nonce) is not.
        let published =
            std::mem::take(&mut *s.published.lock().unwrap_or_else(PoisonError::into_inner));
        results.push(Ok(published.into_outcome(data.plans.len())));
        messages.push(format!(
            "worker {} of pool {} ({}) was still inside a read {} ms after the slot's end: left behind; it comes back to the pool when the read returns; its counts up to that read are kept",
            s.index,
            s.pool,
            pool.method(),
            STRAGGLER_WAIT.as_millis()
        ));
    }
    let replies: Vec<Reply> = rx.try_iter().collect();
    for (p, place, worker) in late {
        let idle = replies.iter().any(|r| r.place == place && r.idle);
        pools[p].io.settle(worker, idle);
    }
    for reply in replies {
        if let Ok(result) = reply.outcome {
            results.push(result);
        }
    }
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
    (results, messages)
}

/// Sends one job to every taken worker, each replying on `reply`; a worker whose thread is gone
/// counts as an error in `results`. Returns the workers that took their job.
fn hand_out_jobs(
    pools: &[PoolState],
    taken: Vec<crate::pool::Taken>,
    shared: &Arc<SlotShared>,
    reply: mpsc::Sender<Reply>,
    results: &mut Vec<Result<WorkerOutcome, MineError>>,
) -> Vec<Started> {
    let mut started: Vec<Started> = Vec::new();
    for (p, (pool, taken)) in pools.iter().zip(taken).enumerate() {
        for (i, worker) in taken.workers.into_iter().enumerate() {
            let (published, handoff) = (Arc::new(Mutex::new(Published::default())), Handoff::new());
            let job = SlotJob {
                shared: shared.clone(),
                assignment: assignment(pool, i),
                published: published.clone(),
                handoff: handoff.clone(),
                reply: reply.clone(),
                place: started.len(),
            };
            if worker.mine(job).is_err() {
                // Its thread is gone (it panicked outside a job): the pool is one worker short
                // until a replacement is opened off the slot's path.
                results.push(Err(worker_gone()));
                continue;
            }
            started.push(Started {
                pool: p,
                index: i,
                worker,
                published,
                handoff,
                replied: None,
            });
        }
    }
    started
}

fn worker_gone() -> MineError {
    MineError::from(pora_io::IoError::Os {
        what: "handing a slot to a worker thread",
        source: std::io::Error::other("the worker thread has ended"),
    })
}

/// Receives the workers' replies until all are in or the slot's bound has passed. Returns a
/// worker's panic, if any.
fn collect(
    started: &mut [Started],
    rx: &mpsc::Receiver<Reply>,
    shared: &SlotShared,
    stops: &[&AtomicBool],
    results: &mut Vec<Result<WorkerOutcome, MineError>>,
) -> Option<Box<dyn std::any::Any + Send>> {
    let mut panic = None;
    let mut returned = 0usize;
    let mut give_up = shared.deadline + STRAGGLER_WAIT;
    let mut ending_seen = false;
    while returned < started.len() {
        match rx.recv_timeout(POLL_WORKERS) {
            Ok(reply) => {
                returned += 1;
                started[reply.place].replied = Some(reply.idle);
                match reply.outcome {
                    Ok(result) => results.push(result),
                    Err(payload) => {
                        shared.abort.store(true, Ordering::Relaxed);
                        panic.get_or_insert(payload);
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now = Instant::now();
        if stopped(stops) {
            shared.stop.store(true, Ordering::Relaxed);
        }
        let ending = shared.stop.load(Ordering::Relaxed) || shared.abort.load(Ordering::Relaxed);
        if ending && !ending_seen {
            ending_seen = true;
            give_up = give_up.min(now + STRAGGLER_WAIT);
        }
        if now >= give_up {
            break;
        }
    }
    panic
}

/// Each shard's part of the request's overlay (empty views without one).
fn shard_overlays(data: &SlotData, request: &SlotRequest) -> Result<Vec<ShardOverlay>, MineError> {
    data.shards
        .iter()
        .map(|shard| match &request.overlay {
            Some(overlay) => overlay.for_shard(&shard.geometry),
            None => Ok(ShardOverlay::default()),
        })
        .collect()
}

fn summarize(
    data: &SlotData,
    request: &SlotRequest,
    outcomes: &[WorkerOutcome],
    elapsed: Duration,
    past_deadline: Duration,
) -> SlotReport {
    let nonce_limit = request.nonces.end - request.nonces.start;
    let elapsed_sec = elapsed.as_secs_f64();
    let shards = data
        .plans
        .iter()
        .enumerate()
        .map(|(s, plan)| {
            let total = outcomes
                .iter()
                .fold(ShardTally::default(), |acc, o| ShardTally {
                    tried: acc.tried + o.tallies[s].tried,
                    samples: acc.samples + o.tallies[s].samples,
                    overlay_samples: acc.overlay_samples + o.tallies[s].overlay_samples,
                    io_errors: acc.io_errors + o.tallies[s].io_errors,
                });
            ShardSlotReport {
                shard: plan.shard_idx,
                randao: request.randao,
                nonce_limit,
                nonces_tried: total.tried,
                mining_power: (total.tried as f64 / nonce_limit as f64).min(1.0),
                elapsed_sec,
                samples_read: total.samples,
                samples_per_sec: if elapsed_sec > 0.0 {
                    total.samples as f64 / elapsed_sec
                } else {
                    0.0
                },
                samples_from_overlay: total.overlay_samples,
                io_errors: total.io_errors,
                changed_during_slot: 0,
                found: Vec::new(),
            }
        })
        .collect();
    let hit_deadline = outcomes.iter().any(|o| o.end == End::Deadline);
    SlotReport {
        shards,
        elapsed_sec,
        deadline_overshoot_sec: if hit_deadline {
            past_deadline.as_secs_f64()
        } else {
            0.0
        },
        bottleneck: bottleneck(outcomes, cpu_busy_fraction(outcomes, elapsed)),
        io_wait_fraction: io_wait_fraction(outcomes),
        cpu_busy_fraction: cpu_busy_fraction(outcomes, elapsed),
        io_error_messages: outcomes
            .iter()
            .flat_map(|o| o.messages.iter().cloned())
            .take(MAX_REPORTED_MESSAGES)
            .collect(),
        interrupted: outcomes.iter().any(|o| o.end == End::Stopped),
        leaked_backends: 0,
        stuck_backends: 0,
    }
}

/// `None` when every worker ran out of work; otherwise Cpu when the workers' hashing and
/// bookkeeping filled at least half of the CPU time they could use, else Disk.
fn bottleneck(outcomes: &[WorkerOutcome], cpu_busy: f64) -> Bottleneck {
    if outcomes.iter().all(|o| o.end == End::Done) {
        return Bottleneck::None;
    }
    if cpu_busy >= 0.5 {
        Bottleneck::Cpu
    } else {
        Bottleneck::Disk
    }
}

/// Busy (non-waiting) wall time of all workers over the CPU time they could have had:
/// `min(threads, CPUs) x elapsed`. With more threads than CPUs (synchronous methods), a worker
/// preempted while hashing still counts as busy, which is right: the CPUs were the limit.
fn cpu_busy_fraction(outcomes: &[WorkerOutcome], elapsed: Duration) -> f64 {
    let cpus = crate::defaults::available_cpus();
    let usable = outcomes.len().min(cpus) as f64 * elapsed.as_secs_f64();
    let busy: Duration = outcomes.iter().map(|o| o.busy).sum();
    if usable > 0.0 {
        (busy.as_secs_f64() / usable).min(1.0)
    } else {
        0.0
    }
}

fn io_wait_fraction(outcomes: &[WorkerOutcome]) -> f64 {
    let wait: Duration = outcomes.iter().map(|o| o.io_wait).sum();
    let busy: Duration = outcomes.iter().map(|o| o.busy).sum();
    let total = (wait + busy).as_secs_f64();
    if total > 0.0 {
        wait.as_secs_f64() / total
    } else {
        0.0
    }
}

/// What the verifier thread tells the slot, in order.
enum Verified {
    /// A proof to report for `shard`.
    Found {
        shard: usize,
        proof: NonceProof,
    },
    /// A candidate of `shard` whose samples changed under the slot (a live shard).
    Changed {
        shard: usize,
    },
    /// A candidate whose samples could not be read back.
    Unconfirmed(Unconfirmed),
    Failed(MineError),
    /// Every candidate was looked at; the verifier goes back to the miner.
    Done(Verifier),
}

/// Re-verifies the candidates each shard reports (all, the best, or the lowest-nonce one for
/// `--find first`) from the bytes on disk now and attaches their proofs. The reads run on a
/// thread the slot waits for at most [`VERIFY_WAIT`] past the later of the deadline and now: a
/// candidate not verified by then (a hung disk) is withheld, never reported unverified, and the
/// miner keeps a fork of the verifier (same open files) for the next slot.
fn attach_found(
    data: &SlotData,
    request: &SlotRequest,
    outcomes: &[WorkerOutcome],
    shared: &Arc<SlotShared>,
    report: &mut SlotReport,
) -> Result<(), MineError> {
    let candidates = candidates_to_verify(report.shards.len(), request.find, outcomes);
    let stop_on_error = data.config.on_io_error == OnIoError::Stop;
    // The last slot's verification may be just past its answer: a moment to clear.
    if !candidates.iter().all(Vec::is_empty)
        && !data.verify_errands.free_within(Duration::from_millis(100))
    {
        report.io_error_messages.push(held_verifier());
        return Ok(());
    }
    if candidates.iter().all(Vec::is_empty) {
        return Ok(());
    }
    let mut guard = data.verifier.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(kept) = guard.as_ref() else {
        return Err(MineError::Busy);
    };
    let fork = kept.fork();
    let verifier = guard.replace(fork).expect("checked above");
    let job = VerifyJob {
        shards: data.shards.clone(),
        plans: data.plans.clone(),
        bases: data.file_bases.clone(),
        checks: data.config.random_checks,
        request: request.clone(),
        stop_on_error,
        shared: shared.clone(),
    };
    let Some(rx) = job.start(&data.verify_errands, verifier, candidates) else {
        report.io_error_messages.push(held_verifier());
        return Ok(());
    };
    let give_up = Instant::now().max(shared.deadline) + VERIFY_WAIT;
    loop {
        let wait = give_up.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(Verified::Found { shard, proof }) => report.shards[shard].found.push(proof),
            Ok(Verified::Changed { shard }) => report.shards[shard].changed_during_slot += 1,
            Ok(Verified::Unconfirmed(Unconfirmed { path, offset, why })) if stop_on_error => {
                return Err(MineError::Read { path, offset, why });
            }
            Ok(Verified::Unconfirmed(Unconfirmed { path, offset, why })) => {
                if report.io_error_messages.len() < MAX_REPORTED_MESSAGES {
                    report.io_error_messages.push(format!(
                        "{}: read at offset {offset} failed: {why}; not reported",
                        path.display()
                    ));
                }
            }
            Ok(Verified::Failed(e)) => return Err(e),
            Ok(Verified::Done(verifier)) => {
                *guard = Some(verifier);
                return Ok(());
            }
            Err(_) => {
                report.io_error_messages.push(format!(
                    "re-verifying the nonces to report took more than {} ms past the deadline (a hung read): the rest are withheld, not reported unverified",
                    VERIFY_WAIT.as_millis()
                ));
                return Ok(());
            }
        }
    }
}

fn held_verifier() -> String {
    "the verifier is still inside a read an earlier slot left (a hung disk): this slot's nonces are withheld, not reported unverified".to_string()
}

/// Per shard, the candidates in the order they are verified: by hash1 for `--find best`, else by
/// nonce.
fn candidates_to_verify(
    shards: usize,
    find: Find,
    outcomes: &[WorkerOutcome],
) -> Vec<Vec<ValidNonce>> {
    (0..shards)
        .map(|s| {
            let mut candidates: Vec<ValidNonce> = outcomes
                .iter()
                .flat_map(|o| o.candidates.iter().copied())
                .filter(|c| c.shard == s)
                .collect();
            match find {
                Find::Best => candidates.sort_by_key(|c| c.hash1),
                Find::First | Find::All => candidates.sort_by_key(|c| c.nonce),
            }
            candidates
        })
        .collect()
}

/// What the verifier thread needs of the miner and the slot.
struct VerifyJob {
    shards: Vec<pora_core::ShardSet>,
    plans: Vec<crate::plan::ShardPlan>,
    bases: Vec<u32>,
    checks: u32,
    request: SlotRequest,
    stop_on_error: bool,
    shared: Arc<SlotShared>,
}

impl VerifyJob {
    /// Verifies `candidates` on the miner's verifier thread, telling the slot as it goes; `None`
    /// when that thread is still held by an earlier slot's read.
    fn start(
        self,
        errands: &crate::errand::Errands,
        mut verifier: Verifier,
        candidates: Vec<Vec<ValidNonce>>,
    ) -> Option<mpsc::Receiver<Verified>> {
        let (tx, rx) = mpsc::channel::<Verified>();
        errands
            .start(move || {
                for (s, candidates) in candidates.iter().enumerate() {
                    if !self.verify_shard(&mut verifier, s, candidates, &tx) {
                        return;
                    }
                }
                let _ = tx.send(Verified::Done(verifier));
            })
            .ok()
            .map(|()| rx)
    }

    /// Verifies shard `s`'s candidates until the find policy has what it reports; `false` when
    /// the slot should hear no more (it stopped listening, or the error ends the slot).
    fn verify_shard(
        &self,
        verifier: &mut Verifier,
        s: usize,
        candidates: &[ValidNonce],
        tx: &mpsc::Sender<Verified>,
    ) -> bool {
        let (shard, plan, base) = (&self.shards[s], &self.plans[s], self.bases[s]);
        let (randao, overlay) = (&self.request.randao, &self.shared.overlays[s]);
        let mut found = 0usize;
        for candidate in candidates {
            let proof = verifier.proof(
                shard,
                plan,
                base,
                self.checks,
                randao,
                candidate.nonce,
                overlay,
            );
            let event = match proof {
                Err(e) => Verified::Failed(e),
                Ok(Ok(proof)) if proof.hash1.0 == candidate.hash1 => {
                    found += 1;
                    Verified::Found { shard: s, proof }
                }
                Ok(Ok(proof)) => {
                    // The samples changed under the slot (a live shard): the bytes on disk now
                    // decide, as they will for the proof.
                    let _ = tx.send(Verified::Changed { shard: s });
                    let required = self.request.required_diff;
                    if !required.is_some_and(|r| meets(&proof.hash1.0, &r)) {
                        continue;
                    }
                    found += 1;
                    Verified::Found { shard: s, proof }
                }
                Ok(Err(why)) => Verified::Unconfirmed(why),
            };
            let last = matches!(event, Verified::Failed(_))
                || (self.stop_on_error && matches!(event, Verified::Unconfirmed(_)));
            if tx.send(event).is_err() || last {
                return false;
            }
            if self.request.find != Find::All && found > 0 {
                break;
            }
        }
        true
    }
}
