//! Eight BN254 Fr elements at once on AVX-512 IFMA (`vpmadd52luq` / `vpmadd52huq`), used only on
//! CPUs that have `avx512f` and `avx512ifma` (checked at run time, see [`Ifma::detect`]).
//!
//! **Layout.** An element is five 52-bit limbs (little-endian, 5 × 52 = 260 bits); a [`Lanes`]
//! holds eight elements limb-sliced: vector `j` is limb `j` of lanes 0..8. IFMA multiplies the low
//! 52 bits of two 64-bit lanes into a 104-bit product and adds its low or high 52 bits to a 64-bit
//! accumulator, so a limb must be below 2^52 whenever it is a multiplicand ("normalised"); sums of
//! products sit in 64-bit columns with 12 bits of headroom and are carried only at the end.
//!
//! **Montgomery form.** Elements are kept as `a·2^260 mod r` (the "IFMA form", `R' = 2^260`, five
//! 52-bit reduction steps), not as the `a·2^256` of [`crate::field`]. The two forms meet only at
//! the boundaries: a Montgomery product with `2^264 mod r` takes `a·2^256` to `a·2^260`, one with
//! `2^256 mod r` takes it back ([`to_ifma`], [`from_ifma`]), once per permutation batch.
//!
//! **Lazy reduction.** Values are not kept canonical: a product's REDC result is
//! `(T + m·r) / 2^260 < T / 2^260 + r` with `m < 2^260`, and `r / 2^260 < 1/84`, so inputs below
//! `A·r` and `B·r` give a result below `(A·B/84 + 1)·r` — below `2r` whenever `A·B ≤ 84`, with no
//! final subtraction. Additions are folded into the high half of a product's column sums before
//! the carries ([`Wide::add_high`]), so they cost one vector add per limb and no carry pass. A value
//! is a valid multiplicand while it is below `2^260 > 84·r` with normalised limbs; the callers
//! ([`crate::poseidon_ifma`], [`crate::ntt_ifma`]) state the bound of each value they keep. The
//! column sums stay below `2^58` (at most 27 product halves, 10 reduction halves and two addends
//! of `< 2^53` per column), far from overflowing 64 bits. Only the conversions out
//! ([`from_ifma`], [`canonical_integers`]) make a value canonical (`< r`), so the results are
//! bit-identical to the 4×64 paths.
//!
//! **Safety.** Every vector function is `#[target_feature(enable = "avx512f,avx512ifma")]`; safe
//! code reaches them only through an [`Ifma`] token, which exists only when the CPU has both
//! features. The only `unsafe` blocks are the token-checked entry points and the unaligned
//! loads/stores between `[u64; 8]` arrays and vectors.
//!
//! Layer 2 of the crate (the lane operations); it imports only from this layer or below.

use crate::field::{Fr, INV, MODULUS};
use core::arch::x86_64::{
    __m512i, _mm512_add_epi64, _mm512_and_si512, _mm512_loadu_epi64, _mm512_madd52hi_epu64,
    _mm512_madd52lo_epu64, _mm512_set1_epi64, _mm512_setzero_si512, _mm512_srli_epi64,
    _mm512_storeu_epi64,
};

/// Elements per vector.
pub const LANES: usize = 8;
/// 52-bit limbs per element.
pub const LIMBS: usize = 5;
const LIMB_BITS: u32 = 52;
const LIMB_MASK: u64 = (1 << LIMB_BITS) - 1;

/// An element in 52-bit limbs (scalar; constants are kept like this and broadcast on use).
pub type Limbs52 = [u64; LIMBS];

/// r in 52-bit limbs.
const R52: Limbs52 = to_limbs52(MODULUS);
/// `-r^{-1} mod 2^52`: the low 52 bits of the 64-bit factor.
const INV52: u64 = INV & LIMB_MASK;
/// `2^264 mod r` as an integer: the Montgomery product of `a·2^256` with it is `a·2^260`.
const TO_IFMA: Limbs52 = to_limbs52(Fr::from_limbs([256, 0, 0, 0]).0);
/// `2^256 mod r` as an integer: the Montgomery product of `a·2^260` with it is `a·2^256`.
const FROM_IFMA: Limbs52 = to_limbs52(Fr::ONE.0);

