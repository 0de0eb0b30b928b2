//! What `pora info` reports: every data file's header facts and ranges, and the shard they form
//! (or why they do not form one).

use pora_core::sampling::SAMPLE_SIZE;
use pora_core::{Address, DataFile, EncodeType, Header, ShardSet};
use serde::Serialize;
use std::path::PathBuf;

/// The `pora info --json` record.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InfoRecord {
    pub files: Vec<FileRecord>,
    pub complete_shard: bool,
    pub shard: ShardOrProblem,
}

/// One data file's header and ranges.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileRecord {
    pub path: String,
    #[serde(flatten)]
    pub header: Header,
    pub file_bytes: u64,
    pub data_bytes: u64,
    pub kv_range: [u64; 2],
    pub sample_range: [u64; 2],
}

/// The complete shard's geometry.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardRecord {
    pub shard: u64,
    pub kv_entries_bits: u32,
    pub kv_size_bits: u32,
    pub miner: Address,
    pub encode_type: EncodeType,
    pub data_bytes: u64,
    pub sample_range: [u64; 2],
    pub files: usize,
}

/// The shard the files form, or why they form none.
#[derive(Serialize)]
#[serde(untagged)]
pub enum ShardOrProblem {
    Shard(ShardRecord),
    Problem { problem: String },
}

/// Opens `paths` and describes them; fails only when a file cannot be read as a data file.
pub fn inspect(paths: &[PathBuf], kv_entries_bits: Option<u32>) -> pora_core::Result<InfoRecord> {
    let files = paths
        .iter()
        .map(|p| DataFile::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    let records = files.iter().map(file_record).collect();
    let (complete_shard, shard) = match ShardSet::from_files(files, kv_entries_bits) {
        Ok(s) => (true, ShardOrProblem::Shard(shard_record(&s))),
        Err(e) => (
            false,
            ShardOrProblem::Problem {
                problem: e.to_string(),
            },
        ),
    };
    Ok(InfoRecord {
        files: records,
        complete_shard,
        shard,
    })
}

fn file_record(f: &DataFile) -> FileRecord {
    let h = &f.header;
    let kvs_per_file = h.data_len() / h.max_kv_size;
    let first_kv = h.start_byte() / h.max_kv_size;
    FileRecord {
        path: f.path.display().to_string(),
        header: h.clone(),
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
