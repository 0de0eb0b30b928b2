//! `pora scrub FILE... --empty`: the flags, progress bar and report of a scrub of empty-filled
//! KVs (`pora_prepare::scrub` recomputes the masks and compares). Read-only, like mining; exit
//! status non-zero when any KV differs.

use indicatif::{ProgressBar, ProgressStyle};
use pora_core::Address;
use pora_prepare::scrub::{self, ScrubRecord};
use pora_prepare::EncodedFile;
use std::path::PathBuf;
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

pub fn run(args: ScrubArgs) -> anyhow::Result<()> {
    scrub::check_sample_rate(args.sample_rate)?;
    let threads = crate::common::thread_count(args.threads)?;
    let files: Vec<EncodedFile> = args
        .files
        .iter()
        .map(|p| EncodedFile::open(p, args.miner.as_ref()))
        .collect::<Result<_, _>>()?;
    let selection = scrub::select(&files, args.seed, args.sample_rate)?;
    let started = Instant::now();
    let progress = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(selection.work.len() as u64)
    };
    progress.set_style(
        ProgressStyle::with_template("scrub [{bar:40}] {pos}/{len} KVs {per_sec} eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    let mismatches = scrub::check(&files, &selection.work, threads, &|n| progress.inc(n))?;
    progress.finish_and_clear();
    let record = ScrubRecord::new(
        &files,
        &selection,
        &mismatches,
        started.elapsed().as_secs_f64(),
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&record)?);
    } else {
        for m in &record.differing {
            println!(
                "{}: KV {} differs from its empty mask, first at word {}",
                m.file, m.kv_idx, m.first_differing_word
            );
        }
        println!(
            "checked {} empty-filled KVs in {:.1} s ({} other KVs not checked): {} differ",
            record.checked,
            record.seconds,
            record.not_empty_filled,
            record.differing.len()
        );
    }
    anyhow::ensure!(
        mismatches.is_empty(),
        "{} of {} checked KVs differ from their empty mask",
        mismatches.len(),
        record.checked
    );
    Ok(())
}
