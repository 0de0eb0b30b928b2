//! The BN254 scalar field Fr, hand-written: four 64-bit limbs (little-endian) in Montgomery form
//! (`a·R mod r`, `R = 2^256`), products through `u128`.
//!
//! Why hand-written: ark-ff's generic `Fp` carries bookkeeping the Poseidon inner loop does not
//! need; with a concrete modulus the compiler sees constant limbs and inlines everything.
//! Multiplication is CIOS with the "no final carry" shortcut, valid because the top limb of r is
//! below `2^63 - 1` (the running value never needs a fifth limb). Every element stays canonical
//! (`< r`), so equality is limb equality and serialisation needs no extra reduction.
//!
//! This is the portable implementation of the hot operations; on x86-64 CPUs with BMI2/ADX the
//! mask code uses the bit-identical assembly in [`crate::adx`] instead (see [`crate::arith`]).
//!
//! Layer 1 of the crate (field arithmetic); it imports only from this layer or below.

/// The modulus r, little-endian limbs.
pub const MODULUS: [u64; 4] = [
    0x43e1_f593_f000_0001,
    0x2833_e848_79b9_7091,
    0xb850_45b6_8181_585d,
    0x3064_4e72_e131_a029,
];

/// `-r^{-1} mod 2^64`, the Montgomery reduction factor.
pub(crate) const INV: u64 = neg_inverse_mod_2_64(MODULUS[0]);

/// `R^2 mod r`, to bring a canonical integer into Montgomery form.
const R2: [u64; 4] = r_squared();

/// `R mod r`: the Montgomery form of 1.
const R1: [u64; 4] = pow2_mod_r(256);

/// One field element in Montgomery form, always `< r`. `repr(transparent)`: the assembly in
/// [`crate::adx`] reads `[Fr; 3]` as 12 contiguous limbs.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[repr(transparent)]
pub struct Fr(pub(crate) [u64; 4]);

const fn neg_inverse_mod_2_64(p0: u64) -> u64 {
    // Newton iteration doubles the correct low bits each step: 1 -> 2 -> ... -> 64.
    let mut inv: u64 = 1;
    let mut i = 0;
    while i < 6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(p0.wrapping_mul(inv)));
        i += 1;
    }
    inv.wrapping_neg()
}

const fn geq(a: &[u64; 4], b: &[u64; 4]) -> bool {
    let mut i = 4;
    while i > 0 {
        i -= 1;
        if a[i] != b[i] {
            return a[i] > b[i];
        }
    }
    true
}

/// `a - b` over 256 bits (wrapping).
#[inline(always)]
const fn sub_limbs(a: &[u64; 4], b: &[u64; 4]) -> [u64; 4] {
    let (d0, c0) = a[0].overflowing_sub(b[0]);
    let (d1, c1a) = a[1].overflowing_sub(b[1]);
    let (d1, c1b) = d1.overflowing_sub(c0 as u64);
    let (d2, c2a) = a[2].overflowing_sub(b[2]);
    let (d2, c2b) = d2.overflowing_sub((c1a | c1b) as u64);
    let d3 = a[3].wrapping_sub(b[3]).wrapping_sub((c2a | c2b) as u64);
    [d0, d1, d2, d3]
}

/// `a + b` over 256 bits; callers keep the sum below 2^256.
#[inline(always)]
const fn add_limbs(a: &[u64; 4], b: &[u64; 4]) -> [u64; 4] {
    let (s0, c0) = a[0].overflowing_add(b[0]);
    let (s1, c1a) = a[1].overflowing_add(b[1]);
    let (s1, c1b) = s1.overflowing_add(c0 as u64);
    let (s2, c2a) = a[2].overflowing_add(b[2]);
    let (s2, c2b) = s2.overflowing_add((c1a | c1b) as u64);
    let s3 = a[3].wrapping_add(b[3]).wrapping_add((c2a | c2b) as u64);
    [s0, s1, s2, s3]
}

