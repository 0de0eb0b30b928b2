//! Eight BN254 Fr elements at once on AVX-512F without IFMA (`vpmuludq`, 32×32 → 64 bits per
//! lane), for CPUs that have `avx512f` but not `avx512ifma` (checked at run time, see
//! [`Avx512f::detect`]); CPUs with IFMA run [`crate::ifma`] instead, which needs a third of the
//! multiplies.
//!
//! **Layout.** An element is nine 29-bit limbs (little-endian, 9 × 29 = 261 bits); a [`Lanes`]
//! holds eight elements limb-sliced: vector `j` is limb `j` of lanes 0..8. `vpmuludq` multiplies
//! the low 32 bits of two 64-bit lanes, so a multiplicand's limbs must be below 2^29
//! ("normalised"; below 2^32 would do for the product, 2^29 keeps the column sums in range).
//!
//! **Montgomery form.** Elements are kept as `a·2^261 mod r` (`R = 2^261`, nine 29-bit reduction
//! steps), converted from and to the `a·2^256` of [`crate::field`] once per permutation batch
//! ([`to_form`], [`from_form`]), as [`crate::ifma`] does with its `2^260`.
//!
//! **Lazy reduction**, as in [`crate::ifma`]: a REDC result is below `T / 2^261 + r`, and
//! `r / 2^261 < 1/168`, so inputs below `A·r` and `B·r` give a result below `(A·B/168 + 1)·r`.
//! Every bound [`crate::poseidon_ifma`] states with `1/84` holds here a fortiori, and every value
//! it keeps (below `84r < 2^260`) is a valid multiplicand here (below `2^261`). Column sums: a
//! product of normalised limbs is below 2^58; a column takes at most 27 of them (a three-term dot
//! product), 9 reduction products, a carry below 2^35 and two addends below 2^30: below
//! `36·2^58 + 2^36 < 2^64`, so no column overflows.
//!
//! **Safety.** Every vector function is `#[target_feature(enable = "avx512f")]`; safe code reaches
//! them only through an [`Avx512f`] token, which exists only when the CPU has AVX-512F. The only
//! `unsafe` blocks are the token-checked entry points and the unaligned loads/stores between
//! `[u64; 8]` arrays and vectors.
//!
//! Layer 2 of the crate (the lane operations); it imports only from this layer or below.

use crate::field::{Fr, MODULUS};
use core::arch::x86_64::{
    __m512i, _mm512_add_epi64, _mm512_and_si512, _mm512_loadu_epi64, _mm512_mul_epu32,
    _mm512_set1_epi64, _mm512_setzero_si512, _mm512_slli_epi64, _mm512_srli_epi64,
    _mm512_storeu_epi64,
};

/// Elements per vector.
pub const LANES: usize = 8;
/// 29-bit limbs per element.
pub const LIMBS: usize = 9;
const LIMB_BITS: u32 = 29;
const LIMB_MASK: u64 = (1 << LIMB_BITS) - 1;

/// An element in 29-bit limbs (scalar; constants are kept like this and broadcast on use).
pub type Limbs29 = [u64; LIMBS];

/// r in 29-bit limbs.
const R29: Limbs29 = to_limbs29(MODULUS);
/// `-r^{-1} mod 2^29`.
const INV29: u64 = crate::field::INV & LIMB_MASK;
/// `2^266 mod r` as an integer: the Montgomery product of `a·2^256` with it is `a·2^261`.
const TO_FORM: Limbs29 = to_limbs29(Fr::from_limbs([1 << 10, 0, 0, 0]).0);
/// `2^256 mod r` as an integer: the Montgomery product of `a·2^261` with it is `a·2^256`.
const FROM_FORM: Limbs29 = to_limbs29(Fr::ONE.0);

/// `168·r < 2^261`: the headroom the lazy bounds rely on (`r / 2^261 < 1/168`).
const _: () = assert!((MODULUS[3] as u128 + 1) * 168 <= 1 << 69);

