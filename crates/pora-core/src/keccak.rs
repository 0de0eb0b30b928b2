//! Ethereum Keccak-256 (original padding, not NIST SHA3-256) for the two message shapes of the
//! hot path: hash0 (96 bytes) and each chain step (64 bytes). Both fit in one 136-byte rate block,
//! so each is exactly one Keccak-f[1600] permutation.
//!
//! tiny-keccak was chosen over RustCrypto's sha3 by measurement (`cargo run --release -p
//! pora-core --example keccak-candidates`, results in docs/BENCHMARKS.md).

use tiny_keccak::{Hasher, Keccak};

/// Keccak-256 of the concatenation of `parts`.
#[inline]
pub fn keccak256(parts: &[&[u8]]) -> [u8; 32] {
    let mut k = Keccak::v256();
    for p in parts {
        k.update(p);
    }
    let mut out = [0u8; 32];
    k.finalize(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_is_ethereum_keccak_not_sha3() {
        // keccak256("") as used everywhere in Ethereum.
        let h = keccak256(&[]);
        assert_eq!(
            crate::hex::to_hex(&h),
            "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
        );
    }
}