/// `2^bits mod r` by repeated doubling (compile time only).
const fn pow2_mod_r(bits: u32) -> [u64; 4] {
    let mut x = [1u64, 0, 0, 0];
    let mut i = 0;
    while i < bits {
        x = add_limbs(&x, &x); // x < r < 2^254, so 2x < 2^255: no overflow
        if geq(&x, &MODULUS) {
            x = sub_limbs(&x, &MODULUS);
        }
        i += 1;
    }
    x
}

const fn r_squared() -> [u64; 4] {
    pow2_mod_r(512)
}

#[inline(always)]
fn mac(acc: u64, a: u64, b: u64, carry: u64) -> (u64, u64) {
    let t = (acc as u128) + (a as u128) * (b as u128) + (carry as u128);
    (t as u64, (t >> 64) as u64)
}

/// Montgomery product `a·b·R^{-1} mod r` of two canonical values.
#[inline(always)]
const fn mont_mul(a: &[u64; 4], b: &[u64; 4]) -> [u64; 4] {
    let mut t = [0u64; 4];
    let mut i = 0;
    while i < 4 {
        // t += a * b[i]
        let x = (t[0] as u128) + (a[0] as u128) * (b[i] as u128);
        let mut carry_a = (x >> 64) as u64;
        let t0 = x as u64;
        let m = t0.wrapping_mul(INV);
        let y = (t0 as u128) + (m as u128) * (MODULUS[0] as u128);
        let mut carry_m = (y >> 64) as u64;
        let mut j = 1;
        while j < 4 {
            let x = (t[j] as u128) + (a[j] as u128) * (b[i] as u128) + (carry_a as u128);
            carry_a = (x >> 64) as u64;
            let y = ((x as u64) as u128) + (m as u128) * (MODULUS[j] as u128) + (carry_m as u128);
            carry_m = (y >> 64) as u64;
            t[j - 1] = y as u64;
            j += 1;
        }
        t[3] = carry_a.wrapping_add(carry_m);
        i += 1;
    }
    if geq(&t, &MODULUS) {
        sub_limbs(&t, &MODULUS)
    } else {
        t
    }
}

impl Fr {
    pub const ZERO: Fr = Fr([0; 4]);
    pub const ONE: Fr = Fr(R1);

    /// The element whose canonical integer has these little-endian limbs (any 256-bit value;
    /// reduced mod r).
    pub const fn from_limbs(limbs: [u64; 4]) -> Fr {
        let mut x = limbs;
        while geq(&x, &MODULUS) {
            x = sub_limbs(&x, &MODULUS);
        }
        Fr(mont_mul(&x, &R2))
    }

    /// The canonical integer (`< r`) as little-endian limbs.
    pub const fn to_limbs(self) -> [u64; 4] {
        mont_mul(&self.0, &[1, 0, 0, 0])
    }

    /// A 32-byte big-endian integer, reduced mod r (keys may be `>= r`).
    pub fn from_be_bytes_mod_order(bytes: &[u8; 32]) -> Fr {
        let mut limbs = [0u64; 4];
        for (i, limb) in limbs.iter_mut().enumerate() {
            let at = 32 - 8 * (i + 1);
            *limb = u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        }
        Fr::from_limbs(limbs)
    }

    /// The canonical value as 32 big-endian bytes.
    pub fn to_be_bytes(self) -> [u8; 32] {
        let limbs = self.to_limbs();
        let mut out = [0u8; 32];
        for (i, limb) in limbs.iter().enumerate() {
            let at = 32 - 8 * (i + 1);
            out[at..at + 8].copy_from_slice(&limb.to_be_bytes());
        }
        out
    }

    pub fn from_u64(v: u64) -> Fr {
        Fr::from_limbs([v, 0, 0, 0])
    }

    #[inline(always)]
    pub fn mul_mod(self, other: Fr) -> Fr {
        Fr(mont_mul_inline(&self.0, &other.0))
    }

