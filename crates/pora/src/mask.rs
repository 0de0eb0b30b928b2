//! `pora mask`: the flags and output of one KV's BLOB_POSEIDON mask from a raw encode key or
//! from (miner, KV index, commit): its encode key, the SHA-256 of the 131072 mask bytes,
//! optionally one word, and optionally the mask written to a file (`pora_prepare::mask`).

use pora_core::Address;
use pora_encode::{encode_key, EncodeKey, WORDS_PER_KV};
use pora_prepare::mask::{mask_record, parse_commit, parse_key, write_new_file, Commit};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct MaskArgs {
    /// A raw 32-byte encode key (0x hex; shorter values are read as a big-endian number).
    #[arg(long, value_parser = parse_key, conflicts_with_all = ["miner", "kv_idx", "commit"], required_unless_present = "miner")]
    key: Option<EncodeKey>,
    /// Miner address (with --kv-idx) to derive the encode key.
    #[arg(long, value_parser = crate::common::parse_miner, requires = "kv_idx")]
    miner: Option<Address>,
    /// Global KV index (with --miner).
    #[arg(long, requires = "miner")]
    kv_idx: Option<u64>,
    /// The KV's commitment, at most 24 bytes of 0x hex (default: zero, an empty KV).
    #[arg(long, value_parser = parse_commit)]
    commit: Option<Commit>,
    /// Also print word J (0..4095) of the mask.
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..WORDS_PER_KV as i64))]
    sample: Option<u16>,
    /// Write the 131072 mask bytes to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Overwrite --out if it exists.
    #[arg(long)]
    force: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(args: MaskArgs) -> anyhow::Result<()> {
    let key = match (args.key, args.miner, args.kv_idx) {
        (Some(key), _, _) => key,
        (None, Some(miner), Some(kv_idx)) => encode_key(
            args.commit.as_ref().map_or(&[][..], |c| &c.0),
            &miner.0,
            kv_idx,
        )?,
        _ => anyhow::bail!("give --key, or --miner with --kv-idx"),
    };
    let (record, mask) = mask_record(&key, args.sample)?;
    if let Some(out) = &args.out {
        write_new_file(out, &mask[..], args.force)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&record)?);
        return Ok(());
    }
    println!("encodeKey   {}", record.encode_key);
    println!("maskSha256  {}", record.mask_sha256);
    if let (Some(j), Some(word)) = (record.sample_idx, record.sample) {
        println!("sample {j:<4} {word}");
    }
    Ok(())
}
