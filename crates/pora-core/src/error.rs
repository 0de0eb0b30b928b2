//! Typed errors of the format and math layer. Every variant names the file, field or value that
//! is wrong so that the CLI can print it as is.

use std::path::PathBuf;

/// Result alias for pora-core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can be wrong with a data file, a shard set or a user-supplied value.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not an es-node data file (magic at offset 0 is {found:#018x}, expected {expected:#018x})")]
    BadMagic {
        path: PathBuf,
        found: u64,
        expected: u64,
    },
    #[error("{path}: header field `{field}` (offset {offset}) is invalid: {why}")]
    BadHeader {
        path: PathBuf,
        field: &'static str,
        offset: u64,
        why: String,
    },
    #[error("{path}: file is {len} bytes but its header needs at least {needed} bytes (header + data region)")]
    Truncated {
        path: PathBuf,
        len: u64,
        needed: u64,
    },
    #[error("{path}: {why}")]
    ShardMismatch { path: PathBuf, why: String },
    #[error("shard set: {0}")]
    ShardSet(String),
    #[error("sample {sample_idx} is not in any data file of shard {shard} ({why})")]
    SampleOutOfRange {
        sample_idx: u64,
        shard: u64,
        why: String,
    },
    #[error("invalid {what} `{input}`: {why}")]
    BadValue {
        /// The input, as the door names it (an [`crate::Input`], or the caller's own name).
        what: String,
        input: String,
        why: String,
    },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn bad_value(
        what: impl std::fmt::Display,
        input: impl Into<String>,
        why: impl Into<String>,
    ) -> Self {
        Error::BadValue {
            what: what.to_string(),
            input: input.into(),
            why: why.into(),
        }
    }
}
