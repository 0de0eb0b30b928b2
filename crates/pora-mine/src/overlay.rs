//! KVs whose current bytes are in memory: a slot samples them from here instead of the file.
//!
//! es-node mines blobs that are downloaded but not yet finalized from its blob cache, while the
//! data file still holds those KVs' old bytes (`blobs.BlobReader.ReadSample` asks the cache
//! first). A miner that reads only the file hashes stale bytes for them: it misses nonces es-node
//! finds and reports nonces whose proof fails on chain. An [`Overlay`] carries those KVs, already
//! encoded with the miner's key, keyed by their global KV index.
//!
//! Cost: the caller copies a KV in once ([`Overlay::insert`], 128 KiB) and keeps the overlay
//! across slots; a slot takes a snapshot ([`ShardOverlay`] per shard, Arc clones only). The worker
//! looks a read up before pushing it: a shard with no overlay KVs pays one length check per read,
//! one with some a binary search over its few KV indices. The I/O contract is unchanged: overlay
//! samples never reach a backend.

use crate::MineError;
use pora_core::{SampleGeometry, SAMPLE_SIZE_BITS};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Encoded KV bytes by global KV index (`sampleIdx >> (kvSizeBits - 5)`), shared by slots.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    kvs: BTreeMap<u64, Arc<[u8]>>,
}

impl Overlay {
    pub fn new() -> Self {
        Overlay::default()
    }

    /// Sets KV `kv_idx`'s current (encoded) bytes, replacing any earlier ones. The length is
    /// checked against the shard when a slot uses the overlay.
    pub fn insert(&mut self, kv_idx: u64, bytes: impl Into<Arc<[u8]>>) {
        self.kvs.insert(kv_idx, bytes.into());
    }

    /// Drops KV `kv_idx` (its bytes are on disk now); whether it was there.
    pub fn remove(&mut self, kv_idx: u64) -> bool {
        self.kvs.remove(&kv_idx).is_some()
    }

    pub fn clear(&mut self) {
        self.kvs.clear();
    }

    pub fn len(&self) -> usize {
        self.kvs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kvs.is_empty()
    }

    /// The KV indices held, ascending.
    pub fn kv_indices(&self) -> impl Iterator<Item = u64> + '_ {
        self.kvs.keys().copied()
    }

    /// The part of the overlay inside the shard of `geometry`: KVs of other shards are not this
    /// shard's business (es-node's cache holds every shard the node stores). A KV whose length
    /// is not the shard's KV size is an error naming it.
    pub fn for_shard(&self, geometry: &SampleGeometry) -> Result<ShardOverlay, MineError> {
        let kv_shift = geometry.kv_size_bits - SAMPLE_SIZE_BITS;
        let first_kv = geometry.shard_idx << geometry.kv_entries_bits;
        let kv_size = 1usize << geometry.kv_size_bits;
        let mut view = ShardOverlay {
            kv_shift,
            ..ShardOverlay::default()
        };
        for (&kv_idx, bytes) in self
            .kvs
            .range(first_kv..first_kv + (1 << geometry.kv_entries_bits))
        {
            if bytes.len() != kv_size {
                return Err(MineError::config(
                    pora_core::Input::Overlay,
                    format!("KV {kv_idx}: {} bytes", bytes.len()),
                    format!("shard {} has {kv_size}-byte KVs", geometry.shard_idx),
                ));
            }
            view.kvs.push(kv_idx);
            view.bytes.push(Arc::clone(bytes));
        }
        Ok(view)
    }
}

/// One shard's overlay KVs for one slot, flattened for the lookup per read.
#[derive(Clone, Debug, Default)]
pub struct ShardOverlay {
    kv_shift: u32,
    /// Ascending global KV indices.
    kvs: Vec<u64>,
    /// `bytes[i]` holds KV `kvs[i]`, exactly the shard's KV size.
    bytes: Vec<Arc<[u8]>>,
}

impl ShardOverlay {
    pub fn is_empty(&self) -> bool {
        self.kvs.is_empty()
    }

    /// How many KVs of the shard come from memory.
    pub fn len(&self) -> usize {
        self.kvs.len()
    }

    /// The 32 bytes of `sample_idx` when its KV is in the overlay.
    #[inline]
    pub fn sample(&self, sample_idx: u64) -> Option<[u8; 32]> {
        if self.kvs.is_empty() {
            return None;
        }
        let kv = sample_idx >> self.kv_shift;
        let at = self.kvs.binary_search(&kv).ok()?;
        let in_kv = (sample_idx & ((1u64 << self.kv_shift) - 1)) as usize * 32;
        // The length was checked in `for_shard`, so the slice is in bounds.
        self.bytes[at][in_kv..in_kv + 32].try_into().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(shard_idx: u64) -> SampleGeometry {
        SampleGeometry {
            shard_idx,
            kv_entries_bits: 2,
            kv_size_bits: 7,
        }
    }

    fn kv(fill: u8) -> Vec<u8> {
        (0..128u8).map(|i| i ^ fill).collect()
    }

    #[test]
    fn samples_come_from_the_kvs_of_the_shard() {
        let mut overlay = Overlay::new();
        overlay.insert(5, kv(0xa0));
        overlay.insert(1, kv(0x10)); // shard 0: not shard 1's
        let view = overlay.for_shard(&geometry(1)).unwrap();
        assert_eq!(view.len(), 1);
        // KV 5 holds samples 20..24 (4 samples of 32 bytes per 128-byte KV).
        let want: [u8; 32] = kv(0xa0)[64..96].try_into().unwrap();
        assert_eq!(view.sample(22), Some(want));
        assert_eq!(view.sample(19), None);
        assert_eq!(view.sample(24), None);
        assert!(overlay.remove(5));
        assert!(overlay.for_shard(&geometry(1)).unwrap().is_empty());
    }

    #[test]
    fn a_kv_of_the_wrong_size_is_refused_by_name() {
        let mut overlay = Overlay::new();
        overlay.insert(4, vec![0u8; 100]);
        let err = overlay.for_shard(&geometry(1)).unwrap_err().to_string();
        assert!(err.contains("overlay KV 4: 100 bytes"), "{err}");
        assert!(
            overlay.for_shard(&geometry(0)).is_ok(),
            "KV 4 is not shard 0's"
        );
    }
}