/// A value below 2^256 (four 64-bit limbs) as nine 29-bit limbs (the top one holds 24 bits).
pub const fn to_limbs29(x: [u64; 4]) -> Limbs29 {
    let mut out = [0u64; LIMBS];
    let mut k = 0;
    while k < LIMBS {
        let bit = k as u32 * LIMB_BITS;
        let (word, shift) = ((bit / 64) as usize, bit % 64);
        let mut v = x[word] >> shift;
        if shift + LIMB_BITS > 64 && word + 1 < 4 {
            v |= x[word + 1] << (64 - shift);
        }
        out[k] = v & LIMB_MASK;
        k += 1;
    }
    out
}

/// Nine normalised 29-bit limbs of a value below 2^256 as four 64-bit limbs.
pub const fn from_limbs29(x: Limbs29) -> [u64; 4] {
    let mut out = [0u64; 4];
    let mut k = 0;
    while k < LIMBS {
        let bit = k as u32 * LIMB_BITS;
        let (word, shift) = ((bit / 64) as usize, bit % 64);
        out[word] |= x[k] << shift;
        if shift + LIMB_BITS > 64 && word + 1 < 4 {
            out[word + 1] |= x[k] >> (64 - shift);
        }
        k += 1;
    }
    out
}

/// The form `a·2^261 mod r` (canonical) of an element, for constants: `32·(a·2^256)`.
pub fn form_constant(x: Fr) -> Limbs29 {
    let mut y = x;
    for _ in 0..5 {
        y = y.add_mod(y);
    }
    to_limbs29(y.0)
}

/// `$body` nine times with `$i` the constant 0, 1, ..., 8 (or once per listed constant, the `@`
/// form): LLVM does not fully unroll the 9×9
/// loops of a product, and with constant indices the 18 column sums live in registers instead of
/// memory (measured: the loops cost about 1.5x). Exported (hidden) for `vector-mul-floor`.
#[doc(hidden)]
#[macro_export]
macro_rules! for9 {
    ($i:ident, $body:block) => {{
        $crate::for9!(@ $i, $body, 0 1 2 3 4 5 6 7 8);
    }};
    (@ $i:ident, $body:block, $($n:literal)*) => {
        $({
            const $i: usize = $n;
            $body
        })*
    };
}

/// Proof that this CPU runs AVX-512F: the only way to reach the vector code, so safe code cannot
/// execute it on a CPU without those instructions.
#[derive(Clone, Copy, Debug)]
pub struct Avx512f(());

impl Avx512f {
    /// `Some` when the CPU has `avx512f` (std caches CPUID).
    pub fn detect() -> Option<Avx512f> {
        std::arch::is_x86_feature_detected!("avx512f").then_some(Avx512f(()))
    }

    /// `n` rounds of `x = x·y` on `C` independent chains of eight lanes, in the form throughout
    /// (what `vector-mul-floor` times; the result only keeps the work from being optimised away).
    #[doc(hidden)]
    pub fn mul_chain<const C: usize>(self, n: u64) -> [Fr; LANES] {
        #[target_feature(enable = "avx512f")]
        fn run<const C: usize>(n: u64) -> [Fr; LANES] {
            let seed: [Fr; LANES] = std::array::from_fn(|i| Fr::from_u64(i as u64 + 7));
            let y = to_form(&seed, None);
            let mut xs = [y; C];
            for _ in 0..n {
                for x in xs.iter_mut() {
                    *x = mul(x, &y);
                }
            }
            let mut acc = xs[0];
            for x in &xs[1..] {
                acc = mul(&acc, x);
            }
            from_form(acc)
        }
        // SAFETY: reached only through an `Avx512f` token, so the CPU has avx512f.
        unsafe { run::<C>(n) }
    }
}

/// Eight elements, limb-sliced: `self.0[j]` holds limb `j` of each lane.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lanes(pub(crate) [__m512i; LIMBS]);

/// Eighteen 64-bit column sums of eight 522-bit products (unnormalised).
#[derive(Clone, Copy)]
struct Wide([__m512i; 2 * LIMBS]);

/// `x` in every lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn broadcast(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

/// A scalar constant in every lane.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn splat(c: &Limbs29) -> Lanes {
    Lanes(std::array::from_fn(|j| broadcast(c[j])))
}

