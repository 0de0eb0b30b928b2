//! The 4096-byte header of an es-node data file, format version 1 (docs/spec/algorithm.md, "The data file").
//!
//! Parsing never trusts a field: every product of fields is computed with checked arithmetic,
//! so a corrupt header yields a typed error instead of an overflow, a panic or a huge allocation.

use crate::error::{Error, Result};
use crate::hex::Address;
use std::path::Path;

/// Size of the header at the start of every data file.
pub const HEADER_SIZE: u64 = 4096;
/// `magic` at offset 0.
pub const MAGIC: u64 = 0xcf20_bd77_0c22_b2e1;
/// The newest format version this crate reads and writes.
pub const VERSION: u64 = 1;
/// Per-KV metadata size es-node writes.
pub const META_SIZE: u64 = 32;

/// Status values pora writes; es-node leaves 0. A file that `pora create` has not finished
/// carries `STATUS_INCOMPLETE` so that it never looks valid.
pub const STATUS_READY: u64 = 0;
/// Byte offset of the header's `status` field.
pub const STATUS_OFFSET: u64 = 84;
/// Marks a file still being written by `pora create`.
pub const STATUS_INCOMPLETE: u64 = 0x706f_7261_2d77_6970; // "pora-wip"

/// How the stored bytes are masked. Mining reads encoded bytes as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EncodeType {
    None = 0,
    Keccak256 = 1,
    Ethash = 2,
    BlobPoseidon = 3,
}

impl EncodeType {
    /// Maps the header's `encodeType` value.
    pub fn from_u64(v: u64) -> Option<Self> {
        Some(match v {
            0 => EncodeType::None,
            1 => EncodeType::Keccak256,
            2 => EncodeType::Ethash,
            3 => EncodeType::BlobPoseidon,
            _ => return None,
        })
    }
}

/// A parsed and validated data-file header (serialized with es-node's field names, as
/// `pora info --json` prints it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    pub version: u64,
    pub chunk_idx_start: u64,
    pub chunk_idx_len: u64,
    pub encode_type: EncodeType,
    pub max_kv_size: u64,
    pub chunk_size: u64,
    pub meta_size: u64,
    pub miner: Address,
    pub status: u64,
}

fn be_u64(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_be_bytes(b)
}

