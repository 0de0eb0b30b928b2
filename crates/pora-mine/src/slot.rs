//! One slot: drain what the previous slot abandoned, start the clock, run one scoped thread per
//! worker backend of every device pool, sum their counts, re-verify the nonces to report and
//! build the report.
//!
//! Live shards: es-node writes new blobs into the shards it mines. A candidate whose samples
//! changed between the mining read and the verification read is expected, not an error: the
//! verification recomputes the nonce from the bytes on disk now (the bytes a proof will use),
//! reports it only if it is still valid, and counts it in `changedDuringSlot`.

use crate::lanes::Hash0Prefix;
use crate::overlay::ShardOverlay;
use crate::verify::{Unconfirmed, Verifier};
use crate::worker::{self, Candidate, End, Lane, Published, ShardTally, SlotShared, WorkerOutcome};
use crate::{
    Bottleneck, Find, MineError, Miner, OnIoError, PoolState, ShardSlotReport, SlotReport,
    SlotRequest,
};
use pora_core::difficulty::meets;
use pora_core::NonceProof;
use pora_io::Backend;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// Longest wait for reads a previous slot left in flight before the backend is replaced (and
/// the old one leaked). Short, because it is spent inside the slot's time: a healthy device
/// gives cancelled reads back in microseconds, a hung one never does.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(100);
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

pub fn mine_slot(
    miner: &Miner,
    request: &SlotRequest,
    stop: &AtomicBool,
) -> Result<SlotReport, MineError> {
    let config = &miner.config;
    let randao = &request.randao;
    let mut pools = match miner.pools.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return Err(MineError::Busy),
    };
    // The slot's clock starts at the call: draining what the last slot left is part of it.
    let start = Instant::now();
    for pool in pools.iter_mut() {
        drain_stale(pool)?;
    }
    let shards = miner.plans.len();
    let overlays = shard_overlays(miner, request)?;
    let nonce_count = request.nonces.end - request.nonces.start;
    let chains: u64 = pools.iter().map(|p| (p.threads * p.depth) as u64).sum();
    let shared = Arc::new(SlotShared {
        plans: miner.plans.clone(),
        prefixes: miner
            .plans
            .iter()
            .map(|p| p.prefix(randao))
            .collect::<Vec<Hash0Prefix>>(),
        paths: miner.paths.clone(),
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
        deadline: start + request.slot_length,
        stop: AtomicBool::new(stop.load(Ordering::Relaxed)),
        abort: AtomicBool::new(false),
    });
    let (results, stragglers) = run_workers(miner, &mut pools[..], &shared, stop);
    let ended = Instant::now();
    drop(pools);
    let outcomes = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    let mut report = summarize(
        miner,
        request,
        &outcomes,
        ended - start,
        ended.saturating_duration_since(shared.deadline),
    );
    report.io_error_messages.extend(stragglers);
    attach_found(miner, request, &outcomes, &shared, &mut report)?;
    report.leaked_backends = pora_io::leaked_backends();
    Ok(report)
}

/// What a worker thread hands back: its place (pool, worker), its backend and its outcome (or
/// its panic).
type Returned = (
    usize,
    usize,
    Box<dyn Backend>,
    std::thread::Result<Result<WorkerOutcome, MineError>>,
);

