//! The width-3 Poseidon permutation and the NTT over eight-lane vectors, written once for every
//! vector field ([`crate::ifma`]'s 52-bit limbs, [`crate::avx512f`]'s 29-bit limbs), as three
//! macros each vector module expands with its own CPU features: [`lane_arith!`] (the lane
//! operations on top of the module's column sums, and their tests), [`lane_permutation!`] (the
//! constants, the rounds and the batch entry point) and [`lane_ntt!`] (the vector NTT). The
//! vector module must provide `Lanes`, `splat`, `load`, `store`, `Wide` and `LANES`; the
//! invocations name its limb type, its constant conversion and its conversions into and out of
//! its Montgomery form.
//!
//! Same optimised rounds as [`crate::poseidon`] (constants moved forward, sparse partial rounds),
//! with the constants converted to the vector form once per process.
//!
//! **Constants folded into the previous round.** The state a round leaves already holds the next
//! round's constants: every matrix product reduces its column sums with the constant added in the
//! high half (`dot3`'s `plus`), so adding round constants costs no carry pass. The first round's
//! constants enter with the conversion to the vector form.
//!
//! **Bounds** (units of r; with `R = 2^260` (IFMA) `r/R < 1/84`, with `R = 2^261` (AVX-512F)
//! `r/R < 1/168`; the bounds below use `1/84` and so hold for both; a product of values below
//! `A·r` and `B·r` reduces to below `(A·B/84 + 1)·r`; every value must stay below `84r` to be a
//! multiplicand of either):
//! - after the conversion plus the first constants: `< 1.02 + 1 = 2.02`;
//! - full rounds: S-box inputs `< 3` give `x^5 < 1.12`; a row of the MDS (canonical entries)
//!   times three such values is `< 3·1.12/84 + 1 < 1.05`, plus a constant `< 2.05`;
//! - partial rounds, `t1, t2 < K`: `x0 = t0^5 < 1.12` (for `t0 < 9`); the new `t0` is
//!   `< (1.12 + 2K)/84 + 1 + 1`, and `t1 += w0·x0/R (< 1.02)` — `t1` and `t2` are never
//!   reduced inside the partial rounds, so after 57 of them (and the last one's constants)
//!   `K < 2.05 + 57·1.02 + 1 < 61`, hence `t0 < 3.5 < 9`; all below 84;
//! - the first full round after them has S-box inputs `< 61`: `x^5 < 19`, the MDS rows give
//!   `< 3·19/84 + 1 + 1 < 2.7`, and from then on inputs `< 3` as above;
//! - the outputs (`< 3`) are made canonical by the conversion out.
//!
//! The vector modules' tests check these bounds on raw limbs, and the permutation modules' tests
//! the results against the reference permutation.

