//! Typed errors of shard-file preparation. Each names the flag, file or offset at fault, and
//! prints as the CLI has always printed it.

/// Result alias for pora-prepare.
pub type Result<T, E = PrepareError> = std::result::Result<T, E>;

/// What went wrong while creating, filling or checking a shard file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrepareError {
    /// Flags or a file that do not fit the request; the message names both.
    #[error("{0}")]
    Invalid(String),
    /// An I/O error after what was being done (the file, and the offset where there is one).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// An error of a step, after the step's name (`scrub: …`).
    #[error("{step}: {source}")]
    Step {
        step: &'static str,
        #[source]
        source: Box<PrepareError>,
    },
    /// A header or shard problem.
    #[error(transparent)]
    Format(#[from] pora_core::Error),
    /// A commitment or word index the encoder refuses.
    #[error(transparent)]
    Encode(#[from] pora_encode::Error),
    /// A worker thread ended without its result (it panicked).
    #[error("{0}")]
    Worker(&'static str),
}

impl PrepareError {
    /// `context: source` for an I/O error.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> PrepareError {
        PrepareError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Fails with [`PrepareError::Invalid`] and the formatted message unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err($crate::error::PrepareError::Invalid(format!($($msg)+)));
        }
    };
}
pub(crate) use ensure;
