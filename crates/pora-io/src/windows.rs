//! Windows methods: per-worker `seek_read`, shared handle, IOCP overlapped (buffered and
//! unbuffered), mmap.

use crate::{BackendFactory, IoConfig, IoError, Method};
use std::path::PathBuf;
use std::sync::Arc;

pub(crate) fn open(method: Method, _paths: &[PathBuf], _config: &IoConfig) -> Result<Arc<dyn BackendFactory>, IoError> {
    Err(IoError::Unavailable { method: method.name(), reason: "not implemented yet".into() })
}