/// `84·r < 2^260`: the headroom every lazy bound in this module and its callers relies on.
const _: () = assert!(times_small(MODULUS, 84)[4] < 1 << (260 - 256));

/// `x·k` as five 64-bit words (compile-time check only).
const fn times_small(x: [u64; 4], k: u64) -> [u64; 5] {
    let mut out = [0u64; 5];
    let mut carry = 0u128;
    let mut i = 0;
    while i < 4 {
        let t = (x[i] as u128) * (k as u128) + carry;
        out[i] = t as u64;
        carry = t >> 64;
        i += 1;
    }
    out[4] = carry as u64;
    out
}

/// A 256-bit integer (four 64-bit limbs) as five 52-bit limbs (the top one holds 48 bits).
pub const fn to_limbs52(x: [u64; 4]) -> Limbs52 {
    [
        x[0] & LIMB_MASK,
        ((x[0] >> 52) | (x[1] << 12)) & LIMB_MASK,
        ((x[1] >> 40) | (x[2] << 24)) & LIMB_MASK,
        ((x[2] >> 28) | (x[3] << 36)) & LIMB_MASK,
        x[3] >> 16,
    ]
}

/// Five normalised 52-bit limbs of a value below 2^256 as four 64-bit limbs.
pub const fn from_limbs52(x: Limbs52) -> [u64; 4] {
    [
        x[0] | (x[1] << 52),
        (x[1] >> 12) | (x[2] << 40),
        (x[2] >> 24) | (x[3] << 28),
        (x[3] >> 36) | (x[4] << 16),
    ]
}

/// The IFMA form `a·2^260 mod r` (canonical) of an element, for constants: `16·(a·2^256)`.
pub fn ifma_constant(x: Fr) -> Limbs52 {
    let mut y = x;
    for _ in 0..4 {
        y = y.add_mod(y);
    }
    to_limbs52(y.0)
}

/// Proof that this CPU runs AVX-512F and AVX-512 IFMA: the only way to reach the vector code, so
/// safe code cannot execute it on a CPU without those instructions.
#[derive(Clone, Copy, Debug)]
pub struct Ifma(());

impl Ifma {
    /// `Some` when the CPU has `avx512f` and `avx512ifma` (std caches CPUID; callers still detect
    /// once per mask).
    pub fn detect() -> Option<Ifma> {
        let ok = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512ifma");
        ok.then_some(Ifma(()))
    }
}

/// The lane operation [`Ifma::chain`] repeats (the micro-benchmark's choice).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainOp {
    Mul,
    Square,
    Dot3,
}

impl Ifma {
    /// `n` rounds of `op` on `C` independent chains of eight lanes, in IFMA form throughout
    /// (what `mul-bench` times; the result only keeps the work from being optimised away). Values
    /// stay below `2r`: `x·y` and `x²` of inputs below `2r` are below `1.05r`, `dot3` below `1.15r`.
    #[doc(hidden)]
    pub fn chain<const C: usize>(self, op: ChainOp, n: u64) -> [Fr; LANES] {
        #[target_feature(enable = "avx512f,avx512ifma")]
        fn run<const C: usize>(op: ChainOp, n: u64) -> [Fr; LANES] {
            let seed: [Fr; LANES] = std::array::from_fn(|i| Fr::from_u64(i as u64 + 7));
            let y = to_ifma(&seed, None);
            let mut xs = [y; C];
            match op {
                ChainOp::Mul => (0..n).for_each(|_| xs.iter_mut().for_each(|x| *x = mul(x, &y))),
                ChainOp::Square => (0..n).for_each(|_| xs.iter_mut().for_each(|x| *x = square(x))),
                ChainOp::Dot3 => (0..n).for_each(|_| {
                    xs.iter_mut()
                        .for_each(|x| *x = dot3(&[*x, y, *x], &[y, *x, y], None))
                }),
            }
            let mut acc = xs[0];
            for x in &xs[1..] {
                acc = mul(&acc, x);
            }
            from_ifma(acc)
        }
        // SAFETY: reached only through an `Ifma` token, so the CPU has avx512f and avx512ifma.
        unsafe { run::<C>(op, n) }
    }
}

/// Eight elements, limb-sliced: `self.0[j]` holds limb `j` of each lane.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lanes(pub(crate) [__m512i; LIMBS]);

