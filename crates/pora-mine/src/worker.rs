//! One worker thread's slot: a fixed pool of nonce chains driven by its backend's completions.
//!
//! A chain is the state machine of one nonce: hash0 -> read sample 1 -> hash -> read sample 2
//! -> ... -> `random_checks` reads -> check hash1 -> take the next nonce. The chain index is the
//! read's tag, and every chain has at most one read queued or in flight, so the backend never
//! holds more than `depth` reads and sample k+1 of a nonce is only requested after sample k came
//! back (its index depends on it).
//!
//! Work: each shard has one atomic counter of claimed nonce offsets; a worker claims blocks of
//! `claim_block` nonces from it and hands them to its chains. A worker belongs to one device
//! pool (its backend reads only that pool's files) and serves only the pool's shards. Every
//! chain has a home shard (the chains of a pool's workers are dealt round-robin over its
//! shards), and takes nonces from it until it has none left; only then does it help another
//! shard of its pool. So each shard keeps its own share of reads in flight whatever the other
//! shards' devices do: a slow disk holds only its own chains, and a fast shard's rate depends on
//! its own device and the CPU (with shared chains, the slow shard absorbed them and
//! set every shard's pace).
//!
//! The loop per batch: submit everything pushed, reap at least one completion (waiting at most
//! until the deadline), process every completion, repeat. Processing hashes the batch 16
//! messages at a time and pushes each group's follow-up reads before hashing the next group, in
//! one call to the backend per group. Per batch and not per sample: two clock reads (the
//! deadline check and the wait-vs-busy split for the bottleneck), one load of the stop flag and,
//! for `--find first`, one load per shard of its "found" flag. Per sample there is no
//! allocation, lock, clock read or atomic: counts are kept in the worker and summed by the caller
//! after the slot.
//!
//! Deadline rule: nothing is submitted once the deadline has passed, and a batch reaped after the
//! deadline is abandoned, so a nonce counts only when its last read was reaped before the
//! deadline. Reads still in flight are left in the backend and drained before the next slot. A
//! worker blocked inside one synchronous read past the deadline is not waited for beyond
//! `slot::STRAGGLER_WAIT`: its slot ends without it (see `slot.rs`).

use crate::lanes::{step_block, to_bytes, Block, Hash0Prefix, Lanes};
use crate::overlay::ShardOverlay;
use crate::plan::ShardPlan;
use crate::{Find, MineError, OnIoError};
use pora_core::keccak::keccak256_padded_blocks;
use pora_io::{Backend, Completion, ReadError, SampleRead};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Times a failed read is re-issued under `--on-io-error retry` before its nonce is dropped.
pub const MAX_RETRIES: u8 = 3;
/// Read errors kept as messages per worker (the rest are only counted).
const MAX_MESSAGES: usize = 8;
/// Messages hashed, and reads pushed, together (two passes of the widest Keccak kernel, 8-way):
/// 8 was as fast (docs/BENCHMARKS.md 31).
const PUSH_GROUP: usize = 16;
/// Longest single wait, so that the stop flag is seen promptly even when reads are slow.
const MAX_WAIT: Duration = Duration::from_millis(20);

/// Everything the workers of one slot share. Owned (no borrows), so that a worker stuck in a
/// read the OS does not give back can be left behind by its slot (see `slot.rs`).
pub struct SlotShared {
    pub plans: Vec<ShardPlan>,
    pub prefixes: Vec<Hash0Prefix>,
    pub paths: Vec<PathBuf>,
    /// Per shard: KVs whose samples come from memory, not the backend.
    pub overlays: Vec<ShardOverlay>,
    pub nonces: Range<u64>,
    /// Per shard: nonce offsets (from `nonces.start`) claimed so far.
    pub claimed: Vec<AtomicU64>,
    /// Per shard: a valid nonce was found under `--find first`.
    pub found_first: Vec<AtomicBool>,
    pub claim_block: u64,
    pub random_checks: u8,
    /// requiredDiff as 32 big-endian bytes (byte-wise order is numeric order).
    pub required: Option<[u8; 32]>,
    pub find: Find,
    pub on_io_error: OnIoError,
    pub deadline: Instant,
    /// The caller's stop flag, forwarded by the slot while it waits for its workers.
    pub stop: AtomicBool,
    /// Set by a worker that fails, so the others end too.
    pub abort: AtomicBool,
}