    /// [`Fr::mul_mod`] with the branch-free final subtraction (the benchmark compares the two).
    #[doc(hidden)]
    #[inline(always)]
    pub fn mul_mod_branch_free(self, other: Fr) -> Fr {
        Fr(reduce_once(cios_unreduced(&self.0, &other.0)))
    }

    /// `self²` through the wide square (10 word products instead of 16) and one reduction.
    #[inline(always)]
    pub fn square(self) -> Fr {
        Fr(redc(square_wide(&self.0)))
    }

    /// `a·b + c·d + e·f` with one Montgomery reduction instead of three (lazy reduction): the
    /// three 512-bit products are summed unreduced (< 3r² < r·2^256, so one REDC gives < 2r).
    #[inline(always)]
    pub fn dot3(a: [Fr; 3], b: [Fr; 3]) -> Fr {
        let t = add_wide(
            &add_wide(&mul_wide(&a[0].0, &b[0].0), &mul_wide(&a[1].0, &b[1].0)),
            &mul_wide(&a[2].0, &b[2].0),
        );
        Fr(redc(t))
    }

    #[inline(always)]
    pub fn add_mod(self, other: Fr) -> Fr {
        let s = add_limbs(&self.0, &other.0); // both < r < 2^254: no overflow
        Fr(reduce_once(s))
    }

    #[inline(always)]
    pub fn sub_mod(self, other: Fr) -> Fr {
        let d = sub_limbs(&self.0, &other.0);
        if geq(&self.0, &other.0) {
            Fr(d)
        } else {
            Fr(add_limbs(&d, &MODULUS))
        }
    }

    /// The element whose Montgomery representation is `limbs`, given `limbs < 2r`: one
    /// conditional subtraction (for kernels that reduce lazily, e.g. [`crate::ifma`]).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) fn from_montgomery_below_2r(limbs: [u64; 4]) -> Fr {
        Fr(reduce_once(limbs))
    }

    /// `x^5`, the Poseidon S-box.
    #[inline(always)]
    pub fn pow5(self) -> Fr {
        let x2 = self.square();
        let x4 = x2.square();
        x4.mul_mod(self)
    }
}

#[inline(always)]
fn reduce_once(s: [u64; 4]) -> [u64; 4] {
    let (d0, b0) = s[0].overflowing_sub(MODULUS[0]);
    let (d1, b1a) = s[1].overflowing_sub(MODULUS[1]);
    let (d1, b1b) = d1.overflowing_sub(b0 as u64);
    let (d2, b2a) = s[2].overflowing_sub(MODULUS[2]);
    let (d2, b2b) = d2.overflowing_sub((b1a | b1b) as u64);
    let (d3, b3a) = s[3].overflowing_sub(MODULUS[3]);
    let (d3, b3b) = d3.overflowing_sub((b2a | b2b) as u64);
    // Branch-free select: the borrow out says s < r.
    let keep = ((b3a | b3b) as u64).wrapping_neg();
    [
        (s[0] & keep) | (d0 & !keep),
        (s[1] & keep) | (d1 & !keep),
        (s[2] & keep) | (d2 & !keep),
        (s[3] & keep) | (d3 & !keep),
    ]
}

/// The runtime multiply: same CIOS as [`mont_mul`], written with `mac` so the loops unroll into
/// straight-line code. The final subtraction is a branch (as in ark-ff): it is needed for only
/// ~5% of products, so the predicted branch keeps the compare-and-select off the dependency
/// chain; it measured faster than the branch-free select (docs/BENCHMARKS.md §10).
#[inline(always)]
fn mont_mul_inline(a: &[u64; 4], b: &[u64; 4]) -> [u64; 4] {
    let t = cios_unreduced(a, b);
    if geq(&t, &MODULUS) {
        sub_limbs(&t, &MODULUS)
    } else {
        t
    }
}

