//! `pora decode`: one KV (or one word of it) of an encodeType-3 data file, decoded with the
//! mask of (commit, header miner, KV index); the commit comes from the KV's meta entry unless
//! given. Read-only. Also the read-only helpers the encoder commands share: opening an
//! encodeType-3 file and reading a KV's bytes and meta entry.

use crate::mask::{parse_commit, sha256, write_new_file, Commit};
use anyhow::Context;
use pora_core::header::{HEADER_SIZE, META_SIZE};
use pora_core::hex::to_hex;
use pora_core::{Address, DataFile, EncodeType};
use pora_encode::{encode_key, COMMIT_LEN, MASK_BYTES, WORDS_PER_KV};
use serde_json::json;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Byte of a meta entry holding the flags; bit 0x80 = "filled".
pub const META_FLAGS_AT: usize = COMMIT_LEN;
/// The "filled" flag.
pub const META_FILLED: u8 = 0x80;
/// The meta entry of a KV filled with its empty mask: `0^24 ‖ 0x80 ‖ 0^7`.
pub const EMPTY_META: [u8; 32] = {
    let mut m = [0u8; 32];
    m[META_FLAGS_AT] = META_FILLED;
    m
};

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

/// An encodeType-3 data file opened read-only, with its geometry checked for encoding.
pub struct EncodedFile {
    pub data: DataFile,
    pub file: File,
}

impl EncodedFile {
    /// Opens `path` read-only; fails unless it is a complete encodeType-3 file with 128 KiB
    /// KVs (chunks) and, when `miner` is given, that miner in its header.
    pub fn open(path: &Path, miner: Option<&Address>) -> anyhow::Result<EncodedFile> {
        let data = DataFile::open(path)?;
        let h = &data.header;
        anyhow::ensure!(
            h.encode_type == EncodeType::BlobPoseidon,
            "{}: header encodeType is {:?}, but encoding needs 3 (blob-poseidon)",
            path.display(),
            h.encode_type
        );
        anyhow::ensure!(
            h.chunk_size == MASK_BYTES as u64 && h.max_kv_size == MASK_BYTES as u64,
            "{}: header chunkSize {} / maxKvSize {}: BLOB_POSEIDON needs {MASK_BYTES}-byte KVs",
            path.display(),
            h.chunk_size,
            h.max_kv_size
        );
        if let Some(m) = miner {
            anyhow::ensure!(
                *m == h.miner,
                "--miner {m} differs from the miner {} in the header of {}",
                h.miner,
                path.display()
            );
        }
        let file = File::open(path).with_context(|| format!("{}: opening", path.display()))?;
        Ok(EncodedFile { data, file })
    }

    /// The global KV indices this file holds.
    pub fn kv_range(&self) -> std::ops::Range<u64> {
        let h = &self.data.header;
        h.chunk_idx_start..h.chunk_idx_start + h.chunk_idx_len
    }

    /// Fails unless `kv_idx` is in this file.
    pub fn check_kv(&self, kv_idx: u64) -> anyhow::Result<()> {
        let r = self.kv_range();
        anyhow::ensure!(
            r.contains(&kv_idx),
            "--kv-idx {kv_idx} is outside {}, which holds KVs {}..{}",
            self.data.path.display(),
            r.start,
            r.end
        );
        Ok(())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> anyhow::Result<()> {
        let mut f = &self.file;
        f.seek(SeekFrom::Start(offset))
            .and_then(|_| f.read_exact(buf))
            .with_context(|| {
                format!(
                    "{}: reading {} bytes at offset {offset}",
                    self.data.path.display(),
                    buf.len()
                )
            })
    }

    /// The stored bytes of KV `kv_idx` (must be in the file).
    pub fn read_kv(&self, kv_idx: u64, buf: &mut [u8]) -> anyhow::Result<()> {
        let h = &self.data.header;
        self.read_at(
            HEADER_SIZE + (kv_idx - h.chunk_idx_start) * h.chunk_size,
            buf,
        )
    }

    /// The meta entries of KVs `range` (global indices inside the file), 32 bytes each.
    pub fn read_metas(&self, range: std::ops::Range<u64>) -> anyhow::Result<Vec<u8>> {
        let h = &self.data.header;
        let start = meta_offset(h, range.start);
        let mut buf = vec![0u8; ((range.end - range.start) * META_SIZE) as usize];
        let end = start + buf.len() as u64;
        anyhow::ensure!(
            end <= self.data.file_len,
            "{}: file is {} bytes, too short for the meta entries (up to offset {end})",
            self.data.path.display(),
            self.data.file_len
        );
        self.read_at(start, &mut buf)?;
        Ok(buf)
    }
}

/// File offset of KV `kv_idx`'s meta entry.
pub fn meta_offset(h: &pora_core::Header, kv_idx: u64) -> u64 {
    HEADER_SIZE + h.chunk_idx_len * h.chunk_size + (kv_idx - h.chunk_idx_start) * META_SIZE
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
    let commit = args
        .commit
        .as_ref()
        .map(|c| c.0.clone())
        .unwrap_or_else(|| meta[..COMMIT_LEN].to_vec());
    let key = encode_key(&commit, &f.data.header.miner.0, args.kv_idx)?;
    let mut stored = vec![0u8; MASK_BYTES];
    f.read_kv(args.kv_idx, &mut stored)?;
    let mut out = json!({
        "kvIdx": args.kv_idx,
        "commit": to_hex(&commit),
        "encodeKey": to_hex(&key),
    });
    if let Some(j) = args.sample {
        let j = j as usize;
        let mask_word = pora_encode::mask_word(&key, j)?;
        let word: Vec<u8> = stored[32 * j..32 * j + 32]
            .iter()
            .zip(mask_word.iter())
            .map(|(s, m)| s ^ m)
            .collect();
        out["sampleIdx"] = json!(j);
        out["stored"] = json!(to_hex(&stored[32 * j..32 * j + 32]));
        out["decoded"] = json!(to_hex(&word));
    } else {
        pora_encode::decode(&mut stored, &key)?;
        out["decodedSha256"] = json!(to_hex(&sha256(&stored)));
        match &args.out {
            Some(path) => write_new_file(path, &stored, args.force)?,
            None if !args.json => println!("{}", to_hex(&stored)),
            None => out["decoded"] = json!(to_hex(&stored)),
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if args.sample.is_some() || args.out.is_some() {
        for (k, v) in out.as_object().expect("object") {
            println!("{k:<14} {}", v.as_str().map_or(v.to_string(), String::from));
        }
    }
    Ok(())
}