/// Ten 64-bit column sums of eight 520-bit products (unnormalised: a column may exceed 52 bits).
#[derive(Clone, Copy)]
pub(crate) struct Wide([__m512i; 2 * LIMBS]);

/// `x` in every lane.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn broadcast(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

/// A scalar constant in every lane.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn splat(c: &Limbs52) -> Lanes {
    Lanes([
        broadcast(c[0]),
        broadcast(c[1]),
        broadcast(c[2]),
        broadcast(c[3]),
        broadcast(c[4]),
    ])
}

/// Eight lanes from per-lane limbs.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn load(x: &[Limbs52; LANES]) -> Lanes {
    let mut sliced = [[0u64; LANES]; LIMBS];
    for (lane, limbs) in x.iter().enumerate() {
        for (j, &limb) in limbs.iter().enumerate() {
            sliced[j][lane] = limb;
        }
    }
    let mut out = [_mm512_setzero_si512(); LIMBS];
    for (v, row) in out.iter_mut().zip(sliced.iter()) {
        // SAFETY: `row` is eight contiguous u64 (64 bytes), the unaligned load reads exactly them.
        *v = unsafe { _mm512_loadu_epi64(row.as_ptr().cast()) };
    }
    Lanes(out)
}

/// Per-lane limbs from eight lanes.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn store(x: &Lanes) -> [Limbs52; LANES] {
    let mut sliced = [[0u64; LANES]; LIMBS];
    for (row, v) in sliced.iter_mut().zip(x.0.iter()) {
        // SAFETY: `row` is eight contiguous u64 (64 bytes), the unaligned store writes exactly them.
        unsafe { _mm512_storeu_epi64(row.as_mut_ptr().cast(), *v) };
    }
    let mut out = [[0u64; LIMBS]; LANES];
    for (lane, limbs) in out.iter_mut().enumerate() {
        for (j, limb) in limbs.iter_mut().enumerate() {
            *limb = sliced[j][lane];
        }
    }
    out
}

impl Wide {
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn zero() -> Wide {
        Wide([_mm512_setzero_si512(); 2 * LIMBS])
    }

    /// `self += a·b`: 25 low and 25 high product halves into the columns.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn add_product(&mut self, a: &Lanes, b: &Lanes) {
        let t = &mut self.0;
        for i in 0..LIMBS {
            for j in 0..LIMBS {
                t[i + j] = _mm512_madd52lo_epu64(t[i + j], a.0[i], b.0[j]);
                t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a.0[i], b.0[j]);
            }
        }
    }

    /// `a²` from 15 limb products instead of 25: the 10 cross products once, doubled (a shift
    /// of the column sums, which stay far below 2^63), plus the 5 diagonal squares.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn square(a: &Lanes) -> Wide {
        let mut t = [_mm512_setzero_si512(); 2 * LIMBS];
        for i in 0..LIMBS {
            for j in i + 1..LIMBS {
                t[i + j] = _mm512_madd52lo_epu64(t[i + j], a.0[i], a.0[j]);
                t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a.0[i], a.0[j]);
            }
        }
        for column in t.iter_mut() {
            *column = _mm512_add_epi64(*column, *column);
        }
        for i in 0..LIMBS {
            t[2 * i] = _mm512_madd52lo_epu64(t[2 * i], a.0[i], a.0[i]);
            t[2 * i + 1] = _mm512_madd52hi_epu64(t[2 * i + 1], a.0[i], a.0[i]);
        }
        Wide(t)
    }

    /// `self += x·2^260`: after the reduction's division by 2^260 this is a plain `+ x`, carried
    /// together with the product (lazy addition). `x`'s limbs may be unnormalised (`< 2^53`).
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn add_high(&mut self, x: &Lanes) {
        for j in 0..LIMBS {
            self.0[LIMBS + j] = _mm512_add_epi64(self.0[LIMBS + j], x.0[j]);
        }
    }

    /// Montgomery reduction `(T + m·r) / 2^260` (SOS: five 52-bit steps, `m_i = T_i·(-r^{-1})`
    /// mod 2^52), then one carry pass. Not canonical: the result is below `T/2^260 + r`; the
    /// caller's bounds keep it below 2^260, so the top limb ends normalised too.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn redc(self) -> Lanes {
        let mut t = self.0;
        let inv = broadcast(INV52);
        let r = splat(&R52);
        let zero = _mm512_setzero_si512();
        for i in 0..LIMBS {
            // IFMA reads only the low 52 bits of T_i, exactly T_i mod 2^52: no carry needed first.
            let m = _mm512_madd52lo_epu64(zero, t[i], inv);
            for j in 0..LIMBS {
                t[i + j] = _mm512_madd52lo_epu64(t[i + j], m, r.0[j]);
                t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], m, r.0[j]);
            }
            // T_i is now a multiple of 2^52; its high bits carry into the next column.
            t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_srli_epi64::<LIMB_BITS>(t[i]));
        }
        normalize([t[5], t[6], t[7], t[8], t[9]])
    }
}

