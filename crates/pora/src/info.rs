//! `pora info FILE... [--json]`: headers, shard index, KV and sample ranges, and whether the
//! files form one complete shard.

use pora_core::sampling::SAMPLE_SIZE;
use pora_core::{DataFile, ShardSet};
use serde_json::json;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct InfoArgs {
    /// Data files (one shard may span several).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Shard size as log2(KVs); inferred from the files when omitted.
    #[arg(long)]
    kv_entries_bits: Option<u32>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(args: InfoArgs) -> anyhow::Result<()> {
    let files = args
        .files
        .iter()
        .map(|p| DataFile::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    let shard = ShardSet::from_files(files.clone(), args.kv_entries_bits);
    let file_json: Vec<_> = files.iter().map(file_json).collect();
    let (complete, shard_json) = match &shard {
        Ok(s) => (true, shard_json(s)),
        Err(e) => (false, json!({ "problem": e.to_string() })),
    };
    if args.json {
        let out = json!({ "files": file_json, "completeShard": complete, "shard": shard_json });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for (f, j) in files.iter().zip(&file_json) {
        println!("{}", f.path.display());
        for (k, v) in j
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| *k != "path")
        {
            println!("  {k:<16} {v}");
        }
    }
    match &shard {
        Ok(_) => {
            println!("complete shard:");
            for (k, v) in shard_json.as_object().into_iter().flatten() {
                println!("  {k:<16} {v}");
            }
        }
        Err(e) => println!("not a complete shard: {e}"),
    }
    Ok(())
}

fn file_json(f: &DataFile) -> serde_json::Value {
    let h = &f.header;
    let kvs_per_file = h.data_len() / h.max_kv_size;
    let first_kv = h.start_byte() / h.max_kv_size;
    json!({
        "path": f.path.display().to_string(),
        "version": h.version,
        "chunkIdxStart": h.chunk_idx_start,
        "chunkIdxLen": h.chunk_idx_len,
        "encodeType": h.encode_type,
        "maxKvSize": h.max_kv_size,
        "chunkSize": h.chunk_size,
        "metaSize": h.meta_size,
        "miner": h.miner,
        "status": h.status,
        "fileBytes": f.file_len,
        "dataBytes": h.data_len(),
        "kvRange": [first_kv, first_kv + kvs_per_file],
        "sampleRange": [h.start_byte() / SAMPLE_SIZE, h.end_byte() / SAMPLE_SIZE],
    })
}

fn shard_json(s: &ShardSet) -> serde_json::Value {
    let g = &s.geometry;
    json!({
        "shard": g.shard_idx,
        "kvEntriesBits": g.kv_entries_bits,
        "kvSizeBits": g.kv_size_bits,
        "miner": s.miner,
        "encodeType": s.encode_type,
        "dataBytes": s.data_bytes(),
        "sampleRange": [g.first_sample(), g.first_sample() + g.samples_per_shard()],
        "files": s.files.len(),
    })
}