/// The CIOS loop without the final subtraction: `a·b·R^{-1} mod r` plus possibly one r (`< 2r`).
#[inline(always)]
fn cios_unreduced(a: &[u64; 4], b: &[u64; 4]) -> [u64; 4] {
    let mut t = [0u64; 4];
    for &bi in b.iter() {
        let (t0, mut carry_a) = mac(t[0], a[0], bi, 0);
        let m = t0.wrapping_mul(INV);
        let (_, mut carry_m) = mac(t0, m, MODULUS[0], 0);
        for j in 1..4 {
            let (x, ca) = mac(t[j], a[j], bi, carry_a);
            carry_a = ca;
            let (y, cm) = mac(x, m, MODULUS[j], carry_m);
            carry_m = cm;
            t[j - 1] = y;
        }
        t[3] = carry_a.wrapping_add(carry_m);
    }
    t
}

/// Whether the product `a·b` needs the final subtraction (tests use it to make sure their
/// inputs exercise both outcomes).
#[doc(hidden)]
pub fn needs_final_subtraction(a: Fr, b: Fr) -> bool {
    geq(&cios_unreduced(&a.0, &b.0), &MODULUS)
}

#[inline(always)]
fn adc(a: u64, b: u64, carry: u64) -> (u64, u64) {
    let t = (a as u128) + (b as u128) + (carry as u128);
    (t as u64, (t >> 64) as u64)
}

/// The full 512-bit product `a·b` (schoolbook, 16 word products).
#[inline(always)]
fn mul_wide(a: &[u64; 4], b: &[u64; 4]) -> [u64; 8] {
    let mut t = [0u64; 8];
    for i in 0..4 {
        let mut carry = 0;
        for j in 0..4 {
            let (lo, hi) = mac(t[i + j], a[i], b[j], carry);
            t[i + j] = lo;
            carry = hi;
        }
        t[i + 4] = carry;
    }
    t
}

/// The full 512-bit square: the 6 cross products once, doubled, plus the 4 diagonal squares.
#[inline(always)]
fn square_wide(a: &[u64; 4]) -> [u64; 8] {
    let mut t = [0u64; 8];
    for i in 0..4 {
        let mut carry = 0;
        for j in i + 1..4 {
            let (lo, hi) = mac(t[i + j], a[i], a[j], carry);
            t[i + j] = lo;
            carry = hi;
        }
        t[i + 4] = carry;
    }
    t[7] = t[6] >> 63;
    for k in (1..7).rev() {
        t[k] = (t[k] << 1) | (t[k - 1] >> 63);
    }
    t[0] <<= 1;
    let mut carry = 0;
    for i in 0..4 {
        let p = (a[i] as u128) * (a[i] as u128);
        let (lo, c) = adc(t[2 * i], p as u64, carry);
        let (hi, c2) = adc(t[2 * i + 1], (p >> 64) as u64, c);
        t[2 * i] = lo;
        t[2 * i + 1] = hi;
        carry = c2;
    }
    t
}

/// 512-bit sum; callers keep it below 2^512.
#[inline(always)]
fn add_wide(x: &[u64; 8], y: &[u64; 8]) -> [u64; 8] {
    let mut out = [0u64; 8];
    let mut carry = 0;
    for i in 0..8 {
        let (s, c) = adc(x[i], y[i], carry);
        out[i] = s;
        carry = c;
    }
    out
}

/// Montgomery reduction `t·R^{-1} mod r` of `t < r·2^256`, canonical result.
#[inline(always)]
fn redc(mut t: [u64; 8]) -> [u64; 4] {
    let mut carry2 = 0;
    for i in 0..4 {
        let m = t[i].wrapping_mul(INV);
        let mut carry = 0;
        for j in 0..4 {
            let (lo, hi) = mac(t[i + j], m, MODULUS[j], carry);
            t[i + j] = lo;
            carry = hi;
        }
        let (s, c) = adc(t[i + 4], carry, carry2);
        t[i + 4] = s;
        carry2 = c;
    }
    reduce_once([t[4], t[5], t[6], t[7]])
}

