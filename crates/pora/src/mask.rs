//! `pora mask`: one KV's BLOB_POSEIDON mask from a raw encode key or from (miner, KV index,
//! commit): its encode key, the SHA-256 of the 131072 mask bytes, optionally one word, and
//! optionally the mask written to a file. Also the hex parsers the encoder commands share.

use anyhow::Context;
use pora_core::hex::to_hex;
use pora_core::Address;
use pora_encode::{encode_key, EncodeKey, COMMIT_LEN, WORDS_PER_KV};
use serde_json::json;
use std::io::Write;
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

/// Parses 0x-prefixed hex of at most `max` bytes, naming `flag` in every error.
pub fn parse_hex_bytes(flag: &str, input: &str, max: usize) -> Result<Vec<u8>, String> {
    let digits = input
        .strip_prefix("0x")
        .or_else(|| input.strip_prefix("0X"))
        .ok_or_else(|| format!("{flag} `{input}`: expected 0x-prefixed hex"))?;
    if digits.len() % 2 != 0 {
        return Err(format!(
            "{flag} `{input}`: odd number of hex digits ({}); each byte is two digits",
            digits.len()
        ));
    }
    if digits.len() > 2 * max {
        return Err(format!(
            "{flag} `{input}`: {} bytes is longer than the {max} bytes allowed",
            digits.len() / 2
        ));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| format!("{flag} `{input}`: non-hex character at position {}", i + 2))
        })
        .collect()
}

/// clap parser for `--key`: up to 32 bytes, right-aligned (a big-endian number).
pub fn parse_key(s: &str) -> Result<EncodeKey, String> {
    let bytes = parse_hex_bytes("--key", s, 32)?;
    let mut key = [0u8; 32];
    key[32 - bytes.len()..].copy_from_slice(&bytes);
    Ok(key)
}

/// A KV commitment from `--commit` (at most 24 bytes, left-aligned as in a meta entry).
#[derive(Clone, Debug)]
pub struct Commit(pub Vec<u8>);

/// clap parser for `--commit`.
pub fn parse_commit(s: &str) -> Result<Commit, String> {
    parse_hex_bytes("--commit", s, COMMIT_LEN).map(Commit)
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
    let mask = pora_encode::mask(&key);
    let digest = sha256(&mask[..]);
    let sample = args
        .sample
        .map(|j| to_hex(&mask[32 * j as usize..32 * (j as usize + 1)]));
    if let Some(out) = &args.out {
        write_new_file(out, &mask[..], args.force)?;
    }
    if args.json {
        let mut obj = json!({ "encodeKey": to_hex(&key), "maskSha256": to_hex(&digest) });
        if let (Some(j), Some(word)) = (args.sample, &sample) {
            obj["sampleIdx"] = json!(j);
            obj["sample"] = json!(word);
        }
        println!("{}", serde_json::to_string_pretty(&obj)?);
        return Ok(());
    }
    println!("encodeKey   {}", to_hex(&key));
    println!("maskSha256  {}", to_hex(&digest));
    if let (Some(j), Some(word)) = (args.sample, sample) {
        println!("sample {j:<4} {word}");
    }
    Ok(())
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// Writes `bytes` to a new file; an existing one only with `force`.
pub fn write_new_file(path: &std::path::Path, bytes: &[u8], force: bool) -> anyhow::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    let mut file = opts.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!(
                "--out {}: file exists; pass --force to overwrite it",
                path.display()
            )
        } else {
            anyhow::anyhow!("--out {}: {e}", path.display())
        }
    })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
