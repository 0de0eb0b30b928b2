//! Layer 3, the NTT on vectors: [`lane_ntt!`], the vector NTT written once for every vector
//! field and expanded by each NTT module ([`crate::ntt_ifma`], [`crate::ntt_avx512f`]) with its
//! CPU features. It runs the scalar NTT's bit reversal and first three stages (`crate::ntt`),
//! then the last nine stages on the vector module's sliced butterflies (layer 2).

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
            /// the NTT with its last nine stages on vectors, bit-identical to `crate::ntt::ntt_in_place_with`
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
