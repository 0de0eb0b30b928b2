//! Every multiply kernel (portable, MULX/ADX, AVX-512 IFMA) against the reference path on whole
//! masks: random keys (most are >= r), keys just below r (k+i+1 wraps past r inside the KV) and
//! above it, and the edge keys 0, 1, r-1, r, 2^256-1. A kernel this CPU cannot run is reported as
//! `SKIP: <test>: CPU lacks <features>`, never passed silently.

use pora_encode::field::{Fr, MODULUS};
use pora_encode::mask::coefficients_with_kernel;
use pora_encode::{mask_with_kernel, reference, Kernel, WORDS_PER_KV};
use proptest::prelude::*;

/// The kernels this CPU runs; prints a SKIP line for each other one, on the process's stderr past
/// libtest's capture (an `eprintln!` from a passing test never reaches CI's skip table).
fn runnable(test: &str) -> Vec<Kernel> {
    Kernel::ALL
        .into_iter()
        .filter(|k| {
            let ok = k.supported();
            if !ok {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIP: {test} [{k}]: CPU lacks {}",
                    k.needs()
                );
            }
            ok
        })
        .collect()
}

/// `(multiple + 1)·r - offset` as a big-endian key (offset 0: a multiple of r, which reduces to 0).
fn key_near_r(offset: u64, multiple: u64) -> [u8; 32] {
    let mut limbs = [0u64; 4];
    let mut carry = 0u128;
    for (i, limb) in limbs.iter_mut().enumerate() {
        let v = (MODULUS[i] as u128) * (multiple as u128 + 1) + carry;
        *limb = v as u64;
        carry = v >> 64;
    }
    let mut borrow = offset;
    for limb in limbs.iter_mut() {
        let (d, b) = limb.overflowing_sub(borrow);
        *limb = d;
        borrow = b as u64;
    }
    let mut out = [0u8; 32];
    for (i, limb) in limbs.iter().enumerate() {
        out[24 - 8 * i..32 - 8 * i].copy_from_slice(&limb.to_be_bytes());
    }
    out
}

fn check_all_kernels(test: &str, key: &[u8; 32]) {
    let want = reference::mask(key);
    for k in runnable(test) {
        let got = mask_with_kernel(k, key).unwrap();
        assert!(got[..] == want[..], "{test}: kernel {k}, key {key:02x?}");
    }
}

#[test]
fn edge_keys_on_every_kernel() {
    let mut one = [0u8; 32];
    one[31] = 1;
    let keys = [
        [0u8; 32],
        one,
        key_near_r(1, 0), // r - 1
        key_near_r(0, 0), // r: reduces to 0
        [0xff; 32],       // 2^256 - 1
    ];
    for key in &keys {
        check_all_kernels("edge_keys_on_every_kernel", key);
    }
}

#[test]
fn unsupported_kernels_are_errors_naming_the_variable() {
    for k in Kernel::ALL.into_iter().filter(|k| !k.supported()) {
        let err = mask_with_kernel(k, &[0u8; 32]).unwrap_err().to_string();
        assert!(err.contains("PORA_ENCODE_ARITH"), "{err}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    #[test]
    fn random_keys_on_every_kernel(key in any::<[u8; 32]>()) {
        check_all_kernels("random_keys_on_every_kernel", &key);
    }

    /// k = r - offset (+ multiple·r, so the key itself may be >= r): k+i+1 passes r inside the KV.
    #[test]
    fn wrapping_keys_on_every_kernel(offset in 1u64..=2049, multiple in 0u64..=4) {
        check_all_kernels("wrapping_keys_on_every_kernel", &key_near_r(offset, multiple));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Cheaper than the reference, so more keys: every kernel's coefficients equal the portable
    /// ones.
    #[test]
    fn coefficients_agree_across_kernels(key in any::<[u8; 32]>(), wrap in 0u64..2100) {
        let key = if wrap % 3 == 0 { key_near_r(wrap / 3 + 1, wrap % 5) } else { key };
        let mut want = Box::new([Fr::ZERO; WORDS_PER_KV]);
        coefficients_with_kernel(Kernel::Portable, &key, &mut want).unwrap();
        for k in runnable("coefficients_agree_across_kernels") {
            let mut got = Box::new([Fr::ZERO; WORDS_PER_KV]);
            coefficients_with_kernel(k, &key, &mut got).unwrap();
            prop_assert!(got[..] == want[..], "kernel {}", k);
        }
    }
}
