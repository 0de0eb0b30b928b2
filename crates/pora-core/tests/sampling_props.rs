//! Property tests of the sampling math against deliberately simple references written here:
//! 256-bit modulo instead of bit masking, u128 products instead of shifts, and a byte-by-byte
//! keccak message instead of the fixed-layout buffers.

use pora_core::keccak::keccak256;
use pora_core::{hash0, hash_step, Address, SampleGeometry, H256, U256};
use proptest::prelude::*;

/// es-node: `parent.Uint64() % (1 << rowBits) + shardIdx << rowBits`, here on U256.
fn reference_sample_idx(hash: &[u8; 32], shard: u64, row_bits: u32) -> u64 {
    let modulus = U256::from(1u64) << row_bits as usize;
    let low = U256::from_be_bytes(*hash) % modulus;
    let global = low + (U256::from(shard) << row_bits as usize);
    global.to::<u64>()
}

fn geometry() -> impl Strategy<Value = SampleGeometry> {
    (0u32..=28, 5u32..=20).prop_flat_map(|(eb, kb)| {
        let shard_bits = eb + kb;
        let max_shard = (1u128 << (64 - shard_bits)) - 1;
        (0..=max_shard as u64).prop_map(move |shard| SampleGeometry::new(shard, eb, kb).unwrap())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn sample_idx_matches_u256_modulo(hash in any::<[u8; 32]>(), g in geometry()) {
        prop_assert_eq!(g.sample_idx(&hash), reference_sample_idx(&hash, g.shard_idx, g.row_bits()));
    }

    #[test]
    fn kv_split_recomposes(hash in any::<[u8; 32]>(), g in geometry()) {
        let s = g.sample_idx(&hash);
        let per_kv = 1u128 << (g.kv_size_bits - 5);
        let (kv, inner) = (g.kv_idx(s) as u128, g.sample_idx_in_kv(s) as u128);
        prop_assert!(inner < per_kv);
        prop_assert_eq!(kv * per_kv + inner, s as u128);
        // The byte address of the sample lies inside the shard's byte range.
        let shard_bytes = 1u128 << (g.kv_entries_bits + g.kv_size_bits);
        let byte = s as u128 * 32;
        prop_assert!(byte >= g.shard_idx as u128 * shard_bytes && byte < (g.shard_idx as u128 + 1) * shard_bytes);
    }

    #[test]
    fn hashes_match_plain_concatenation(miner in any::<[u8; 20]>(), randao in any::<[u8; 32]>(), nonce in any::<u64>(), sample in any::<[u8; 32]>()) {
        let mut msg = vec![0u8; 12];
        msg.extend_from_slice(&miner);
        msg.extend_from_slice(&randao);
        msg.extend_from_slice(&U256::from(nonce).to_be_bytes::<32>());
        let h0 = hash0(&Address(miner), &H256(randao), nonce);
        prop_assert_eq!(h0, keccak256(&[&msg]));
        prop_assert_eq!(hash_step(&h0, &sample), keccak256(&[&h0, &sample]));
    }
}

#[test]
fn shards_past_2_pow_32_and_2_pow_40_bytes() {
    // 1 TiB shards (kvEntriesBits 23, kvSizeBits 17): shard 5 starts at byte 5 * 2^40.
    for (shard, eb) in [(5u64, 23u32), (1 << 20, 13), ((1 << 34) - 1, 13)] {
        let g = SampleGeometry::new(shard, eb, 17).unwrap();
        let hash = [0xffu8; 32];
        let s = g.sample_idx(&hash);
        assert_eq!(s, reference_sample_idx(&hash, shard, g.row_bits()));
        let byte = s as u128 * 32;
        assert!(byte > 1u128 << 40, "shard {shard}: byte {byte:#x}");
        assert_eq!(
            byte + 32,
            (shard as u128 + 1) << (eb + 17),
            "last sample of the shard"
        );
    }
    // One past the addressable range is refused instead of wrapping.
    assert!(SampleGeometry::new(1 << 34, 13, 17).is_err());
}