/// Eight lanes from per-lane limbs.
#[inline]
#[target_feature(enable = "avx512f")]
fn load(x: &[Limbs29; LANES]) -> Lanes {
    let mut out = [_mm512_setzero_si512(); LIMBS];
    for (j, v) in out.iter_mut().enumerate() {
        let row: [u64; LANES] = std::array::from_fn(|lane| x[lane][j]);
        // SAFETY: `row` is eight contiguous u64 (64 bytes), the unaligned load reads exactly them.
        *v = unsafe { _mm512_loadu_epi64(row.as_ptr().cast()) };
    }
    Lanes(out)
}

/// Per-lane limbs from eight lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn store(x: &Lanes) -> [Limbs29; LANES] {
    let mut out = [[0u64; LIMBS]; LANES];
    for (j, v) in x.0.iter().enumerate() {
        let mut row = [0u64; LANES];
        // SAFETY: `row` is eight contiguous u64 (64 bytes), the unaligned store writes exactly them.
        unsafe { _mm512_storeu_epi64(row.as_mut_ptr().cast(), *v) };
        for (lane, limbs) in out.iter_mut().enumerate() {
            limbs[j] = row[lane];
        }
    }
    out
}

impl Wide {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn zero() -> Wide {
        Wide([_mm512_setzero_si512(); 2 * LIMBS])
    }

    /// `self += a·b`: 81 limb products into the columns.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn add_product(&mut self, a: &Lanes, b: &Lanes) {
        for9!(I, {
            for9!(J, {
                self.0[I + J] = _mm512_add_epi64(self.0[I + J], _mm512_mul_epu32(a.0[I], b.0[J]));
            });
        });
    }

    /// `a²` from 45 limb products instead of 81: the 36 cross products once, doubled, plus the
    /// 9 diagonal squares.
    // The unrolled indices are constants: `J > I` picks the cross products at compile time.
    #[allow(clippy::absurd_extreme_comparisons)]
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn square(a: &Lanes) -> Wide {
        let mut t = [_mm512_setzero_si512(); 2 * LIMBS];
        for9!(I, {
            for9!(J, {
                if J > I {
                    t[I + J] = _mm512_add_epi64(t[I + J], _mm512_mul_epu32(a.0[I], a.0[J]));
                }
            });
        });
        for9!(I, {
            let diagonal = _mm512_mul_epu32(a.0[I], a.0[I]);
            t[2 * I] = _mm512_add_epi64(_mm512_slli_epi64::<1>(t[2 * I]), diagonal);
            t[2 * I + 1] = _mm512_slli_epi64::<1>(t[2 * I + 1]);
        });
        Wide(t)
    }

    /// `self += x·2^261`: after the reduction's division by 2^261 this is a plain `+ x`, carried
    /// together with the product (lazy addition). `x`'s limbs may be unnormalised (`< 2^30`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn add_high(&mut self, x: &Lanes) {
        for9!(J, {
            self.0[LIMBS + J] = _mm512_add_epi64(self.0[LIMBS + J], x.0[J]);
        });
    }

    /// Montgomery reduction `(T + m·r) / 2^261` (nine 29-bit steps, `m_i = T_i·(-r^{-1})` mod
    /// 2^29), then one carry pass. Not canonical: below `T/2^261 + r`; the caller's bounds keep
    /// it below 2^261, so the top limb ends normalised too.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn redc(self) -> Lanes {
        let mut t = self.0;
        let inv = broadcast(INV29);
        let mask = broadcast(LIMB_MASK);
        let r = splat(&R29);
        for9!(I, {
            // `vpmuludq` reads the low 32 bits of T_i, enough for T_i·inv mod 2^29.
            let m = _mm512_and_si512(_mm512_mul_epu32(t[I], inv), mask);
            for9!(J, {
                t[I + J] = _mm512_add_epi64(t[I + J], _mm512_mul_epu32(m, r.0[J]));
            });
            // T_i is now a multiple of 2^29; its high bits carry into the next column.
            t[I + 1] = _mm512_add_epi64(t[I + 1], _mm512_srli_epi64::<LIMB_BITS>(t[I]));
        });
        // One carry pass over the top nine columns; the result is below 2^261, so the carry out
        // of the top limb is zero.
        for9!(@ K, {
            t[LIMBS + K + 1] =
                _mm512_add_epi64(t[LIMBS + K + 1], _mm512_srli_epi64::<LIMB_BITS>(t[LIMBS + K]));
        }, 0 1 2 3 4 5 6 7);
        let mut out = [_mm512_setzero_si512(); LIMBS];
        for9!(K, {
            out[K] = _mm512_and_si512(t[LIMBS + K], mask);
        });
        Lanes(out)
    }
}

