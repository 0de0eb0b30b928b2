//! One shard stored in one or more data files: opening them read-only, checking that they agree
//! and cover the shard's chunk range without gaps or overlaps, and mapping a global sample index
//! to (file, byte offset). All offsets are u64; shards of 1 TiB and shard offsets past 2^40 are
//! ordinary.

use crate::error::{Error, Result};
use crate::header::{Header, HEADER_SIZE};
use crate::hex::Address;
use crate::sampling::{SampleGeometry, SAMPLE_SIZE, SAMPLE_SIZE_BITS};
use crate::EncodeType;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A data file whose header has been validated against its length.
#[derive(Clone, Debug)]
pub struct DataFile {
    pub path: PathBuf,
    pub header: Header,
    pub file_len: u64,
}

impl DataFile {
    /// Opens `path` read-only and validates its header and length.
    pub fn open(path: &Path) -> Result<DataFile> {
        let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
        let file_len = byte_len(&mut f).map_err(|e| Error::io(path, e))?;
        let mut buf = Vec::with_capacity(HEADER_SIZE as usize);
        (&mut f)
            .take(HEADER_SIZE)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io(path, e))?;
        let header = Header::parse(path, &buf)?;
        if file_len < header.min_file_len() {
            return Err(Error::Truncated {
                path: path.into(),
                len: file_len,
                needed: header.min_file_len(),
            });
        }
        Ok(DataFile {
            path: path.into(),
            header,
            file_len,
        })
    }
}

/// The length of a regular file, or of a block device (a shard written to a raw partition or a
/// device-mapper target), whose metadata reports 0: its end is found by seeking. Leaves the
/// position at 0.
fn byte_len(f: &mut File) -> std::io::Result<u64> {
    let meta = f.metadata()?;
    #[cfg(unix)]
    if std::os::unix::fs::FileTypeExt::is_block_device(&meta.file_type()) {
        use std::io::{Seek, SeekFrom};
        let len = f.seek(SeekFrom::End(0))?;
        f.seek(SeekFrom::Start(0))?;
        return Ok(len);
    }
    Ok(meta.len())
}

/// Where one sample is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleLocation {
    /// Index into [`ShardSet::files`].
    pub file: usize,
    /// Byte offset inside that file.
    pub offset: u64,
}

/// The data files of one shard, sorted by chunk range and known to cover it exactly.
#[derive(Clone, Debug)]
pub struct ShardSet {
    pub files: Vec<DataFile>,
    pub geometry: SampleGeometry,
    pub miner: Address,
    pub encode_type: EncodeType,
}

impl ShardSet {
    /// Opens and validates the files of one shard. Without `kv_entries_bits` the shard size and
    /// index are inferred from the range the files cover.
    pub fn open(paths: &[PathBuf], kv_entries_bits: Option<u32>) -> Result<ShardSet> {
        let files = paths
            .iter()
            .map(|p| DataFile::open(p))
            .collect::<Result<Vec<_>>>()?;
        ShardSet::from_files(files, kv_entries_bits)
    }

    /// Validates already-opened files as one shard.
    pub fn from_files(mut files: Vec<DataFile>, kv_entries_bits: Option<u32>) -> Result<ShardSet> {
        let Some(first) = files.first() else {
            return Err(Error::ShardSet("no data files given".into()));
        };
        let (miner, encode, kv_size) = (
            first.header.miner,
            first.header.encode_type,
            first.header.max_kv_size,
        );
        for f in &files[1..] {
            let h = &f.header;
            let why = if h.miner != miner {
                format!(
                    "miner {} differs from {} in {}",
                    h.miner,
                    miner,
                    first.path.display()
                )
            } else if h.encode_type != encode {
                format!(
                    "encodeType {:?} differs from {:?} in {}",
                    h.encode_type,
                    encode,
                    first.path.display()
                )
            } else if h.max_kv_size != kv_size {
                format!(
                    "maxKvSize {} differs from {} in {}",
                    h.max_kv_size,
                    kv_size,
                    first.path.display()
                )
            } else {
                continue;
            };
            return Err(Error::ShardMismatch {
                path: f.path.clone(),
                why,
            });
        }
        if let Some(empty) = files.iter().find(|f| f.header.chunk_idx_len == 0) {
            return Err(Error::ShardMismatch {
                path: empty.path.clone(),
                why: "chunkIdxLen is 0: the file holds no data".into(),
            });
        }
        files.sort_by_key(|f| f.header.start_byte());
        check_contiguous(&files)?;
        let start = files[0].header.start_byte();
        let end = files[files.len() - 1].header.end_byte();
        let kv_size_bits = kv_size.trailing_zeros();
        let geometry = match kv_entries_bits {
            Some(bits) => geometry_for(start, kv_size_bits, bits)?,
            None => infer_geometry(start, end, kv_size, kv_size_bits)?,
        };
        let shard_bits = geometry.kv_entries_bits + geometry.kv_size_bits;
        let want_start = geometry.shard_idx << shard_bits;
        // The last byte of the shard; a shard that would end past 2^64 bytes is no shard.
        let want_end = want_start
            .checked_add((1u64 << shard_bits) - 1)
            .ok_or_else(|| {
                Error::ShardSet(format!(
                    "shard {} with kvEntriesBits={} would end past 2^64 bytes",
                    geometry.shard_idx, geometry.kv_entries_bits
                ))
            })?;
        if start != want_start || end - 1 != want_end {
            return Err(Error::ShardSet(format!(
                "files cover bytes [{start:#x}, {end:#x}) but shard {} with kvEntriesBits={} is [{want_start:#x}, {:#x}]: {}",
                geometry.shard_idx,
                geometry.kv_entries_bits,
                want_end,
                if end - 1 < want_end { "files are missing" } else { "files extend past the shard" }
            )));
        }
        Ok(ShardSet {
            files,
            geometry,
            miner,
            encode_type: encode,
        })
    }

