//! A device pool's reading side: its factory and its workers, each a long-lived thread that owns
//! one backend and mines one slot's job at a time.
//!
//! Between slots the workers wait on the pool's shelf. What a stalled device does to them is
//! handled here, off the slot's path (docs/spec/stalls.md):
//! - a worker the slot left behind inside a read keeps its thread and backend; when the read
//!   returns it waits for the reads it still has in the kernel to be given back and puts itself
//!   back on the shelf, so a disk that comes back is mined at full strength with the workers it
//!   already had;
//! - a worker whose backend still has reads in the kernel when its job ends (a ring whose
//!   cancellation the device does not answer) drains them on its own thread, then comes back;
//! - replacements are opened by the pool's errand thread ([`crate::errand`]), never by the slot:
//!   opening a file of a stalled device, or starting a thread while a fault on a mapped file
//!   waits, can take as long as the device;
//! - a pool has at most twice its threads in workers at once ([`PoolIo::workers_cap`]), so at
//!   most that many can be away like that; past it no replacement is opened and slots mine with
//!   the workers they have, saying so.
//!
//! No thread is started and no backend opened on a slot's path: a slot hands jobs to threads
//! that exist.

use crate::errand::Errands;
use crate::worker::{self, Assignment, Published, SlotShared, WorkerOutcome};
use crate::MineError;
use pora_io::{Backend, BackendFactory};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

/// The shards of one device and the backend factory that reads them: a pool has its own worker
/// threads, reads in flight and chains, so a slow device holds only its own shards back. The
/// pools of a miner partition its shards in order.
pub struct Pool {
    /// How many of the miner's shards, taken in order after the previous pools', this pool mines.
    pub shards: usize,
    /// Opened over exactly these shards' files, in [`crate::Miner::paths`] order.
    pub factory: Arc<dyn BackendFactory>,
    pub threads: usize,
    pub depth: usize,
}

/// A pool's reading side: its factory, knobs and the workers opened from them. A session keeps
/// the ones it switched away from, so switching back between slots reopens nothing
/// (`crate::swap_checked`).
pub struct PoolIo {
    /// `None` only while the pool is being dropped.
    factory: Option<Arc<dyn BackendFactory>>,
    pub threads: usize,
    pub depth: usize,
    shelf: Arc<Shelf>,
}

/// How long a slot's start waits for replacements its pool's errand is opening: a healthy
/// device opens them in well under a millisecond each; a stalled one may never, and the slot
/// then mines with what it has.
const REPLACEMENT_WAIT: Duration = Duration::from_millis(100);
/// How long a worker whose job ended with reads in flight (a slot's deadline) waits for their
/// cancellation before it answers: a healthy device gives them back well within it, so the worker
/// goes back idle; a stalled one does not, and the worker drains them off the slot's path.
const SETTLE_WAIT: Duration = Duration::from_millis(50);
/// How long a worker waits at a time for the reads its backend still has in the kernel.
const DRAIN_STEP: Duration = Duration::from_millis(100);
/// How long dropping a pool waits for its idle workers to close their backends, and then for
/// its factory to close its files.
// Windows: longer, because a handle still open there keeps its file from being deleted, and Wine
// can take long to schedule a worker.
const CLOSE_WAIT: Duration = Duration::from_millis(if cfg!(windows) { 2000 } else { 200 });

/// Where a pool's workers are between slots.
struct Shelf {
    /// Ready for the next slot.
    idle: Mutex<Vec<WorkerThread>>,
    /// Signalled when a worker lands in `idle`.
    arrived: Condvar,
    /// Workers left behind inside a read, or draining reads the kernel still holds, by id.
    away: Mutex<HashMap<u64, Away>>,
    /// Opens replacements and closes the factory off the slot's path.
    errands: Errands,
    /// The last replacement that failed to open, for the next slot's report.
    open_error: Mutex<Option<String>>,
    next_id: AtomicU64,
    threads: usize,
}

/// A worker away from the shelf.
struct Away {
    worker: WorkerThread,
    /// Counted in `pora_io::leaked_backends` (once: when a slot first went on without it).
    counted: bool,
}

/// A worker thread's handle: dropping it ends the thread once its current job is done.
pub(crate) struct WorkerThread {
    id: u64,
    jobs: Sender<Job>,
}

