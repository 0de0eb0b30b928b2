//! Where the listener listens, who may connect (the loopback rule, the bearer token) and its
//! limits: every default and bound stated once, here. The `pora` binary's flags take their
//! defaults and ranges from these constants.

use crate::error::ServeError;
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::Path;
use std::time::Duration;

/// Largest request body by default, bytes (larger ones get 413).
pub const MAX_BODY_BYTES: u64 = 1 << 20;
/// The body limits a caller may choose, bytes: room for a batch, yet bounded memory.
pub const MAX_BODY_BYTES_RANGE: RangeInclusive<u64> = 1024..=64 << 20;
/// Default wait for a request's headers (and, again, for its body), seconds.
pub const IO_TIMEOUT_SECS: f64 = 10.0;
/// The I/O timeouts a caller may choose, seconds.
pub const IO_TIMEOUT_SECS_RANGE: RangeInclusive<f64> = 0.1..=3600.0;
/// Most connections served at once by default; more wait in the OS backlog.
pub const MAX_CONNECTIONS: u64 = 256;
/// The connection caps a caller may choose.
pub const MAX_CONNECTIONS_RANGE: RangeInclusive<u64> = 1..=65536;
/// How long in-flight requests may take to finish after shutdown starts: short enough that
/// the process exits within 2 s of SIGTERM.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);
/// Largest request head (request line and headers) hyper buffers.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Blocking threads of the runtime: one slot at a time plus a few single-nonce hashes.
pub const MAX_BLOCKING_THREADS: usize = 4;
/// Single-nonce hashes reading at once: the blocking threads less two, so that a slot (and a
/// second caller told that one runs) always finds a thread however many hashes wait on a
/// stalled disk; the hashes past these wait for a turn without holding a thread.
pub const MAX_HASHES_AT_ONCE: usize = MAX_BLOCKING_THREADS - 2;

/// Who may connect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Loopback addresses only, no token (the default of `pora serve`).
    LoopbackOnly,
    /// Every request must carry `Authorization: Bearer <token>`; `remote`: from any address,
    /// else from loopback only.
    Token { token: String, remote: bool },
    /// Any address, no token: only for the read-only metrics listener.
    Open,
}

/// Where to listen and the limits.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub access: Access,
    pub max_body_bytes: usize,
    /// Longest wait for a request's headers (and, again, for its body).
    pub io_timeout: Duration,
    pub max_connections: usize,
    /// How long in-flight requests may take to finish after shutdown starts.
    pub shutdown_grace: Duration,
}

impl ServerConfig {
    /// Loopback only, with the default limits above.
    pub fn new(listen: SocketAddr) -> Self {
        ServerConfig {
            listen,
            access: Access::LoopbackOnly,
            max_body_bytes: MAX_BODY_BYTES as usize,
            io_timeout: Duration::from_secs_f64(IO_TIMEOUT_SECS),
            max_connections: MAX_CONNECTIONS as usize,
            shutdown_grace: SHUTDOWN_GRACE,
        }
    }

    /// The loopback rule: beyond loopback only with remote access allowed and a token (or for
    /// the open metrics listener); a token must not be empty.
    pub fn check(&self) -> Result<(), ServeError> {
        let loopback = self.listen.ip().is_loopback();
        match &self.access {
            Access::Token { token, .. } if token.is_empty() => Err(ServeError::EmptyToken),
            Access::LoopbackOnly | Access::Token { remote: false, .. } if !loopback => {
                Err(ServeError::NotLoopback { addr: self.listen })
            }
            _ => Ok(()),
        }
    }
}

/// The bearer token in the file at `path`, surrounding whitespace trimmed: printable ASCII
/// without spaces, so it fits an `Authorization` header as written.
pub fn read_token_file(path: &Path) -> Result<String, ServeError> {
    let refused = |why: String| ServeError::TokenFile {
        path: path.to_path_buf(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| refused(e.to_string()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(refused("the file is empty".into()));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(refused(
            "the token must be printable ASCII without spaces".into(),
        ));
    }
    Ok(token.to_string())
}

/// Whether users other than the owner may read the file at `path` (a token file should not be).
#[cfg(unix)]
pub fn readable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & 0o077 != 0)
}

/// Whether users other than the owner may read the file at `path`: not told on this OS.
#[cfg(not(unix))]
pub fn readable_by_others(_path: &Path) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_loopback_needs_remote_access_and_a_token() {
        let remote: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let mut config = ServerConfig::new(remote);
        let not_loopback =
            |c: &ServerConfig| matches!(c.check(), Err(ServeError::NotLoopback { .. }));
        assert!(not_loopback(&config));
        let token = |token: &str, remote| Access::Token {
            token: token.into(),
            remote,
        };
        config.access = token("t", false);
        assert!(not_loopback(&config));
        config.access = token("", true);
        assert!(matches!(config.check(), Err(ServeError::EmptyToken)));
        config.access = token("t", true);
        assert!(config.check().is_ok());
        config.access = Access::Open;
        assert!(config.check().is_ok());
        assert!(ServerConfig::new("[::1]:0".parse().unwrap())
            .check()
            .is_ok());
    }

    #[test]
    fn token_files_are_trimmed_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, " s3cret\n").unwrap();
        assert_eq!(read_token_file(&path).unwrap(), "s3cret");
        for bad in [" \n", "two words"] {
            std::fs::write(&path, bad).unwrap();
            assert!(matches!(
                read_token_file(&path),
                Err(ServeError::TokenFile { .. })
            ));
        }
    }
}
