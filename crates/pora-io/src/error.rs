//! I/O errors: [`IoError`] for opening and ring/port failures that stop a worker, [`ReadError`]
//! for one failed read, which comes back in its completion and never stops the others.

use std::fmt;
use std::path::PathBuf;

/// Why one read failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadErrorKind {
    /// The OS returned this errno / Windows error code.
    Os(i32),
    /// Fewer bytes than asked arrived (end of file: the file shrank or was truncated).
    ShortRead { got: u32, wanted: u32 },
    /// The offset lies past the end of the file as opened (or as it is now, for mmap).
    OutOfBounds { file_len: u64 },
    /// Injected by the simulated disk.
    Injected,
}

/// One failed read, with the file and offset it was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("read of file #{file} at offset {offset} failed: {kind}")]
pub struct ReadError {
    pub file: u32,
    pub offset: u64,
    pub kind: ReadErrorKind,
}

impl fmt::Display for ReadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ReadErrorKind::Os(code) => write!(f, "{}", std::io::Error::from_raw_os_error(code)),
            ReadErrorKind::ShortRead { got, wanted } => {
                write!(f, "short read: {got} of {wanted} bytes (file truncated?)")
            }
            ReadErrorKind::OutOfBounds { file_len } => {
                write!(f, "offset past end of file ({file_len} bytes; truncated?)")
            }
            ReadErrorKind::Injected => f.write_str("injected I/O error (simulated disk)"),
        }
    }
}

/// A failure that stops a backend or prevents one from being created.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("{path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("method `{method}` is unavailable: {reason}")]
    Unavailable {
        method: &'static str,
        reason: String,
    },
    #[error("invalid I/O configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{what}: {source}")]
    Os {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}
