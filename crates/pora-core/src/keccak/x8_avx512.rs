//! Eight Keccak-256 one-block hashes at once with AVX-512F: one 512-bit register holds the same
//! lane of eight states. AVX-512F rotates in one instruction (`vprolq`) and evaluates any
//! three-input boolean function in one (`vpternlogq`), which serves θ's five-way XOR and χ.

use core::arch::x86_64::*;

/// Messages hashed per call.
pub(super) const WAY: usize = 8;

/// `vpternlogq` truth tables over inputs (a, b, c) = (0xF0, 0xCC, 0xAA).
const XOR3: i32 = 0x96; // a ^ b ^ c
const CHI: i32 = 0xD2; // a ^ (!b & c) = 0xF0 ^ (0x33 & 0xAA)

/// Keccak-256 of eight padded blocks (see `keccak256_padded_block`), `out[i]` for `blocks[i]`.
#[target_feature(enable = "avx512f")]
pub(super) fn keccak256_padded_x8(blocks: &[[u64; 17]; WAY], out: &mut [[u64; 4]; WAY]) {
    let mut state = [_mm512_setzero_si512(); 25];
    for (word, lanes) in state.iter_mut().enumerate().take(17) {
        let lane = |m: usize| blocks[m][word] as i64;
        *lanes = _mm512_setr_epi64(
            lane(0),
            lane(1),
            lane(2),
            lane(3),
            lane(4),
            lane(5),
            lane(6),
            lane(7),
        );
    }
    keccak_f1600_rounds!(state, xor5: xor5, xor: xor, rol: rol, chi: chi, splat: splat);
    for (word, lanes) in state.iter().enumerate().take(4) {
        let low = _mm512_castsi512_si256(*lanes);
        let high = _mm512_extracti64x4_epi64::<1>(*lanes);
        for (half, messages) in [(low, 0..4), (high, 4..8)] {
            let words = [
                _mm256_extract_epi64::<0>(half),
                _mm256_extract_epi64::<1>(half),
                _mm256_extract_epi64::<2>(half),
                _mm256_extract_epi64::<3>(half),
            ];
            for (message, value) in messages.zip(words) {
                out[message][word] = value as u64;
            }
        }
    }
}

#[target_feature(enable = "avx512f")]
#[inline]
fn xor(a: __m512i, b: __m512i) -> __m512i {
    _mm512_xor_si512(a, b)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn xor5(a: __m512i, b: __m512i, c: __m512i, d: __m512i, e: __m512i) -> __m512i {
    let abc = _mm512_ternarylogic_epi64::<XOR3>(a, b, c);
    _mm512_ternarylogic_epi64::<XOR3>(abc, d, e)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn rol(a: __m512i, bits: u32) -> __m512i {
    _mm512_rolv_epi64(a, _mm512_set1_epi64(i64::from(bits)))
}

#[target_feature(enable = "avx512f")]
#[inline]
fn chi(a: __m512i, b: __m512i, c: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<CHI>(a, b, c)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn splat(word: u64) -> __m512i {
    _mm512_set1_epi64(word as i64)
}

#[cfg(test)]
mod tests {
    //! The truth tables checked against Intel's definition of `vpternlogq`, on any CPU (the
    //! kernel itself runs in `batch`'s tests where AVX-512F is present).
    use super::{CHI, XOR3};

    /// `vpternlogq` on words: result bit j is bit `a_j b_j c_j` (a the high bit) of `table`.
    fn ternary_logic(table: i32, a: u64, b: u64, c: u64) -> u64 {
        (0..64).fold(0, |result, j| {
            let index = ((a >> j) & 1) << 2 | ((b >> j) & 1) << 1 | ((c >> j) & 1);
            result | (((table as u64) >> index) & 1) << j
        })
    }

    #[test]
    fn truth_tables_compute_the_functions_they_name() {
        let words = [
            0,
            u64::MAX,
            0x0123_4567_89AB_CDEF,
            0xF0F0_0FF0_3C3C_A5A5,
            1 << 63,
        ];
        for a in words {
            for b in words {
                for c in words {
                    assert_eq!(ternary_logic(XOR3, a, b, c), a ^ b ^ c);
                    assert_eq!(ternary_logic(CHI, a, b, c), a ^ (!b & c));
                }
            }
        }
    }
}
