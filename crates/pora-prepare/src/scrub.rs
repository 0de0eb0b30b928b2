//! Scrubbing empty-filled KVs: recompute the mask of every KV whose meta entry says "filled,
//! commit 0" and report each KV whose stored bytes differ, with the first differing word. A
//! seeded random fraction can be checked for a quick look. Read-only, like mining.

use crate::encoded::{EncodedFile, EMPTY_META};
use crate::error::{ensure, PrepareError, Result};
use crate::OnProgress;
use pora_core::header::META_SIZE;
use pora_core::Input;
use pora_encode::{encode_key, MASK_BYTES};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A KV whose stored bytes are not its empty mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Index of the file in the list checked.
    pub file: usize,
    pub kv_idx: u64,
    /// The first 32-byte word that differs.
    pub first_word: usize,
}

/// The KVs chosen for checking.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// (file index, global KV index) of each empty-filled KV chosen.
    pub work: Vec<(usize, u64)>,
    /// KVs whose meta entry is not that of an empty-filled KV (not checked).
    pub not_empty_filled: u64,
}

/// The `pora scrub --json` record.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScrubRecord {
    pub checked: usize,
    pub not_empty_filled: u64,
    pub differing: Vec<MismatchRecord>,
    pub seconds: f64,
}

/// One differing KV in [`ScrubRecord`].
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MismatchRecord {
    pub file: String,
    pub kv_idx: u64,
    pub first_differing_word: usize,
}

impl ScrubRecord {
    /// The record of a scrub of `files` that checked `checked` KVs and found `mismatches`.
    pub fn new(
        files: &[EncodedFile],
        checked: &Selection,
        mismatches: &[Mismatch],
        seconds: f64,
    ) -> ScrubRecord {
        let differing = mismatches
            .iter()
            .map(|m| MismatchRecord {
                file: files[m.file].data.path.display().to_string(),
                kv_idx: m.kv_idx,
                first_differing_word: m.first_word,
            })
            .collect();
        ScrubRecord {
            checked: checked.work.len(),
            not_empty_filled: checked.not_empty_filled,
            differing,
            seconds,
        }
    }
}

/// Fails unless `rate` is a fraction in (0, 1].
pub fn check_sample_rate(rate: f64) -> Result<()> {
    ensure!(
        rate > 0.0 && rate <= 1.0,
        "{} {rate}: must be in (0, 1]",
        Input::SampleRate
    );
    Ok(())
}

/// splitmix64: a cheap, well-mixed hash for the seeded KV choice.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn chosen(kv_idx: u64, seed: u64, rate: f64) -> bool {
    rate >= 1.0 || (mix(kv_idx ^ mix(seed)) as f64) < rate * (u64::MAX as f64)
}

/// The empty-filled KVs of `files`, a fraction `rate` of them chosen from `seed`.
pub fn select(files: &[EncodedFile], seed: u64, rate: f64) -> Result<Selection> {
    let mut out = Selection::default();
    for (i, f) in files.iter().enumerate() {
        let range = f.kv_range();
        let metas = f.read_metas(range.clone())?;
        for (kv, meta) in range.zip(metas.chunks_exact(META_SIZE as usize)) {
            if meta == EMPTY_META {
                if chosen(kv, seed, rate) {
                    out.work.push((i, kv));
                }
            } else {
                out.not_empty_filled += 1;
            }
        }
    }
    Ok(out)
}

/// Checks `work` (file, KV) on `threads` threads; returns the mismatches sorted. `progress`
/// counts KVs checked.
pub fn check(
    files: &[EncodedFile],
    work: &[(usize, u64)],
    threads: usize,
    progress: OnProgress,
) -> Result<Vec<Mismatch>> {
    ensure!(
        threads > 0,
        "{} 0: need at least one thread",
        Input::Threads
    );
    // A bad PORA_ENCODE_ARITH is an error here, not a panic in a worker's `mask`.
    pora_encode::Kernel::selected()?;
    let next = AtomicUsize::new(0);
    let found = Mutex::new(Vec::new());
    std::thread::scope(|s| -> Result<()> {
        let workers: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| check_some(files, work, &next, &found, progress)))
            .collect();
        for w in workers {
            w.join()
                .map_err(|_| PrepareError::Worker("a scrub worker panicked"))?
                .map_err(|e| PrepareError::Step {
                    step: "scrub",
                    source: Box::new(e),
                })?;
        }
        Ok(())
    })?;
    let mut found = found
        .into_inner()
        .map_err(|_| PrepareError::Worker("a scrub worker panicked"))?;
    found.sort_by_key(|m| (m.file, m.kv_idx));
    Ok(found)
}

/// One worker: takes the next KV of `work` until none is left.
fn check_some(
    files: &[EncodedFile],
    work: &[(usize, u64)],
    next: &AtomicUsize,
    found: &Mutex<Vec<Mismatch>>,
    progress: OnProgress,
) -> Result<()> {
    let mut stored = vec![0u8; MASK_BYTES];
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let Some(&(file, kv_idx)) = work.get(n) else {
            return Ok(());
        };
        let f = &files[file];
        f.read_kv(kv_idx, &mut stored)?;
        let key = encode_key(&[], &f.data.header.miner.0, kv_idx)?;
        let mask = pora_encode::mask(&key);
        let first = stored
            .chunks_exact(32)
            .zip(mask.chunks_exact(32))
            .position(|(a, b)| a != b);
        if let Some(first_word) = first {
            let mismatch = Mismatch {
                file,
                kv_idx,
                first_word,
            };
            found
                .lock()
                .map_err(|_| PrepareError::Worker("a scrub worker panicked"))?
                .push(mismatch);
        }
        progress(1);
    }
}