/// What one worker reads: its pool's shards through its pool's backend.
#[derive(Clone, Debug)]
pub struct Assignment {
    /// The pool's shards: the only ones this worker's chains take nonces from.
    pub shards: Range<usize>,
    /// The pool's first file in the miner's file list: the backend's file 0.
    pub first_file: u32,
    /// The backend reads inside `submit` (see [`TimeSplit`]).
    pub inline_reads: bool,
    pub depth: usize,
    /// This worker's number within its pool.
    pub index: usize,
}

/// What a worker has counted so far, published after every batch, so that a slot that leaves
/// the worker behind (stuck inside a read) still reports the nonces it tried, the errors it met
/// and the candidates it found before it got stuck.
#[derive(Debug, Default)]
pub struct Published {
    pub tallies: Vec<ShardTally>,
    /// Candidates so far (appended to, never rewritten: `--find all` may find thousands).
    pub candidates: Vec<ValidNonce>,
    /// Per shard, the best candidate so far (`--find best`).
    pub best: Vec<Option<ValidNonce>>,
    pub messages: Vec<String>,
}

impl Published {
    /// The outcome of a worker left behind: what it had published, ended by the deadline.
    pub fn into_outcome(mut self, shards: usize) -> WorkerOutcome {
        self.candidates.extend(self.best.iter().flatten());
        WorkerOutcome {
            tallies: if self.tallies.is_empty() {
                vec![ShardTally::default(); shards]
            } else {
                self.tallies
            },
            candidates: self.candidates,
            io_wait: Duration::ZERO,
            busy: Duration::ZERO,
            messages: self.messages,
            end: End::Deadline,
        }
    }
}

/// Per-shard counts of one worker.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShardTally {
    pub tried: u64,
    pub samples: u64,
    /// Of `samples`, those taken from the overlay.
    pub overlay_samples: u64,
    pub io_errors: u64,
}

/// A valid nonce as the scheduler computed it, before re-verification.
#[derive(Clone, Copy, Debug)]
pub struct ValidNonce {
    pub shard: usize,
    pub nonce: u64,
    pub hash1: [u8; 32],
}

/// Why a worker's loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// No work left: every shard exhausted or closed by `--find first`.
    Done,
    Deadline,
    Stopped,
    /// Another worker failed.
    Aborted,
}

/// One worker's result for the slot.
#[derive(Debug)]
pub struct WorkerOutcome {
    pub tallies: Vec<ShardTally>,
    pub candidates: Vec<ValidNonce>,
    pub io_wait: Duration,
    pub busy: Duration,
    pub messages: Vec<String>,
    pub end: End,
}

#[derive(Clone, Copy, Default)]
struct Chain {
    hash: Lanes,
    nonce: u64,
    offset: u64,
    file: u32,
    shard: u32,
    /// The shard this chain serves first (fixed for the slot).
    home: u32,
    step: u8,
    retries: u8,
    active: bool,
}

/// The loop's wall time split into waiting for the backend and working. For methods that read
/// inside `submit` the CPU time the thread spent in the backend (an mmap copy from the page
/// cache, a pread's system call) is work, not waiting, so a CPU-bound mmap slot is reported as
/// CPU-bound. The thread's CPU clock is a system call, so it is read once per
/// [`CPU_CLOCK_BATCHES`] batches, not per batch: with depth 1 a batch is one read. Over such a
/// window, the CPU time beyond the wall time spent processing batches was spent in the backend
/// (with more threads than cores processing is partly preemption, so this errs towards waiting).
struct TimeSplit {
    inline: bool,
    io_wait: Duration,
    busy: Duration,
    /// The thread's CPU time when the current window started.
    cpu_mark: Duration,
    /// Wall time in the backend and in processing since the window started.
    window_backend: Duration,
    window_processing: Duration,
    window_batches: u32,
}

/// Batches per read of the thread CPU clock (inline methods only).
const CPU_CLOCK_BATCHES: u32 = 16;

impl TimeSplit {
    fn new(inline: bool) -> Self {
        TimeSplit {
            inline,
            io_wait: Duration::ZERO,
            busy: Duration::ZERO,
            cpu_mark: if inline { thread_cpu() } else { Duration::ZERO },
            window_backend: Duration::ZERO,
            window_processing: Duration::ZERO,
            window_batches: 0,
        }
    }

    /// Submit and reap took `wall`.
    fn backend_returned(&mut self, wall: Duration) {
        if self.inline {
            self.window_backend += wall;
        } else {
            self.io_wait += wall;
        }
    }