/// Expands, in the invoking module, to `Constants`, `constants()` and the `#[target_feature]`
/// functions `convert_and_permute::<G>` (convert `G` groups of eight states in, permute, convert
/// back) for the vector module `$v` compiled with `$features`, the token's `permute_groups` and
/// `permute`, and the tests that hold them to the portable permutation and the reference.
macro_rules! lane_permutation {
    (
        features: $features:literal,
        vector: $v:ident,
        limbs: $limbs:ty,
        constant: $constant:path,
        to_form: $to_form:path,
        from_form: $from_form:path,
        token: $token:ident $(,)?
    ) => {
        use crate::field::Fr;
        use crate::poseidon::{optimized, Optimized, HALF_FULL, PARTIAL};
        use std::sync::OnceLock;
        use crate::$v::{self as v, splat, Lanes, LANES};

        /// A full round: the matrix, then the next round's constants.
        #[derive(Debug)]
        struct FullRound {
            matrix: [[$limbs; 3]; 3],
            next_constants: [$limbs; 3],
        }

        /// A partial round: the sparse matrix's first row `[m00, v̂0, v̂1]` and column `w`, then
        /// the next round's constants (only element 0's are non-zero, except after the last
        /// partial round).
        #[derive(Debug)]
        struct PartialRound {
            row0: [$limbs; 3],
            w: [$limbs; 2],
            next_constants: [$limbs; 3],
        }

        /// The optimised constants in the vector form.
        #[derive(Debug)]
        pub struct Constants {
            first_constants: [$limbs; 3],
            full: Vec<FullRound>,
            partial: Vec<PartialRound>,
        }

        fn row(x: &[Fr; 3]) -> [$limbs; 3] {
            x.map($constant)
        }

        /// The constants added after full round `r` (0..8) in the permutation's order: the next
        /// full round's, or the first partial round's after full round 3, or none after the last.
        fn after_full(opt: &Optimized, r: usize) -> [$limbs; 3] {
            let zero = <$limbs>::default();
            match r {
                _ if r + 1 == HALF_FULL => [$constant(opt.partial_constants[0]), zero, zero],
                _ if r + 1 == 2 * HALF_FULL => [zero; 3],
                _ => row(&opt.full_constants[r + 1]),
            }
        }

        fn derive(opt: &Optimized) -> Constants {
            let full = (0..2 * HALF_FULL)
                .map(|r| {
                    let m = if r + 1 == HALF_FULL {
                        &opt.pre_partial_mds
                    } else {
                        &opt.mds
                    };
                    FullRound {
                        matrix: [row(&m[0]), row(&m[1]), row(&m[2])],
                        next_constants: after_full(opt, r),
                    }
                })
                .collect();
            let partial = (0..PARTIAL)
                .map(|i| {
                    let s = &opt.sparse[i];
                    let zero = <$limbs>::default();
                    let next_constants = if i + 1 == PARTIAL {
                        row(&opt.full_constants[HALF_FULL])
                    } else {
                        [$constant(opt.partial_constants[i + 1]), zero, zero]
                    };
                    PartialRound {
                        row0: row(&[s.m00, s.v_hat[0], s.v_hat[1]]),
                        w: [$constant(s.w[0]), $constant(s.w[1])],
                        next_constants,
                    }
                })
                .collect();
            Constants {
                first_constants: row(&opt.full_constants[0]),
                full,
                partial,
            }
        }

        /// The vector-form constants, derived on first use.
        pub fn constants() -> &'static Constants {
            static CONSTANTS: OnceLock<Constants> = OnceLock::new();
            CONSTANTS.get_or_init(|| derive(optimized()))
        }

        /// One state element of eight lanes.
        type State = [Lanes; 3];

        #[inline]
        #[target_feature(enable = $features)]
        fn splat3(c: &[$limbs; 3]) -> [Lanes; 3] {
            [splat(&c[0]), splat(&c[1]), splat(&c[2])]
        }

        #[inline]
        #[target_feature(enable = $features)]
        fn full_round<const G: usize>(states: &mut [State; G], round: &FullRound) {
            for s in states.iter_mut() {
                let x = [v::pow5(&s[0]), v::pow5(&s[1]), v::pow5(&s[2])];
                for (i, out) in s.iter_mut().enumerate() {
                    let plus = splat(&round.next_constants[i]);
                    *out = v::dot3(&splat3(&round.matrix[i]), &x, Some(&plus));
                }
            }
        }

        #[inline]
        #[target_feature(enable = $features)]
        fn partial_round<const G: usize>(states: &mut [State; G], round: &PartialRound) {
            let next = splat3(&round.next_constants);
            for s in states.iter_mut() {
                let x0 = v::pow5(&s[0]);
                let t0 = v::dot3(&splat3(&round.row0), &[x0, s[1], s[2]], Some(&next[0]));
                s[1] = v::mul_plus(&splat(&round.w[0]), &x0, &[&s[1], &next[1]]);
                s[2] = v::mul_plus(&splat(&round.w[1]), &x0, &[&s[2], &next[2]]);
                s[0] = t0;
            }
        }

        /// The permutation of `8·G` states in the vector form (holding the first round's
        /// constants already).
        #[inline]
        #[target_feature(enable = $features)]
        fn permute_lanes<const G: usize>(c: &Constants, states: &mut [State; G]) {
            for round in &c.full[..HALF_FULL] {
                full_round(states, round);
            }
            for round in &c.partial {
                partial_round(states, round);
            }
            for round in &c.full[HALF_FULL..] {
                full_round(states, round);
            }
        }

        /// Converts, permutes and converts back `G` groups of eight states, element-major
        /// (`states[g][e][lane]`).
        #[target_feature(enable = $features)]
        fn convert_and_permute<const G: usize>(c: &Constants, states: &mut [[[Fr; LANES]; 3]; G]) {
            let first = splat3(&c.first_constants);
            let mut lanes: [State; G] = std::array::from_fn(|g| {
                std::array::from_fn(|e| $to_form(&states[g][e], Some(&first[e])))
            });
            permute_lanes(c, &mut lanes);
            for (out, state) in states.iter_mut().zip(lanes.iter()) {
                for (o, s) in out.iter_mut().zip(state.iter()) {
                    *o = $from_form(*s);
                }
            }
        }

        impl $token {
            /// `8·G` Poseidon permutations, element-major: `states[g][e][lane]` is element `e` of the
            /// state in lane `lane` of group `g`. Bit-identical to `crate::poseidon::permute_with`.
            pub fn permute_groups<const G: usize>(self, states: &mut [[[Fr; LANES]; 3]; G]) {
                let c = constants();
                // SAFETY: the token exists only when the CPU has every feature in `$features`.
                unsafe { convert_and_permute(c, states) }
            }

            /// One permutation (in lane 0 of a batch; tests and the convenience `crate::poseidon::permute`).
            pub fn permute(self, state: [Fr; 3]) -> [Fr; 3] {
                let mut batch = [state.map(|x| [x; LANES])];
                self.permute_groups(&mut batch);
                [batch[0][0][0], batch[0][1][0], batch[0][2][0]]
            }
        }

        #[cfg(test)]
        mod tests {
            // The 8·G-lane permutation against the 4×64 fast path and the reference, lane by lane.

            use super::*;
            use crate::arith::Portable;
            use crate::poseidon::permute_with;
            use crate::reference;
            use ark_ff::PrimeField;
            use proptest::prelude::*;

            fn check_groups<const G: usize>(ifma: $token, per_lane: &[[Fr; 3]]) {
                let mut batch = [[[Fr::ZERO; LANES]; 3]; G];
                for (n, s) in per_lane.iter().enumerate().take(G * LANES) {
                    for e in 0..3 {
                        batch[n / LANES][e][n % LANES] = s[e];
                    }
                }
                ifma.permute_groups(&mut batch);
                for (n, s) in per_lane.iter().enumerate().take(G * LANES) {
                    let got = [0, 1, 2].map(|e| batch[n / LANES][e][n % LANES]);
                    assert_eq!(got, permute_with(Portable, *s), "lane {n} of {s:?}");
                }
            }

            fn edge_states() -> Vec<[Fr; 3]> {
                let minus_one = Fr::ZERO.sub_mod(Fr::ONE);
                let big = Fr::from_be_bytes_mod_order(&[0xff; 32]); // 2^256 - 1 mod r
                let near_254 = Fr::from_limbs([u64::MAX, u64::MAX, u64::MAX, (1 << 62) - 1]);
                let vals = [Fr::ZERO, Fr::ONE, minus_one, big, near_254, Fr::from_u64(2)];
                let mut out = Vec::new();
                for &a in &vals {
                    for &b in &vals {
                        out.push([Fr::ZERO, a, b]);
                        out.push([a, b, minus_one]);
                    }
                }
                out
            }

            #[test]
            fn edge_states_match_portable_and_reference() {
                let Some(ifma) =
                    crate::$v::detect_or_skip(concat!(module_path!(), "::edge_states_match_portable_and_reference"))
                else {
                    return;
                };
                let states = edge_states();
                for chunk in states.chunks(2 * LANES) {
                    let mut padded = chunk.to_vec();
                    padded.resize(2 * LANES, chunk[0]);
                    check_groups::<1>(ifma, &padded);
                    check_groups::<2>(ifma, &padded);
                }
                // The spec's vector: Poseidon([0, 1, 2]).
                let s = [Fr::ZERO, Fr::ONE, Fr::from_u64(2)];
                let ark = |x: Fr| ark_bn254::Fr::from_be_bytes_mod_order(&x.to_be_bytes());
                let want = reference::permute(s.map(ark)).map(|x| reference::to_be_bytes(&x));
                assert_eq!(ifma.permute(s).map(|x| x.to_be_bytes()), want);
            }

            proptest! {
                #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

                #[test]
                fn random_states_match_portable(seeds in prop::collection::vec(any::<[[u8; 32]; 3]>(), 2 * LANES)) {
                    let Some(ifma) = crate::$v::detect_or_skip(concat!(module_path!(), "::random_states_match_portable")) else {
                        return Ok(());
                    };
                    let states: Vec<[Fr; 3]> = seeds
                        .iter()
                        .map(|s| s.map(|x| Fr::from_be_bytes_mod_order(&x)))
                        .collect();
                    check_groups::<1>(ifma, &states);
                    check_groups::<2>(ifma, &states);
                }
            }
        }
    };
}

