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
use crate::verify::Unconfirmed;
use crate::worker::{self, Candidate, End, Lane, ShardTally, SlotShared, WorkerOutcome};
use crate::{
    Bottleneck, Find, MineError, Miner, OnIoError, PoolState, ShardSlotReport, SlotReport,
    SlotRequest,
};
use pora_core::difficulty::meets;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// Longest wait for reads a previous slot left in flight before the backend is replaced.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
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
    for pool in pools.iter_mut() {
        drain_stale(pool)?;
    }
    let shards = miner.plans.len();
    let overlays = shard_overlays(miner, request)?;
    let nonce_count = request.nonces.end - request.nonces.start;
    let chains: u64 = pools.iter().map(|p| (p.threads * p.depth) as u64).sum();
    let start = Instant::now();
    let shared = SlotShared {
        plans: &miner.plans,
        prefixes: miner
            .plans
            .iter()
            .map(|p| p.prefix(randao))
            .collect::<Vec<Hash0Prefix>>(),
        paths: &miner.paths,
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
        stop,
        abort: AtomicBool::new(false),
    };
    let results: Vec<Result<WorkerOutcome, MineError>> = std::thread::scope(|scope| {
        let shared = &shared;
        let handles: Vec<_> = pools
            .iter_mut()
            .flat_map(|pool| {
                let lanes: Vec<Lane> = (0..pool.backends.len())
                    .map(|index| Lane::new(pool, index))
                    .collect();
                lanes.into_iter().zip(pool.backends.iter_mut())
            })
            .map(|(lane, backend)| scope.spawn(move || worker::run(backend.as_mut(), shared, lane)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
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
    attach_found(miner, request, &outcomes, &shared.overlays, &mut report)?;
    report.leaked_backends = pora_io::leaked_backends();
    Ok(report)
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

/// Re-verifies the candidates each shard reports (all, the best, or the lowest-nonce one for
/// `--find first`) from the bytes on disk now and attaches their proofs.
fn attach_found(
    miner: &Miner,
    request: &SlotRequest,
    outcomes: &[WorkerOutcome],
    overlays: &[ShardOverlay],
    report: &mut SlotReport,
) -> Result<(), MineError> {
    let config = &miner.config;
    let mut verifier = miner
        .verifier
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    for (s, shard_report) in report.shards.iter_mut().enumerate() {
        let mut candidates: Vec<Candidate> = outcomes
            .iter()
            .flat_map(|o| o.candidates.iter().copied())
            .filter(|c| c.shard == s)
            .collect();
        match request.find {
            Find::Best => candidates.sort_by_key(|c| c.hash1),
            Find::First | Find::All => candidates.sort_by_key(|c| c.nonce),
        }
        for candidate in &candidates {
            let (shard, plan, base) = (&miner.shards[s], &miner.plans[s], miner.file_bases[s]);
            let checks = config.random_checks;
            let randao = &request.randao;
            let nonce = candidate.nonce;
            match verifier.proof(shard, plan, base, checks, randao, nonce, &overlays[s])? {
                Ok(proof) if proof.hash1.0 == candidate.hash1 => shard_report.found.push(proof),
                Ok(proof) => {
                    // The samples changed under the slot (a live shard): the bytes on disk now
                    // decide, as they will for the proof.
                    shard_report.changed_during_slot += 1;
                    let still_valid = request
                        .required_diff
                        .is_some_and(|r| meets(&proof.hash1.0, &r));
                    if still_valid {
                        shard_report.found.push(proof);
                    }
                }
                Err(Unconfirmed { path, offset, why }) if config.on_io_error == OnIoError::Stop => {
                    return Err(MineError::Read { path, offset, why });
                }
                Err(Unconfirmed { path, offset, why }) => {
                    if report.io_error_messages.len() < MAX_REPORTED_MESSAGES {
                        report.io_error_messages.push(format!(
                            "{}: read at offset {offset} failed: {why}; not reported",
                            path.display()
                        ));
                    }
                }
            }
            if request.find != Find::All && !shard_report.found.is_empty() {
                break;
            }
        }
    }
    Ok(())
}
