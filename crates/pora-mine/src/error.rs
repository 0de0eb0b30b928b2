//! The errors that stop a run, and their kinds: the one mapping every door turns into its own
//! code (the C ABI's status, the service's JSON-RPC code, the CLI's exit message), so a new
//! error gets one kind here instead of a catch-all in each door.

use crate::profile::ProfileError;
use pora_core::Input;
use std::fmt::Display;
use std::path::PathBuf;

/// What kind of failure an error is, for the doors' codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A value the caller gave is outside what the library accepts.
    InvalidInput,
    /// The data files do not form the shards asked for (bad header, overlap, duplicate shard).
    Shard,
    /// A file could not be opened or read.
    Io,
    /// No shard with that index is open.
    UnknownShard,
    /// Another slot is running on this miner.
    Busy,
}

/// Errors that stop a run.
#[derive(Debug, thiserror::Error)]
pub enum MineError {
    /// `value` of `input` is refused because `why`.
    #[error("invalid mining configuration: {input}{}: {why}", spaced(value))]
    Config {
        input: Input,
        value: String,
        why: String,
    },
    #[error(transparent)]
    Io(#[from] pora_io::IoError),
    #[error(
        "{path}: read at offset {offset} failed: {why} ({} stop)",
        Input::OnIoError
    )]
    Read {
        path: PathBuf,
        offset: u64,
        why: String,
    },
    /// Group `group` (0-based) of the files given.
    #[error("{} group {group} (shard files): {source}", Input::Files)]
    Shard {
        group: usize,
        source: pora_core::Error,
    },
    #[error(
        "{} groups {first} and {second} both hold shard {shard}: mine each shard once",
        Input::Files
    )]
    DuplicateShard {
        first: usize,
        second: usize,
        shard: u64,
    },
    /// A sample read for a single nonce (`pora hash`, [`crate::Miner::hash`]) failed.
    #[error("{}: reading a sample at offset {offset} failed: {why}", path.display())]
    Sample {
        path: PathBuf,
        offset: u64,
        why: String,
    },
    #[error("no shard {0} is open here")]
    UnknownShard(u64),
    #[error("opening the shard files with {} {method}: {source}", Input::Method)]
    Open {
        method: pora_io::Method,
        source: pora_io::IoError,
    },
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// Another slot is running on this miner: one slot at a time per miner.
    #[error("a slot is already running on this miner; wait for it or cancel it")]
    Busy,
}

/// `" value"`, or nothing for an input refused without a value.
fn spaced(value: &str) -> String {
    if value.is_empty() {
        String::new()
    } else {
        format!(" {value}")
    }
}

impl MineError {
    /// A refused input: `value` of `input` (may be empty), and why.
    pub fn config(input: Input, value: impl Display, why: impl Into<String>) -> Self {
        MineError::Config {
            input,
            value: value.to_string(),
            why: why.into(),
        }
    }

    /// The kind of failure, for the doors' codes.
    pub fn kind(&self) -> ErrorKind {
        match self {
            MineError::Config { .. } => ErrorKind::InvalidInput,
            // A file that cannot be opened or read is an I/O failure, not a bad shard.
            MineError::Shard {
                source: pora_core::Error::Io { .. },
                ..
            } => ErrorKind::Io,
            MineError::Shard { .. } | MineError::DuplicateShard { .. } => ErrorKind::Shard,
            MineError::Io(_)
            | MineError::Read { .. }
            | MineError::Sample { .. }
            | MineError::Open { .. } => ErrorKind::Io,
            MineError::Profile(ProfileError::Read { .. } | ProfileError::Write { .. }) => {
                ErrorKind::Io
            }
            MineError::Profile(ProfileError::Parse { .. } | ProfileError::Format { .. }) => {
                ErrorKind::InvalidInput
            }
            MineError::UnknownShard(_) => ErrorKind::UnknownShard,
            MineError::Busy => ErrorKind::Busy,
        }
    }
}