    /// Processing a batch took `wall`.
    fn processed(&mut self, wall: Duration) {
        self.busy += wall;
        if !self.inline {
            return;
        }
        self.window_processing += wall;
        self.window_batches += 1;
        if self.window_batches == CPU_CLOCK_BATCHES {
            self.settle();
        }
    }

    /// Splits the window's backend time with one read of the thread CPU clock; called at the
    /// end of each window and of the loop.
    fn settle(&mut self) {
        if !self.inline {
            return;
        }
        let cpu = thread_cpu();
        let in_backend = cpu
            .saturating_sub(self.cpu_mark)
            .saturating_sub(self.window_processing)
            .min(self.window_backend);
        self.io_wait += self.window_backend - in_backend;
        self.busy += in_backend;
        self.cpu_mark = cpu;
        self.window_backend = Duration::ZERO;
        self.window_processing = Duration::ZERO;
        self.window_batches = 0;
    }
}

/// The thread's CPU time; zero where the OS does not tell (all backend time is then waiting,
/// as before this was measured).
fn thread_cpu() -> Duration {
    pora_io::cpu_time::thread_cpu_time().unwrap_or_default()
}

/// Keccak messages of one batch of completions, hashed together by the multi-buffer Keccak
/// (`pora_core::keccak::keccak256_padded_blocks`: 4 or 8 permutations per instruction stream
/// where the CPU has AVX2 / AVX-512). Sized once at the worker's depth: never reallocated.
struct HashBatch {
    chains: Vec<u32>,
    blocks: Vec<Block>,
    hashes: Vec<Lanes>,
}

impl HashBatch {
    fn with_capacity(depth: usize) -> Self {
        HashBatch {
            chains: Vec::with_capacity(depth),
            blocks: Vec::with_capacity(depth),
            // Sized once: a batch never holds more than `depth` messages, and hashing writes
            // into a prefix instead of zero-filling a resized vector per batch.
            hashes: vec![[0; 4]; depth],
        }
    }

    fn clear(&mut self) {
        self.chains.clear();
        self.blocks.clear();
    }

    #[inline]
    fn push(&mut self, chain: usize, block: Block) {
        self.chains.push(chain as u32);
        self.blocks.push(block);
    }

    /// Hashes messages `range` (within `len()`).
    fn hash_range(&mut self, range: Range<usize>) {
        if self.hashes.len() < range.end {
            // Not reached (a batch holds at most one message per chain); kept so it cannot panic.
            self.hashes.resize(range.end, [0; 4]);
        }
        keccak256_padded_blocks(&self.blocks[range.clone()], &mut self.hashes[range]);
    }

    fn len(&self) -> usize {
        self.chains.len()
    }
}

/// A worker's unconsumed claim on one shard.
#[derive(Clone, Copy, Default)]
struct LocalWork {
    next: u64,
    end: u64,
    exhausted: bool,
    /// `--find first` found a valid nonce: no more reads for this shard.
    found: bool,
}

struct Worker<'s> {
    shared: &'s SlotShared,
    published: &'s Mutex<Published>,
    assignment: Assignment,
    chains: Vec<Chain>,
    work: Vec<LocalWork>,
    active: usize,
    tallies: Vec<ShardTally>,
    candidates: Vec<ValidNonce>,
    best: Vec<Option<ValidNonce>>,
    messages: Vec<String>,
    /// Chain steps of the batch being processed.
    steps: HashBatch,
    /// Chains starting a nonce in the batch being processed (their hash0).
    starts: HashBatch,
    /// Reads answered from the overlay, processed with the next batch (at most one per chain,
    /// so never more than `depth`: sized once).
    from_overlay: Vec<Completion>,
    /// Reads queued while a group of messages is processed, pushed to the backend together
    /// (one call per group, not per read; at most one per chain: sized once).
    outbox: Vec<SampleRead>,
}

/// Runs the worker of `assignment` over `backend` until the work is done, the deadline passes, `stop`
/// is set or another worker fails.
///
/// Never inlined: the per-read loop stays one function whatever calls it, so profiles of
/// different builds name it alike. Whether inlining it is faster depends on the build: 2–4%
/// slower inlined in one (docs/BENCHMARKS.md 28.1), 3–5% faster inlined with pora-mine in one
/// codegen unit (29.2).
#[inline(never)]
pub fn run(
    backend: &mut dyn Backend,
    shared: &SlotShared,
    assignment: Assignment,
    published: &Mutex<Published>,
) -> Result<WorkerOutcome, MineError> {
    let mut worker = Worker::new(shared, assignment, published);
    let result = worker.mine(backend);
    if result.is_err() {
        shared.abort.store(true, Ordering::Relaxed);
    }
    let (end, io_wait, busy) = result?;
    Ok(worker.finish(end, io_wait, busy))
}

