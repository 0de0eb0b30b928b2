//! Re-verification: every nonce the scheduler wants to report is recomputed once by the plain
//! single-nonce path (`pora_core::hashimoto`, one synchronous read at a time through a separate
//! buffered `pread` backend over the same files) before it is reported. It costs
//! `random_checks` reads per reported nonce and guards against any scheduling bug: what is
//! reported is always the single-nonce path's proof from the bytes on disk now. When that
//! differs from the scheduler's hash1 the caller decides (a live shard changed under the slot).
//!
//! The verifier reads the real bytes even when mining ran on the simulated disk, so injected
//! faults never reach it.
//!
//! Its files are opened when the miner is built, together with the workers' handles, and kept:
//! if a shard path is later renamed over (a file replaced while mining), the workers keep
//! reading the file they opened, and the verifier must check against that same file, not
//! against whatever the path names now.

use crate::overlay::ShardOverlay;
use crate::plan::ShardPlan;
use crate::MineError;
use pora_core::{hashimoto, NonceProof, ShardSet, H256};
use pora_io::{Backend, BackendFactory, IoConfig, IoError, Method};
use std::path::PathBuf;
use std::sync::Arc;

/// A plain reader over every shard's files: one shared handle per file, opened up front.
pub struct Verifier {
    paths: Vec<PathBuf>,
    /// `pread-shared`: the handles live in the factory, so a fresh backend reuses them.
    factory: Arc<dyn BackendFactory>,
    backend: Option<Box<dyn Backend>>,
}

/// A candidate whose samples could not be read back (the slot goes on without it, or ends under
/// `--on-io-error stop`).
pub struct Unconfirmed {
    pub path: PathBuf,
    pub offset: u64,
    pub why: String,
}

impl Unconfirmed {
    /// The error of a single-nonce computation whose sample could not be read.
    pub fn into_sample_error(self) -> MineError {
        MineError::Sample {
            path: self.path,
            offset: self.offset,
            why: self.why,
        }
    }
}

impl Verifier {
    pub fn new(paths: Vec<PathBuf>) -> Result<Self, MineError> {
        let factory = pora_io::open(
            &paths,
            &IoConfig {
                method: Method::PreadShared,
                ..Default::default()
            },
        )?;
        Ok(Verifier {
            paths,
            factory,
            backend: None,
        })
    }

    /// A verifier over the same open files with its own (not yet opened) backend: what the slot
    /// keeps when it stops waiting for this one (stuck in a read of a hung disk).
    pub fn fork(&self) -> Verifier {
        Verifier {
            paths: self.paths.clone(),
            factory: self.factory.clone(),
            backend: None,
        }
    }

    fn backend(&mut self) -> Result<&mut Box<dyn Backend>, MineError> {
        if self.backend.is_none() {
            self.backend = Some(self.factory.worker(1)?);
        }
        Ok(self.backend.as_mut().expect("opened above"))
    }

    /// Computes `nonce` of `shard` from the bytes on disk now, the samples of `overlay`'s KVs
    /// from memory.
    #[allow(clippy::too_many_arguments)]
    pub fn proof(
        &mut self,
        shard: &ShardSet,
        plan: &ShardPlan,
        file_base: u32,
        random_checks: u32,
        randao: &H256,
        nonce: u64,
        overlay: &ShardOverlay,
    ) -> Result<Result<NonceProof, Unconfirmed>, MineError> {
        let backend = self.backend()?;
        let mut failed_at = None;
        let proof = hashimoto(
            &shard.geometry,
            random_checks,
            &plan.miner,
            randao,
            nonce,
            |sample_idx| {
                if let Some(sample) = overlay.sample(sample_idx) {
                    return Ok(sample);
                }
                let loc = shard
                    .locate(sample_idx)
                    .map_err(|e| IoError::Config(e.to_string()))?;
                let file = file_base + loc.file as u32;
                failed_at = Some((file, loc.offset));
                pora_io::read_one(backend.as_mut(), file, loc.offset)
            },
        );
        let proof = match proof {
            Ok(proof) => proof,
            Err(e) => {
                // A failed read may leave the backend with a read queued; start afresh next time.
                self.backend = None;
                let (file, offset) = failed_at.unwrap_or_default();
                let path = self.paths.get(file as usize).cloned().unwrap_or_default();
                let why = format!("computing nonce {nonce} of shard {}: {e}", plan.shard_idx);
                return Ok(Err(Unconfirmed { path, offset, why }));
            }
        };
        Ok(Ok(proof))
    }
}
