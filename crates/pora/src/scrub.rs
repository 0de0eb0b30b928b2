//! `pora scrub FILE... --empty`: recomputes the mask of every KV whose meta entry says "filled,
//! commit 0" (an empty-filled KV) and reports each KV whose stored bytes differ, with the first
//! differing word. `--sample-rate` checks a seeded random fraction for a quick look. Read-only,
//! like mining; exit status non-zero when any KV differs.

use crate::decode::{EncodedFile, EMPTY_META};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use pora_core::header::META_SIZE;
use pora_core::Address;
use pora_encode::{encode_key, MASK_BYTES};
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

#[derive(clap::Args)]
pub struct ScrubArgs {
    /// Data files to check (opened read-only).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Check the KVs filled with their empty mask (meta `0^24 ‖ 0x80 ‖ 0^7`); the only mode.
    #[arg(long, required = true)]
    empty: bool,
    /// Fraction of those KVs to check (0 < R <= 1), chosen at random from --seed.
    #[arg(long, default_value_t = 1.0)]
    sample_rate: f64,
    /// Seed of the --sample-rate choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Miner address; must match every file's header (checked).
    #[arg(long, value_parser = crate::common::parse_miner)]
    miner: Option<Address>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// A KV whose stored bytes are not its empty mask.
struct Mismatch {
    file: usize,
    kv_idx: u64,
    first_word: usize,
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

pub fn run(args: ScrubArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.sample_rate > 0.0 && args.sample_rate <= 1.0,
        "--sample-rate {}: must be in (0, 1]",
        args.sample_rate
    );
    let threads = crate::create::thread_count(args.threads)?;
    let files: Vec<EncodedFile> = args
        .files
        .iter()
        .map(|p| EncodedFile::open(p, args.miner.as_ref()))
        .collect::<anyhow::Result<_>>()?;
    let mut work = Vec::new();
    let mut other = 0u64;
    for (i, f) in files.iter().enumerate() {
        let range = f.kv_range();
        let metas = f.read_metas(range.clone())?;
        for (kv, meta) in range.zip(metas.chunks_exact(META_SIZE as usize)) {
            if meta == EMPTY_META {
                if chosen(kv, args.seed, args.sample_rate) {
                    work.push((i, kv));
                }
            } else {
                other += 1;
            }
        }
    }
    let started = Instant::now();
    let mismatches = check_all(&files, &work, threads, args.quiet)?;
    let seconds = started.elapsed().as_secs_f64();
    report(&args, &files, &work, other, &mismatches, seconds)?;
    anyhow::ensure!(
        mismatches.is_empty(),
        "{} of {} checked KVs differ from their empty mask",
        mismatches.len(),
        work.len()
    );
    Ok(())
}

/// Checks `work` (file, KV) on `threads` threads; returns the mismatches sorted.
fn check_all(
    files: &[EncodedFile],
    work: &[(usize, u64)],
    threads: usize,
    quiet: bool,
) -> anyhow::Result<Vec<Mismatch>> {
    let next = AtomicUsize::new(0);
    let found = Mutex::new(Vec::new());
    let progress = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(work.len() as u64)
    };
    progress.set_style(
        ProgressStyle::with_template("scrub [{bar:40}] {pos}/{len} KVs {per_sec} eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    std::thread::scope(|s| -> anyhow::Result<()> {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> anyhow::Result<()> {
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
                            let mut found = found.lock().expect("no panics while held");
                            found.push(Mismatch {
                                file,
                                kv_idx,
                                first_word,
                            });
                        }
                        progress.inc(1);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("a scrub worker panicked"))?
                .context("scrub")?;
        }
        Ok(())
    })?;
    progress.finish_and_clear();
    let mut found = found.into_inner().expect("workers joined");
    found.sort_by_key(|m| (m.file, m.kv_idx));
    Ok(found)
}

fn report(
    args: &ScrubArgs,
    files: &[EncodedFile],
    work: &[(usize, u64)],
    other: u64,
    mismatches: &[Mismatch],
    seconds: f64,
) -> anyhow::Result<()> {
    if args.json {
        let bad: Vec<_> = mismatches
            .iter()
            .map(|m| {
                json!({
                    "file": files[m.file].data.path.display().to_string(),
                    "kvIdx": m.kv_idx,
                    "firstDifferingWord": m.first_word,
                })
            })
            .collect();
        let out = json!({
            "checked": work.len(),
            "notEmptyFilled": other,
            "differing": bad,
            "seconds": seconds,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for m in mismatches {
        println!(
            "{}: KV {} differs from its empty mask, first at word {}",
            files[m.file].data.path.display(),
            m.kv_idx,
            m.first_word
        );
    }
    println!(
        "checked {} empty-filled KVs in {seconds:.1} s ({} other KVs not checked): {} differ",
        work.len(),
        other,
        mismatches.len()
    );
    Ok(())
}
