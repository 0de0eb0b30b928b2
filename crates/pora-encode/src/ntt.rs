//! The 4096-point radix-2 NTT over Fr on the fast field: natural-order coefficients in,
//! natural-order evaluations `P(ω^j)` out. Iterative Cooley–Tukey: bit-reverse the input, then
//! log2(4096) = 12 stages of butterflies with twiddles from one table of ω^0..ω^2047. It is a few
//! percent of a mask's cost on the scalar kernels, so it stays simple; the IFMA and AVX-512F
//! kernels run the last nine stages on vectors (`crate::ntt_ifma`, `crate::ntt_avx512f`), where
//! the NTT would otherwise be ~15% (IFMA).
//!
//! Layer 3 of the crate (the NTT); it imports only from this layer or below.

use crate::arith::Arith;
use crate::field::Fr;
use crate::{reference, WORDS_PER_KV};
use ark_ff::PrimeField;
use ark_poly::EvaluationDomain;
use std::sync::OnceLock;

const LOG_N: u32 = WORDS_PER_KV.trailing_zeros();

/// ω, the generator of the 4096-point domain, taken from the reference domain.
pub fn omega() -> Fr {
    Fr::from_limbs(reference::domain().group_gen().into_bigint().0)
}

/// ω^0 .. ω^(N/2 - 1).
pub(crate) fn twiddles() -> &'static [Fr] {
    static TWIDDLES: OnceLock<Vec<Fr>> = OnceLock::new();
    TWIDDLES.get_or_init(|| {
        let w = omega();
        let mut table = Vec::with_capacity(WORDS_PER_KV / 2);
        let mut x = Fr::ONE;
        for _ in 0..WORDS_PER_KV / 2 {
            table.push(x);
            x = x.mul_mod(w);
        }
        table
    })
}

/// ω^j.
pub fn omega_pow(j: usize) -> Fr {
    let w = omega();
    let mut result = Fr::ONE;
    let mut base = w;
    let mut e = j;
    while e > 0 {
        if e & 1 == 1 {
            result = result.mul_mod(base);
        }
        base = base.square();
        e >>= 1;
    }
    result
}

/// The NTT compiled with BMI2/ADX around the assembly multiply (`Kernel::ntt_in_place` runs it
/// for every kernel but `Portable` where the CPU has BMI2/ADX).
#[cfg(target_arch = "x86_64")]
pub fn ntt_in_place_adx(adx: crate::adx::Adx, values: &mut [Fr; WORDS_PER_KV]) {
    bit_reverse(values);
    stages_adx(adx, values, 1, WORDS_PER_KV);
}

/// [`stages_with`] on the assembly multiply, compiled with BMI2/ADX.
#[cfg(target_arch = "x86_64")]
pub(crate) fn stages_adx(
    adx: crate::adx::Adx,
    values: &mut [Fr; WORDS_PER_KV],
    first_half: usize,
    end_half: usize,
) {
    #[target_feature(enable = "bmi2,adx")]
    fn inner(adx: crate::adx::Adx, values: &mut [Fr; WORDS_PER_KV], first: usize, end: usize) {
        stages_with(adx, values, first, end)
    }
    // SAFETY: an `Adx` token exists only when the CPU supports bmi2 and adx.
    unsafe { inner(adx, values, first_half, end_half) }
}

/// In place: `values` holds the 4096 coefficients, afterwards the 4096 evaluations, multiplying
/// with `arith`.
#[inline(always)]
pub fn ntt_in_place_with<A: Arith>(arith: A, values: &mut [Fr; WORDS_PER_KV]) {
    bit_reverse(values);
    stages_with(arith, values, 1, WORDS_PER_KV);
}

/// The bit-reversal permutation that starts the iterative NTT.
pub(crate) fn bit_reverse(values: &mut [Fr; WORDS_PER_KV]) {
    for i in 0..WORDS_PER_KV {
        let j = (i as u32).reverse_bits() >> (32 - LOG_N);
        let j = j as usize;
        if i < j {
            values.swap(i, j);
        }
    }
}

/// The butterfly stages whose half-block length runs from `first_half` up to (not including)
/// `end_half` (powers of two; the whole NTT is 1..4096).
#[inline(always)]
pub(crate) fn stages_with<A: Arith>(
    arith: A,
    values: &mut [Fr; WORDS_PER_KV],
    first_half: usize,
    end_half: usize,
) {
    let tw = twiddles();
    let mut half = first_half;
    while half < end_half {
        let step = WORDS_PER_KV / (2 * half);
        for block in values.chunks_exact_mut(2 * half) {
            let (lo, hi) = block.split_at_mut(half);
            for (k, (a, b)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                let t = arith.mul(*b, tw[k * step]);
                *b = a.sub_mod(t);
                *a = a.add_mod(t);
            }
        }
        half *= 2;
    }
}