impl<'s> Worker<'s> {
    fn new(
        shared: &'s SlotShared,
        assignment: Assignment,
        published: &'s Mutex<Published>,
    ) -> Self {
        let shards = shared.plans.len();
        let (depth, pool_shards) = (assignment.depth, assignment.shards.len());
        let chains = (0..depth)
            .map(|c| Chain {
                home: (assignment.shards.start + (assignment.index * depth + c) % pool_shards)
                    as u32,
                ..Chain::default()
            })
            .collect();
        Worker {
            shared,
            published,
            assignment,
            chains,
            work: vec![LocalWork::default(); shards],
            active: 0,
            tallies: vec![ShardTally::default(); shards],
            candidates: Vec::new(),
            best: vec![None; shards],
            messages: Vec::new(),
            steps: HashBatch::with_capacity(depth),
            starts: HashBatch::with_capacity(depth),
            from_overlay: Vec::with_capacity(depth),
            outbox: Vec::with_capacity(depth),
        }
    }

    fn mine(&mut self, backend: &mut dyn Backend) -> Result<(End, Duration, Duration), MineError> {
        let shared = self.shared;
        let mut completions: Vec<Completion> = Vec::with_capacity(self.chains.len());
        self.starts.clear();
        for idx in 0..self.chains.len() {
            self.queue_start(idx);
        }
        self.start_queued(backend)?;
        let mut time = TimeSplit::new(self.assignment.inline_reads);
        let mut processed_at = Instant::now();
        let end = loop {
            if self.active == 0 {
                break End::Done;
            }
            if processed_at >= shared.deadline {
                break End::Deadline;
            }
            if shared.stop.load(Ordering::Relaxed) {
                break End::Stopped;
            }
            if shared.abort.load(Ordering::Relaxed) {
                break End::Aborted;
            }
            backend.submit()?;
            let wait_until = shared.deadline.min(processed_at + MAX_WAIT);
            // Samples from memory are ready now: reap what the backend has without waiting.
            let min_complete = usize::from(self.from_overlay.is_empty());
            backend.reap(&mut completions, min_complete, Some(wait_until))?;
            completions.append(&mut self.from_overlay);
            let reaped_at = Instant::now();
            time.backend_returned(reaped_at - processed_at);
            if reaped_at > shared.deadline {
                break End::Deadline;
            }
            self.refresh_found_flags();
            self.on_batch(backend, &mut completions)?;
            self.publish();
            processed_at = Instant::now();
            time.processed(processed_at - reaped_at);
        };
        time.settle();
        Ok((end, time.io_wait, time.busy))
    }

    /// Copies the counts to [`Published`]: a few words per shard, and only the candidates found
    /// since the last batch.
    fn publish(&self) {
        let Ok(mut p) = self.published.try_lock() else {
            return;
        };
        p.tallies.clone_from(&self.tallies);
        p.best.clone_from(&self.best);
        let have = p.candidates.len();
        p.candidates
            .extend_from_slice(&self.candidates[have.min(self.candidates.len())..]);
        let have = p.messages.len();
        p.messages.extend(self.messages.iter().skip(have).cloned());
    }

    fn finish(mut self, end: End, io_wait: Duration, busy: Duration) -> WorkerOutcome {
        self.candidates.extend(self.best.iter().flatten());
        WorkerOutcome {
            tallies: self.tallies,
            candidates: self.candidates,
            io_wait,
            busy,
            messages: self.messages,
            end,
        }
    }

    /// Under `--find first`, notices shards another worker already found a nonce for.
    fn refresh_found_flags(&mut self) {
        if self.shared.find != Find::First {
            return;
        }
        for (work, flag) in self.work.iter_mut().zip(&self.shared.found_first) {
            work.found = work.found || flag.load(Ordering::Relaxed);
        }
    }