impl Header {
    /// Parses and validates `buf` (the first bytes of `path`, at least 92 of them).
    /// `path` only names the file in errors.
    pub fn parse(path: &Path, buf: &[u8]) -> Result<Header> {
        if buf.len() < 92 {
            return Err(Error::Truncated {
                path: path.into(),
                len: buf.len() as u64,
                needed: HEADER_SIZE,
            });
        }
        let magic = be_u64(buf, 0);
        if magic != MAGIC {
            return Err(Error::BadMagic {
                path: path.into(),
                found: magic,
                expected: MAGIC,
            });
        }
        let bad = |field: &'static str, offset: u64, why: String| Error::BadHeader {
            path: path.into(),
            field,
            offset,
            why,
        };
        let version = be_u64(buf, 8);
        if version > VERSION {
            return Err(bad(
                "version",
                8,
                format!("version {version} is newer than the supported version {VERSION}"),
            ));
        }
        let encode = be_u64(buf, 32);
        let encode_type = EncodeType::from_u64(encode)
            .ok_or_else(|| bad("encodeType", 32, format!("{encode} is not one of 0 (none), 1 (keccak-256), 2 (ethash), 3 (blob-poseidon)")))?;
        let mut miner = [0u8; 20];
        miner.copy_from_slice(&buf[64..STATUS_OFFSET as usize]);
        let h = Header {
            version,
            chunk_idx_start: be_u64(buf, 16),
            chunk_idx_len: be_u64(buf, 24),
            encode_type,
            max_kv_size: be_u64(buf, 40),
            chunk_size: be_u64(buf, 48),
            meta_size: be_u64(buf, 56),
            miner: Address(miner),
            status: be_u64(buf, STATUS_OFFSET as usize),
        };
        h.validate_geometry(path)?;
        if h.status == STATUS_INCOMPLETE {
            let why = format!("file was never finished by `pora create` (interrupted while writing); create it again ({})", crate::Input::Force);
            return Err(bad("status", STATUS_OFFSET, why));
        }
        Ok(h)
    }

    /// Checks the size rules of docs/spec/algorithm.md: powers of two, chunk <= KV, KV-aligned range, and that
    /// every derived byte offset fits in 64 bits.
    fn validate_geometry(&self, path: &Path) -> Result<()> {
        let bad = |field: &'static str, offset: u64, why: String| Error::BadHeader {
            path: path.into(),
            field,
            offset,
            why,
        };
        if !self.chunk_size.is_power_of_two() {
            return Err(bad(
                "chunkSize",
                48,
                format!("{} is not a power of two", self.chunk_size),
            ));
        }
        if !self.max_kv_size.is_power_of_two() {
            return Err(bad(
                "maxKvSize",
                40,
                format!("{} is not a power of two", self.max_kv_size),
            ));
        }
        if self.max_kv_size < 32 {
            return Err(bad(
                "maxKvSize",
                40,
                format!("{} is smaller than one 32-byte sample", self.max_kv_size),
            ));
        }
        if self.chunk_size > self.max_kv_size {
            return Err(bad(
                "chunkSize",
                48,
                format!(
                    "{} is larger than maxKvSize {}",
                    self.chunk_size, self.max_kv_size
                ),
            ));
        }
        let start_bytes = self
            .chunk_idx_start
            .checked_mul(self.chunk_size)
            .ok_or_else(|| {
                bad(
                    "chunkIdxStart",
                    16,
                    format!(
                        "chunkIdxStart {} x chunkSize {} overflows 64 bits",
                        self.chunk_idx_start, self.chunk_size
                    ),
                )
            })?;
        let len_bytes = self
            .chunk_idx_len
            .checked_mul(self.chunk_size)
            .ok_or_else(|| {
                bad(
                    "chunkIdxLen",
                    24,
                    format!(
                        "chunkIdxLen {} x chunkSize {} overflows 64 bits",
                        self.chunk_idx_len, self.chunk_size
                    ),
                )
            })?;
        if start_bytes % self.max_kv_size != 0 {
            return Err(bad(
                "chunkIdxStart",
                16,
                format!(
                    "chunkIdxStart x chunkSize = {start_bytes} is not a multiple of maxKvSize {}",
                    self.max_kv_size
                ),
            ));
        }
        if len_bytes % self.max_kv_size != 0 {
            return Err(bad(
                "chunkIdxLen",
                24,
                format!(
                    "chunkIdxLen x chunkSize = {len_bytes} is not a multiple of maxKvSize {}",
                    self.max_kv_size
                ),
            ));
        }
        // The meta entries as `kv_meta_offset` places them (META_SIZE bytes per KV after the
        // data region, whatever `metaSize` says) must be addressable too: a header with a small
        // `metaSize` and a huge `chunkIdxLen` passed the check of `allocated_len` alone and
        // overflowed there (found by the `header` fuzz target).
        let meta_end = self
            .chunk_idx_len
            .checked_mul(META_SIZE)
            .and_then(|m| m.checked_add(len_bytes))
            .and_then(|m| m.checked_add(HEADER_SIZE));
        if start_bytes.checked_add(len_bytes).is_none()
            || self.allocated_len().is_none()
            || meta_end.is_none()
        {
            return Err(bad(
                "chunkIdxLen",
                24,
                "the file's address range overflows 64 bits".into(),
            ));
        }
        Ok(())
    }

    /// Bytes of the data region.
    pub fn data_len(&self) -> u64 {
        self.chunk_idx_len * self.chunk_size
    }

    /// Bytes a file needs to hold its header and data region.
    pub fn min_file_len(&self) -> u64 {
        HEADER_SIZE + self.data_len()
    }

    /// File offset of KV `kv_idx`'s data (the KV must lie in this file: `chunk_idx_start <=
    /// kv_idx`).
    pub fn kv_data_offset(&self, kv_idx: u64) -> u64 {
        HEADER_SIZE + (kv_idx - self.chunk_idx_start) * self.chunk_size
    }

    /// File offset of KV `kv_idx`'s meta entry: es-node keeps one `META_SIZE`-byte entry per KV
    /// after the data region.
    pub fn kv_meta_offset(&self, kv_idx: u64) -> u64 {
        self.min_file_len() + (kv_idx - self.chunk_idx_start) * META_SIZE
    }

    /// Bytes es-node allocates for this file: header, data and per-chunk meta.
    pub fn allocated_len(&self) -> Option<u64> {
        let per_chunk = self.chunk_size.checked_add(self.meta_size)?;
        self.chunk_idx_len
            .checked_mul(per_chunk)?
            .checked_add(HEADER_SIZE)
    }

    /// First global byte address covered.
    pub fn start_byte(&self) -> u64 {
        self.chunk_idx_start * self.chunk_size
    }

    /// One past the last global byte address covered.
    pub fn end_byte(&self) -> u64 {
        self.start_byte() + self.data_len()
    }

    /// log2(maxKvSize).
    pub fn kv_size_bits(&self) -> u32 {
        self.max_kv_size.trailing_zeros()
    }

    /// Encodes the header as the 4096 bytes written at offset 0.
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = vec![0u8; HEADER_SIZE as usize];
        let fields = [
            (0, MAGIC),
            (8, self.version),
            (16, self.chunk_idx_start),
            (24, self.chunk_idx_len),
            (32, self.encode_type as u64),
            (40, self.max_kv_size),
            (48, self.chunk_size),
            (56, self.meta_size),
        ];
        for (at, v) in fields {
            buf[at..at + 8].copy_from_slice(&v.to_be_bytes());
        }
        buf[64..STATUS_OFFSET as usize].copy_from_slice(&self.miner.0);
        let at = STATUS_OFFSET as usize;
        buf[at..at + 8].copy_from_slice(&self.status.to_be_bytes());
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        Header {
            version: 1,
            chunk_idx_start: 8192,
            chunk_idx_len: 8192,
            encode_type: EncodeType::BlobPoseidon,
            max_kv_size: 131072,
            chunk_size: 131072,
            meta_size: 32,
            miner: Address([7; 20]),
            status: 0,
        }
    }

    fn err_of(h: &Header) -> String {
        Header::parse(Path::new("f.dat"), &h.encode())
            .unwrap_err()
            .to_string()
    }

    /// es-node's layout: data of the first KV right after the header, meta entries after the
    /// whole data region, one per KV.
    #[test]
    fn kv_offsets_follow_the_layout() {
        let h = sample();
        assert_eq!(h.kv_data_offset(8192), HEADER_SIZE);
        assert_eq!(h.kv_data_offset(8193), HEADER_SIZE + 131072);
        assert_eq!(h.kv_meta_offset(8192), HEADER_SIZE + 8192 * 131072);
        assert_eq!(
            h.kv_meta_offset(8195),
            HEADER_SIZE + 8192 * 131072 + 3 * META_SIZE
        );
    }

    #[test]
    fn round_trips() {
        let h = sample();
        assert_eq!(Header::parse(Path::new("x"), &h.encode()).unwrap(), h);
    }

    #[test]
    fn rejects_each_bad_field_by_name() {
        let mut h = sample();
        h.version = 2;
        assert!(err_of(&h).contains("`version`"));
        let mut h = sample();
        h.chunk_size = 3 << 10;
        assert!(err_of(&h).contains("`chunkSize`") && err_of(&h).contains("power of two"));
        let mut h = sample();
        h.chunk_size = 1 << 18;
        assert!(err_of(&h).contains("larger than maxKvSize"));
        let mut h = sample();
        h.chunk_idx_start = u64::MAX / 2;
        assert!(err_of(&h).contains("overflows 64 bits"));
        let mut h = sample();
        h.chunk_size = 4096;
        h.chunk_idx_len = 1;
        assert!(err_of(&h).contains("not a multiple of maxKvSize"));
        let mut h = sample();
        h.status = STATUS_INCOMPLETE;
        assert!(err_of(&h).contains("never finished"));
        let mut buf = sample().encode();
        buf[39] = 9;
        let e = Header::parse(Path::new("f.dat"), &buf)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("f.dat") && e.contains("`encodeType`") && e.contains('9'),
            "{e}"
        );
        buf[0] = 0;
        assert!(Header::parse(Path::new("f.dat"), &buf)
            .unwrap_err()
            .to_string()
            .contains("magic"));
    }

    /// Found by the `header` fuzz target (fuzz/corpus/header/crash-a4adc77d…): chunkSize 2,
    /// maxKvSize 2^25, metaSize 0 and chunkIdxLen 0x2b00…: `allocated_len` fits in 64 bits, but
    /// the last KV's meta offset (32-byte entries after the data region) overflowed, a panic
    /// with overflow checks on. Now the header is refused.
    #[test]
    fn a_meta_region_past_64_bits_is_refused_not_an_overflow() {
        let h = Header {
            version: 0,
            chunk_idx_start: 0,
            chunk_idx_len: 0x2b00_0000_0000_0000,
            encode_type: EncodeType::None,
            max_kv_size: 1 << 25,
            chunk_size: 2,
            meta_size: 0,
            miner: Address([0; 20]),
            status: 0,
        };
        assert!(
            h.allocated_len().is_some(),
            "the case the old check let through"
        );
        assert!(err_of(&h).contains("overflows 64 bits"), "{}", err_of(&h));
        let fuzz_input = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fuzz/corpus/header/crash-a4adc77da9c6e660d7eb509dfee18ef602c7dbce"
        ))
        .unwrap();
        assert!(Header::parse(Path::new("f.dat"), &fuzz_input).is_err());
    }
}
