//! pora-serve: `pora serve`, a local JSON-RPC 2.0 mining service over HTTP/1.1, and the
//! Prometheus metrics it (and `pora mine --metrics-listen`) exports.
//!
//! The layers, each importing only those below it:
//!
//! - [`Server`] (`http.rs`), the transport: the HTTP listener (`POST /`, `GET /metrics`,
//!   `GET /healthz`) with the limits and access rule of its [`ServerConfig`] (`config.rs`, where
//!   every default and bound is stated); [`MetricsExporter`], the metrics-only listener of
//!   `pora mine --metrics-listen`;
//! - [`rpc`], the JSON-RPC 2.0 framing: single and batch requests, the response envelopes;
//! - [`Method`] (`methods.rs`, with `params.rs`), the dispatch: `pora_hash`, `pora_mineSlot`,
//!   `pora_cancel`, `pora_status`, their params, and the mapping of the service's errors to the
//!   codes of [`codes`] (known to the framing and the dispatch only);
//! - [`Service`]: one opened [`pora_mine::session::Session`], the running slot, its cancel flag
//!   and the last slot's answer, with typed errors ([`ServiceError`]);
//! - [`Metrics`]: the Prometheus registry, fed once per slot from the slot's report (the mining
//!   hot path gains nothing).
//!
//! The mining engine stays synchronous: a slot runs on one of a few blocking threads of a small
//! tokio runtime; the HTTP side only waits for its answer. Single-nonce hashes take at most two
//! of those threads at once (the rest wait for a turn without one), so hashes stuck on a
//! stalled disk never leave a slot waiting for a thread.

pub mod codes;
mod config;
mod error;
mod exporter;
mod http;
mod methods;
pub mod metrics;
mod params;
pub mod rpc;
mod service;

pub use config::{
    read_token_file, readable_by_others, Access, ServerConfig, IO_TIMEOUT_SECS,
    IO_TIMEOUT_SECS_RANGE, MAX_BLOCKING_THREADS, MAX_BODY_BYTES, MAX_BODY_BYTES_RANGE,
    MAX_CONNECTIONS, MAX_CONNECTIONS_RANGE, MAX_HEADER_BYTES, SHUTDOWN_GRACE,
};
pub use error::ServeError;
pub use exporter::MetricsExporter;
pub use http::{Server, Shutdown};
pub use methods::{Call, Method};
pub use metrics::Metrics;
pub use service::{FailedRead, Service, ServiceError, StatusRecord};
