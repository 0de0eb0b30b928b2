//! Property tests: the fast path equals the reference path for random keys (most random 256-bit
//! keys are >= r, so the reduction is exercised) and for keys just below r, where k+i+1 wraps
//! past r inside the KV; random permutation states agree on every multiply implementation (the
//! portable one and, where the CPU has them, the BMI2/ADX assembly and the AVX-512 IFMA lanes);
//! decode(encode(x)) == x.

use pora_encode::field::{Fr, MODULUS};
use pora_encode::{decode, encode, mask, mask_word, poseidon, reference, Kernel, MASK_BYTES};
use proptest::prelude::*;

/// `r - offset` (plus `multiple` extra copies of r, still below 2^256) as a big-endian key.
fn key_below_r(offset: u64, multiple: u64) -> [u8; 32] {
    let mut limbs = [0u64; 4];
    let mut borrow = offset as u128;
    let mut carry = 0u128;
    for i in 0..4 {
        let v = (MODULUS[i] as u128) * (multiple as u128 + 1) + carry;
        let d = (v as u64) as i128 - borrow as i128;
        carry = v >> 64;
        if d < 0 {
            limbs[i] = (d + (1i128 << 64)) as u64;
            borrow = 1;
        } else {
            limbs[i] = d as u64;
            borrow = 0;
        }
    }
    let mut out = [0u8; 32];
    for (i, limb) in limbs.iter().enumerate() {
        out[24 - 8 * i..32 - 8 * i].copy_from_slice(&limb.to_be_bytes());
    }
    out
}