enum Job {
    Mine(SlotJob),
    /// Wait until the backend's reads are given back, then come back to the shelf.
    Drain,
    /// Hand the backend back (the pool is being dropped) and end.
    Exit(Sender<Box<dyn Backend>>),
}

/// One slot's work for one worker.
pub(crate) struct SlotJob {
    pub shared: Arc<SlotShared>,
    pub assignment: Assignment,
    pub published: Arc<Mutex<Published>>,
    pub handoff: Arc<Handoff>,
    pub reply: Sender<Reply>,
    /// The worker's place in its slot's list.
    pub place: usize,
}

/// A worker's answer to its slot.
pub(crate) struct Reply {
    pub place: usize,
    pub outcome: std::thread::Result<Result<WorkerOutcome, MineError>>,
    /// No read of its backend is left in the kernel.
    pub idle: bool,
}

/// Who takes a worker back when its job ends: the slot (still waiting) or the shelf (the slot
/// left it behind).
pub(crate) struct Handoff {
    state: AtomicU8,
}

const RUNNING: u8 = 0;
const RETURNED: u8 = 1;
const LEFT_BEHIND: u8 = 2;

impl Handoff {
    pub(crate) fn new() -> Arc<Handoff> {
        Arc::new(Handoff {
            state: AtomicU8::new(RUNNING),
        })
    }