/// Inputs the kernels' tests share (ADX assembly and IFMA vectors alike): the edge values of
/// the Montgomery arithmetic and random canonical elements. Only x86_64 has those kernels.
#[cfg(all(test, target_arch = "x86_64"))]
pub(crate) mod test_values {
    use super::{Fr, MODULUS};
    use proptest::prelude::*;

    /// `detect()`'s token, or `None` after printing `SKIP: <test>: CPU lacks <feature>` (once per
    /// test, so a property test's cases do not repeat it): the kernels' tests never pass silently
    /// on a CPU without their features. The line goes to the process's stderr directly, not
    /// through `eprintln!`, which libtest captures for a passing test: CI's skip table
    /// (.ci/skips.sh) reads the log, so a captured SKIP line would be a skip it never counts.
    pub(crate) fn detect_or_skip<T>(
        test: &str,
        feature: &str,
        detect: impl Fn() -> Option<T>,
    ) -> Option<T> {
        use std::collections::HashSet;
        use std::sync::Mutex;
        static SKIPPED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
        let token = detect();
        if token.is_none() {
            let mut skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
            if skipped
                .get_or_insert_with(HashSet::new)
                .insert(test.to_string())
            {
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "SKIP: {test}: CPU lacks {feature}");
            }
        }
        token
    }

    /// `r - k` as raw limbs (k small).
    pub(crate) fn r_minus(k: u64) -> [u64; 4] {
        let (l0, borrow) = MODULUS[0].overflowing_sub(k);
        [l0, MODULUS[1] - borrow as u64, MODULUS[2], MODULUS[3]]
    }

    /// Canonical raw Montgomery limbs at the edges: 0, 1, 2, one (`R mod r`), r-1, r-2,
    /// r - 2^64, 2^253, 2^253 + 2^252, all-ones lower limbs under r's top limb, about r/2.
    pub(crate) fn edges() -> Vec<Fr> {
        vec![
            Fr([0; 4]),
            Fr([1, 0, 0, 0]),
            Fr([2, 0, 0, 0]),
            Fr::ONE,
            Fr(r_minus(1)),
            Fr(r_minus(2)),
            Fr([MODULUS[0], MODULUS[1] - 1, MODULUS[2], MODULUS[3]]),
            Fr([0, 0, 0, 1 << 61]),
            Fr([0, 0, 0, 3 << 60]),
            Fr([u64::MAX, u64::MAX, u64::MAX, MODULUS[3] - 1]),
            Fr([
                MODULUS[0] >> 1,
                MODULUS[1] >> 1,
                MODULUS[2] >> 1,
                MODULUS[3] >> 1,
            ]),
        ]
    }

    /// A canonical element from raw limbs (the top limb below r's keeps the value below r), or
    /// one of `edges`.
    pub(crate) fn canonical_or(edges: Vec<Fr>) -> impl Strategy<Value = Fr> {
        prop_oneof![
            3 => any::<[u64; 4]>().prop_map(|mut x| {
                x[3] %= MODULUS[3];
                Fr(x)
            }),
            1 => prop::sample::select(edges),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_times_one_is_one() {
        assert_eq!(Fr::ONE.mul_mod(Fr::ONE), Fr::ONE);
        assert_eq!(Fr::from_u64(1), Fr::ONE);
        assert_eq!(Fr::ONE.to_limbs(), [1, 0, 0, 0]);
    }

    #[test]
    fn modulus_reduces_to_zero() {
        assert_eq!(Fr::from_limbs(MODULUS), Fr::ZERO);
        let minus_one = Fr::ZERO.sub_mod(Fr::ONE);
        assert_eq!(minus_one.add_mod(Fr::ONE), Fr::ZERO);
        let mut r_minus_1 = MODULUS;
        r_minus_1[0] -= 1;
        assert_eq!(minus_one.to_limbs(), r_minus_1);
    }

    #[test]
    fn inverse_constant_is_right() {
        assert_eq!(MODULUS[0].wrapping_mul(INV), u64::MAX); // r * (-r^-1) = -1 mod 2^64
    }
}
