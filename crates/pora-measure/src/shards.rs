//! How `pora tune` and `pora doctor` read a list of files: one complete shard made of all of
//! them, or, when that fails, each file a complete shard of its own. The shards are opened through
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

/// The shards of `files`: one shard from all of them, or one per file. A result with one shard
/// means the files form one shard together.
pub fn open_files_as_shards(
    files: &[PathBuf],
    kv_entries_bits: Option<u32>,
) -> Result<Vec<ShardSet>, ShardsError> {
    let together = match open_shards(&[files.to_vec()], kv_entries_bits) {
        Ok(shards) => return Ok(shards),
        Err(e) => shard_cause(e),
    };
    if files.len() < 2 {
        return Err(ShardsError::Single(together));
    }
    let groups: Vec<Vec<PathBuf>> = files.iter().map(|f| vec![f.clone()]).collect();
    open_shards(&groups, kv_entries_bits).map_err(|e| ShardsError::Neither {
        together,
        each: EachError(match e {
            MineError::Shard { source, .. } => source.to_string(),
            MineError::DuplicateShard { first, second, .. } => format!(
                "{} and {} hold the same shard",
                files[first - 1].display(),
                files[second - 1].display()
            ),
            other => other.to_string(),
        }),
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
