//! `pora info FILE... [--json]`: headers, shard index, KV and sample ranges, and whether the
//! files form one complete shard.

use pora_core::sampling::SAMPLE_SIZE;
use pora_core::{Address, DataFile, EncodeType, ShardSet};
use serde::Serialize;
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

/// `pora info --json`: every file's header facts, and the shard they form (or why not).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InfoRecord<'a> {
    files: &'a [FileRecord],
    complete_shard: bool,
    shard: &'a ShardOrProblem,
}

/// One data file's header and ranges.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileRecord {
    path: String,
    version: u64,
    chunk_idx_start: u64,
    chunk_idx_len: u64,
    encode_type: EncodeType,
    max_kv_size: u64,
    chunk_size: u64,
    meta_size: u64,
    miner: Address,
    status: u64,
    file_bytes: u64,
    data_bytes: u64,
    kv_range: [u64; 2],
    sample_range: [u64; 2],
}

/// The complete shard's geometry.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShardRecord {
    shard: u64,
    kv_entries_bits: u32,
    kv_size_bits: u32,
    miner: Address,
    encode_type: EncodeType,
    data_bytes: u64,
    sample_range: [u64; 2],
    files: usize,
}

#[derive(Serialize)]
#[serde(untagged)]
enum ShardOrProblem {
    Shard(ShardRecord),
    Problem { problem: String },
}

pub fn run(args: InfoArgs) -> anyhow::Result<()> {
    let files = args
        .files
        .iter()
        .map(|p| DataFile::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    let shard = ShardSet::from_files(files.clone(), args.kv_entries_bits);
    let file_records: Vec<FileRecord> = files.iter().map(file_record).collect();
    let (complete, shard_record) = match &shard {
        Ok(s) => (true, ShardOrProblem::Shard(shard_record(s))),
        Err(e) => (
            false,
            ShardOrProblem::Problem {
                problem: e.to_string(),
            },
        ),
    };
    if args.json {
        let out = InfoRecord {
            files: &file_records,
            complete_shard: complete,
            shard: &shard_record,
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for (f, record) in files.iter().zip(&file_records) {
        println!("{}", f.path.display());
        print_fields(&serde_json::to_value(record)?, &["path"]);
    }
    match &shard {
        Ok(_) => {
            println!("complete shard:");
            print_fields(&serde_json::to_value(&shard_record)?, &[]);
        }
        Err(e) => println!("not a complete shard: {e}"),
    }
    Ok(())
}

/// `  key              value` per field of a record, in order, but the `skip`ped ones.
fn print_fields(record: &serde_json::Value, skip: &[&str]) {
    for (k, v) in record
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
    {
        println!("  {k:<16} {v}");
    }
}

fn file_record(f: &DataFile) -> FileRecord {
    let h = &f.header;
    let kvs_per_file = h.data_len() / h.max_kv_size;
    let first_kv = h.start_byte() / h.max_kv_size;
    FileRecord {
        path: f.path.display().to_string(),
        version: h.version,
        chunk_idx_start: h.chunk_idx_start,
        chunk_idx_len: h.chunk_idx_len,
        encode_type: h.encode_type,
        max_kv_size: h.max_kv_size,
        chunk_size: h.chunk_size,
        meta_size: h.meta_size,
        miner: h.miner,
        status: h.status,
        file_bytes: f.file_len,
        data_bytes: h.data_len(),
        kv_range: [first_kv, first_kv + kvs_per_file],
        sample_range: [h.start_byte() / SAMPLE_SIZE, h.end_byte() / SAMPLE_SIZE],
    }
}

fn shard_record(s: &ShardSet) -> ShardRecord {
    let g = &s.geometry;
    ShardRecord {
        shard: g.shard_idx,
        kv_entries_bits: g.kv_entries_bits,
        kv_size_bits: g.kv_size_bits,
        miner: s.miner,
        encode_type: s.encode_type,
        data_bytes: s.data_bytes(),
        sample_range: [g.first_sample(), g.first_sample() + g.samples_per_shard()],
        files: s.files.len(),
    }
}
