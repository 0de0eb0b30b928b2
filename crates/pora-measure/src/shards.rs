//! How `pora tune` and `pora doctor` read a list of files: each file a complete shard of its own
//! (the way `pora mine` is given one shard per `--file`), or, when that fails, one complete shard
//! made of all of them. The shards are opened through
//! [`pora_mine::session::open_shards`], the one place that groups files into shards.

use pora_core::ShardSet;
use pora_mine::session::open_shards;
use pora_mine::MineError;
use std::path::PathBuf;

/// Why the files form neither one shard nor one shard each.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardsError {
    /// One file that is not a complete shard.
    #[error("{0}")]
    Single(pora_core::Error),
    /// Several files that are neither one shard nor one shard each.
    #[error("the files are neither one shard ({together}) nor one shard each")]
    Neither {
        together: pora_core::Error,
        #[source]
        each: EachError,
    },
}

/// Why the files are not one shard each (the first file that is not, or a shard given twice).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EachError(String);

/// The shards of `files`, counted the way `pora mine` counts them when each file is given as a
/// shard of its own: several files that are each a complete shard (one file per shard, as `pora
/// create --shard` and es-node write them) are that many shards, even when together they would
/// also cover one larger shard (shards 0..3 of 2^13 KVs also cover shard 0 of 2^15 KVs: the
/// header does not record the shard size). Otherwise all of them form one shard. A result with
/// one shard means the files form one shard together. `kv_entries_bits` settles the ambiguity:
/// with it, only one of the two readings can hold.
pub fn open_files_as_shards(
    files: &[PathBuf],
    kv_entries_bits: Option<u32>,
) -> Result<Vec<ShardSet>, ShardsError> {
    let each = (files.len() >= 2).then(|| open_each(files, kv_entries_bits));
    if let Some(Ok(shards)) = each {
        return Ok(shards);
    }
    let together = match open_shards(&[files.to_vec()], kv_entries_bits) {
        Ok(shards) => return Ok(shards),
        Err(e) => shard_cause(e),
    };
    match each {
        None => Err(ShardsError::Single(together)),
        Some(Err(each)) => Err(ShardsError::Neither { together, each }),
        Some(Ok(_)) => unreachable!("returned above"),
    }
}

/// When `shards` (several, read one per file) would also form one larger shard together: a note
/// saying so and how to tune them as one.
pub fn one_per_file_note(
    files: &[PathBuf],
    kv_entries_bits: Option<u32>,
    shards: &[ShardSet],
) -> Option<String> {
    if shards.len() < 2 || kv_entries_bits.is_some() {
        return None;
    }
    let one = open_shards(&[files.to_vec()], None).ok()?;
    let g = &one.first()?.geometry;
    Some(format!(
        "the {} files are counted as {} shards, one per file (as `pora mine --file A --file B ...` mines them); together they would also cover shard {} with kvEntriesBits {}: give --kv-entries-bits {} to tune them as that one shard",
        files.len(),
        shards.len(),
        g.shard_idx,
        g.kv_entries_bits,
        g.kv_entries_bits
    ))
}

/// Every file a complete shard of its own, no shard twice.
fn open_each(files: &[PathBuf], kv_entries_bits: Option<u32>) -> Result<Vec<ShardSet>, EachError> {
    let groups: Vec<Vec<PathBuf>> = files.iter().map(|f| vec![f.clone()]).collect();
    open_shards(&groups, kv_entries_bits).map_err(|e| {
        EachError(match e {
            MineError::Shard { source, .. } => source.to_string(),
            MineError::DuplicateShard { first, second, .. } => format!(
                "{} and {} hold the same shard",
                files[first - 1].display(),
                files[second - 1].display()
            ),
            other => other.to_string(),
        })
    })
}

/// The file-level cause of a one-group open (the group number means nothing to these commands).
fn shard_cause(e: MineError) -> pora_core::Error {
    match e {
        MineError::Shard { source, .. } => source,
        other => pora_core::Error::ShardSet(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("absent.dat");
        let e = open_files_as_shards(std::slice::from_ref(&missing), None).unwrap_err();
        assert!(matches!(e, ShardsError::Single(_)));
        assert!(e.to_string().contains("absent.dat"), "{e}");
        let two = [missing.clone(), dir.path().join("other.dat")];
        let e = open_files_as_shards(&two, None).unwrap_err();
        assert!(matches!(e, ShardsError::Neither { .. }), "{e}");
    }
}
