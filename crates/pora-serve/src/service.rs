//! The mining service behind the RPC methods: one opened [`Session`], at most one running slot
//! (its stop flag is what `pora_cancel` and shutdown set), the last slot's answer, and the
//! metrics. Slots and single-nonce hashes run on the runtime's blocking threads, so the engine
//! stays synchronous and the HTTP side never blocks on a read; hashes take at most
//! [`MAX_HASHES_AT_ONCE`] of them, so a hash stuck on a stalled disk never keeps a slot waiting
//! for a thread.
//!
//! Its errors are typed ([`ServiceError`]); which JSON-RPC code each becomes is the dispatch's
//! business (`methods.rs`), so this layer knows no codes.

use crate::config::MAX_HASHES_AT_ONCE;
use crate::error::ServeError;
use crate::metrics::Metrics;
use pora_core::{H256, U256};
use pora_io::IoError;
use pora_mine::records::{HashRecord, SessionRecord, SlotRecord};
use pora_mine::session::Session;
use pora_mine::{MineError, Miner, SlotRequest};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;
use tokio::sync::Semaphore;

/// Why a call of the service failed; the dispatch above turns each into its JSON-RPC code.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("a slot is already running; wait for it or cancel it")]
    SlotRunning,
    #[error("the service is shutting down")]
    ShuttingDown,
    /// No shard was named, and more than one is served.
    #[error("missing: {} shards are served ({}); name one", served.len(), list(served))]
    MissingShard { served: Vec<u64> },
    #[error(transparent)]
    Mine(#[from] MineError),
    /// A bug: a blocking task panicked, say.
    #[error("internal error: {0}")]
    Internal(String),
}

/// `0, 1, 2`.
pub fn list(shards: &[u64]) -> String {
    let shards: Vec<String> = shards.iter().map(u64::to_string).collect();
    shards.join(", ")
}

/// The read behind an I/O error: which file, where (when known) and why.
#[derive(Clone, Debug, Serialize)]
pub struct FailedRead {
    pub path: PathBuf,
    pub offset: Option<u64>,
    pub why: String,
}

impl std::fmt::Display for FailedRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self
            .offset
            .map_or(String::new(), |o| format!(" at offset {o}"));
        write!(f, "{}: read{at} failed: {}", self.path.display(), self.why)
    }
}

/// `pora_status`: the session as every door describes it ([`SessionRecord`], the C ABI's
/// `pora_open` answer), and what the service adds.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusRecord<'a> {
    pub version: &'static str,
    pub uptime_sec: f64,
    #[serde(flatten)]
    pub session: SessionRecord<'a>,
    pub slot_running: bool,
    pub slots_started: u64,
    /// The last finished slot's answer.
    pub last_slot: Option<SlotRecord>,
}

/// What the service knows about slots; guarded by one mutex so that starting, cancelling and
/// shutting down cannot interleave.
#[derive(Default)]
struct SlotState {
    shutting_down: bool,
    /// The last finished slot's answer.
    last: Option<SlotRecord>,
}

/// One session served over RPC.
pub struct Service {
    session: Session,
    metrics: Arc<Metrics>,
    /// Every data file in the miner's order (a read error names a file by its index here).
    paths: Vec<PathBuf>,
    started: Instant,
    state: Mutex<SlotState>,
    /// Set once, at shutdown: it stops a slot even one that was starting as it was set.
    shutdown: AtomicBool,
    /// Turns of the hashes on the blocking threads ([`MAX_HASHES_AT_ONCE`]).
    hash_turns: Arc<Semaphore>,
}