    /// The worker is done: `true` when the slot still waits for it.
    fn returned(&self) -> bool {
        self.state
            .compare_exchange(RUNNING, RETURNED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The slot stops waiting: `true` when the worker had not returned yet.
    fn leave_behind(&self) -> bool {
        self.state
            .compare_exchange(RUNNING, LEFT_BEHIND, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// The workers a slot mines one pool with, and what it could not have.
pub(crate) struct Taken {
    pub workers: Vec<WorkerThread>,
    /// Set when the pool mines with fewer than `threads` workers: why.
    pub short: Option<String>,
}

impl WorkerThread {
    /// Hands `job` to the thread; gives it back if the thread is gone.
    pub(crate) fn mine(&self, job: SlotJob) -> Result<(), SlotJob> {
        self.jobs.send(Job::Mine(job)).map_err(|e| match e.0 {
            Job::Mine(job) => job,
            Job::Drain | Job::Exit(_) => unreachable!("sent a Mine job"),
        })
    }
}

impl PoolIo {
    /// Opens `threads` workers of `depth` reads in flight each from `factory` (on the caller's
    /// thread: this is opening, not mining).
    pub fn open(
        factory: Arc<dyn BackendFactory>,
        threads: usize,
        depth: usize,
    ) -> Result<PoolIo, MineError> {
        let shelf = Arc::new(Shelf {
            idle: Mutex::new(Vec::with_capacity(threads)),
            arrived: Condvar::new(),
            away: Mutex::new(HashMap::new()),
            errands: Errands::new("pora-pool-errands"),
            open_error: Mutex::new(None),
            next_id: AtomicU64::new(0),
            threads,
        });
        for _ in 0..threads {
            let worker = spawn_worker(&shelf, factory.worker(depth)?)?;
            lock(&shelf.idle).push(worker);
        }
        Ok(PoolIo {
            factory: Some(factory),
            threads,
            depth,
            shelf,
        })
    }

    /// The backend factory its workers were opened from.
    pub fn factory(&self) -> &Arc<dyn BackendFactory> {
        self.factory
            .as_ref()
            .expect("present until the pool is dropped")
    }

    /// The method its factory reads with.
    pub fn method(&self) -> pora_io::Method {
        self.factory().method()
    }

    /// The most workers (threads, each with its backend and buffers) the pool has at once,
    /// mining, idle or away (stuck inside a read, or draining reads the kernel has not given
    /// back): twice its threads. Replacements for workers away are opened only within it, so a
    /// device stuck for an hour costs at most that, never more.
    pub fn workers_cap(&self) -> usize {
        2 * self.threads
    }

    /// Workers away now.
    pub fn stuck(&self) -> usize {
        lock(&self.shelf.away).len()
    }

    /// The workers the next slot mines with, taken without blocking on the device: the idle
    /// ones, and replacements the errand thread opens within [`REPLACEMENT_WAIT`] when some are
    /// missing.
    pub(crate) fn take_for_slot(&self) -> Taken {
        for away in lock(&self.shelf.away).values_mut() {
            if !away.counted {
                away.counted = true;
                pora_io::note_leaked_backend();
            }
        }
        let mut workers = self.take_idle(self.threads);
        if workers.len() < self.threads {
            self.request_replacements(workers.len());
            let until = Instant::now() + REPLACEMENT_WAIT;
            loop {
                workers.extend(self.take_idle(self.threads - workers.len()));
                let left = until.saturating_duration_since(Instant::now());
                if workers.len() >= self.threads || !self.shelf.errands.busy() || left.is_zero() {
                    break;
                }
                let idle = lock(&self.shelf.idle);
                let _ = self
                    .shelf
                    .arrived
                    .wait_timeout_while(idle, left.min(Duration::from_millis(10)), |idle| {
                        idle.is_empty()
                    })
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
        let short = (workers.len() < self.threads).then(|| self.shortfall(workers.len()));
        Taken { workers, short }
    }

    /// A worker that answered its slot: back to idle, or away to drain what the kernel holds.
    pub(crate) fn settle(&self, worker: WorkerThread, idle: bool) {
        if idle {
            self.shelf.shelve(worker);
            return;
        }
        let id = worker.id;
        let mut away = lock(&self.shelf.away);
        // Filed before the drain is asked for, so the worker's return always finds itself away.
        if worker.jobs.send(Job::Drain).is_ok() {
            away.insert(
                id,
                Away {
                    worker,
                    counted: false,
                },
            );
        }
    }

    /// Leaves `worker` behind inside its read (counted as leaked): it comes back by itself.
    /// `Err` gives it back when it returned in the meantime (its reply is then on its way).
    pub(crate) fn leave_behind(
        &self,
        worker: WorkerThread,
        handoff: &Handoff,
    ) -> Result<(), WorkerThread> {
        let mut away = lock(&self.shelf.away);
        let id = worker.id;
        // Filed before the handoff flips, so the worker's return always finds itself away.
        away.insert(
            id,
            Away {
                worker,
                counted: true,
            },
        );
        if handoff.leave_behind() {
            pora_io::note_leaked_backend();
            Ok(())
        } else {
            Err(away.remove(&id).expect("inserted above").worker)
        }
    }

    fn take_idle(&self, most: usize) -> Vec<WorkerThread> {
        let mut idle = lock(&self.shelf.idle);
        let at = idle.len().saturating_sub(most);
        idle.drain(at..).collect()
    }

    /// Asks the errand thread for the workers a slot with `have` lacks, within the cap on
    /// workers away.
    fn request_replacements(&self, have: usize) {
        let missing = self.threads - have;
        // Workers in existence stay within the cap.
        let room = self.workers_cap().saturating_sub(have + self.stuck());
        let count = missing.min(room);
        if count == 0 {
            return;
        }
        let (weak, factory, depth) = (
            Arc::downgrade(&self.shelf),
            self.factory().clone(),
            self.depth,
        );
        let _ = self.shelf.errands.start(move || {
            for _ in 0..count {
                let Some(shelf) = weak.upgrade() else {
                    return;
                };
                let opened = factory
                    .worker(depth)
                    .map_err(MineError::from)
                    .and_then(|backend| spawn_worker(&shelf, backend));
                match opened {
                    Ok(worker) => shelf.shelve(worker),
                    Err(e) => {
                        *lock(&shelf.open_error) = Some(e.to_string());
                        return;
                    }
                }
            }
        });
    }

    /// Why a slot mines this pool with `have` of its `threads` workers.
    fn shortfall(&self, have: usize) -> String {
        let stuck = self.stuck();
        let mut why = format!(
            "{} mined with {have} of {} workers: {stuck} are held by reads the device has not answered",
            self.method(),
            self.threads
        );
        if have + stuck >= self.workers_cap() {
            why.push_str(&format!(
                " (the pool is at its cap of {} workers: no replacement is opened until they come back)",
                self.workers_cap()
            ));
        } else if self.shelf.errands.busy() {
            why.push_str("; replacements are still being opened off the slot's path");
        }
        if let Some(e) = lock(&self.shelf.open_error).take() {
            why.push_str(&format!("; opening a replacement failed: {e}"));
        }
        why
    }
}

impl Drop for PoolIo {
    /// The idle workers drop their backends on their own threads and the factory's files close
    /// on the errand thread, each waited for at most `CLOSE_WAIT`: on a healthy device every
    /// file is closed when this returns (Windows then lets the files be deleted), on a stalled
    /// one nothing here waits longer than that. Workers away end when the device lets them; one
    /// the kernel still holds reads for leaks its backend rather than wait.
    fn drop(&mut self) {
        for away in lock(&self.shelf.away).values_mut() {
            if !away.counted {
                away.counted = true;
                pora_io::note_leaked_backend();
            }
        }
        if CLOSE_ON_CALLER {
            // Workers draining reads a healthy device gives back at once come back first.
            let until = Instant::now() + CLOSE_WAIT;
            while !lock(&self.shelf.away).is_empty() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let idle = std::mem::take(&mut *lock(&self.shelf.idle));
        let (back, backends) = mpsc::channel::<Box<dyn Backend>>();
        let asked = idle
            .iter()
            .filter(|w| w.jobs.send(Job::Exit(back.clone())).is_ok())
            .count();
        drop(back);
        let until = Instant::now() + CLOSE_WAIT;
        let mut returned = Vec::with_capacity(asked);
        while returned.len() < asked {
            match backends.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(backend) => returned.push(backend),
                Err(_) => break,
            }
        }
        let factory = self.factory.take();
        if CLOSE_ON_CALLER {
            drop(returned);
            drop(factory);
        } else {
            self.shelf.errands.dispose((returned, factory), CLOSE_WAIT);
        }
    }
}

/// Windows refuses to delete a file a handle still holds open, so there a dropped pool closes
/// its files on the caller's thread (a closed session's shard can be deleted at once); elsewhere
/// they close on the pool's errand thread, so a stalled device cannot hold the caller.
const CLOSE_ON_CALLER: bool = cfg!(windows);

impl Shelf {
    /// Files an idle worker (up to `threads`; a surplus one ends).
    fn shelve(&self, worker: WorkerThread) {
        let mut idle = lock(&self.idle);
        if idle.len() < self.threads {
            idle.push(worker);
            self.arrived.notify_all();
        }
    }

    /// A worker that was away is idle again.
    fn come_back(&self, id: u64) {
        let away = lock(&self.away).remove(&id);
        if let Some(away) = away {
            self.shelve(away.worker);
        }
    }
}

/// Starts a worker thread owning `backend`.
fn spawn_worker(shelf: &Arc<Shelf>, backend: Box<dyn Backend>) -> Result<WorkerThread, MineError> {
    let id = shelf.next_id.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel::<Job>();
    let weak = Arc::downgrade(shelf);
    std::thread::Builder::new()
        .name(format!("pora-worker-{id}"))
        .spawn(move || serve_jobs(backend, rx, weak, id))
        .map_err(|source| {
            MineError::from(pora_io::IoError::Os {
                what: "starting a worker thread",
                source,
            })
        })?;
    Ok(WorkerThread { id, jobs: tx })
}

/// A worker thread's life: one job at a time until its handle is dropped; then its backend is
/// dropped here, on its own thread.
fn serve_jobs(mut backend: Box<dyn Backend>, jobs: Receiver<Job>, shelf: Weak<Shelf>, id: u64) {
    for job in jobs {
        let job = match job {
            Job::Mine(job) => job,
            Job::Exit(back) => {
                let _ = back.send(backend);
                return;
            }
            Job::Drain => {
                drain(backend.as_mut());
                if let Some(shelf) = shelf.upgrade() {
                    shelf.come_back(id);
                }
                continue;
            }
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            worker::run(
                backend.as_mut(),
                &job.shared,
                job.assignment,
                &job.published,
            )
        }));
        backend.drop_queued();
        let idle = backend.in_flight() == 0 || backend.cancel_all(SETTLE_WAIT).is_idle();
        if job.handoff.returned() {
            let _ = job.reply.send(Reply {
                place: job.place,
                outcome,
                idle,
            });
        } else {
            // Left behind: the slot filed this worker away and reports what it published.
            drain(backend.as_mut());
            if let Some(shelf) = shelf.upgrade() {
                shelf.come_back(id);
            }
        }
    }
}

/// Waits until the kernel has given back every read of `backend` (off every slot's path).
fn drain(backend: &mut dyn Backend) {
    while backend.in_flight() > 0 && !backend.cancel_all(DRAIN_STEP).is_idle() {}
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
