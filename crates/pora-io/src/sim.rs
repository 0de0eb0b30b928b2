//! Deterministic simulated disk (`--method sim`): seeded latency, reordering and injected faults
//! over the real files' bytes, for tests of everything above the backend.

use crate::{BackendFactory, IoConfig, IoError};
use std::path::PathBuf;
use std::sync::Arc;

/// How the simulated disk behaves.
#[derive(Clone, Debug, Default)]
pub struct SimConfig {
    /// Seed of every random choice (latency, order, probabilistic faults).
    pub seed: u64,
    /// Each read completes after a latency drawn uniformly from this range, microseconds.
    pub latency_us: (u32, u32),
    /// Injected faults.
    pub faults: Vec<SimFault>,
}

/// A fault injected for reads that touch `[offset_start, offset_end)` of file `file`.
#[derive(Clone, Debug)]
pub struct SimFault {
    pub file: u32,
    pub offset_start: u64,
    pub offset_end: u64,
    /// `true`: a short read; `false`: EIO.
    pub short_read: bool,
}

pub(crate) fn open(_paths: &[PathBuf], _config: &IoConfig) -> Result<Arc<dyn BackendFactory>, IoError> {
    Err(IoError::Unavailable { method: "sim", reason: "not implemented yet".into() })
}
