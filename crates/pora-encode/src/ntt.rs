//! The 4096-point radix-2 NTT over Fr on the fast field: natural-order coefficients in,
//! natural-order evaluations `P(ω^j)` out. Iterative Cooley–Tukey: bit-reverse the input, then
//! log2(4096) = 12 stages of butterflies with twiddles from one table of ω^0..ω^2047. It is a few
//! percent of a mask's cost, so it stays simple.

use crate::arith::{Arith, Kernel, Portable};
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
fn twiddles() -> &'static [Fr] {
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

/// In place: `values` holds the 4096 coefficients, afterwards the 4096 evaluations. Uses the
/// process's kernel ([`Kernel::selected`]; panics if `PORA_ENCODE_ARITH` is bad).
pub fn ntt_in_place(values: &mut [Fr; WORDS_PER_KV]) {
    ntt_in_place_kernel(Kernel::selected_or_panic(), values)
}

/// [`ntt_in_place`] for `kernel`'s CPU: the MULX/ADX multiply for `Adx` and `Ifma` where the CPU
/// has BMI2/ADX (the butterflies are a few percent of a mask, not worth eight-lane shuffles),
/// portable otherwise.
pub fn ntt_in_place_kernel(kernel: Kernel, values: &mut [Fr; WORDS_PER_KV]) {
    #[cfg(target_arch = "x86_64")]
    if kernel != Kernel::Portable {
        if let Some(adx) = crate::adx::Adx::detect() {
            return ntt_adx(adx, values);
        }
    }
    let _ = kernel;
    ntt_in_place_with(Portable, values)
}

/// The NTT compiled with BMI2/ADX around the assembly multiply.
#[cfg(target_arch = "x86_64")]
fn ntt_adx(adx: crate::adx::Adx, values: &mut [Fr; WORDS_PER_KV]) {
    #[target_feature(enable = "bmi2,adx")]
    fn inner(adx: crate::adx::Adx, values: &mut [Fr; WORDS_PER_KV]) {
        ntt_in_place_with(adx, values)
    }
    // SAFETY: an `Adx` token exists only when the CPU supports bmi2 and adx.
    unsafe { inner(adx, values) }
}

/// [`ntt_in_place`] multiplying with `arith`.
#[inline(always)]
pub fn ntt_in_place_with<A: Arith>(arith: A, values: &mut [Fr; WORDS_PER_KV]) {
    for i in 0..WORDS_PER_KV {
        let j = (i as u32).reverse_bits() >> (32 - LOG_N);
        let j = j as usize;
        if i < j {
            values.swap(i, j);
        }
    }
    let tw = twiddles();
    let mut half = 1;
    while half < WORDS_PER_KV {
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
