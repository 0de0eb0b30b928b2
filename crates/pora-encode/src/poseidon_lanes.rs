//! Layer 4, the permutation on vectors: [`lane_permutation!`], the width-3 Poseidon permutation
//! over eight-lane vectors written once for every vector field ([`crate::ifma`]'s 52-bit limbs,
//! [`crate::avx512f`]'s 29-bit limbs) and expanded by each permutation module
//! ([`crate::poseidon_ifma`], [`crate::poseidon_avx512f`]) with its CPU features: the constants,
//! the rounds and the batch entry point. It builds on the vector module's lane operations
//! (layer 2, `crate::lanes`: `Lanes`, `splat`, `pow5`, `dot3`, `mul_plus`); the invocations name
//! its limb type, its constant conversion and its conversions into and out of its Montgomery
//! form.
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

            /// One permutation (in lane 0 of a batch; tests and the convenience `crate::kernel::Kernel::permute`).
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
