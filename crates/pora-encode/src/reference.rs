//! The reference path: BLOB_POSEIDON written as plainly as possible on ark-ff/ark-bn254, with
//! light-poseidon's circom constants for width 3 and ark-poly's radix-2 FFT. Slow (generic field
//! code, dense rounds, one permutation at a time) but easy to check against docs/encoding.md line by
//! line; the fast path is tested against it and derives its own constants from it.
//!
//! Layer 0 of the crate (the base); it imports only from this layer or below.

use crate::{PERMUTATIONS_PER_KV, WORDS_PER_KV};
use ark_bn254::Fr;
use ark_ff::{AdditiveGroup, BigInteger, Field, PrimeField};
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};
use light_poseidon::parameters::bn254_x5::get_poseidon_parameters;
use light_poseidon::PoseidonParameters;
use std::sync::OnceLock;

/// State width of the permutation (capacity element + two inputs).
pub const WIDTH: usize = 3;

/// The circom width-3 Poseidon parameters (x^5, 8 full and 57 partial rounds), loaded once.
pub fn params() -> &'static PoseidonParameters<Fr> {
    static PARAMS: OnceLock<PoseidonParameters<Fr>> = OnceLock::new();
    PARAMS.get_or_init(|| {
        get_poseidon_parameters::<Fr>(WIDTH as u8)
            .expect("light-poseidon ships width-3 BN254 x5 parameters")
    })
}

/// The Poseidon permutation: every round adds its constants, applies x^5 (to all three elements
/// in the first and last four rounds, to element 0 only in between) and multiplies by the MDS.
pub fn permute(mut state: [Fr; WIDTH]) -> [Fr; WIDTH] {
    let p = params();
    let half_full = p.full_rounds / 2;
    let rounds = p.full_rounds + p.partial_rounds;
    for round in 0..rounds {
        for (i, s) in state.iter_mut().enumerate() {
            *s += p.ark[round * WIDTH + i];
        }
        let full = round < half_full || round >= half_full + p.partial_rounds;
        let sboxed = if full { WIDTH } else { 1 };
        for s in state.iter_mut().take(sboxed) {
            *s = s.pow([5u64]);
        }
        let mut mixed = [Fr::ZERO; WIDTH];
        for (row, out) in mixed.iter_mut().enumerate() {
            for (col, s) in state.iter().enumerate() {
                *out += p.mds[row][col] * s;
            }
        }
        state = mixed;
    }
    state
}

/// `k`: the 32-byte key as a big-endian integer mod r.
pub fn key_element(key: &[u8; 32]) -> Fr {
    Fr::from_be_bytes_mod_order(key)
}

/// The 4096 coefficients: permutation `i` of `[0, k+i, k+i+1]` gives `c[2i], c[2i+1]`.
pub fn coefficients(key: &[u8; 32]) -> Vec<Fr> {
    let k = key_element(key);
    let mut coeffs = Vec::with_capacity(WORDS_PER_KV);
    for i in 0..PERMUTATIONS_PER_KV as u64 {
        let a = k + Fr::from(i);
        let out = permute([Fr::ZERO, a, a + Fr::ONE]);
        coeffs.push(out[0]);
        coeffs.push(out[1]);
    }
    coeffs
}

/// The 4096-point radix-2 evaluation domain (generator ω = 5^((r-1)/4096)).
pub fn domain() -> Radix2EvaluationDomain<Fr> {
    Radix2EvaluationDomain::new(WORDS_PER_KV).expect("BN254 Fr has 2^28-th roots of unity")
}

/// A field element as 32 big-endian bytes.
pub fn to_be_bytes(x: &Fr) -> [u8; 32] {
    x.into_bigint()
        .to_bytes_be()
        .try_into()
        .expect("a BN254 Fr element is 32 bytes")
}

/// The whole mask: the coefficients evaluated on the domain in natural order, big-endian words.
pub fn mask(key: &[u8; 32]) -> Vec<u8> {
    let evals = domain().fft(&coefficients(key));
    evals.iter().flat_map(to_be_bytes).collect()
}

/// Word `j` of the mask by direct (Horner) evaluation of the polynomial at ω^j.
pub fn mask_word(key: &[u8; 32], j: usize) -> [u8; 32] {
    let x = domain().element(j);
    let coeffs = coefficients(key);
    let value = coeffs.iter().rev().fold(Fr::ZERO, |acc, c| acc * x + c);
    to_be_bytes(&value)
}
