//! The two Keccak-256 message shapes of the hot path computed straight on the 25-lane
//! Keccak-f\[1600\] block (`pora_core::keccak::keccak256_padded_block`), bit-identical to `pora_core::hash0` / `pora_core::hash_step`.
//!
//! Both messages (96 and 64 bytes) fit one 136-byte rate block, so each hash is: load the
//! message lanes, apply Ethereum's Keccak padding (0x01 after the message, 0x80 in the last rate
//! byte), one permutation, take lanes 0..4. Skipping the generic hasher's buffering saves about
//! a fifth of the time per nonce (measured in `examples/hot_path.rs`). The chain keeps its hash
//! as four little-endian lanes so nothing is converted between steps.

#[cfg(test)]
use pora_core::keccak::keccak256_padded_block;
use pora_core::{Address, H256};

/// A hash as Keccak state lanes: byte `i` of the hash is byte `i % 8` (little-endian) of lane
/// `i / 8`.
pub type Lanes = [u64; 4];

/// Byte 0 of lane 16 is the last byte of the 136-byte rate: the final padding bit.
const PAD_LAST: u64 = 0x80 << 56;

/// The constant first 88 bytes of hash0's message for one (miner, randao): eleven lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hash0Prefix([u64; 11]);

impl Hash0Prefix {
    /// `pad32(miner) || randao || 24 zero bytes` (the high bytes of be256(nonce)).
    pub fn new(miner: &Address, randao: &H256) -> Self {
        let mut msg = [0u8; 88];
        msg[12..32].copy_from_slice(&miner.0);
        msg[32..64].copy_from_slice(&randao.0);
        let mut lanes = [0u64; 11];
        for (lane, bytes) in lanes.iter_mut().zip(msg.chunks_exact(8)) {
            *lane = u64::from_le_bytes(bytes.try_into().expect("8-byte chunk"));
        }
        Hash0Prefix(lanes)
    }

    /// `keccak256(pad32(miner) || randao || be256(nonce))`: the tests' check of the block.
    #[cfg(test)]
    pub fn hash0(&self, nonce: u64) -> Lanes {
        keccak256_padded_block(&self.hash0_block(nonce))
    }

    /// hash0's message as one padded rate block, for a batched permutation.
    #[inline]
    pub fn hash0_block(&self, nonce: u64) -> Block {
        let mut block = [0u64; 17];
        block[..11].copy_from_slice(&self.0);
        // be256(nonce)'s last 8 bytes, loaded as a little-endian lane.
        block[11] = u64::from_le_bytes(nonce.to_be_bytes());
        block[12] = 0x01;
        block[16] = PAD_LAST;
        block
    }
}

/// One padded 136-byte Keccak rate block as 17 little-endian lanes.
pub type Block = [u64; 17];

/// `keccak256(hash || sample)`: the tests' check of the block.
#[cfg(test)]
pub fn hash_step(hash: &Lanes, sample: &[u8; 32]) -> Lanes {
    keccak256_padded_block(&step_block(hash, sample))
}

/// `hash || sample` as one padded rate block, for a batched permutation.
#[inline]
pub fn step_block(hash: &Lanes, sample: &[u8; 32]) -> Block {
    let mut block = [0u64; 17];
    block[..4].copy_from_slice(hash);
    for (lane, bytes) in block[4..8].iter_mut().zip(sample.chunks_exact(8)) {
        *lane = u64::from_le_bytes(bytes.try_into().expect("8-byte chunk"));
    }
    block[8] = 0x01;
    block[16] = PAD_LAST;
    block
}

/// The low 64 bits of the hash read as a big-endian 256-bit integer (bytes 24..32), which is
/// all `sampleIdx` needs since rowBits < 64.
#[inline]
pub fn low_u64_be(hash: &Lanes) -> u64 {
    u64::from_be_bytes(hash[3].to_le_bytes())
}

/// The hash as its 32 bytes.
#[inline]
pub fn to_bytes(hash: &Lanes) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (bytes, lane) in out.chunks_exact_mut(8).zip(hash) {
        bytes.copy_from_slice(&lane.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn lanes_match_pora_core(miner in any::<[u8; 20]>(), randao in any::<[u8; 32]>(), nonce in any::<u64>(), sample in any::<[u8; 32]>()) {
            let (miner, randao) = (Address(miner), H256(randao));
            let h0 = Hash0Prefix::new(&miner, &randao).hash0(nonce);
            let want0 = pora_core::hash0(&miner, &randao, nonce);
            prop_assert_eq!(to_bytes(&h0), want0);
            let h1 = hash_step(&h0, &sample);
            prop_assert_eq!(to_bytes(&h1), pora_core::hash_step(&want0, &sample));
            let mut low = [0u8; 8];
            low.copy_from_slice(&want0[24..]);
            prop_assert_eq!(low_u64_be(&h0), u64::from_be_bytes(low));
        }
    }
}