fn ark(x: Fr) -> ark_bn254::Fr {
    use ark_ff::PrimeField;
    ark_bn254::Fr::from_be_bytes_mod_order(&x.to_be_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn fast_mask_equals_reference_for_random_keys(key in any::<[u8; 32]>()) {
        prop_assert_eq!(&mask(&key)[..], &reference::mask(&key)[..]);
    }

    #[test]
    fn fast_mask_equals_reference_when_k_plus_i_wraps(offset in 1u64..=2049, multiple in 0u64..=4) {
        // k = r - offset: k + i + 1 passes r for some i in 0..2048. With `multiple` > 0 the key
        // itself is >= r (the largest, 5r - 1, still fits 256 bits).
        let key = key_below_r(offset, multiple);
        prop_assert_eq!(&mask(&key)[..], &reference::mask(&key)[..]);
    }

    #[test]
    fn mask_word_equals_the_mask(key in any::<[u8; 32]>(), j in 0usize..4096) {
        let word = mask_word(&key, j).unwrap();
        prop_assert_eq!(&word[..], &mask(&key)[32 * j..32 * j + 32]);
    }
}

proptest! {
    #[test]
    fn fast_permutation_equals_reference(a in any::<[u8; 32]>(), b in any::<[u8; 32]>(), c in any::<[u8; 32]>()) {
        let state = [a, b, c].map(|x| Fr::from_be_bytes_mod_order(&x));
        let fast = Kernel::selected().unwrap().permute(state).map(|x| x.to_be_bytes());
        let slow = reference::permute(state.map(ark)).map(|x| reference::to_be_bytes(&x));
        prop_assert_eq!(fast, slow);
    }

    #[test]
    fn permutation_equals_reference_on_every_arith(a in any::<[u8; 32]>(), b in any::<[u8; 32]>()) {
        use pora_encode::arith::Portable;
        let state = [a, b, a].map(|x| Fr::from_be_bytes_mod_order(&x));
        let slow = reference::permute(state.map(ark)).map(|x| reference::to_be_bytes(&x));
        let portable = poseidon::permute_with(Portable, state).map(|x| x.to_be_bytes());
        prop_assert_eq!(portable, slow);
        #[cfg(target_arch = "x86_64")]
        if let Some(adx) = pora_encode::adx::Adx::detect() {
            let fast = poseidon::permute_with(adx, state).map(|x| x.to_be_bytes());
            prop_assert_eq!(fast, slow);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(ifma) = pora_encode::ifma::Ifma::detect() {
            let lanes = ifma.permute(state).map(|x| x.to_be_bytes());
            prop_assert_eq!(lanes, slow);
        }
    }

    /// Inputs given as 256-bit integers near 2^254 and 2^256 (reduced on the way in), through
    /// every multiply implementation.
    #[test]
    fn arith_matches_ark_near_the_top(x in any::<[u8; 32]>(), top in 0u8..4, y in any::<[u8; 32]>()) {
        use pora_encode::arith::{Arith, Portable};
        let mut near = x;
        near[0] = if top == 0 { 0x3f } else { 0xff - top }; // just under 2^254, or near 2^256
        near[1] |= 0xf0;
        let (a, b) = (Fr::from_be_bytes_mod_order(&near), Fr::from_be_bytes_mod_order(&y));
        let want = ark(a) * ark(b);
        prop_assert_eq!(ark(Portable.mul(a, b)), want);
        prop_assert_eq!(ark(Portable.square(a)), ark(a) * ark(a));
        let dot = Portable.dot3([a, b, a], [a, a, b]);
        prop_assert_eq!(ark(dot), ark(a) * ark(a) + ark(b) * ark(a) + ark(a) * ark(b));
        #[cfg(target_arch = "x86_64")]
        if let Some(adx) = pora_encode::adx::Adx::detect() {
            prop_assert_eq!(adx.mul(a, b), Portable.mul(a, b));
            prop_assert_eq!(adx.square(a), Portable.square(a));
            prop_assert_eq!(adx.dot3([a, b, a], [a, a, b]), dot);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(ifma) = pora_encode::ifma::Ifma::detect() {
            let (xs, ys) = ([a, b, a, b, a, a, b, b], [b, b, a, a, b, a, b, a]);
            let prod = ifma.mul(&xs, &ys);
            let sq = ifma.square(&xs);
            let dots = ifma.dot3(&[xs, ys, xs], &[xs, xs, ys]);
            for i in 0..8 {
                prop_assert_eq!(prod[i], Portable.mul(xs[i], ys[i]));
                prop_assert_eq!(sq[i], Portable.square(xs[i]));
                prop_assert_eq!(dots[i], Portable.dot3([xs[i], ys[i], xs[i]], [xs[i], xs[i], ys[i]]));
            }
        }
    }

    #[test]
    fn field_ops_match_ark(a in any::<[u8; 32]>(), b in any::<[u8; 32]>()) {
        let (x, y) = (Fr::from_be_bytes_mod_order(&a), Fr::from_be_bytes_mod_order(&b));
        prop_assert_eq!(ark(x.mul_mod(y)), ark(x) * ark(y));
        prop_assert_eq!(ark(x.add_mod(y)), ark(x) + ark(y));
        prop_assert_eq!(ark(x.sub_mod(y)), ark(x) - ark(y));
        prop_assert_eq!(ark(x.square()), ark(x) * ark(x));
        // Near r - 1 every limb is large: the lazily reduced sum is at its largest.
        let top = Fr::ZERO.sub_mod(x);
        let dot = Fr::dot3([x, y, top], [top, top, top]);
        prop_assert_eq!(ark(dot), ark(x) * ark(top) + ark(y) * ark(top) + ark(top) * ark(top));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn decode_inverts_encode(key in any::<[u8; 32]>(), seed in any::<u64>()) {
        let blob: Vec<u8> = (0..MASK_BYTES as u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed).to_le_bytes()[3])
            .collect();
        let mut stored = blob.clone();
        encode(&mut stored, &key).unwrap();
        prop_assert_ne!(&stored, &blob);
        decode(&mut stored, &key).unwrap();
        prop_assert_eq!(stored, blob);
    }
}

#[test]
fn keys_below_r_are_what_they_claim() {
    // r - 1 reduces to r - 1, r + (r - 1) to r - 1 as well: both give the same mask.
    let k1 = Fr::from_be_bytes_mod_order(&key_below_r(1, 0));
    let k2 = Fr::from_be_bytes_mod_order(&key_below_r(1, 1));
    assert_eq!(k1, k2);
    assert_eq!(k1.add_mod(Fr::ONE), Fr::ZERO);
}

#[test]
fn wrong_blob_length_and_word_index_are_errors() {
    let key = [7u8; 32];
    assert!(encode(&mut [0u8; 100], &key).is_err());
    assert!(mask_word(&key, 4096).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    /// The run-time-selected code path (BMI2/ADX where the CPU has it) equals the portable one.
    #[test]
    fn dispatched_coefficients_equal_portable(key in any::<[u8; 32]>()) {
        use pora_encode::mask::{coefficients_into, coefficients_portable};
        use pora_encode::WORDS_PER_KV;
        let mut fast = Box::new([Fr::ZERO; WORDS_PER_KV]);
        let mut portable = Box::new([Fr::ZERO; WORDS_PER_KV]);
        coefficients_into(&key, &mut fast);
        coefficients_portable(&key, &mut portable);
        prop_assert!(fast[..] == portable[..]);
    }
}
