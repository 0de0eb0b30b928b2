//! What a failed call carries back through the C ABI (its status and message) and the two ways
//! the exports make one: a pora-mine error mapped to its status without a catch-all, and a record
//! serialised as JSON for `out`.

use crate::PoraStatus;
use pora_mine::{ErrorKind, MineError};
use serde::Serialize;

/// A failed call: the status and the message for `out`.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: PoraStatus,
    pub message: String,
}

impl Failure {
    pub fn new(status: PoraStatus, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(PoraStatus::InvalidArgument, message)
    }
}

/// What a call produces on success: bytes for `out` (empty for calls without a result).
pub(crate) type Outcome = Result<Vec<u8>, Failure>;

pub(crate) fn json(value: &impl Serialize) -> Outcome {
    serde_json::to_vec(value).map_err(|e| Failure::new(PoraStatus::Panic, e.to_string()))
}

pub(crate) fn mine_failure(e: MineError) -> Failure {
    let status = match e.kind() {
        ErrorKind::InvalidInput | ErrorKind::UnknownShard => PoraStatus::InvalidArgument,
        ErrorKind::Shard => PoraStatus::Shard,
        ErrorKind::Io => PoraStatus::Io,
        ErrorKind::Busy => PoraStatus::Busy,
    };
    Failure::new(status, e.to_string())
}
