//! pora-serve: `pora serve`, a local JSON-RPC 2.0 mining service over HTTP/1.1, and the
//! Prometheus metrics it (and `pora mine --metrics-listen`) exports.
//!
//! - [`rpc`]: the JSON-RPC 2.0 envelope (single and batch requests, the error codes);
//! - [`Service`]: one opened [`pora_mine::session::Session`], the running slot, its cancel flag
//!   and the last slot's report; the methods `pora_hash`, `pora_mineSlot`, `pora_cancel`,
//!   `pora_status`;
//! - [`Metrics`]: the Prometheus registry, fed once per slot from the slot's report (the mining
//!   hot path gains nothing);
//! - [`Server`]: the HTTP listener (`POST /`, `GET /metrics`, `GET /healthz`) with its limits:
//!   body size, header and body read timeouts, connection cap, bearer token;
//! - [`MetricsExporter`]: the metrics-only listener of `pora mine --metrics-listen`.
//!
//! The mining engine stays synchronous: a slot runs on one of a few blocking threads of a small
//! tokio runtime; the HTTP side only waits for its answer.

mod exporter;
mod http;
mod methods;
pub mod metrics;
mod params;
pub mod rpc;
mod service;

pub use exporter::MetricsExporter;
pub use http::{Access, Server, ServerConfig, Shutdown};
pub use metrics::Metrics;
pub use service::Service;

use std::net::SocketAddr;

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("listening on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "{addr} is not a loopback address: serving beyond this machine needs --allow-remote and --auth-token-file"
    )]
    RemoteNotAllowed { addr: SocketAddr },
    #[error("the auth token is empty")]
    EmptyToken,
    #[error("starting the HTTP runtime: {0}")]
    Runtime(std::io::Error),
    #[error("building the metrics registry: {0}")]
    Metrics(#[from] prometheus::Error),
}
