//! The mining service behind the RPC methods: one opened [`Session`], at most one running slot
//! (its stop flag is what `pora_cancel` and shutdown set), the last slot's answer, and the
//! metrics. Slots and single-nonce hashes run on the runtime's blocking threads, so the engine
//! stays synchronous and the HTTP side never blocks on a read.

use crate::metrics::Metrics;
use crate::rpc::{self, RpcError};
use crate::ServeError;
use pora_core::{H256, U256};
use pora_io::IoError;
use pora_mine::records::{HashRecord, ShardSlotRecord};
use pora_mine::session::Session;
use pora_mine::{MineError, Miner, SlotReport, SlotRequest};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// What the service knows about slots; guarded by one mutex so that starting, cancelling and
/// shutting down cannot interleave.
#[derive(Default)]
struct SlotState {
    running: bool,
    shutting_down: bool,
    /// Number of the next slot (0-based, like `pora mine`'s `slot`).
    next_slot: u64,
    /// The last finished slot's answer.
    last: Option<Value>,
}

/// One session served over RPC.
pub struct Service {
    session: Session,
    metrics: Arc<Metrics>,
    /// Every data file in the miner's order (a read error names a file by its index here).
    paths: Vec<PathBuf>,
    started: Instant,
    state: Mutex<SlotState>,
    stop: AtomicBool,
}

