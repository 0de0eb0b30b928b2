//! `pora hash`: one nonce computed from the real files through the plain single-nonce path, the
//! tool to check a result or debug a rejected proof.

use crate::common::{parse_miner, parse_randao, DiffArgs};
use pora_core::difficulty::meets;
use pora_core::{Address, ShardSet, H256};
use pora_mine::hash_nonce;
use pora_mine::records::HashRecord;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct HashArgs {
    /// Data files of the shard.
    #[arg(long = "file", required = true, num_args = 1..)]
    files: Vec<PathBuf>,
    /// The 32-byte randao mix digest, 0x-prefixed hex.
    #[arg(long, value_parser = parse_randao)]
    randao: H256,
    /// The nonce (0 ..= 2^64-1).
    #[arg(long)]
    nonce: u64,
    /// Miner address; defaults to the files' header.
    #[arg(long, value_parser = parse_miner)]
    miner: Option<Address>,
    /// Shard index; must match the files (checked).
    #[arg(long)]
    shard: Option<u64>,
    /// Shard size as log2(KVs); inferred from the files when omitted.
    #[arg(long)]
    kv_entries_bits: Option<u32>,
    #[command(flatten)]
    checks: crate::common::RandomChecksArg,
    #[command(flatten)]
    diff: DiffArgs,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(args: HashArgs) -> anyhow::Result<()> {
    let shard = ShardSet::open(&args.files, args.kv_entries_bits)?;
    if let Some(want) = args.shard {
        anyhow::ensure!(
            want == shard.geometry.shard_idx,
            "--shard {want} does not match the files, which hold shard {}",
            shard.geometry.shard_idx
        );
    }
    let required = args.diff.required()?;
    let miner = args.miner.unwrap_or(shard.miner);
    let proof = hash_nonce(
        &shard,
        Some(miner),
        args.checks.random_checks,
        &args.randao,
        args.nonce,
    )?;
    let valid = required.map(|r| meets(&proof.hash1.0, &r));
    if args.json {
        let shard_idx = shard.geometry.shard_idx;
        let record = HashRecord::new(proof, shard_idx, miner, args.randao, required);
        println!("{}", serde_json::to_string_pretty(&record)?);
        return Ok(());
    }
    println!("shard        {}", shard.geometry.shard_idx);
    println!("miner        {miner}");
    println!("nonce        {}", proof.nonce);
    println!("hash0        {}", proof.hash0);
    for i in 0..proof.sample_idxs.len() {
        println!(
            "sample {i}     idx {} (kv {}, sample {} in kv) = {}",
            proof.sample_idxs[i],
            proof.kv_idxs[i],
            proof.sample_idxs_in_kv[i],
            proof.encoded_samples[i]
        );
    }
    println!("hash1        {}", proof.hash1);
    if let (Some(r), Some(v)) = (required, valid) {
        println!("requiredDiff {r}");
        println!("valid        {v}");
    }
    Ok(())
}
