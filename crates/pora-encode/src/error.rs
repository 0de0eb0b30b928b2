//! Typed errors of the encoder: only bad input is possible (the computation itself cannot fail).
//!
//! Layer 0 of the crate (the base); it imports only from this layer or below.

/// What went wrong, naming the field at fault.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
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
    /// `PORA_ENCODE_ARITH` names no multiply kernel.
    #[error("{var}={value:?}: expected one of portable, adx, avx512f, ifma, auto")]
    ArithName { var: &'static str, value: String },
    /// A multiply kernel (named by `PORA_ENCODE_ARITH` or by the caller) this CPU cannot run.
    #[error("{var}={kernel}: this CPU lacks {needs}")]
    ArithUnsupported {
        var: &'static str,
        kernel: &'static str,
        needs: &'static str,
    },
}

pub type Result<T> = std::result::Result<T, Error>;
