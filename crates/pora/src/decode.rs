//! `pora decode`: the flags and output of decoding one KV (or one word of it) of an
//! encodeType-3 data file with the mask of (commit, header miner, KV index); the commit comes
//! from the KV's meta entry unless given. Read-only. The decoding is `pora_prepare::decode`.

use pora_core::hex::to_hex;
use pora_core::Address;
use pora_encode::{COMMIT_LEN, WORDS_PER_KV};
use pora_prepare::encoded::{META_FILLED, META_FLAGS_AT};
use pora_prepare::mask::{parse_commit, write_new_file, Commit};
use pora_prepare::EncodedFile;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct DecodeArgs {
    /// The data file (opened read-only).
    #[arg(long)]
    file: PathBuf,
    /// Global KV index.
    #[arg(long)]
    kv_idx: u64,
    /// Decode only word J (0..4095).
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..WORDS_PER_KV as i64))]
    sample: Option<u16>,
    /// The KV's commitment (at most 24 bytes of 0x hex); default: the KV's meta entry.
    #[arg(long, value_parser = parse_commit)]
    commit: Option<Commit>,
    /// Miner address; must match the file's header (checked).
    #[arg(long, value_parser = crate::common::parse_miner)]
    miner: Option<Address>,
    /// Write the decoded blob (131072 bytes) to this file instead of printing it as hex.
    #[arg(long, conflicts_with = "sample")]
    out: Option<PathBuf>,
    /// Overwrite --out if it exists.
    #[arg(long)]
    force: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(args: DecodeArgs) -> anyhow::Result<()> {
    let f = EncodedFile::open(&args.file, args.miner.as_ref())?;
    f.check_kv(args.kv_idx)?;
    let meta = f.read_metas(args.kv_idx..args.kv_idx + 1)?;
    if meta[META_FLAGS_AT] & META_FILLED == 0 {
        eprintln!(
            "pora: warning: the meta entry of KV {} says it is not filled; decoding anyway",
            args.kv_idx
        );
    }
    let commit = match &args.commit {
        Some(c) => &c.0[..],
        None => &meta[..COMMIT_LEN],
    };
    let decoded = pora_prepare::decode::decode_kv(&f, args.kv_idx, commit, args.sample)?;
    let mut record = decoded.record;
    if args.sample.is_none() {
        match &args.out {
            Some(path) => write_new_file(path, &decoded.blob, args.force)?,
            None if !args.json => println!("{}", to_hex(&decoded.blob)),
            None => record.decoded = Some(to_hex(&decoded.blob)),
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&record)?);
    } else if args.sample.is_some() || args.out.is_some() {
        let fields = serde_json::to_value(&record)?;
        for (k, v) in fields.as_object().into_iter().flatten() {
            println!("{k:<14} {}", v.as_str().map_or(v.to_string(), String::from));
        }
    }
    Ok(())
}
