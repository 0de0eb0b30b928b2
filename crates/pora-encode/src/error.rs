//! Typed errors of the encoder: only bad input is possible (the computation itself cannot fail).

/// What went wrong, naming the field at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// A commitment longer than the 24 bytes a meta entry holds.
    #[error("commit: {len} bytes is longer than the {max} bytes an encode key takes")]
    CommitTooLong { len: usize, max: usize },
    /// A word index outside 0..4096.
    #[error("sample: word index {index} is outside 0..{words}")]
    WordIndex { index: usize, words: usize },
    /// A blob whose length is not one KV.
    #[error("blob: {len} bytes, expected exactly {expected} (one KV)")]
    BlobLength { len: usize, expected: usize },
}

pub type Result<T> = std::result::Result<T, Error>;