impl Service {
    /// Serves `session`, with fresh metrics for its shards.
    pub fn new(session: Session) -> Result<Arc<Service>, ServeError> {
        let metrics = Arc::new(Metrics::new(&session.choices())?);
        Ok(Arc::new(Service {
            paths: Miner::paths(session.miner().shards()),
            session,
            metrics,
            started: Instant::now(),
            state: Mutex::new(SlotState::default()),
            shutdown: AtomicBool::new(false),
            hash_turns: Arc::new(Semaphore::new(MAX_HASHES_AT_ONCE)),
        }))
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    fn state(&self) -> MutexGuard<'_, SlotState> {
        // A panic while holding the lock leaves plain data behind: keep serving.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Mines one slot on a blocking thread; [`ServiceError::SlotRunning`] at once when one
    /// runs already (the session's one-slot lock says so).
    pub async fn mine_slot(
        self: &Arc<Self>,
        request: SlotRequest,
    ) -> Result<SlotRecord, ServiceError> {
        if self.state().shutting_down {
            return Err(ServiceError::ShuttingDown);
        }
        let service = self.clone();
        // The slot runs to its end even if the caller goes away: it is bounded by its slotMs.
        blocking(move || service.run_slot(&request)).await
    }

    fn run_slot(&self, request: &SlotRequest) -> Result<SlotRecord, ServiceError> {
        self.metrics.slot_started();
        let mined = match self.session.mine_slot(request, &self.shutdown) {
            Ok(mined) => mined,
            // A slot runs (the session's one-slot lock is the only guard): it keeps the gauge
            // at 1 and records its own end.
            Err(MineError::Busy) => return Err(ServiceError::SlotRunning),
            Err(e) => {
                self.metrics.record_slot_error();
                return Err(e.into());
            }
        };
        self.metrics.record_slot(&mined.report, &mined.choices);
        let answer = mined.record();
        self.state().last = Some(answer.clone());
        Ok(answer)
    }

    /// Ends the running slot (it answers with partial counts); whether one was running.
    pub fn cancel(&self) -> bool {
        self.session.cancel()
    }

    /// Refuses new slots and cancels the running one.
    pub fn begin_shutdown(&self) {
        self.state().shutting_down = true;
        self.shutdown.store(true, Ordering::SeqCst);
    }

    /// One nonce through the single-nonce path, on a blocking thread once it has a turn (at most
    /// [`MAX_HASHES_AT_ONCE`] read at once, the rest wait without a thread): what `pora hash
    /// --json` prints, when the disk answers. `shard` may be left out when one shard is served.
    pub async fn hash(
        self: &Arc<Self>,
        shard: Option<u64>,
        randao: H256,
        nonce: u64,
        required: Option<U256>,
    ) -> Result<HashRecord, ServiceError> {
        let served = self.served_shards();
        let shard = match (shard, served.as_slice()) {
            (Some(shard), _) => shard,
            (None, [only]) => *only,
            (None, _) => return Err(ServiceError::MissingShard { served }),
        };
        let turn = (self.hash_turns.clone().acquire_owned().await)
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        let service = self.clone();
        blocking(move || {
            let _turn = turn;
            Ok(service
                .session
                .hash_record(shard, &randao, nonce, required, None)?)
        })
        .await
    }

    /// The indexes of the shards served, in the miner's order.
    pub fn served_shards(&self) -> Vec<u64> {
        let shards = self.session.miner().shards();
        shards.iter().map(|s| s.geometry.shard_idx).collect()
    }

    /// `pora_status`: what is served, how, and the last slot's answer.
    pub fn status(&self) -> StatusRecord<'_> {
        let state = self.state();
        StatusRecord {
            version: env!("CARGO_PKG_VERSION"),
            uptime_sec: self.started.elapsed().as_secs_f64(),
            session: self.session.record(),
            slot_running: self.session.slot_running(),
            slots_started: self.session.slots_started(),
            last_slot: state.last.clone(),
        }
    }

    /// The read behind an I/O error of a slot or hash, when the error names one: the file (a
    /// backend names it by its index among the miner's files) and the offset.
    pub fn failed_read(&self, e: &MineError) -> Option<FailedRead> {
        let read = |path: &PathBuf, offset, why: &dyn std::fmt::Display| FailedRead {
            path: path.clone(),
            offset,
            why: why.to_string(),
        };
        match e {
            MineError::Read { path, offset, why } | MineError::Sample { path, offset, why } => {
                Some(read(path, Some(*offset), why))
            }
            MineError::Io(IoError::Read(r)) => {
                let path = self.paths.get(r.file as usize).cloned().unwrap_or_default();
                Some(read(&path, Some(r.offset), &r.kind))
            }
            MineError::Io(IoError::Open { path, source })
            | MineError::Open {
                source: IoError::Open { path, source },
                ..
            } => Some(read(path, None, source)),
            _ => None,
        }
    }
}

/// Runs `work` on one of the runtime's blocking threads: the engine is synchronous.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(ServiceError::Internal(e.to_string())))
}