pub(crate) use lane_permutation;

/// Expands, in a vector module (`crate::ifma`, `crate::avx512f`), to the lane operations built on
/// its `Wide` column sums (`zero`, `add_product`, `square`, `add_high`, `redc`) and its
/// `load` / `store` / `splat`: `mul`, `mul_plus`, `square`, `dot3`, `pow5`; the conversions
/// `$to_form` / `$from_form` between canonical 4×64 elements (`a·2^256`) and the module's form
/// (`a·R`); the NTT's sliced helpers (`sliced_from_fr`, `butterfly`, `canonical_integers`; the
/// module gives `normalize`, `FOUR_R_SPREAD`, `ONE_INTEGER` and `Sliced`); the token's `mul`,
/// `square`, `pow5`, `dot3` and raw (limb-level, for the bound tests) methods; and the tests of
/// those methods against the portable field (the module keeps its raw-bound tests and gives
/// `detect_or_skip`). All lazy: a product of values below `A·r` and `B·r` reduces to below
/// `(A·B·r/R + 1)·r`; `r/R` is below 1/84 for IFMA, 1/168 for AVX-512F. `$to_constant` is the
/// integer whose Montgomery product with `a·2^256` is `a·R`; `$from_constant` is `2^256 mod r`.
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
        token: $token:ident $(,)?
    ) => {
        #[cfg(test)]
        mod lane_tests {
            // The eight-lane operations against the portable field and ark-ff: every pair of
            // edge values, and random canonical inputs.

            use super::*;
            use crate::arith::{Arith, Portable};
            use crate::field::test_values::{self, edges};
            use ark_ff::PrimeField;
            use proptest::prelude::*;

            fn ark(x: Fr) -> ark_bn254::Fr {
                ark_bn254::Fr::from_be_bytes_mod_order(&x.to_be_bytes())
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

/// Expands, in an NTT module, to the vector NTT of [`crate::ntt_ifma`]'s design for the vector
/// module `$v` (its `sliced_from_fr`, `butterfly`, `canonical_integers`, `Sliced`, `LIMBS`,
/// `LANES`) compiled with `$features`: the twiddle vectors, `$token::ntt_to_bytes` and its tests.
macro_rules! lane_ntt {
    (
        features: $features:literal,
        vector: $v:ident,
        constant: $constant:path,
        token: $token:ident $(,)?
    ) => {
        use crate::arith::Portable;
        use crate::field::Fr;
        use crate::$v::{self as v, Sliced, LANES};
        use crate::ntt::{bit_reverse, stages_adx, stages_with, twiddles};
        use crate::{MASK_BYTES, WORDS_PER_KV};
        use std::sync::OnceLock;

        /// The first half-block length done on vectors: from here a vector of eight consecutive elements
        /// holds eight butterflies' inputs of the same side.
        const VECTOR_FROM_HALF: usize = LANES;
        /// Vectors of eight elements in one KV.
        const VECTORS: usize = WORDS_PER_KV / LANES;

        /// The twiddles of the vector stages in the vector form, sliced: stage by stage (half-block 8, 16, ...,
        /// 2048), the `half / 8` vectors of `ω^(k·step)` for `k = 0..half`.
        fn twiddle_vectors() -> &'static [Sliced] {
            static TWIDDLES: OnceLock<Vec<Sliced>> = OnceLock::new();
            TWIDDLES.get_or_init(|| {
                let tw = twiddles();
                let mut out = Vec::with_capacity(VECTORS);
                let mut half = VECTOR_FROM_HALF;
                while half < WORDS_PER_KV {
                    let step = WORDS_PER_KV / (2 * half);
                    for k in 0..half / LANES {
                        let mut sliced = [[0u64; LANES]; v::LIMBS];
                        for lane in 0..LANES {
                            let c = $constant(tw[(k * LANES + lane) * step]);
                            for (row, limb) in sliced.iter_mut().zip(c) {
                                row[lane] = limb;
                            }
                        }
                        out.push(sliced);
                    }
                    half *= 2;
                }
                out
            })
        }

        /// The nine vector stages, then the canonical big-endian words into `out`.
        #[target_feature(enable = $features)]
        fn vector_stages_to_bytes(values: &[Fr; WORDS_PER_KV], out: &mut [u8; MASK_BYTES]) {
            let mut data: Vec<Sliced> = values
                .chunks_exact(LANES)
                .map(|c| v::sliced_from_fr(c.try_into().expect("eight elements")))
                .collect();
            let tw = twiddle_vectors();
            let mut stage_start = 0;
            let mut half_vectors = VECTOR_FROM_HALF / LANES;
            while half_vectors < VECTORS {
                let stage_tw = &tw[stage_start..stage_start + half_vectors];
                for block in data.chunks_exact_mut(2 * half_vectors) {
                    let (lo, hi) = block.split_at_mut(half_vectors);
                    for ((a, b), w) in lo.iter_mut().zip(hi.iter_mut()).zip(stage_tw) {
                        v::butterfly(a, b, w);
                    }
                }
                stage_start += half_vectors;
                half_vectors *= 2;
            }
            for (words, x) in out.chunks_exact_mut(32 * LANES).zip(&data) {
                for (word, limbs) in words.chunks_exact_mut(32).zip(v::canonical_integers(x)) {
                    for (bytes, limb) in word.chunks_exact_mut(8).zip(limbs.iter().rev()) {
                        bytes.copy_from_slice(&limb.to_be_bytes());
                    }
                }
            }
        }

        impl $token {
            /// The mask words of the 4096 coefficients in `values` (which the scalar stages overwrite):
            /// the NTT with its last nine stages on vectors, bit-identical to `crate::ntt::ntt_in_place`
            /// followed by big-endian serialisation.
            pub fn ntt_to_bytes(self, values: &mut [Fr; WORDS_PER_KV], out: &mut [u8; MASK_BYTES]) {
                bit_reverse(values);
                match crate::adx::Adx::detect() {
                    Some(adx) => stages_adx(adx, values, 1, VECTOR_FROM_HALF),
                    None => stages_with(Portable, values, 1, VECTOR_FROM_HALF),
                }
                // SAFETY: the token exists only when the CPU has every feature in `$features`.
                unsafe { vector_stages_to_bytes(values, out) }
            }
        }

        #[cfg(test)]
        mod tests {
            // The vector NTT against the scalar one on random and extreme inputs.

            use super::*;
            use crate::ntt::ntt_in_place_with;
            use proptest::prelude::*;

            fn check(ifma: $token, values: &[Fr; WORDS_PER_KV]) {
                let mut want = Box::new(*values);
                ntt_in_place_with(Portable, &mut want);
                let mut scratch = Box::new(*values);
                let mut got = vec![0u8; MASK_BYTES];
                ifma.ntt_to_bytes(&mut scratch, (&mut got[..]).try_into().unwrap());
                for (j, (word, v)) in got.chunks_exact(32).zip(want.iter()).enumerate() {
                    assert_eq!(word, &v.to_be_bytes()[..], "word {j}");
                }
            }

            #[test]
            fn extreme_inputs_match_the_scalar_ntt() {
                let Some(ifma) =
                    crate::$v::detect_or_skip(concat!(module_path!(), "::extreme_inputs_match_the_scalar_ntt"))
                else {
                    return;
                };
                let minus_one = Fr::ZERO.sub_mod(Fr::ONE);
                for fill in [
                    Fr::ZERO,
                    Fr::ONE,
                    minus_one,
                    Fr::from_be_bytes_mod_order(&[0xff; 32]),
                ] {
                    check(ifma, &[fill; WORDS_PER_KV]);
                }
                // Alternating r-1 and 0 / 1: the differences are at their largest in every stage.
                let alternating: [Fr; WORDS_PER_KV] = std::array::from_fn(|i| {
                    if i % 2 == 0 {
                        minus_one
                    } else {
                        Fr::from_u64(i as u64 % 3)
                    }
                });
                check(ifma, &alternating);
            }

            proptest! {
                #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

                #[test]
                fn random_inputs_match_the_scalar_ntt(seed in any::<u64>()) {
                    let Some(ifma) = crate::$v::detect_or_skip(concat!(module_path!(), "::random_inputs_match_the_scalar_ntt")) else {
                        return Ok(());
                    };
                    let mut s = seed | 1;
                    let values: [Fr; WORDS_PER_KV] = std::array::from_fn(|_| {
                        let mut limbs = [0u64; 4];
                        for l in limbs.iter_mut() {
                            s ^= s << 13;
                            s ^= s >> 7;
                            s ^= s << 17;
                            *l = s;
                        }
                        Fr::from_limbs(limbs)
                    });
                    check(ifma, &values);
                }
            }
        }
    };
}

pub(crate) use lane_ntt;