    /// The file and byte offset of a global sample index.
    #[inline]
    pub fn locate(&self, sample_idx: u64) -> Result<SampleLocation> {
        let first = self.geometry.first_sample();
        if sample_idx < first || sample_idx - first >= self.geometry.samples_per_shard() {
            return Err(Error::SampleOutOfRange {
                sample_idx,
                shard: self.geometry.shard_idx,
                why: "outside the shard".into(),
            });
        }
        // In range, so the product fits: SampleGeometry::new checked the shard's byte range.
        let byte = sample_idx << SAMPLE_SIZE_BITS;
        let file = if self.files.len() == 1 {
            0
        } else {
            self.files
                .partition_point(|f| f.header.start_byte() <= byte)
                - 1
        };
        let h = &self.files[file].header;
        Ok(SampleLocation {
            file,
            offset: HEADER_SIZE + (byte - h.start_byte()),
        })
    }

    /// Paths of the files, in `locate`'s file order.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }

    /// Bytes of data (not header or meta) in the shard.
    pub fn data_bytes(&self) -> u64 {
        self.geometry.samples_per_shard() * SAMPLE_SIZE
    }
}

fn check_contiguous(files: &[DataFile]) -> Result<()> {
    for pair in files.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let (a_end, b_start) = (a.header.end_byte(), b.header.start_byte());
        if b_start != a_end {
            let cs = a.header.chunk_size;
            let what = if b_start > a_end {
                "leaves a gap after"
            } else {
                "overlaps"
            };
            return Err(Error::ShardSet(format!(
                "{} (chunks from {}) {} {} (chunks {}..{}); byte {:#x} vs {:#x}",
                b.path.display(),
                b.header.chunk_idx_start,
                what,
                a.path.display(),
                a.header.chunk_idx_start,
                a_end / cs,
                b_start,
                a_end
            )));
        }
    }
    Ok(())
}

fn geometry_for(start: u64, kv_size_bits: u32, kv_entries_bits: u32) -> Result<SampleGeometry> {
    let shard_bits = kv_entries_bits + kv_size_bits;
    if shard_bits >= 64 {
        return Err(Error::bad_value(
            crate::Input::KvEntriesBits,
            kv_entries_bits.to_string(),
            "shard would exceed 2^64 bytes",
        ));
    }
    SampleGeometry::new(start >> shard_bits, kv_entries_bits, kv_size_bits)
}

fn infer_geometry(start: u64, end: u64, kv_size: u64, kv_size_bits: u32) -> Result<SampleGeometry> {
    let bytes = end - start;
    let kvs = bytes / kv_size;
    if !kvs.is_power_of_two() || !start.is_multiple_of(bytes) {
        return Err(Error::ShardSet(format!(
            "files cover {kvs} KVs from byte {start:#x}, which is not one whole shard; give {} to name the shard size",
            crate::Input::KvEntriesBits
        )));
    }
    SampleGeometry::new(start / bytes, kvs.trailing_zeros(), kv_size_bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::data_file as file;

    #[test]
    fn byte_len_of_a_regular_file_is_its_length() {
        // Block devices are covered for real (loop device, as root) by
        // crates/pora/tests/reliability_blockdev.rs.
        use std::io::Write;
        let mut tmp = tempfile::tempfile().unwrap();
        tmp.write_all(&[7u8; 5000]).unwrap();
        assert_eq!(byte_len(&mut tmp).unwrap(), 5000);
    }

    #[test]
    fn infers_shard_from_two_files_and_locates_samples() {
        let s = ShardSet::from_files(
            vec![file("b", 8192 + 4096, 4096), file("a", 8192, 4096)],
            None,
        )
        .unwrap();
        assert_eq!((s.geometry.shard_idx, s.geometry.kv_entries_bits), (1, 13));
        let first = s.geometry.first_sample();
        assert_eq!(
            s.locate(first).unwrap(),
            SampleLocation {
                file: 0,
                offset: 4096
            }
        );
        let mid = first + (4096u64 << 17) / 32;
        assert_eq!(
            s.locate(mid).unwrap(),
            SampleLocation {
                file: 1,
                offset: 4096
            }
        );
        assert!(s.locate(first - 1).is_err());
        assert!(s.locate(first + s.geometry.samples_per_shard()).is_err());
    }

    #[test]
    fn gaps_overlaps_and_partial_shards_are_named() {
        let e = ShardSet::from_files(vec![file("a", 0, 4096), file("b", 4097, 4095)], Some(13))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("gap") && e.contains('a') && e.contains('b'),
            "{e}"
        );
        let e = ShardSet::from_files(vec![file("a", 0, 4096), file("b", 4000, 4192)], Some(13))
            .unwrap_err()
            .to_string();
        assert!(e.contains("overlaps"), "{e}");
        let e = ShardSet::from_files(vec![file("a", 0, 4096)], Some(13))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing"), "{e}");
    }
}
