//! What a worker needs to know about one shard, flattened for the hot path: the sample-index
//! mask and base, and where each of the shard's files starts in the global byte space and in the
//! factory's file list (the files of all shards, in shard order: [`crate::Miner::paths`]).

use crate::lanes::{low_u64_be, Hash0Prefix, Lanes};
use pora_core::{Address, ShardSet, H256, HEADER_SIZE, SAMPLE_SIZE_BITS};

/// One shard, ready for the chain state machine.
#[derive(Clone, Debug)]
pub struct ShardPlan {
    pub shard_idx: u64,
    pub miner: Address,
    row_mask: u64,
    first_sample: u64,
    /// Global start byte of each file, ascending (ShardSet keeps them sorted).
    file_starts: Vec<u64>,
    /// Index of the shard's first file in the factory's file list.
    file_base: u32,
}

/// Where one read goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadTarget {
    pub sample_idx: u64,
    pub file: u32,
    pub offset: u64,
}

impl ShardPlan {
    /// Plans `shard`, whose files start at `file_base` in the factory's list.
    pub fn new(shard: &ShardSet, file_base: u32, miner: Option<Address>) -> Self {
        let geometry = shard.geometry;
        ShardPlan {
            shard_idx: geometry.shard_idx,
            miner: miner.unwrap_or(shard.miner),
            row_mask: (1u64 << geometry.row_bits()) - 1,
            first_sample: geometry.first_sample(),
            file_starts: shard.files.iter().map(|f| f.header.start_byte()).collect(),
            file_base,
        }
    }

    /// hash0's constant lanes for this shard's miner and `randao`.
    pub fn prefix(&self, randao: &H256) -> Hash0Prefix {
        Hash0Prefix::new(&self.miner, randao)
    }

    /// The read for the sample `hash` points at: `uint256(hash) mod 2^rowBits + (shardIdx <<
    /// rowBits)`, then file and offset exactly as `ShardSet::locate` maps it. The index is in the
    /// shard by construction, and the shard set was validated to cover it.
    #[inline]
    pub fn target(&self, hash: &Lanes) -> ReadTarget {
        let sample_idx = (low_u64_be(hash) & self.row_mask) + self.first_sample;
        let byte = sample_idx << SAMPLE_SIZE_BITS;
        let file = if self.file_starts.len() == 1 {
            0
        } else {
            self.file_starts.partition_point(|&s| s <= byte) - 1
        };
        ReadTarget {
            sample_idx,
            file: self.file_base + file as u32,
            offset: HEADER_SIZE + (byte - self.file_starts[file]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pora_core::testing::data_file as file;

    #[test]
    fn target_agrees_with_shard_set_locate() {
        let shard = ShardSet::from_files(
            vec![file("b", 8192 + 4096, 4096), file("a", 8192, 4096)],
            None,
        )
        .unwrap();
        let plan = ShardPlan::new(&shard, 5, None);
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let t = plan.target(&[0, 0, 0, u64::from_le_bytes(x.to_be_bytes())]);
            let want_idx =
                (x & ((1 << shard.geometry.row_bits()) - 1)) + shard.geometry.first_sample();
            let loc = shard.locate(want_idx).unwrap();
            assert_eq!(
                t,
                ReadTarget {
                    sample_idx: want_idx,
                    file: 5 + loc.file as u32,
                    offset: loc.offset
                }
            );
        }
    }
}
