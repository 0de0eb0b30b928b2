//! Layer 2, the lane operations: [`lane_arith!`], the eight-lane field operations written once
//! for every vector field ([`crate::ifma`]'s 52-bit limbs, [`crate::avx512f`]'s 29-bit limbs),
//! which each vector module expands with its own CPU features. The vector module provides the
//! column sums (`Wide`), `load`, `store`, `splat` and `LANES`; the expansion adds the lazy
//! multiply, square, `dot3` and `pow5` on top, the conversions into and out of the module's
//! Montgomery form, the NTT's sliced helpers, and their tests against the portable field.
//!
//! The NTT (layer 3, `crate::ntt_lanes`) and the permutation (layer 4, `crate::poseidon_lanes`)
//! build on what this expands; nothing here knows of them.

/// Expands, in a vector module (`crate::ifma`, `crate::avx512f`), to the lane operations built on
/// its `Wide` column sums (`zero`, `add_product`, `square`, `add_high`, `redc`) and its
/// `load` / `store` / `splat`: `mul`, `mul_plus`, `square`, `dot3`, `pow5`; the conversions
/// `$to_form` / `$from_form` between canonical 4×64 elements (`a·2^256`) and the module's form
/// (`a·R`); the NTT's sliced helpers (`sliced_from_fr`, `butterfly`, `canonical_integers`; the
/// module gives `normalize`, `FOUR_R_SPREAD`, `ONE_INTEGER` and `Sliced`); the token's `mul`,
/// `square`, `pow5`, `dot3` and raw (limb-level, for the bound tests) methods; the tests of those
/// methods against the portable field, and for the module's own raw-bound tests `detect_or_skip`
/// (`$lacks` names the feature a SKIP line says the CPU lacks) and the limb helpers of
/// `lane_tests`. All lazy: a product of values below `A·r` and `B·r` reduces to below
/// `(A·B·r/R + 1)·r`; `r/R` is below `1/$r_fraction`: 1/84 for IFMA, 1/168 for AVX-512F.
/// `$to_constant` is the integer whose Montgomery product with `a·2^256` is `a·R`;
/// `$from_constant` is `2^256 mod r`.
macro_rules! lane_arith {
    (
        features: $features:literal,
        limbs: $limbs:ty,
        to_limbs: $to_limbs:path,
        from_limbs: $from_limbs:path,
        to_constant: $to_constant:ident,
        from_constant: $from_constant:ident,
        to_form: $to_form:ident,
        from_form: $from_form:ident,
        token: $token:ident,
        lacks: $lacks:literal,
        r_fraction: $r_fraction:literal $(,)?
    ) => {
        /// The token, or `None` after printing `SKIP: <test>: CPU lacks <feature>` (once per
        /// test, so a property test's cases do not repeat it): tests never pass silently on a CPU
        /// without the module's features.
        #[cfg(test)]
        pub(crate) fn detect_or_skip(test: &str) -> Option<$token> {
            crate::field::test_values::detect_or_skip(test, $lacks, $token::detect)
        }

        #[cfg(test)]
        mod lane_tests {
            // The eight-lane operations against the portable field and ark-ff: every pair of
            // edge values, and random canonical inputs. Also the limb-level helpers the module's
            // raw-bound tests share (`pub(super)`).

            use super::*;
            use crate::arith::{Arith, Portable};
            use crate::field::test_values::{self, edges};
            use ark_ff::{Field, PrimeField};
            use proptest::prelude::*;

            pub(super) fn ark(x: Fr) -> ark_bn254::Fr {
                ark_bn254::Fr::from_be_bytes_mod_order(&x.to_be_bytes())
            }

            /// The integer in the module's limbs (each below 2^64, normalised or not), as an ark
            /// element mod r.
            pub(super) fn ark_of_limbs(x: &$limbs) -> ark_bn254::Fr {
                let base = ark_bn254::Fr::from(1u64 << LIMB_BITS);
                x.iter().rev().fold(ark_bn254::Fr::from(0u64), |acc, &l| {
                    acc * base + ark_bn254::Fr::from(l)
                })
            }

            /// The value in limbs as a multiple of r, roughly (to check the lazy bounds).
            pub(super) fn in_units_of_r(x: &$limbs) -> f64 {
                let value: f64 = x
                    .iter()
                    .enumerate()
                    .map(|(j, &l)| l as f64 * 2f64.powi((LIMB_BITS as usize * j) as i32))
                    .sum();
                let r: f64 = MODULUS
                    .iter()
                    .enumerate()
                    .map(|(j, &l)| l as f64 * 2f64.powi(64 * j as i32))
                    .sum();
                value / r
            }

            /// `R^-1` for the module's `R = 2^(LIMBS·LIMB_BITS)`: a raw product is `a·b·R^-1`.
            pub(super) fn inv_r() -> ark_bn254::Fr {
                let r_bits = (LIMBS as u32 * LIMB_BITS) as u64;
                ark_bn254::Fr::from(2u64).pow([r_bits]).inverse().unwrap()
            }

            /// A raw result: normalised limbs, `want` mod r, below `bound·r`.
            pub(super) fn check_raw(got: &$limbs, want: ark_bn254::Fr, bound: f64) {
                assert!(got.iter().all(|&l| l <= LIMB_MASK), "unnormalised {got:x?}");
                assert_eq!(ark_of_limbs(got), want);
                let units = in_units_of_r(got);
                assert!(units < bound, "{units} r >= bound {bound} r");
            }

            /// The raw multiply, square and `dot3` with an addend on lazily reduced lanes: each
            /// right mod r, normalised, and within `(A·B·r/R + 1)·r` (plus the addend), `r/R` taken as
            /// the invocation's `r_fraction` (1/84 or 1/168).
            pub(super) fn check_raw_operations(
                token: $token,
                a: &[$limbs; LANES],
                b: &[$limbs; LANES],
                c: &[$limbs; LANES],
                p: &[$limbs; LANES],
            ) {
                let k = inv_r();
                let fraction = $r_fraction as f64;
                let prod = token.mul_raw(a, b);
                let sq = token.square_raw(a);
                let dot = token.dot3_plus_raw(&[*c, *a, *b], &[*a, *c, *c], p);
                for i in 0..LANES {
                    let (aa, bb) = (ark_of_limbs(&a[i]), ark_of_limbs(&b[i]));
                    let (cc, pp) = (ark_of_limbs(&c[i]), ark_of_limbs(&p[i]));
                    let (ua, ub) = (in_units_of_r(&a[i]), in_units_of_r(&b[i]));
                    let uc = in_units_of_r(&c[i]);
                    check_raw(&prod[i], aa * bb * k, ua * ub / fraction + 1.0);
                    check_raw(&sq[i], aa * aa * k, ua * ua / fraction + 1.0);
                    let bound =
                        (uc * ua + ua * uc + ub * uc) / fraction + 1.0 + in_units_of_r(&p[i]);
                    check_raw(&dot[i], (cc * aa + aa * cc + bb * cc) * k + pp, bound);
                }
            }

            fn lanes_of(xs: &[Fr]) -> [Fr; LANES] {
                std::array::from_fn(|i| xs[i % xs.len()])
            }

            fn check_lanes(token: $token, x: [Fr; LANES], y: [Fr; LANES], z: [Fr; LANES]) {
                let p = Portable;
                let prod = token.mul(&x, &y);
                let sq = token.square(&x);
                let p5 = token.pow5(&z);
                let dot = token.dot3(&[x, y, z], &[z, x, y]);
                for i in 0..LANES {
                    assert_eq!(prod[i], p.mul(x[i], y[i]), "mul {:?} {:?}", x[i], y[i]);
                    assert_eq!(ark(prod[i]), ark(x[i]) * ark(y[i]));
                    assert_eq!(sq[i], p.square(x[i]), "square {:?}", x[i]);
                    assert_eq!(p5[i], p.pow5(z[i]), "pow5 {:?}", z[i]);
                    let want = p.dot3([x[i], y[i], z[i]], [z[i], x[i], y[i]]);
                    assert_eq!(dot[i], want, "dot3");
                }
            }

            #[test]
            fn edge_values_match_portable_and_ark() {
                let test = concat!(module_path!(), "::edge_values_match_portable_and_ark");
                let Some(token) = detect_or_skip(test) else {
                    return;
                };
                let e = edges();
                for (n, &x) in e.iter().enumerate() {
                    // Every lane a different partner: all pairs of edge values are covered.
                    let xs = [x; LANES];
                    for chunk in e.chunks(LANES) {
                        let ys = lanes_of(chunk);
                        check_lanes(token, xs, ys, lanes_of(&e[n..]));
                        check_lanes(token, ys, xs, ys);
                    }
                }
            }

            proptest! {
                #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

                #[test]
                fn random_canonical_inputs_match_portable(
                    x in prop::array::uniform8(test_values::canonical_or(edges())),
                    y in prop::array::uniform8(test_values::canonical_or(edges())),
                    z in prop::array::uniform8(test_values::canonical_or(edges())),
                ) {
                    let test = concat!(module_path!(), "::random_canonical_inputs_match_portable");
                    if let Some(token) = detect_or_skip(test) {
                        check_lanes(token, x, y, z);
                    }
                }
            }
        }

        impl $token {
            /// Eight products `a[i]·b[i]` through the module's form and back (tests and
            /// benchmarks; the permutation converts once per batch, not per multiply).
            pub fn mul(self, a: &[Fr; LANES], b: &[Fr; LANES]) -> [Fr; LANES] {
                #[target_feature(enable = $features)]
                fn inner(a: &[Fr; LANES], b: &[Fr; LANES]) -> [Fr; LANES] {
                    $from_form(mul(&$to_form(a, None), &$to_form(b, None)))
                }
                // SAFETY: the token exists only when the CPU has every feature in `$features`.
                unsafe { inner(a, b) }
            }

            /// Eight squares.
            pub fn square(self, a: &[Fr; LANES]) -> [Fr; LANES] {
                #[target_feature(enable = $features)]
                fn inner(a: &[Fr; LANES]) -> [Fr; LANES] {
                    $from_form(square(&$to_form(a, None)))
                }
                // SAFETY: the token exists only when the CPU has every feature in `$features`.
                unsafe { inner(a) }
            }

            /// Eight `x^5`.
            pub fn pow5(self, a: &[Fr; LANES]) -> [Fr; LANES] {
                #[target_feature(enable = $features)]
                fn inner(a: &[Fr; LANES]) -> [Fr; LANES] {
                    $from_form(pow5(&$to_form(a, None)))
                }
                // SAFETY: the token exists only when the CPU has every feature in `$features`.
                unsafe { inner(a) }
            }

            /// Eight `a[0]·b[0] + a[1]·b[1] + a[2]·b[2]`, reduced once.
            pub fn dot3(self, a: &[[Fr; LANES]; 3], b: &[[Fr; LANES]; 3]) -> [Fr; LANES] {
                #[target_feature(enable = $features)]
                fn inner(a: &[[Fr; LANES]; 3], b: &[[Fr; LANES]; 3]) -> [Fr; LANES] {
                    let a = a.map(|x| $to_form(&x, None));
                    let b = b.map(|x| $to_form(&x, None));
                    $from_form(dot3(&a, &b, None))
                }
                // SAFETY: the token exists only when the CPU has every feature in `$features`.
                unsafe { inner(a, b) }
            }

            /// The raw Montgomery product `(a·b + m·r) / R` of eight pairs of values in limbs
            /// (normalised, below the multiplicand bound), not made canonical: tests check the
            /// lazy bounds with it.
            #[doc(hidden)]
            pub fn mul_raw(self, a: &[$limbs; LANES], b: &[$limbs; LANES]) -> [$limbs; LANES] {
                #[target_feature(enable = $features)]
                fn inner(a: &[$limbs; LANES], b: &[$limbs; LANES]) -> [$limbs; LANES] {
                    store(&mul(&load(a), &load(b)))
                }
                // SAFETY: the token exists only when the CPU has every feature in `$features`.
                unsafe { inner(a, b) }
            }

            /// The raw (lazy) square, as `mul_raw`.
            #[doc(hidden)]
            pub fn square_raw(self, a: &[$limbs; LANES]) -> [$limbs; LANES] {
                #[target_feature(enable = $features)]
                fn inner(a: &[$limbs; LANES]) -> [$limbs; LANES] {
                    store(&square(&load(a)))
                }
                // SAFETY: the token exists only when the CPU has every feature in `$features`.
                unsafe { inner(a) }
            }

            /// The raw (lazy) `a·b + c·d + e·f + plus` with one reduction, as `mul_raw`.
            #[doc(hidden)]
            pub fn dot3_plus_raw(
                self,
                a: &[[$limbs; LANES]; 3],
                b: &[[$limbs; LANES]; 3],
                plus: &[$limbs; LANES],
            ) -> [$limbs; LANES] {
                #[target_feature(enable = $features)]
                fn inner(
                    a: &[[$limbs; LANES]; 3],
                    b: &[[$limbs; LANES]; 3],
                    plus: &[$limbs; LANES],
                ) -> [$limbs; LANES] {
                    let a = [load(&a[0]), load(&a[1]), load(&a[2])];
                    let b = [load(&b[0]), load(&b[1]), load(&b[2])];
                    store(&dot3(&a, &b, Some(&load(plus))))
                }
                // SAFETY: the token exists only when the CPU has every feature in `$features`.
                unsafe { inner(a, b, plus) }
            }
        }

        /// `a·b / R` (lazy: below `(A·B·r/R + 1)·r` for inputs below `A·r`, `B·r`).
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn mul(a: &Lanes, b: &Lanes) -> Lanes {
            let mut t = Wide::zero();
            t.add_product(a, b);
            t.redc()
        }

        /// `a·b / R + plus` (lazy), the additions carried with the product.
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn mul_plus(a: &Lanes, b: &Lanes, plus: &[&Lanes]) -> Lanes {
            let mut t = Wide::zero();
            t.add_product(a, b);
            for x in plus {
                t.add_high(x);
            }
            t.redc()
        }

        /// `a² / R` (lazy).
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn square(a: &Lanes) -> Lanes {
            Wide::square(a).redc()
        }

        /// `(a0·b0 + a1·b1 + a2·b2) / R (+ plus)`: three products summed in the columns and
        /// reduced once (lazy: below `(Σ A_k·B_k·r/R + 1)·r`, plus `plus`).
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn dot3(a: &[Lanes; 3], b: &[Lanes; 3], plus: Option<&Lanes>) -> Lanes {
            let mut t = Wide::zero();
            for (x, y) in a.iter().zip(b.iter()) {
                t.add_product(x, y);
            }
            if let Some(p) = plus {
                t.add_high(p);
            }
            t.redc()
        }

        /// `x^5` (lazy): two squares and a multiply. With `r/R < 1/84`: inputs below `9r` give
        /// `x² < 2r`, `x⁴ < 1.05r`, `x^5 < 1.12r`; inputs below `61r` give `x² < 45r`,
        /// `x⁴ < 25r`, `x^5 < 19r`.
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn pow5(x: &Lanes) -> Lanes {
            let x2 = square(x);
            let x4 = square(&x2);
            mul(&x4, x)
        }

        /// Eight canonical 4×64 Montgomery elements (`a·2^256`) in the module's form (`a·R`),
        /// below `1.02r`, plus `plus` (lazy addition; with a canonical constant the sum is below
        /// `2.02r`).
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn $to_form(x: &[Fr; LANES], plus: Option<&Lanes>) -> Lanes {
            let limbs: [$limbs; LANES] = std::array::from_fn(|lane| $to_limbs(x[lane].0));
            let mut t = Wide::zero();
            t.add_product(&load(&limbs), &splat(&$to_constant));
            if let Some(p) = plus {
                t.add_high(p);
            }
            t.redc()
        }

        /// Eight values in the module's form (below `84r`) as canonical 4×64 elements: the
        /// Montgomery product with `2^256 mod r` is below `2r` and one conditional subtraction
        /// per lane makes it canonical.
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn $from_form(x: Lanes) -> [Fr; LANES] {
            let limbs = store(&mul(&x, &splat(&$from_constant)));
            std::array::from_fn(|lane| Fr::from_montgomery_below_2r($from_limbs(limbs[lane])))
        }

        #[inline]
        #[target_feature(enable = $features)]
        fn load_sliced(x: &Sliced) -> Lanes {
            let mut out = [core::arch::x86_64::_mm512_setzero_si512(); LIMBS];
            for (v, row) in out.iter_mut().zip(x.iter()) {
                // SAFETY: `row` is eight contiguous u64 (64 bytes), the unaligned load reads exactly them.
                *v = unsafe { core::arch::x86_64::_mm512_loadu_epi64(row.as_ptr().cast()) };
            }
            Lanes(out)
        }

        #[inline]
        #[target_feature(enable = $features)]
        fn store_sliced(x: &Lanes, out: &mut Sliced) {
            for (row, v) in out.iter_mut().zip(x.0.iter()) {
                // SAFETY: `row` is eight contiguous u64 (64 bytes), the unaligned store writes exactly them.
                unsafe { core::arch::x86_64::_mm512_storeu_epi64(row.as_mut_ptr().cast(), *v) };
            }
        }

        /// Eight canonical 4×64 Montgomery elements in the module's form (below `1.02r`), sliced.
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn sliced_from_fr(x: &[Fr; LANES]) -> Sliced {
            let mut out = [[0u64; LANES]; LIMBS];
            store_sliced(&$to_form(x, None), &mut out);
            out
        }

        /// The radix-2 butterfly on eight pairs: `a, b <- a + b·w, a - b·w` (the module's form,
        /// lazy). With `a`, `b` below `K·r` (`K ≤ 40`) and a canonical twiddle, `t = b·w < 1.48r`, so the new `a` is
        /// below `(K + 1.48)·r` and the new `b = a + 4r - t` below `(K + 4)·r`; both normalised.
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn butterfly(a: &mut Sliced, b: &mut Sliced, w: &Sliced) {
            let x = load_sliced(a);
            let t = mul(&load_sliced(b), &load_sliced(w));
            let spread = splat(&FOUR_R_SPREAD);
            let mut sum = [core::arch::x86_64::_mm512_setzero_si512(); LIMBS];
            let mut diff = [core::arch::x86_64::_mm512_setzero_si512(); LIMBS];
            for j in 0..LIMBS {
                sum[j] = core::arch::x86_64::_mm512_add_epi64(x.0[j], t.0[j]);
                diff[j] = core::arch::x86_64::_mm512_sub_epi64(
                    core::arch::x86_64::_mm512_add_epi64(x.0[j], spread.0[j]),
                    t.0[j],
                );
            }
            store_sliced(&normalize(sum), a);
            store_sliced(&normalize(diff), b);
        }

        /// Eight values in the module's form (below `84r`) as canonical integers (`< r`, 4×64 limbs): the
        /// Montgomery product with the integer 1 is below `r + 1`, one conditional subtraction.
        #[inline]
        #[target_feature(enable = $features)]
        pub(crate) fn canonical_integers(x: &Sliced) -> [[u64; 4]; LANES] {
            let limbs = store(&mul(&load_sliced(x), &splat(&ONE_INTEGER)));
            std::array::from_fn(|lane| Fr::from_montgomery_below_2r($from_limbs(limbs[lane])).0)
        }
    };
}

pub(crate) use lane_arith;