/// One carry pass: every limb but the top one below 2^29 (the top one too when the value is below
/// 2^261).
#[inline]
#[target_feature(enable = "avx512f")]
fn normalize(mut x: [__m512i; LIMBS]) -> Lanes {
    let mask = broadcast(LIMB_MASK);
    for9!(@ J, {
        x[J + 1] = _mm512_add_epi64(x[J + 1], _mm512_srli_epi64::<LIMB_BITS>(x[J]));
        x[J] = _mm512_and_si512(x[J], mask);
    }, 0 1 2 3 4 5 6 7);
    Lanes(x)
}

/// Eight elements' limbs in memory as one vector set: `sliced[j][lane]` is limb `j` of `lane`
/// (the NTT keeps its 4096 elements like this between stages).
pub(crate) type Sliced = [[u64; LANES]; LIMBS];

/// `4r` with each limb below the top one raised by 2^29, borrowed from the limb above (as
/// [`crate::ifma`]'s with 2^52): `x + FOUR_R_SPREAD - t` is non-negative limb by limb for
/// normalised `x` and any normalised `t < 2r`. `4r < 2^256` fits the 4×64 conversion.
const FOUR_R_SPREAD: Limbs29 = {
    let l = to_limbs29(FOUR_R);
    let mut out = [0u64; LIMBS];
    out[0] = l[0] + (1 << LIMB_BITS);
    let mut j = 1;
    while j < LIMBS - 1 {
        out[j] = l[j] + (1 << LIMB_BITS) - 1;
        j += 1;
    }
    out[LIMBS - 1] = l[LIMBS - 1] - 1;
    out
};
/// `4r` as four 64-bit limbs (`r < 2^254`, so no fifth limb).
const FOUR_R: [u64; 4] = {
    assert!(MODULUS[3] < 1 << 62);
    [
        MODULUS[0] << 2,
        (MODULUS[1] << 2) | (MODULUS[0] >> 62),
        (MODULUS[2] << 2) | (MODULUS[1] >> 62),
        (MODULUS[3] << 2) | (MODULUS[2] >> 62),
    ]
};
/// The top limb of any value below `2r` is below `FOUR_R_SPREAD`'s.
const _: () = {
    let two_r = [
        MODULUS[0] << 1,
        (MODULUS[1] << 1) | (MODULUS[0] >> 63),
        (MODULUS[2] << 1) | (MODULUS[1] >> 63),
        (MODULUS[3] << 1) | (MODULUS[2] >> 63),
    ];
    assert!(to_limbs29(two_r)[LIMBS - 1] < FOUR_R_SPREAD[LIMBS - 1]);
};

/// The integer 1: the Montgomery product of `a·2^261` with it is `a` itself (canonical after one
/// conditional subtraction), so the NTT's results need no second conversion.
const ONE_INTEGER: Limbs29 = [1, 0, 0, 0, 0, 0, 0, 0, 0];

crate::lanes::lane_arith! {
    features: "avx512f",
    limbs: Limbs29,
    to_limbs: to_limbs29,
    from_limbs: from_limbs29,
    to_constant: TO_FORM,
    from_constant: FROM_FORM,
    to_form: to_form,
    from_form: from_form,
    token: Avx512f,
    lacks: "avx512f",
    r_fraction: 168,
}

#[cfg(test)]
mod tests {
    //! The eight-lane AVX-512F multiply against the portable field and ark-ff: edge values,
    //! random canonical inputs, and raw lazily reduced inputs up to the largest bound the
    //! permutation keeps (`crate::poseidon_lanes`).

    use super::lane_tests::{
        ark, ark_of_limbs, check_raw, check_raw_operations, in_units_of_r, inv_r,
    };
    use super::*;
    use crate::field::test_values::edges;
    use ark_ff::Field;
    use proptest::prelude::*;

