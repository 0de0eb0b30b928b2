//! Ethereum Keccak-256 (original padding, not NIST SHA3-256) for the two message shapes of the
//! hot path: hash0 (96 bytes) and each chain step (64 bytes). Both fit in one 136-byte rate block,
//! so each is exactly one Keccak-f\[1600\] permutation.
//!
//! The implementation was chosen by measurement (`cargo run --release -p pora-core --example
//! keccak-candidates`, results in docs/BENCHMARKS.md): keccak-asm (cryptogams assembly) where it
//! builds, RustCrypto's sha3 elsewhere; tiny-keccak was slowest. Tests cross-check all three.
//!
//! Many such messages at once go through [`keccak256_padded_blocks`] (module `batch`), which
//! runs 8 or 4 permutations side by side with AVX-512F or AVX2 where the CPU has them. The
//! vector kernels are `core::arch` intrinsics with no OS in them, so every x86_64 build (Linux,
//! Windows, macOS) has them, chosen at run time by CPUID; other CPUs use the scalar function.
//! What is Linux-only is the scalar function's assembly (keccak-asm's build assembles
//! cryptogams perlasm, known to build there): elsewhere the scalar function is `keccak::f1600`.

// Only the vector kernels expand the shared round function; its tests run everywhere.
#[cfg(any(target_arch = "x86_64", test))]
#[macro_use]
mod rounds;
mod batch;
#[cfg(target_arch = "x86_64")]
mod x4_avx2;
#[cfg(target_arch = "x86_64")]
mod x8_avx512;

pub use batch::{
    keccak256_padded_blocks, keccak256_padded_blocks_with, keccak_batch_kernel, BatchKernel,
    KECCAK_KERNEL_ENV,
};

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

/// Keccak-256 of one message that fits a single 136-byte rate block, given as the block's 17
/// little-endian lanes with Ethereum's padding already applied (0x01 after the message, 0x80 in
/// the block's last byte). That is one Keccak-f\[1600\] permutation of a zero state; the result is
/// the hash as four little-endian lanes. The mining hot path lays its 96- and 64-byte messages
/// out this way, skipping a generic hasher's buffering.
#[inline]
pub fn keccak256_padded_block(block: &[u64; 17]) -> [u64; 4] {
    let mut state = [0u64; 25];
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        // Absorbing the block into a zero state is exactly "XOR it in, permute once", done by
        // the cryptogams assembly, the fastest permutation measured here.
        let mut bytes = [0u8; 136];
        for (chunk, lane) in bytes.chunks_exact_mut(8).zip(block) {
            chunk.copy_from_slice(&lane.to_le_bytes());
        }
        sha3_asm::sha3_absorb(&mut state, &bytes, 136);
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        state[..17].copy_from_slice(block);
        keccak::f1600(&mut state);
    }
    [state[0], state[1], state[2], state[3]]
}

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
    fn padded_block_equals_the_hasher_for_every_single_block_length() {
        for len in 0..136usize {
            let msg: Vec<u8> = (0..len).map(|i| (i * 31 + len) as u8).collect();
            let mut bytes = [0u8; 136];
            bytes[..len].copy_from_slice(&msg);
            bytes[len] ^= 0x01;
            bytes[135] ^= 0x80;
            let mut lanes = [0u64; 17];
            for (lane, chunk) in lanes.iter_mut().zip(bytes.chunks_exact(8)) {
                *lane = u64::from_le_bytes(chunk.try_into().unwrap());
            }
            let out = keccak256_padded_block(&lanes);
            let mut got = [0u8; 32];
            for (chunk, lane) in got.chunks_exact_mut(8).zip(out) {
                chunk.copy_from_slice(&lane.to_le_bytes());
            }
            assert_eq!(got, keccak256(&[&msg]), "length {len}");
        }
    }

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
