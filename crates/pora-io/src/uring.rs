//! io_uring methods (`uring`, `uring-direct`), Linux only.

use crate::{BackendFactory, IoConfig, IoError, Method};
use std::path::PathBuf;
use std::sync::Arc;

/// Whether io_uring can be used here; the reason when not.
pub fn probe() -> Result<(), String> {
    Err("not implemented yet".into())
}

pub(crate) fn open(_method: Method, _paths: &[PathBuf], _config: &IoConfig) -> Result<Arc<dyn BackendFactory>, IoError> {
    Err(IoError::Unavailable { method: "uring", reason: "not implemented yet".into() })
}