    /// Processes one batch of completions: every chain step hashed together, follow-up reads
    /// pushed, finished chains given new nonces whose hash0s are hashed together too.
    fn on_batch(
        &mut self,
        backend: &mut dyn Backend,
        completions: &mut Vec<Completion>,
    ) -> Result<(), MineError> {
        self.steps.clear();
        self.starts.clear();
        for completion in completions.drain(..) {
            let idx = completion.tag as usize;
            let Some(chain) = self.chains.get(idx).filter(|c| c.active) else {
                return Err(MineError::Io(pora_io::IoError::Config(format!(
                    "backend returned unknown tag {idx}"
                ))));
            };
            match completion.result {
                Ok(sample) => self.steps.push(idx, step_block(&chain.hash, &sample)),
                Err(e) => self.on_read_error(idx, e)?,
            }
        }
        self.hash_in_groups(backend, |w| &mut w.steps, Self::after_step)?;
        self.start_queued(backend)
    }

    /// Hashes the batch `messages` picks a group at a time; after each group, runs `then` on
    /// each message's chain and hash (a step taken, or a nonce started) and pushes the reads
    /// that queued. The backend so has
    /// a group's reads while the next groups are hashed: an mmap backend prefetches them, so
    /// their cache lines arrive during that hashing instead of while the read waits (5–8% more
    /// nonces/s on a cached shard than one push per batch: medians 1.05 and 1.08, docs/BENCHMARKS.md
    /// 31.2).
    #[inline(always)]
    fn hash_in_groups(
        &mut self,
        backend: &mut dyn Backend,
        messages: impl Fn(&mut Self) -> &mut HashBatch,
        mut then: impl FnMut(&mut Self, usize, Lanes),
    ) -> Result<(), MineError> {
        let len = messages(self).len();
        for from in (0..len).step_by(PUSH_GROUP) {
            let to = len.min(from + PUSH_GROUP);
            messages(self).hash_range(from..to);
            for k in from..to {
                let batch = messages(self);
                let (idx, hash) = (batch.chains[k] as usize, batch.hashes[k]);
                then(self, idx, hash);
            }
            self.flush_outbox(backend)?;
        }
        Ok(())
    }

    /// Chain `idx` took a step to `hash`: read its next sample, or finish its nonce.
    #[inline]
    fn after_step(&mut self, idx: usize, hash: Lanes) {
        let checks = self.shared.random_checks;
        let chain = &mut self.chains[idx];
        let shard = chain.shard as usize;
        self.tallies[shard].samples += 1;
        chain.hash = hash;
        chain.step += 1;
        chain.retries = 0;
        if chain.step < checks {
            if self.work[shard].found {
                // `--find first` already has its nonce: abandon (uncounted) rather than read on.
                self.queue_start(idx);
                return;
            }
            self.issue_read(idx);
            return;
        }
        let (nonce, hash1) = (chain.nonce, chain.hash);
        self.tallies[shard].tried += 1;
        if let Some(required) = &self.shared.required {
            let hash1 = to_bytes(&hash1);
            if hash1 <= *required {
                self.record_valid(ValidNonce {
                    shard,
                    nonce,
                    hash1,
                });
            }
        }
        self.queue_start(idx);
    }

    fn record_valid(&mut self, candidate: ValidNonce) {
        match self.shared.find {
            Find::First => {
                self.shared.found_first[candidate.shard].store(true, Ordering::Relaxed);
                self.work[candidate.shard].found = true;
                self.candidates.push(candidate);
            }
            Find::Best => {
                let best = &mut self.best[candidate.shard];
                let better = match best {
                    Some(b) => candidate.hash1 < b.hash1,
                    None => true,
                };
                if better {
                    *best = Some(candidate);
                }
            }
            Find::All => self.candidates.push(candidate),
        }
    }

    /// A failed read: retry it, drop the nonce, or end the slot, per `--on-io-error`.
    #[cold]
    fn on_read_error(&mut self, idx: usize, error: ReadError) -> Result<(), MineError> {
        let path = self
            .shared
            .paths
            .get((self.assignment.first_file + error.file) as usize)
            .cloned()
            .unwrap_or_else(|| format!("file #{}", error.file).into());
        let chain = &mut self.chains[idx];
        match self.shared.on_io_error {
            OnIoError::Stop => Err(MineError::Read {
                path,
                offset: error.offset,
                why: error.kind.to_string(),
            }),
            OnIoError::Retry if chain.retries < MAX_RETRIES => {
                chain.retries += 1;
                self.outbox.push(SampleRead {
                    tag: idx as u32,
                    file: chain.file,
                    offset: chain.offset,
                });
                Ok(())
            }
            policy => {
                let shard = chain.shard as usize;
                self.tallies[shard].io_errors += 1;
                if self.messages.len() < MAX_MESSAGES {
                    let tries = if policy == OnIoError::Retry {
                        format!(" after {MAX_RETRIES} retries")
                    } else {
                        String::new()
                    };
                    self.messages.push(format!(
                        "{}: read at offset {} failed{tries}: {}; nonce {} of shard {} dropped",
                        path.display(),
                        error.offset,
                        error.kind,
                        chain.nonce,
                        self.shared.plans[shard].shard_idx
                    ));
                }
                self.queue_start(idx);
                Ok(())
            }
        }
    }

