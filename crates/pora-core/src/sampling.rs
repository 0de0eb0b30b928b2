//! es-node's "hashimoto": hash0, the sample index of a hash, the hash chain over
//! `randomChecks` dependent samples, and the kvIdx / sample-in-KV split (docs/spec/algorithm.md, "One nonce").
//!
//! The mining engine drives [`hash0`], [`SampleGeometry::sample_idx`] and [`hash_step`] from its
//! own state machine; [`hashimoto`] is the plain single-nonce path used by `pora hash` and to
//! re-verify every reported result.

use crate::error::{Error, Result};
use crate::hex::{Address, H256};
use crate::keccak::keccak256;
use serde::Serialize;

/// log2 of the sample size.
pub const SAMPLE_SIZE_BITS: u32 = 5;
/// Bytes per sample.
pub const SAMPLE_SIZE: u64 = 1 << SAMPLE_SIZE_BITS;

/// Where a shard's samples live in the global sample space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleGeometry {
    pub shard_idx: u64,
    pub kv_entries_bits: u32,
    pub kv_size_bits: u32,
}

impl SampleGeometry {
    /// Validates that the shard's whole global byte range fits in 64 bits (es-node computes
    /// sample indices as uint64) and that the sizes are meaningful.
    pub fn new(shard_idx: u64, kv_entries_bits: u32, kv_size_bits: u32) -> Result<Self> {
        if !(SAMPLE_SIZE_BITS..=40).contains(&kv_size_bits) {
            return Err(Error::bad_value(
                "kvSizeBits",
                kv_size_bits.to_string(),
                "must be between 5 and 40",
            ));
        }
        let shard_bits = kv_entries_bits as u64 + kv_size_bits as u64;
        if shard_bits >= 64 {
            return Err(Error::bad_value(
                "kvEntriesBits",
                kv_entries_bits.to_string(),
                format!("a shard of 2^{shard_bits} bytes does not fit a 64-bit address space"),
            ));
        }
        // The last byte of the shard, (shard+1) << shard_bits, must be addressable.
        if (shard_idx as u128 + 1) << shard_bits > 1u128 << 64 {
            return Err(Error::bad_value(
                "shard index",
                shard_idx.to_string(),
                format!("shard byte range exceeds 2^64 with kvEntriesBits={kv_entries_bits}, kvSizeBits={kv_size_bits}"),
            ));
        }
        Ok(SampleGeometry {
            shard_idx,
            kv_entries_bits,
            kv_size_bits,
        })
    }

    /// `kvEntriesBits + kvSizeBits - 5`: log2 of the samples in a shard.
    #[inline]
    pub fn row_bits(&self) -> u32 {
        self.kv_entries_bits + self.kv_size_bits - SAMPLE_SIZE_BITS
    }

    /// Samples in the shard.
    pub fn samples_per_shard(&self) -> u64 {
        1u64 << self.row_bits()
    }

    /// Global index of the shard's first sample.
    #[inline]
    pub fn first_sample(&self) -> u64 {
        self.shard_idx << self.row_bits()
    }

    /// `uint256(hash) mod 2^rowBits + (shardIdx << rowBits)`. Only the low 64 bits of the hash
    /// matter because rowBits < 64.
    #[inline]
    pub fn sample_idx(&self, hash: &[u8; 32]) -> u64 {
        let mut low = [0u8; 8];
        low.copy_from_slice(&hash[24..32]);
        let mask = (1u64 << self.row_bits()) - 1;
        (u64::from_be_bytes(low) & mask) + self.first_sample()
    }

    /// KV holding a sample: `sampleIdx >> (kvSizeBits - 5)`.
    #[inline]
    pub fn kv_idx(&self, sample_idx: u64) -> u64 {
        sample_idx >> (self.kv_size_bits - SAMPLE_SIZE_BITS)
    }

    /// Index of a sample inside its KV.
    #[inline]
    pub fn sample_idx_in_kv(&self, sample_idx: u64) -> u64 {
        sample_idx & ((1u64 << (self.kv_size_bits - SAMPLE_SIZE_BITS)) - 1)
    }
}

/// `keccak256(pad32(miner) || randao || be256(nonce))`.
#[inline]
pub fn hash0(miner: &Address, randao: &H256, nonce: u64) -> [u8; 32] {
    let mut msg = [0u8; 96];
    msg[12..32].copy_from_slice(&miner.0);
    msg[32..64].copy_from_slice(&randao.0);
    msg[88..96].copy_from_slice(&nonce.to_be_bytes());
    keccak256(&[&msg])
}

/// One chain step: `keccak256(hash || sample)`.
#[inline]
pub fn hash_step(hash: &[u8; 32], sample: &[u8; 32]) -> [u8; 32] {
    let mut msg = [0u8; 64];
    msg[..32].copy_from_slice(hash);
    msg[32..].copy_from_slice(sample);
    keccak256(&[&msg])
}

/// Everything a proof needs for one nonce, and what `pora hash --json` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NonceProof {
    pub nonce: u64,
    pub hash0: H256,
    pub sample_idxs: Vec<u64>,
    pub kv_idxs: Vec<u64>,
    pub sample_idxs_in_kv: Vec<u64>,
    pub encoded_samples: Vec<H256>,
    pub hash1: H256,
}

/// Computes one nonce, reading each sample through `read_sample(sampleIdx)`.
pub fn hashimoto<E>(
    geom: &SampleGeometry,
    random_checks: u32,
    miner: &Address,
    randao: &H256,
    nonce: u64,
    mut read_sample: impl FnMut(u64) -> std::result::Result<[u8; 32], E>,
) -> std::result::Result<NonceProof, E> {
    let h0 = hash0(miner, randao, nonce);
    let mut proof = NonceProof {
        nonce,
        hash0: H256(h0),
        sample_idxs: Vec::with_capacity(random_checks as usize),
        kv_idxs: Vec::with_capacity(random_checks as usize),
        sample_idxs_in_kv: Vec::with_capacity(random_checks as usize),
        encoded_samples: Vec::with_capacity(random_checks as usize),
        hash1: H256(h0),
    };
    let mut hash = h0;
    for _ in 0..random_checks {
        let idx = geom.sample_idx(&hash);
        let sample = read_sample(idx)?;
        proof.sample_idxs.push(idx);
        proof.kv_idxs.push(geom.kv_idx(idx));
        proof.sample_idxs_in_kv.push(geom.sample_idx_in_kv(idx));
        proof.encoded_samples.push(H256(sample));
        hash = hash_step(&hash, &sample);
    }
    proof.hash1 = H256(hash);
    Ok(proof)
}
