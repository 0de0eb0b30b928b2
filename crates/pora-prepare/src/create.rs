//! Creating an es-node v1 data file for one shard, the size es-node preallocates.
//!
//! The header is first written with `status = STATUS_INCOMPLETE` and only rewritten as ready
//! after the data is on disk (fsync), so a file interrupted half-way never parses as valid.
//! Existing files are never overwritten without `force`.

use crate::error::{ensure, PrepareError, Result};
use crate::OnProgress;
use pora_core::header::{Header, HEADER_SIZE, META_SIZE, STATUS_INCOMPLETE, STATUS_READY, VERSION};
use pora_core::{Address, EncodeType, Input, SampleGeometry};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// How the data region is filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fill {
    /// Deterministic pseudo-random bytes from the seed.
    Random,
    /// Zero bytes, written (allocated on disk).
    Zero,
    /// Nothing written: a sparse file that reads as zeros.
    Sparse,
    /// Every KV's BLOB_POSEIDON mask, written by [`crate::empty::EmptyFill`].
    Empty,
}

/// The file to create: its shard, sizes, header fields and fill.
#[derive(Clone, Debug)]
pub struct CreateSpec {
    pub file: PathBuf,
    pub shard: u64,
    /// log2 of the KVs in a shard.
    pub kv_entries_bits: u32,
    /// log2 of the KV size.
    pub kv_size_bits: u32,
    /// Chunk size in bytes; the KV size when `None`.
    pub chunk_size: Option<u64>,
    pub miner: Address,
    /// encodeType 0..=3, as given on the command line.
    pub encode_type: u64,
    pub fill: Fill,
    /// Seed of the random fill.
    pub seed: u64,
    /// Overwrite an existing file.
    pub force: bool,
}

/// The header for the requested shard, with every size checked.
pub fn plan_header(spec: &CreateSpec) -> Result<Header> {
    let geometry = SampleGeometry::new(spec.shard, spec.kv_entries_bits, spec.kv_size_bits)?;
    let kv_size = 1u64 << spec.kv_size_bits;
    let chunk_size = spec.chunk_size.unwrap_or(kv_size);
    ensure!(
        chunk_size.is_power_of_two() && chunk_size <= kv_size && chunk_size >= 32,
        "{} {chunk_size}: must be a power of two between 32 and the KV size {kv_size}",
        Input::ChunkSize
    );
    let Some(encode_type) = EncodeType::from_u64(spec.encode_type) else {
        return Err(PrepareError::Invalid(format!(
            "{} {}: must be 0, 1, 2 or 3",
            Input::EncodeType,
            spec.encode_type
        )));
    };
    let chunks_per_shard = (1u64 << (spec.kv_entries_bits + spec.kv_size_bits)) / chunk_size;
    let header = Header {
        version: VERSION,
        chunk_idx_start: geometry.shard_idx * chunks_per_shard,
        chunk_idx_len: chunks_per_shard,
        encode_type,
        max_kv_size: kv_size,
        chunk_size,
        meta_size: META_SIZE,
        miner: spec.miner,
        status: STATUS_READY,
    };
    // Round-trip through the parser: what we write must be what es-node and pora accept.
    Header::parse(&spec.file, &header.encode())?;
    Ok(header)
}

/// The file's full length for `header`.
pub(crate) fn allocated_len(header: &Header) -> Result<u64> {
    header
        .allocated_len()
        .ok_or_else(|| PrepareError::Invalid("file size overflows 64 bits".into()))
}

/// Writes the file of `spec` with `header` (from [`plan_header`]); `progress` counts data bytes.
/// The empty fill has its own options: use [`crate::empty::EmptyFill`] for it.
pub fn create(spec: &CreateSpec, header: &Header, progress: OnProgress) -> Result<()> {
    ensure!(
        spec.fill != Fill::Empty,
        "{} empty is written by pora_prepare::empty::EmptyFill",
        Input::Fill
    );
    let path = &spec.file;
    let mut file = open_for_create(path, spec.force)?;
    let total = allocated_len(header)?;
    let mut wip = header.clone();
    wip.status = STATUS_INCOMPLETE;
    let ctx = |e| PrepareError::io(format!("writing {}", path.display()), e);
    file.write_all(&wip.encode()).map_err(ctx)?;
    file.set_len(total).map_err(ctx)?;
    if spec.fill != Fill::Sparse {
        fill_data(&mut file, header, spec, progress).map_err(ctx)?;
    }
    file.sync_all().map_err(ctx)?;
    file.seek(SeekFrom::Start(0)).map_err(ctx)?;
    file.write_all(&header.encode()).map_err(ctx)?;
    file.sync_all().map_err(ctx)?;
    Ok(())
}

/// Opens `path` for writing: a new file, or with `force` an existing one truncated.
pub(crate) fn create_or_truncate(path: &Path, force: bool) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.write(true);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    opts.open(path)
}

/// [`create_or_truncate`] for a data file, with the error `pora create` prints.
pub fn open_for_create(path: &Path, force: bool) -> Result<File> {
    create_or_truncate(path, force).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            PrepareError::Invalid(format!(
                "{}: file exists; give {} to overwrite it (or, for {} empty, {} to continue \
                 filling it)",
                path.display(),
                Input::Force,
                Input::Fill,
                Input::Resume
            ))
        } else {
            PrepareError::io(path.display().to_string(), e)
        }
    })
}

/// Writes the data region sequentially in large blocks; random bytes come from one seeded
/// generator so a (seed, geometry) pair always yields the same file.
fn fill_data(
    file: &mut File,
    header: &Header,
    spec: &CreateSpec,
    progress: OnProgress,
) -> std::io::Result<()> {
    const BLOCK: usize = 8 << 20;
    let data_len = header.data_len();
    let mut rng =
        Xoshiro256PlusPlus::seed_from_u64(spec.seed ^ header.chunk_idx_start.rotate_left(32));
    let mut buf = vec![0u8; BLOCK];
    file.seek(SeekFrom::Start(HEADER_SIZE))?;
    let mut written = 0u64;
    while written < data_len {
        let n = (data_len - written).min(BLOCK as u64) as usize;
        if spec.fill == Fill::Random {
            rng.fill_bytes(&mut buf[..n]);
        }
        file.write_all(&buf[..n])?;
        written += n as u64;
        progress(n as u64);
    }
    Ok(())
}