/// Runs one thread per worker backend and collects their outcomes, waiting for each at most
/// until the deadline (or the stop, or another worker's failure) plus [`STRAGGLER_WAIT`]. A
/// worker still inside a read then (a synchronous read that the OS holds: a hung disk, a FUSE or
/// network file system that does not answer) is left behind: it keeps its backend, which is
/// counted as leaked (`pora_io::leaked_backends`) and replaced by a new one for the next slot,
/// and what it counted up to its last batch is kept ([`Published`]); the thread ends by itself
/// when the read returns (it then sees the slot's abort flag), and never keeps the process from
/// exiting. Returns the outcomes and one
/// message per worker left behind.
fn run_workers(
    miner: &Miner,
    pools: &mut [PoolState],
    shared: &Arc<SlotShared>,
    stop: &AtomicBool,
) -> (Vec<Result<WorkerOutcome, MineError>>, Vec<String>) {
    let (tx, rx) = mpsc::channel::<Returned>();
    let mut back: Vec<Vec<Option<Box<dyn Backend>>>> = Vec::with_capacity(pools.len());
    let mut running = 0usize;
    let mut publications: Vec<Vec<Arc<Mutex<Published>>>> = Vec::with_capacity(pools.len());
    let mut spawn_errors = Vec::new();
    for (p, pool) in pools.iter_mut().enumerate() {
        let pool_backends = std::mem::take(&mut pool.backends);
        back.push((0..pool_backends.len()).map(|_| None).collect());
        publications.push(Vec::with_capacity(pool_backends.len()));
        for (i, mut backend) in pool_backends.into_iter().enumerate() {
            let (tx, shared, lane) = (tx.clone(), shared.clone(), Lane::new(pool, i));
            let published = Arc::new(Mutex::new(Published::default()));
            publications[p].push(published.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("pora-worker-{p}.{i}"))
                .spawn(move || {
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        worker::run(backend.as_mut(), &shared, lane, &published)
                    }));
                    // The slot may have left this worker behind: then nobody listens.
                    let _ = tx.send((p, i, backend, outcome));
                });
            match spawned {
                Ok(_) => running += 1,
                Err(e) => {
                    // The backend went with the closure that never ran: a new one replaces it.
                    spawn_errors.push(Err(MineError::from(pora_io::IoError::Os {
                        what: "starting a worker thread",
                        source: e,
                    })));
                    back[p][i] = pool.factory.worker(pool.depth).ok();
                }
            }
        }
    }
    drop(tx);
    let mut results = spawn_errors;
    let mut panic = None;
    let mut returned = 0usize;
    let mut give_up = shared.deadline + STRAGGLER_WAIT;
    let mut ending_seen = false;
    while returned < running {
        match rx.recv_timeout(POLL_WORKERS) {
            Ok((p, i, backend, outcome)) => {
                returned += 1;
                back[p][i] = Some(backend);
                match outcome {
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
        if stop.load(Ordering::Relaxed) {
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
    // Whoever is still out ends at its next look at the flags.
    shared.abort.store(true, Ordering::Relaxed);
    let mut messages = Vec::new();
    for ((p, pool), pool_back) in pools.iter_mut().enumerate().zip(back) {
        for (i, returned) in pool_back.into_iter().enumerate() {
            let backend = match returned {
                Some(b) => b,
                None => {
                    pora_io::note_leaked_backend();
                    // What it counted up to its last batch is reported; the read it is stuck in
                    // (and that read's nonce) is not.
                    let published = std::mem::take(
                        &mut *publications[p][i]
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner),
                    );
                    results.push(Ok(published.into_outcome(miner.plans.len())));
                    messages.push(format!(
                        "worker {i} of pool {p} ({}) was still inside a read {} ms after the slot's end: left behind with its backend (replaced, counted as leaked); its counts up to that read are kept",
                        pool.factory.method(),
                        STRAGGLER_WAIT.as_millis()
                    ));
                    match pool.factory.worker(pool.depth) {
                        Ok(b) => b,
                        Err(e) => {
                            results.push(Err(e.into()));
                            continue;
                        }
                    }
                }
            };
            pool.backends.push(backend);
        }
    }
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
    (results, messages)
}

/// Each shard's part of the request's overlay (empty views without one).
fn shard_overlays(miner: &Miner, request: &SlotRequest) -> Result<Vec<ShardOverlay>, MineError> {
    miner
        .shards
        .iter()
        .map(|shard| match &request.overlay {
            Some(overlay) => overlay.for_shard(&shard.geometry),
            None => Ok(ShardOverlay::default()),
        })
        .collect()
}

/// Cancels (and discards) reads a previous slot abandoned, so no stale completion reaches the
/// next slot's chains; a backend whose reads are still in the kernel after the bounded wait is
/// replaced (the old one is leaked by pora-io rather than waited for: `pora_io::leaked_backends`).
fn drain_stale(pool: &mut PoolState) -> Result<(), MineError> {
    for backend in pool.backends.iter_mut() {
        if backend.in_flight() == 0 {
            continue;
        }
        if !backend.cancel_all(DRAIN_TIMEOUT).is_idle() {
            *backend = pool.factory.worker(pool.depth)?;
        }
    }
    Ok(())
}

fn summarize(
    miner: &Miner,
    request: &SlotRequest,
    outcomes: &[WorkerOutcome],
    elapsed: Duration,
    past_deadline: Duration,
) -> SlotReport {
    let nonce_limit = request.nonces.end - request.nonces.start;
    let elapsed_sec = elapsed.as_secs_f64();
    let shards = miner
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
    let cpus = crate::session::available_cpus();
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
    miner: &Miner,
    request: &SlotRequest,
    outcomes: &[WorkerOutcome],
    shared: &Arc<SlotShared>,
    report: &mut SlotReport,
) -> Result<(), MineError> {
    let config = &miner.config;
    let candidates: Vec<Vec<Candidate>> = (0..report.shards.len())
        .map(|s| {
            let mut candidates: Vec<Candidate> = outcomes
                .iter()
                .flat_map(|o| o.candidates.iter().copied())
                .filter(|c| c.shard == s)
                .collect();
            match request.find {
                Find::Best => candidates.sort_by_key(|c| c.hash1),
                Find::First | Find::All => candidates.sort_by_key(|c| c.nonce),
            }
            candidates
        })
        .collect();
    if candidates.iter().all(Vec::is_empty) {
        return Ok(());
    }
    let mut guard = miner
        .verifier
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let fork = guard.fork();
    let mut verifier = std::mem::replace(&mut *guard, fork);
    let (tx, rx) = mpsc::channel::<Verified>();
    let (shards, plans, bases) = (
        miner.shards.clone(),
        miner.plans.clone(),
        miner.file_bases.clone(),
    );
    let (checks, randao, find, stop_on_error) = (
        config.random_checks,
        request.randao,
        request.find,
        config.on_io_error == OnIoError::Stop,
    );
    let required = request.required_diff;
    let shared_for_thread = shared.clone();
    std::thread::Builder::new()
        .name("pora-verifier".into())
        .spawn(move || {
            let overlays = &shared_for_thread.overlays;
            for (s, candidates) in candidates.iter().enumerate() {
                let mut found = 0usize;
                for candidate in candidates {
                    let (shard, plan, base) = (&shards[s], &plans[s], bases[s]);
                    let nonce = candidate.nonce;
                    let event = match verifier.proof(
                        shard,
                        plan,
                        base,
                        checks,
                        &randao,
                        nonce,
                        &overlays[s],
                    ) {
                        Err(e) => Verified::Failed(e),
                        Ok(Ok(proof)) if proof.hash1.0 == candidate.hash1 => {
                            found += 1;
                            Verified::Found { shard: s, proof }
                        }
                        Ok(Ok(proof)) => {
                            // The samples changed under the slot (a live shard): the bytes on
                            // disk now decide, as they will for the proof.
                            let _ = tx.send(Verified::Changed { shard: s });
                            if required.is_some_and(|r| meets(&proof.hash1.0, &r)) {
                                found += 1;
                                Verified::Found { shard: s, proof }
                            } else {
                                continue;
                            }
                        }
                        Ok(Err(why)) => Verified::Unconfirmed(why),
                    };
                    let last = matches!(event, Verified::Failed(_))
                        || (stop_on_error && matches!(event, Verified::Unconfirmed(_)));
                    if tx.send(event).is_err() || last {
                        return;
                    }
                    if find != Find::All && found > 0 {
                        break;
                    }
                }
            }
            let _ = tx.send(Verified::Done(verifier));
        })
        .map_err(|source| {
            MineError::from(pora_io::IoError::Os {
                what: "starting the verifier thread",
                source,
            })
        })?;
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
                *guard = verifier;
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
