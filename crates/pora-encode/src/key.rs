//! The encode key of one KV: `keccak256(commit24 ‖ 0^8 ‖ 0^12 ‖ miner20 ‖ uint256_be(kvIdx))`.
//! The 32 bytes are later read as a big-endian integer and reduced mod r by the mask code.
//!
//! Layer 0 of the crate (the base); it imports only from this layer or below.

use crate::error::{Error, Result};
use sha3::{Digest, Keccak256};

/// Bytes of a commitment that enter the key (the meta entry's commit field).
pub const COMMIT_LEN: usize = 24;

/// The raw 32-byte encode key (not yet reduced mod r).
pub type EncodeKey = [u8; 32];

/// The encode key of KV `kv_idx` for `miner`. `commit` is at most 24 bytes and is left-aligned
/// (zero-padded on the right), as es-node copies it into the first 24 bytes; an empty KV has an
/// all-zero commit.
pub fn encode_key(commit: &[u8], miner: &[u8; 20], kv_idx: u64) -> Result<EncodeKey> {
    if commit.len() > COMMIT_LEN {
        return Err(Error::CommitTooLong {
            len: commit.len(),
            max: COMMIT_LEN,
        });
    }
    let mut preimage = [0u8; 96];
    preimage[..commit.len()].copy_from_slice(commit);
    preimage[44..64].copy_from_slice(miner);
    preimage[88..96].copy_from_slice(&kv_idx.to_be_bytes());
    Ok(Keccak256::digest(preimage).into())
}
