//! An encodeType-3 data file opened read-only, and where its KVs and meta entries lie: what
//! `decode`, `scrub` and the empty fill share.

use crate::error::{ensure, PrepareError, Result};
use pora_core::header::META_SIZE;
use pora_core::{Address, DataFile, EncodeType, Input};
use pora_encode::{COMMIT_LEN, MASK_BYTES};
use std::fs::File;
use std::ops::Range;
use std::path::Path;

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

/// An encodeType-3 data file opened read-only, with its geometry checked for encoding.
pub struct EncodedFile {
    pub data: DataFile,
    pub file: File,
}

impl EncodedFile {
    /// Opens `path` read-only; fails unless it is a complete encodeType-3 file with 128 KiB
    /// KVs (chunks) and, when `miner` is given, that miner in its header.
    pub fn open(path: &Path, miner: Option<&Address>) -> Result<EncodedFile> {
        let data = DataFile::open(path)?;
        let h = &data.header;
        ensure!(
            h.encode_type == EncodeType::BlobPoseidon,
            "{}: header encodeType is {:?}, but encoding needs 3 (blob-poseidon)",
            path.display(),
            h.encode_type
        );
        ensure!(
            h.chunk_size == MASK_BYTES as u64 && h.max_kv_size == MASK_BYTES as u64,
            "{}: header chunkSize {} / maxKvSize {}: BLOB_POSEIDON needs {MASK_BYTES}-byte KVs",
            path.display(),
            h.chunk_size,
            h.max_kv_size
        );
        if let Some(m) = miner {
            ensure!(
                *m == h.miner,
                "{} {m} differs from the miner {} in the header of {}",
                Input::Miner,
                h.miner,
                path.display()
            );
        }
        let file = File::open(path)
            .map_err(|e| PrepareError::io(format!("{}: opening", path.display()), e))?;
        Ok(EncodedFile { data, file })
    }

    /// The global KV indices this file holds.
    pub fn kv_range(&self) -> Range<u64> {
        let h = &self.data.header;
        h.chunk_idx_start..h.chunk_idx_start + h.chunk_idx_len
    }

    /// Fails unless `kv_idx` is in this file.
    pub fn check_kv(&self, kv_idx: u64) -> Result<()> {
        let r = self.kv_range();
        ensure!(
            r.contains(&kv_idx),
            "{} {kv_idx} is outside {}, which holds KVs {}..{}",
            Input::KvIdx,
            self.data.path.display(),
            r.start,
            r.end
        );
        Ok(())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        // Positional: scrub's threads share this handle, and a seek + read pair would race.
        pora_io::read_exact_at(&self.file, buf, offset).map_err(|e| {
            let what = format!(
                "{}: reading {} bytes at offset {offset}",
                self.data.path.display(),
                buf.len()
            );
            PrepareError::io(what, e)
        })
    }

    /// The stored bytes of KV `kv_idx` (fails unless it is in the file).
    pub fn read_kv(&self, kv_idx: u64, buf: &mut [u8]) -> Result<()> {
        self.check_kv(kv_idx)?;
        self.read_at(self.data.header.kv_data_offset(kv_idx), buf)
    }

    /// The meta entries of KVs `range` (global indices inside the file), 32 bytes each.
    pub fn read_metas(&self, range: Range<u64>) -> Result<Vec<u8>> {
        let held = self.kv_range();
        ensure!(
            range.start >= held.start && range.end <= held.end && range.start <= range.end,
            "KVs {}..{} are outside {}, which holds KVs {}..{}",
            range.start,
            range.end,
            self.data.path.display(),
            held.start,
            held.end
        );
        let start = self.data.header.kv_meta_offset(range.start);
        let mut buf = vec![0u8; ((range.end - range.start) * META_SIZE) as usize];
        let end = start + buf.len() as u64;
        ensure!(
            end <= self.data.file_len,
            "{}: file is {} bytes, too short for the meta entries (up to offset {end})",
            self.data.path.display(),
            self.data.file_len
        );
        self.read_at(start, &mut buf)?;
        Ok(buf)
    }
}
