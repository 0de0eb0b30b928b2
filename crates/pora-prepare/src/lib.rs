//! Preparing and checking es-node shard files, as library code the CLI, the C ABI and the
//! service can share: [`create`] writes a data file (random, zero or sparse), [`empty`] fills an
//! encodeType-3 file with every KV's BLOB_POSEIDON mask (resumable, by KV range), [`scrub`]
//! re-checks those masks, [`decode`] and [`mask`] answer for one KV, [`info`] describes files and
//! the shard they form. Files being prepared are marked incomplete until their data is synced.
//! Typed errors, no printing: progress comes back through an [`OnProgress`] callback.

pub mod create;
pub mod decode;
pub mod empty;
pub mod encoded;
pub mod error;
pub mod info;
pub mod mask;
pub mod scrub;

pub use encoded::EncodedFile;
pub use error::{PrepareError, Result};

/// Called with the units (bytes or KVs) just finished as work goes on, possibly from several
/// worker threads at once; the binary draws a progress bar with it.
pub type OnProgress<'a> = &'a (dyn Fn(u64) + Sync);