    /// A raw value below `bound·r` (`bound ≤ 168`) with normalised limbs: `k·r - 1` or
    /// `k·r - noise` (noise below r), so both the extremes and the bulk are hit.
    fn raw_below(bound: u64) -> impl Strategy<Value = Limbs29> {
        (1..=bound, any::<[u64; 4]>(), any::<bool>()).prop_map(move |(k, noise, extreme)| {
            // k·r in 29-bit limbs, then minus the noise, limb by limb with borrows.
            let r = to_limbs29(MODULUS);
            let mut v = [0u64; LIMBS];
            let mut carry = 0u64;
            for j in 0..LIMBS {
                let t = r[j] * k + carry;
                v[j] = t & LIMB_MASK;
                carry = t >> LIMB_BITS;
            }
            assert_eq!(carry, 0, "k·r below 2^261");
            let sub = if extreme {
                to_limbs29([1, 0, 0, 0])
            } else {
                to_limbs29([noise[0], noise[1], noise[2], noise[3] % MODULUS[3]])
            };
            let mut borrow = 0u64;
            for j in 0..LIMBS {
                let d = v[j].wrapping_sub(sub[j]).wrapping_sub(borrow);
                borrow = (d >> 63) & 1;
                v[j] = d & LIMB_MASK;
            }
            assert_eq!(borrow, 0, "k·r - noise is positive");
            v
        })
    }

    #[test]
    fn limb_conversions_and_constants() {
        for x in edges() {
            assert_eq!(from_limbs29(to_limbs29(x.0)), x.0);
            let two_261 = ark_bn254::Fr::from(2u64).pow([261]);
            assert_eq!(ark_of_limbs(&form_constant(x)), ark(x) * two_261);
        }
        let top = [u64::MAX; 4];
        assert_eq!(from_limbs29(to_limbs29(top)), top);
        assert_eq!(R29[0].wrapping_mul(INV29) & LIMB_MASK, LIMB_MASK); // r·(-r^-1) = -1
        let two = ark_bn254::Fr::from(2u64);
        assert_eq!(ark_of_limbs(&TO_FORM), two.pow([266]));
        assert_eq!(ark_of_limbs(&FROM_FORM), two.pow([256]));
    }

    #[test]
    fn large_multiplicands_stay_within_the_bound() {
        let Some(token) = detect_or_skip("avx512f::large_multiplicands_stay_within_the_bound")
        else {
            return;
        };
        // 160r - 1, far above anything the permutation keeps (84r): the product reduces to
        // below (160·160/168 + 1)·r < 154r, still below 2^261 > 168r.
        let r = to_limbs29(MODULUS);
        let mut big = [0u64; LIMBS];
        let mut carry = 0u64;
        for j in 0..LIMBS {
            let t = r[j] * 160 + carry;
            big[j] = t & LIMB_MASK;
            carry = t >> LIMB_BITS;
        }
        big[0] -= 1; // r is odd: no borrow
        let a = [big; LANES];
        let v = ark_of_limbs(&big);
        let units = in_units_of_r(&big);
        for got in token
            .mul_raw(&a, &a)
            .iter()
            .chain(token.square_raw(&a).iter())
        {
            check_raw(got, v * v * inv_r(), units * units / 168.0 + 1.0);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        /// Lazily reduced inputs as large as the permutation keeps them (`t1, t2 < 61r` in the
        /// partial rounds, canonical constants, addends below `2r`), and up to `84r`: right mod
        /// r, normalised, within `(A·B/168 + 1)·r`.
        #[test]
        fn raw_lazy_inputs_are_right_and_bounded(
            a in prop::array::uniform8(raw_below(84)),
            b in prop::array::uniform8(raw_below(61)),
            c in prop::array::uniform8(raw_below(1)),
            p in prop::array::uniform8(raw_below(2)),
        ) {
            let Some(token) = detect_or_skip("avx512f::raw_lazy_inputs_are_right_and_bounded") else {
                return Ok(());
            };
            check_raw_operations(token, &a, &b, &c, &p);
        }
    }
}
