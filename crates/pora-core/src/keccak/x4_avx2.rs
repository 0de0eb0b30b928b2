//! Four Keccak-256 one-block hashes at once with AVX2: one 256-bit register holds the same lane
//! of four states, so each of the shared round function's operations advances four permutations.
//! AVX2 has no rotate or three-input logic, so a rotation is two shifts and an OR, and χ is
//! ANDNOT then XOR.

use core::arch::x86_64::*;

/// Messages hashed per call.
pub(super) const WAY: usize = 4;

/// The state's 25 vectors on a 64-byte boundary. The round function keeps more vectors live
/// than AVX2 has registers, so LLVM spills to the stack with unaligned 32-byte moves at offsets
/// from `rsp`, which the ABI aligns to 16 only (System V on Linux and macOS, Win64 alike):
/// entered with `rsp` at 16 mod 32 (it depends on the caller), half the spills straddle a cache
/// line, and the permutation took ~245 ns per message inside `pora mine` against ~150 ns in
/// `examples/keccak-batch`. An over-aligned local makes the function realign its frame, so
/// every spill slot is aligned whoever calls it, on every OS: `pora mine` on a cached shard
/// +22–47% nonces/s (docs/BENCHMARKS.md §17).
#[repr(C, align(64))]
struct AlignedState([__m256i; 25]);

/// Keccak-256 of four padded blocks (see `keccak256_padded_block`), `out[i]` for `blocks[i]`.
#[target_feature(enable = "avx2")]
pub(super) fn keccak256_padded_x4(blocks: &[[u64; 17]; WAY], out: &mut [[u64; 4]; WAY]) {
    // Built lane by lane (the capacity lanes 17..25 zero) rather than zeroed and then filled:
    // the escaping frame below would otherwise cost an 800-byte memset per call.
    let mut frame = AlignedState(core::array::from_fn(|word| match word {
        0..17 => {
            let lane = |m: usize| blocks[m][word] as i64;
            _mm256_setr_epi64x(lane(0), lane(1), lane(2), lane(3))
        }
        _ => _mm256_setzero_si256(),
    }));
    // Taking the frame's address keeps it (and so the realigned stack) from being optimised
    // into registers; it costs 25 stores per permutation.
    core::hint::black_box(&mut frame);
    keccak_f1600_rounds!(frame.0, xor5: xor5, xor: xor, rol: rol, chi: chi, splat: splat);
    for (word, lanes) in frame.0.iter().enumerate().take(4) {
        out[0][word] = _mm256_extract_epi64::<0>(*lanes) as u64;
        out[1][word] = _mm256_extract_epi64::<1>(*lanes) as u64;
        out[2][word] = _mm256_extract_epi64::<2>(*lanes) as u64;
        out[3][word] = _mm256_extract_epi64::<3>(*lanes) as u64;
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn xor(a: __m256i, b: __m256i) -> __m256i {
    _mm256_xor_si256(a, b)
}

#[target_feature(enable = "avx2")]
#[inline]
fn xor5(a: __m256i, b: __m256i, c: __m256i, d: __m256i, e: __m256i) -> __m256i {
    xor(xor(xor(a, b), xor(c, d)), e)
}

#[target_feature(enable = "avx2")]
#[inline]
fn rol(a: __m256i, bits: u32) -> __m256i {
    // Per-lane shift counts of 64 give 0, so `bits == 0` needs no special case.
    let left = _mm256_sllv_epi64(a, _mm256_set1_epi64x(i64::from(bits)));
    let right = _mm256_srlv_epi64(a, _mm256_set1_epi64x(64 - i64::from(bits)));
    _mm256_or_si256(left, right)
}

#[target_feature(enable = "avx2")]
#[inline]
fn chi(a: __m256i, b: __m256i, c: __m256i) -> __m256i {
    // `_mm256_andnot_si256(b, c)` is `!b & c`.
    xor(a, _mm256_andnot_si256(b, c))
}

#[target_feature(enable = "avx2")]
#[inline]
fn splat(word: u64) -> __m256i {
    _mm256_set1_epi64x(word as i64)
}
