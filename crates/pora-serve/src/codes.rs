//! The JSON-RPC 2.0 error object and every error code the service answers with, listed once.
//! Only the protocol layers use them: the framing (`rpc.rs`, for bodies and envelopes) and the
//! dispatch (`methods.rs`, for params and the service's typed errors); the service and the
//! metrics below them know no codes, the transport above them asks the framing for its answers.

use serde_json::{json, Map, Value};

/// Invalid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// Valid JSON that is not a request object (or an empty or oversized batch, or an oversized
/// body).
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// A parameter is missing, unknown or malformed; the message names it and `data.field` holds it.
pub const INVALID_PARAMS: i64 = -32602;
/// A bug or an unexpected failure of the service.
pub const INTERNAL_ERROR: i64 = -32603;
/// Server error: a slot is already running (one slot at a time); cancel it or wait.
pub const SLOT_RUNNING: i64 = -32000;
/// Server error: a shard file could not be read; `data` holds `path`, `offset` and `why` when
/// the failed read is known.
pub const IO_ERROR: i64 = -32001;
/// Server error: the service is shutting down and starts no new slot.
pub const SHUTTING_DOWN: i64 = -32002;
/// Server error: the shards could not be mined (a file changed size, a device went away...).
pub const MINING_FAILED: i64 = -32003;

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32602` naming `field` in the message and in `data.field`.
    pub fn invalid_param(field: &str, why: impl std::fmt::Display) -> Self {
        RpcError::new(INVALID_PARAMS, format!("invalid params: `{field}`: {why}"))
            .with_data(json!({ "field": field }))
    }

    /// `-32603`: what went wrong is ours, not the caller's.
    pub fn internal(why: impl std::fmt::Display) -> Self {
        RpcError::new(INTERNAL_ERROR, format!("internal error: {why}"))
    }

    /// The object as it goes on the wire: `code`, `message`, and `data` when there is some.
    pub fn to_value(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), self.code.into());
        error.insert("message".into(), self.message.clone().into());
        if let Some(data) = &self.data {
            error.insert("data".into(), data.clone());
        }
        Value::Object(error)
    }
}
