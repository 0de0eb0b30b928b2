//! Why the service or its listener could not start. The texts name what is wrong, never a flag
//! of a front end: the `pora` binary renders [`ServeError::NotLoopback`] and
//! [`ServeError::TokenFile`] with its own flags.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("listening on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// Serving beyond loopback needs remote access allowed and a bearer token.
    #[error("{addr} is not a loopback address, and serving beyond this machine was not allowed with a bearer token")]
    NotLoopback { addr: SocketAddr },
    #[error("the auth token is empty")]
    EmptyToken,
    /// The bearer token file could not be read, or holds no usable token.
    #[error("auth token file {}: {why}", path.display())]
    TokenFile { path: PathBuf, why: String },
    #[error("starting the HTTP runtime: {0}")]
    Runtime(std::io::Error),
    #[error("building the metrics registry: {0}")]
    Metrics(#[from] prometheus::Error),
}
