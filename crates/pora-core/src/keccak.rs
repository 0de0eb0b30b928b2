//! Ethereum Keccak-256 (original padding, not NIST SHA3-256) for the two message shapes of the
//! hot path: hash0 (96 bytes) and each chain step (64 bytes). Both fit in one 136-byte rate block,
//! so each is exactly one Keccak-f[1600] permutation.
//!
//! The implementation was chosen by measurement (`cargo run --release -p pora-core --example
//! keccak-candidates`, results in docs/BENCHMARKS.md): keccak-asm (cryptogams assembly) where it
//! builds, RustCrypto's sha3 elsewhere; tiny-keccak was slowest. Tests cross-check all three.

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
use keccak_asm::{Digest, Keccak256};
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
use sha3::{Digest, Keccak256};

/// Keccak-256 of the concatenation of `parts`.
#[inline]
pub fn keccak256(parts: &[&[u8]]) -> [u8; 32] {
    let mut k = Keccak256::new();
    for p in parts {
        k.update(p);
    }
    k.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_tiny_keccak_and_sha3_on_many_lengths() {
        use tiny_keccak::Hasher;
        let mut msg = Vec::new();
        for len in 0..300u32 {
            msg.push((len.wrapping_mul(2654435761) >> 24) as u8);
            let mut t = tiny_keccak::Keccak::v256();
            t.update(&msg);
            let mut want = [0u8; 32];
            t.finalize(&mut want);
            assert_eq!(keccak256(&[&msg]), want, "length {len}");
            let (a, b) = msg.split_at(len as usize / 3);
            assert_eq!(keccak256(&[a, b]), want, "split length {len}");
            assert_eq!(
                <sha3::Keccak256 as sha3::Digest>::digest(&msg)[..],
                want[..]
            );
        }
    }

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