/// One carry pass: every limb but the top one below 2^52 (the top one too when the value is below
/// 2^260).
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn normalize(mut x: [__m512i; LIMBS]) -> Lanes {
    let mask = broadcast(LIMB_MASK);
    for j in 0..LIMBS - 1 {
        x[j + 1] = _mm512_add_epi64(x[j + 1], _mm512_srli_epi64::<LIMB_BITS>(x[j]));
        x[j] = _mm512_and_si512(x[j], mask);
    }
    Lanes(x)
}

crate::lanes::lane_arith! {
    features: "avx512f,avx512ifma",
    limbs: Limbs52,
    to_limbs: to_limbs52,
    from_limbs: from_limbs52,
    to_constant: TO_IFMA,
    from_constant: FROM_IFMA,
    to_form: to_ifma,
    from_form: from_ifma,
    token: Ifma,
    lacks: "avx512ifma",
    r_fraction: 84,
}

/// Eight elements' limbs in memory as one vector set: `sliced[j][lane]` is limb `j` of `lane`
/// (the NTT keeps its 4096 elements like this between stages).
pub(crate) type Sliced = [[u64; LANES]; LIMBS];

/// `4r` with each limb below the top one raised by 2^52, borrowed from the limb above: the same
/// value, but every low limb is at least 2^52 and the top limb exceeds the top limb of any value
/// below `2r`, so `x + FOUR_R_SPREAD - t` is non-negative limb by limb for normalised `x` and any
/// normalised `t < 2r` (no borrows to propagate). `4r < 2^256` fits the 4×64 conversion.
const FOUR_R_SPREAD: Limbs52 = {
    let four_r = times_small(MODULUS, 4);
    let l = to_limbs52([four_r[0], four_r[1], four_r[2], four_r[3]]);
    [
        l[0] + (1 << LIMB_BITS),
        l[1] + (1 << LIMB_BITS) - 1,
        l[2] + (1 << LIMB_BITS) - 1,
        l[3] + (1 << LIMB_BITS) - 1,
        l[4] - 1,
    ]
};
const _: () = assert!(times_small(MODULUS, 4)[4] == 0); // 4r < 2^256
/// The top limb of any value below `2r` is below `FOUR_R_SPREAD`'s.
const _: () = {
    let two_r = times_small(MODULUS, 2);
    assert!(to_limbs52([two_r[0], two_r[1], two_r[2], two_r[3]])[4] < FOUR_R_SPREAD[4]);
};

/// The integer 1: the Montgomery product of `a·2^260` with it is `a` itself (canonical after one
/// conditional subtraction), so the NTT's results need no second conversion.
const ONE_INTEGER: Limbs52 = [1, 0, 0, 0, 0];

#[cfg(test)]
mod tests {
    //! The vector kernels against the portable field and ark-ff: edge values, random canonical
    //! inputs, and raw lazily reduced inputs up to the largest bound the permutation keeps.

    use super::lane_tests::{
        ark, ark_of_limbs, check_raw, check_raw_operations, in_units_of_r, inv_r,
    };
    use super::*;
    use crate::field::test_values::edges;
    use ark_ff::{Field, PrimeField};
    use proptest::prelude::*;

    /// Five 64-bit limbs of a value below 2^260 as five normalised 52-bit limbs.
    fn limbs52_of(v: &[u64; 5]) -> Limbs52 {
        let mut out = [0u64; LIMBS];
        for (j, limb) in out.iter_mut().enumerate() {
            let bit = 52 * j;
            let (w, s) = (bit / 64, bit % 64);
            let mut x = v[w] >> s;
            if s > 12 && w + 1 < 5 {
                x |= v[w + 1] << (64 - s);
            }
            *limb = x & LIMB_MASK;
        }
        out
    }