    /// Gives chain `idx` its next nonce and queues its hash0 for [`Self::start_queued`], or
    /// parks it when no work is left.
    #[inline]
    fn queue_start(&mut self, idx: usize) {
        let Some((shard, nonce)) = self.take_work(self.chains[idx].home as usize) else {
            let chain = &mut self.chains[idx];
            if chain.active {
                chain.active = false;
                self.active -= 1;
            }
            return;
        };
        let chain = &mut self.chains[idx];
        if !chain.active {
            chain.active = true;
            self.active += 1;
        }
        chain.nonce = nonce;
        chain.shard = shard as u32;
        chain.step = 0;
        chain.retries = 0;
        self.starts
            .push(idx, self.shared.prefixes[shard].hash0_block(nonce));
    }

    /// Hashes the queued hash0s and pushes each new nonce's first read.
    fn start_queued(&mut self, backend: &mut dyn Backend) -> Result<(), MineError> {
        self.hash_in_groups(
            backend,
            |w| &mut w.starts,
            |w, idx, hash| {
                w.chains[idx].hash = hash;
                w.issue_read(idx);
            },
        )?;
        // Retries queued by a failed read, when no group pushed after them.
        self.flush_outbox(backend)
    }

    /// Pushes the queued reads to the backend, in one call.
    fn flush_outbox(&mut self, backend: &mut dyn Backend) -> Result<(), MineError> {
        if self.outbox.is_empty() {
            return Ok(());
        }
        let pushed = backend.push_all(&self.outbox);
        self.outbox.clear();
        pushed.map_err(|_| queue_full())
    }

    /// Queues chain `idx`'s next read in the outbox, or takes its sample from the overlay.
    #[inline]
    fn issue_read(&mut self, idx: usize) {
        let chain = &mut self.chains[idx];
        let shard = chain.shard as usize;
        let target = self.shared.plans[shard].target(&chain.hash);
        if let Some(sample) = self.shared.overlays[shard].sample(target.sample_idx) {
            self.tallies[shard].overlay_samples += 1;
            self.from_overlay.push(Completion {
                tag: idx as u32,
                result: Ok(sample),
            });
            return;
        }
        // The plans number files over the whole miner; the backend only has its pool's.
        chain.file = target.file - self.assignment.first_file;
        chain.offset = target.offset;
        self.outbox.push(SampleRead {
            tag: idx as u32,
            file: chain.file,
            offset: target.offset,
        });
    }

    /// The next (shard, nonce): from `home` while it has work, else from the next shard of the
    /// pool that has.
    #[inline]
    fn take_work(&mut self, home: usize) -> Option<(usize, u64)> {
        let pool = self.assignment.shards.clone();
        let mut shard = home;
        for _ in pool.clone() {
            let this = shard;
            shard = if shard + 1 == pool.end {
                pool.start
            } else {
                shard + 1
            };
            let work = &mut self.work[this];
            if work.exhausted || work.found {
                continue;
            }
            if work.next == work.end {
                match claim(self.shared, this) {
                    Some(block) => (work.next, work.end) = (block.start, block.end),
                    None => {
                        work.exhausted = true;
                        continue;
                    }
                }
            }
            let offset = work.next;
            work.next += 1;
            return Some((this, self.shared.nonces.start + offset));
        }
        None
    }
}

/// Claims the next block of nonce offsets of `shard`, or `None` when all are claimed.
fn claim(shared: &SlotShared, shard: usize) -> Option<Range<u64>> {
    let len = shared.nonces.end - shared.nonces.start;
    let counter = &shared.claimed[shard];
    let mut start = counter.load(Ordering::Relaxed);
    loop {
        if start >= len {
            return None;
        }
        let end = start + shared.claim_block.min(len - start);
        match counter.compare_exchange_weak(start, end, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Some(start..end),
            Err(now) => start = now,
        }
    }
}

fn queue_full() -> MineError {
    // Each chain has at most one read outstanding, so this means the backend's capacity is
    // smaller than the depth it was created with: a backend bug.
    MineError::Io(pora_io::IoError::Config(
        "backend refused a read within its capacity".into(),
    ))
}