impl Service {
    /// Serves `session`, with fresh metrics for its shards.
    pub fn new(session: Session) -> Result<Arc<Service>, ServeError> {
        let metrics = Arc::new(Metrics::new(session.choices())?);
        Ok(Arc::new(Service {
            paths: Miner::paths(session.miner().shards()),
            session,
            metrics,
            started: Instant::now(),
            state: Mutex::new(SlotState::default()),
            stop: AtomicBool::new(false),
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

    /// Mines one slot on a blocking thread; `SLOT_RUNNING` at once when one runs already.
    pub async fn mine_slot(self: &Arc<Self>, request: SlotRequest) -> Result<Value, RpcError> {
        let slot = self.claim_slot()?;
        let service = self.clone();
        // The slot runs to its end even if the caller goes away: it is bounded by its slotMs.
        tokio::task::spawn_blocking(move || service.run_slot(slot, &request))
            .await
            .unwrap_or_else(|e| Err(internal(e)))
    }

    fn claim_slot(&self) -> Result<u64, RpcError> {
        let mut state = self.state();
        if state.shutting_down {
            return Err(RpcError::new(
                rpc::SHUTTING_DOWN,
                "the service is shutting down",
            ));
        }
        if state.running {
            return Err(RpcError::new(
                rpc::SLOT_RUNNING,
                "a slot is already running; wait for it or call pora_cancel",
            ));
        }
        state.running = true;
        self.stop.store(false, Ordering::SeqCst);
        let slot = state.next_slot;
        state.next_slot += 1;
        Ok(slot)
    }

    fn run_slot(&self, slot: u64, request: &SlotRequest) -> Result<Value, RpcError> {
        /// Clears `running` however the slot ends (a panic included).
        struct Running<'a>(&'a Service);
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                self.0.state().running = false;
            }
        }
        let _running = Running(self);
        self.metrics.slot_started();
        match self.session.mine_slot(request, &self.stop) {
            Ok(report) => {
                self.metrics.record_slot(&report, self.session.choices());
                let answer = self.slot_answer(slot, &report);
                self.state().last = Some(answer.clone());
                Ok(answer)
            }
            Err(e) => {
                self.metrics.record_slot_error();
                Err(self.mine_error(e))
            }
        }
    }

    /// `{"shards": [...], "ioErrorMessages": [...]}`: the shard objects are exactly the lines of
    /// `pora mine --json`.
    fn slot_answer(&self, slot: u64, report: &SlotReport) -> Value {
        let shards = ShardSlotRecord::from_report(slot, report, self.session.choices());
        json!({ "shards": shards, "ioErrorMessages": report.io_error_messages })
    }

    /// Ends the running slot (it answers with partial counts); whether one was running.
    pub fn cancel(&self) -> bool {
        let state = self.state();
        if state.running {
            self.stop.store(true, Ordering::SeqCst);
        }
        state.running
    }

    /// Refuses new slots and cancels the running one.
    pub fn begin_shutdown(&self) {
        let mut state = self.state();
        state.shutting_down = true;
        self.stop.store(true, Ordering::SeqCst);
    }

    /// One nonce through the single-nonce path, on a blocking thread: what `pora hash --json`
    /// prints. `shard` may be left out when one shard is served.
    pub async fn hash(
        self: &Arc<Self>,
        shard: Option<u64>,
        randao: H256,
        nonce: u64,
        required: Option<U256>,
    ) -> Result<Value, RpcError> {
        let shards = self.session.miner().shards();
        let shard_idx = match shard {
            Some(s) => s,
            None if shards.len() == 1 => shards[0].geometry.shard_idx,
            None => {
                return Err(RpcError::invalid_param(
                    "shard",
                    format!(
                        "missing: {} shards are served ({}); name one",
                        shards.len(),
                        self.shard_list()
                    ),
                ))
            }
        };
        let service = self.clone();
        tokio::task::spawn_blocking(move || {
            let session = &service.session;
            let proof = session
                .hash(shard_idx, &randao, nonce)
                .map_err(|e| service.mine_error(e))?;
            let miner = session.miner();
            let files_miner = miner
                .shards()
                .iter()
                .find(|s| s.geometry.shard_idx == shard_idx)
                .map(|s| s.miner)
                .unwrap_or_default();
            let miner_address = miner.config().miner.unwrap_or(files_miner);
            let record = HashRecord::new(proof, shard_idx, miner_address, randao, required);
            serde_json::to_value(record).map_err(internal)
        })
        .await
        .unwrap_or_else(|e| Err(internal(e)))
    }

    fn shard_list(&self) -> String {
        let shards: Vec<String> = self
            .session
            .miner()
            .shards()
            .iter()
            .map(|s| s.geometry.shard_idx.to_string())
            .collect();
        shards.join(", ")
    }

    /// `pora_status`: what is served, how, and the last slot's answer.
    pub fn status(&self) -> Value {
        let shards: Vec<Value> = self
            .session
            .miner()
            .shards()
            .iter()
            .map(|s| {
                json!({
                    "shard": s.geometry.shard_idx,
                    "files": s.paths(),
                    "miner": s.miner,
                    "kvEntriesBits": s.geometry.kv_entries_bits,
                    "kvSizeBits": s.geometry.kv_size_bits,
                })
            })
            .collect();
        // The first device's choice at the top level (one device is the common case); every
        // device's in `devices`. A session opens only with at least one shard, so one choice.
        let choice = &self.session.choices()[0];
        let state = self.state();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptimeSec": self.started.elapsed().as_secs_f64(),
            "shards": shards,
            "method": choice.method,
            "threads": choice.threads,
            "depth": choice.depth,
            "why": choice.why,
            "profile": choice.profile,
            "devices": self.session.choices(),
            "randomChecks": self.session.miner().config().random_checks,
            "io": self.session.miner().describe_io(),
            "notes": self.session.notes(),
            "slotRunning": state.running,
            "slotsStarted": state.next_slot,
            "lastSlot": state.last,
        })
    }

    /// The RPC error for a failed slot or hash: reads name the file and offset.
    fn mine_error(&self, e: MineError) -> RpcError {
        match e {
            MineError::Busy => RpcError::new(rpc::SLOT_RUNNING, e.to_string()),
            MineError::Read { path, offset, why } | MineError::Sample { path, offset, why } => {
                io_error(&path, Some(offset), &why)
            }
            MineError::Io(IoError::Read(r)) => {
                let path = self.paths.get(r.file as usize).cloned().unwrap_or_default();
                io_error(&path, Some(r.offset), &r.kind.to_string())
            }
            MineError::Io(IoError::Open { path, source }) => {
                io_error(&path, None, &source.to_string())
            }
            MineError::UnknownShard(shard) => RpcError::invalid_param(
                "shard",
                format!("no shard {shard} is served (served: {})", self.shard_list()),
            ),
            other => RpcError::new(rpc::MINING_FAILED, other.to_string()),
        }
    }
}

fn io_error(path: &std::path::Path, offset: Option<u64>, why: &str) -> RpcError {
    let at = offset.map_or(String::new(), |o| format!(" at offset {o}"));
    RpcError::new(
        rpc::IO_ERROR,
        format!("{}: read{at} failed: {why}", path.display()),
    )
    .with_data(json!({ "path": path, "offset": offset, "why": why }))
}

fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(rpc::INTERNAL_ERROR, format!("internal error: {e}"))
}