    /// A raw value below `bound·r` with normalised limbs: `k·r - small` or a random value under
    /// the bound, so both the extremes and the bulk are hit.
    fn raw_below(bound: u64) -> impl Strategy<Value = Limbs52> {
        (1..=bound, any::<[u64; LIMBS]>(), any::<bool>()).prop_map(move |(k, noise, extreme)| {
            let kr = times_small(MODULUS, k);
            let mut v = [kr[0], kr[1], kr[2], kr[3], kr[4]];
            // Subtract a random amount below r (or just 1 at the extreme).
            let sub = if extreme {
                [1, 0, 0, 0]
            } else {
                [noise[0], noise[1], noise[2], noise[3] % MODULUS[3]]
            };
            let mut borrow = 0u64;
            for i in 0..4 {
                let (d, b1) = v[i].overflowing_sub(sub[i]);
                let (d, b2) = d.overflowing_sub(borrow);
                v[i] = d;
                borrow = (b1 | b2) as u64;
            }
            v[4] -= borrow;
            // The value is below 2^260.
            limbs52_of(&v)
        })
    }

    #[test]
    fn limb_conversions_round_trip() {
        for x in edges() {
            assert_eq!(from_limbs52(to_limbs52(x.0)), x.0);
        }
        let top = [u64::MAX; 4];
        assert_eq!(from_limbs52(to_limbs52(top)), top);
        assert_eq!(R52.iter().filter(|&&l| l > LIMB_MASK).count(), 0);
        assert_eq!(R52[0].wrapping_mul(INV52) & LIMB_MASK, LIMB_MASK); // r·(-r^-1) = -1
    }

    #[test]
    fn ifma_constants_are_the_element_times_2_260() {
        let two_260 = ark_bn254::Fr::from(2u64).pow([260]);
        for x in edges() {
            let c = ifma_constant(x);
            assert_eq!(ark_of_limbs(&c), ark(x) * two_260);
            assert!(in_units_of_r(&c) <= 1.0); // f64: r - 1 rounds to r
        }
    }

    #[test]
    fn raw_extremes_stay_within_the_lazy_bounds() {
        let Some(ifma) = detect_or_skip("ifma::raw_extremes_stay_within_the_lazy_bounds") else {
            return;
        };
        // The largest normalised 260-bit value below 84r·... : 84r - 1 times itself.
        let big = {
            let kr = times_small(MODULUS, 84);
            let mut v = kr;
            v[0] -= 1; // r is odd, so no borrow
            limbs52_of(&v)
        };
        let a = [big; LANES];
        let got = ifma.mul_raw(&a, &a);
        let want = ark_of_limbs(&big) * ark_of_limbs(&big) * inv_r();
        for g in &got {
            check_raw(g, want, 84.0 * 84.0 / 84.0 + 1.0);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        /// Lazily reduced inputs as large as the permutation keeps them (`t1, t2 < 61r` in the
        /// partial rounds, `x < 19r` after them, canonical constants): the results are right mod
        /// r, normalised, and within the documented bounds.
        #[test]
        fn raw_lazy_inputs_are_right_and_bounded(
            a in prop::array::uniform8(raw_below(61)),
            b in prop::array::uniform8(raw_below(61)),
            c in prop::array::uniform8(raw_below(1)),
            p in prop::array::uniform8(raw_below(2)),
        ) {
            let Some(ifma) = detect_or_skip("ifma::raw_lazy_inputs_are_right_and_bounded") else {
                return Ok(());
            };
            check_raw_operations(ifma, &a, &b, &c, &p);
        }
    }

    #[test]
    fn ifma_constants_of_small_values() {
        // 2^264 mod r and 2^256 mod r as the conversions use them.
        let two = ark_bn254::Fr::from(2u64);
        assert_eq!(ark_of_limbs(&TO_IFMA), two.pow([264]));
        assert_eq!(ark_of_limbs(&FROM_IFMA), two.pow([256]));
        assert_eq!(
            ark_bn254::Fr::from_bigint(ark_ff::BigInt(MODULUS)),
            None,
            "MODULUS is r"
        );
    }
}
