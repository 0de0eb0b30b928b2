//! The measured floor of a batch Montgomery multiply without IFMA: is a 4-lane AVX2 or an 8-lane
//! AVX-512F (no IFMA) multiply faster per element than the scalar MULX/ADX one, enough to make a
//! kernel from it? Each is a BN254 Fr multiply in radix 2^29 (nine limbs, R = 2^261), operand
//! products by `vpmuludq` (32x32 -> 64 bits per lane) summed per column, then a word-by-word
//! Montgomery reduction and one carry pass; lazy (results stay below 2r, which R = 2^261 > 4r
//! allows), so it is the cheapest form such a kernel could take. It is checked against
//! [`Fr::mul_mod`] on random inputs before it is timed. Printed per round (three, interleaved):
//! thread CPU ns per element multiplied, four independent chains each, the MULX/ADX scalar
//! multiply and the IFMA eight-lane multiply alongside, each vector one's ratio to MULX, and a
//! hybrid step (AVX2 and MULX chains in one loop: do they overlap?), and the multiply of the
//! crate's `avx512f` kernel (`pora_encode::avx512f`, built from this one). docs/BENCHMARKS.md
//! 27.1 turns the ratios into mask times.
//! Run: `cargo run --release -p pora-encode --example vector-mul-floor`.

// Only the x86_64 floor measures CPU time; elsewhere the example just says it has nothing to run.
#[cfg(target_arch = "x86_64")]
#[path = "common/cpu_time.rs"]
mod cpu_time;

#[cfg(target_arch = "x86_64")]
mod floor {
    use crate::cpu_time::thread_cpu_time;
    use pora_encode::arith::Arith;
    use pora_encode::field::{Fr, MODULUS};
    use pora_encode::for9;
    use std::arch::x86_64::*;

    /// Limbs of 29 bits: nine cover 261 bits.
    pub const LIMBS: usize = 9;
    const LIMB_BITS: u32 = 29;
    const LIMB_MASK: u64 = (1 << LIMB_BITS) - 1;
    /// Multiplies per chain per measurement.
    const STEPS: u64 = 2_000_000;
    /// Independent chains (the Poseidon kernels interleave several permutations the same way).
    const CHAINS: usize = 4;

    /// r in radix 2^29.
    pub fn modulus_limbs() -> [u64; LIMBS] {
        to_radix29(MODULUS)
    }

    /// `-r^{-1} mod 2^29`.
    pub fn neg_inv_29() -> u64 {
        let p0 = MODULUS[0];
        let mut inv: u64 = 1;
        for _ in 0..5 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(p0.wrapping_mul(inv)));
        }
        inv.wrapping_neg() & LIMB_MASK
    }

    pub fn to_radix29(x: [u64; 4]) -> [u64; LIMBS] {
        let mut out = [0u64; LIMBS];
        for (k, limb) in out.iter_mut().enumerate() {
            let bit = k as u32 * LIMB_BITS;
            let (word, shift) = ((bit / 64) as usize, bit % 64);
            let mut v = x[word] >> shift;
            if shift + LIMB_BITS > 64 && word + 1 < 4 {
                v |= x[word + 1] << (64 - shift);
            }
            *limb = v & LIMB_MASK;
        }
        out
    }

    pub fn from_radix29(x: [u64; LIMBS]) -> [u64; 4] {
        let mut out = [0u64; 4];
        for (k, &limb) in x.iter().enumerate() {
            let bit = k as u32 * LIMB_BITS;
            let (word, shift) = ((bit / 64) as usize, bit % 64);
            out[word] |= limb << shift;
            if shift + LIMB_BITS > 64 && word + 1 < 4 {
                out[word + 1] |= limb >> (64 - shift);
            }
        }
        out
    }

    /// One lazy Montgomery multiply over vectors of lanes, written once for both widths.
    macro_rules! mont_mul_vec {
        ($name:ident, $chain:ident, $features:literal, $v:ty, $mul:ident, $add:ident, $srli:ident, $and:ident, $set1:ident) => {
            /// `a·b·2^-261 mod r` per lane, limbs < 2^29 in and out, values < 2r in and out.
            // The last carry is zero (the result is below 2^261), so its assignment goes unread.
            #[allow(unused_assignments)]
            #[target_feature(enable = $features)]
            #[inline]
            pub unsafe fn $name(
                a: &[$v; LIMBS],
                b: &[$v; LIMBS],
                p: &[$v; LIMBS],
                inv: $v,
            ) -> [$v; LIMBS] {
                let mask = $set1(LIMB_MASK as _);
                let zero = $set1(0);
                // Fully unrolled (for9!): every index is a constant, so the 18 columns can live in
                // registers instead of memory.
                let mut c = [zero; 2 * LIMBS];
                for9!(I, {
                    for9!(J, {
                        c[I + J] = $add(c[I + J], $mul(a[I], b[J]));
                    });
                });
                for9!(I, {
                    // Column I's low 29 bits are final here: m makes them zero.
                    let m = $and($mul(c[I], inv), mask);
                    for9!(J, {
                        c[I + J] = $add(c[I + J], $mul(m, p[J]));
                    });
                    c[I + 1] = $add(c[I + 1], $srli::<29>(c[I]));
                });
                let mut out = [zero; LIMBS];
                let mut carry = zero;
                for9!(K, {
                    let v = $add(c[LIMBS + K], carry);
                    out[K] = $and(v, mask);
                    carry = $srli::<29>(v);
                });
                out
            }

            /// `steps` times x = x·y on each chain (a call per multiply: at ~450 instructions it is
            /// not inlined, and the call costs little beside them).
            #[target_feature(enable = $features)]
            pub unsafe fn $chain(
                xs: &mut [[$v; LIMBS]; CHAINS],
                y: &[$v; LIMBS],
                p: &[$v; LIMBS],
                inv: $v,
                steps: u64,
            ) {
                for _ in 0..steps {
                    for x in xs.iter_mut() {
                        // SAFETY: this function has the multiply's features.
                        *x = unsafe { $name(x, y, p, inv) };
                    }
                }
            }
        };
    }
    mont_mul_vec!(
        mul_avx2,
        chain_avx2,
        "avx2",
        __m256i,
        _mm256_mul_epu32,
        _mm256_add_epi64,
        _mm256_srli_epi64,
        _mm256_and_si256,
        _mm256_set1_epi64x
    );
    mont_mul_vec!(
        mul_avx512f,
        chain_avx512f,
        "avx512f",
        __m512i,
        _mm512_mul_epu32,
        _mm512_add_epi64,
        _mm512_srli_epi64,
        _mm512_and_si512,
        _mm512_set1_epi64
    );

    /// A lane count and the vector functions of one width.
    pub trait Width: Copy {
        const LANES: usize;
        type V: Copy;
        fn supported() -> bool;
        /// # Safety
        /// The CPU must support the width's features ([`Width::supported`]).
        unsafe fn load(limbs: &[[u64; LIMBS]]) -> [Self::V; LIMBS];
        /// # Safety
        /// As [`Width::load`].
        unsafe fn store(v: &[Self::V; LIMBS]) -> Vec<[u64; LIMBS]>;
        /// # Safety
        /// As [`Width::load`].
        unsafe fn splat(x: u64) -> Self::V;
        /// # Safety
        /// As [`Width::load`].
        unsafe fn mul(
            a: &[Self::V; LIMBS],
            b: &[Self::V; LIMBS],
            p: &[Self::V; LIMBS],
            inv: Self::V,
        ) -> [Self::V; LIMBS];
        /// # Safety
        /// As [`Width::load`].
        unsafe fn chain(
            xs: &mut [[Self::V; LIMBS]; CHAINS],
            y: &[Self::V; LIMBS],
            p: &[Self::V; LIMBS],
            inv: Self::V,
            steps: u64,
        );
    }

    #[derive(Clone, Copy)]
    pub struct Avx2;
    #[derive(Clone, Copy)]
    pub struct Avx512f;

    macro_rules! width {
        ($t:ty, $lanes:literal, $v:ty, $feat:tt, $mul:ident, $chain:ident, $loadu:expr, $storeu:expr, $set1:ident) => {
            impl Width for $t {
                const LANES: usize = $lanes;
                type V = $v;
                fn supported() -> bool {
                    std::arch::is_x86_feature_detected!($feat)
                }
                unsafe fn load(limbs: &[[u64; LIMBS]]) -> [$v; LIMBS] {
                    let mut out = [std::mem::zeroed::<$v>(); LIMBS];
                    for (k, o) in out.iter_mut().enumerate() {
                        let lane: Vec<u64> = limbs.iter().map(|l| l[k]).collect();
                        // SAFETY: `lane` holds LANES u64s, one vector's bytes (unaligned load).
                        *o = unsafe { $loadu(lane.as_ptr() as *const _) };
                    }
                    out
                }
                unsafe fn store(v: &[$v; LIMBS]) -> Vec<[u64; LIMBS]> {
                    let mut out = vec![[0u64; LIMBS]; $lanes];
                    for (k, x) in v.iter().enumerate() {
                        let mut lane = [0u64; $lanes];
                        // SAFETY: `lane` has room for one vector (unaligned store).
                        unsafe { $storeu(lane.as_mut_ptr() as *mut _, *x) };
                        for (o, l) in out.iter_mut().zip(lane) {
                            o[k] = l;
                        }
                    }
                    out
                }
                unsafe fn splat(x: u64) -> $v {
                    // SAFETY: the caller checked the CPU's features.
                    unsafe { $set1(x as _) }
                }
                unsafe fn mul(
                    a: &[$v; LIMBS],
                    b: &[$v; LIMBS],
                    p: &[$v; LIMBS],
                    inv: $v,
                ) -> [$v; LIMBS] {
                    // SAFETY: the caller checked the CPU's features.
                    unsafe { $mul(a, b, p, inv) }
                }
                unsafe fn chain(
                    xs: &mut [[$v; LIMBS]; CHAINS],
                    y: &[$v; LIMBS],
                    p: &[$v; LIMBS],
                    inv: $v,
                    steps: u64,
                ) {
                    // SAFETY: the caller checked the CPU's features.
                    unsafe { $chain(xs, y, p, inv, steps) }
                }
            }
        };
    }
    width!(
        Avx2,
        4,
        __m256i,
        "avx2",
        mul_avx2,
        chain_avx2,
        _mm256_loadu_si256,
        _mm256_storeu_si256,
        _mm256_set1_epi64x
    );
    width!(
        Avx512f,
        8,
        __m512i,
        "avx512f",
        mul_avx512f,
        chain_avx512f,
        _mm512_loadu_si512,
        _mm512_storeu_si512,
        _mm512_set1_epi64
    );

    /// xorshift64*: the inputs (any generator does; fixed seed so a failure repeats).
    fn next(state: &mut u64) -> u64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A random canonical element's integer limbs.
    fn random_below_r(state: &mut u64) -> [u64; 4] {
        Fr::from_limbs([next(state), next(state), next(state), next(state) >> 2]).to_limbs()
    }

    /// Checks the vector multiply against Fr on random inputs and on inputs just below 2r (the
    /// lazy bound): result·2^261 ≡ a·b (mod r), result < 2r. Panics with the lane on a mismatch.
    pub fn check<W: Width>() {
        let two_pow_261 = Fr::from_limbs([0, 0, 0, 1 << 63]).mul_mod(Fr::from_u64(64));
        let p29 = modulus_limbs();
        let two_r = [
            MODULUS[0] << 1,
            MODULUS[1] << 1 | MODULUS[0] >> 63,
            MODULUS[2] << 1 | MODULUS[1] >> 63,
            MODULUS[3] << 1 | MODULUS[2] >> 63,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for round in 0..2000 {
            let a: Vec<[u64; 4]> = (0..W::LANES)
                .map(|lane| {
                    if round == 0 && lane == 0 {
                        sub1(two_r)
                    } else {
                        random_below_r(&mut state)
                    }
                })
                .collect();
            let b: Vec<[u64; 4]> = (0..W::LANES).map(|_| random_below_r(&mut state)).collect();
            // SAFETY: callers run check only where W::supported().
            let got = unsafe {
                let p = W::load(&vec![p29; W::LANES]);
                let inv = W::splat(neg_inv_29());
                let va = W::load(&a.iter().map(|x| to_radix29(*x)).collect::<Vec<_>>());
                let vb = W::load(&b.iter().map(|x| to_radix29(*x)).collect::<Vec<_>>());
                W::store(&W::mul(&va, &vb, &p, inv))
            };
            for lane in 0..W::LANES {
                assert!(
                    got[lane].iter().all(|&l| l <= LIMB_MASK),
                    "lane {lane}: a limb over 29 bits"
                );
                let c = from_radix29(got[lane]);
                assert!(less(c, two_r), "lane {lane}: result not below 2r");
                let lhs = Fr::from_limbs(c).mul_mod(two_pow_261);
                let rhs = Fr::from_limbs(a[lane]).mul_mod(Fr::from_limbs(b[lane]));
                assert_eq!(
                    lhs, rhs,
                    "round {round} lane {lane}: a={:x?} b={:x?}",
                    a[lane], b[lane]
                );
            }
        }
    }

    fn sub1(mut x: [u64; 4]) -> [u64; 4] {
        for limb in x.iter_mut() {
            let (v, borrow) = limb.overflowing_sub(1);
            *limb = v;
            if !borrow {
                break;
            }
        }
        x
    }

    fn less(a: [u64; 4], b: [u64; 4]) -> bool {
        a.iter().rev().cmp(b.iter().rev()) == std::cmp::Ordering::Less
    }

    /// The vector chains' inputs: r and its factor, a random multiplier y and CHAINS random
    /// starting vectors (fixed seed).
    ///
    /// # Safety
    /// The CPU must support `W` ([`Width::supported`]).
    #[allow(clippy::type_complexity)]
    unsafe fn vector_chains<W: Width>(
    ) -> ([W::V; LIMBS], W::V, [W::V; LIMBS], [[W::V; LIMBS]; CHAINS]) {
        let mut state = 7;
        let mut random = || {
            let lanes: Vec<[u64; LIMBS]> = (0..W::LANES)
                .map(|_| to_radix29(random_below_r(&mut state)))
                .collect();
            // SAFETY: the caller checked the CPU's features.
            unsafe { W::load(&lanes) }
        };
        let y = random();
        let xs = std::array::from_fn(|_| random());
        // SAFETY: as above.
        unsafe {
            (
                W::load(&vec![modulus_limbs(); W::LANES]),
                W::splat(neg_inv_29()),
                y,
                xs,
            )
        }
    }

    /// The scalar chains' multiplier and CHAINS starting values.
    fn scalar_chains() -> (Fr, [Fr; CHAINS]) {
        (Fr::from_u64(11), [3, 5, 7, 9].map(Fr::from_u64))
    }

    /// CPU ns per element multiplied: CHAINS independent chains x = x·y of W::LANES lanes.
    pub fn vector_ns<W: Width>() -> f64 {
        // SAFETY: callers measure only where W::supported().
        unsafe {
            let (p, inv, y, mut xs) = vector_chains::<W>();
            let t = thread_cpu_time();
            W::chain(&mut xs, &y, &p, inv, STEPS);
            let ns = (thread_cpu_time() - t).as_nanos() as f64;
            std::hint::black_box(&xs);
            ns / (STEPS * (CHAINS * W::LANES) as u64) as f64
        }
    }

    /// CPU ns per element when the AVX2 chains (CHAINS vectors of 4 lanes) and `S` scalar
    /// MULX/ADX multiplies (on 4 chains of their own) share each step: whether the two kinds of
    /// multiply overlap on one core.
    pub fn hybrid_ns<const S: usize>(adx: pora_encode::adx::Adx) -> f64 {
        #[target_feature(enable = "avx2,bmi2,adx")]
        unsafe fn inner<const S: usize>(adx: pora_encode::adx::Adx) -> f64 {
            let (p, inv, y, mut xs) = vector_chains::<Avx2>();
            let (sy, mut sx) = scalar_chains();
            let t = thread_cpu_time();
            for _ in 0..STEPS {
                for x in xs.iter_mut() {
                    *x = mul_avx2(x, &y, &p, inv);
                }
                for k in 0..S {
                    sx[k % 4] = adx.mul(sx[k % 4], sy);
                }
            }
            let ns = (thread_cpu_time() - t).as_nanos() as f64;
            std::hint::black_box((&xs, sx));
            ns / (STEPS * (CHAINS * 4 + S) as u64) as f64
        }
        // SAFETY: an Adx token exists only on CPUs with bmi2 and adx; callers check avx2.
        unsafe { inner::<S>(adx) }
    }

    /// CPU ns per multiply of the scalar kernel `arith`, CHAINS independent chains.
    pub fn scalar_ns<A: Arith>(arith: A) -> f64 {
        let (y, mut xs) = scalar_chains();
        let t = thread_cpu_time();
        for _ in 0..STEPS {
            for x in xs.iter_mut() {
                *x = arith.mul(*x, y);
            }
        }
        let ns = (thread_cpu_time() - t).as_nanos() as f64;
        std::hint::black_box(xs);
        ns / (STEPS * CHAINS as u64) as f64
    }

    /// CPU ns per element of the IFMA eight-lane multiply, four chains of eight lanes.
    pub fn ifma_ns(ifma: pora_encode::ifma::Ifma) -> f64 {
        use pora_encode::ifma::{ChainOp, LANES};
        let rounds = STEPS;
        let t = thread_cpu_time();
        std::hint::black_box(ifma.chain::<4>(ChainOp::Mul, rounds));
        (thread_cpu_time() - t).as_nanos() as f64 / (rounds * (4 * LANES) as u64) as f64
    }

    /// CPU ns per element of the crate's AVX-512F kernel multiply (`pora_encode::avx512f`, the
    /// one the `avx512f` kernel runs), four chains of eight lanes.
    pub fn kernel_avx512f_ns(token: pora_encode::avx512f::Avx512f) -> f64 {
        use pora_encode::avx512f::LANES;
        let t = thread_cpu_time();
        std::hint::black_box(token.mul_chain::<4>(STEPS));
        (thread_cpu_time() - t).as_nanos() as f64 / (STEPS * (4 * LANES) as u64) as f64
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    use floor::{Avx2, Avx512f, Width};
    let adx = pora_encode::adx::Adx::detect();
    let ifma = pora_encode::ifma::Ifma::detect();
    let avx2 = Avx2::supported();
    let avx512f = Avx512f::supported();
    if avx2 {
        floor::check::<Avx2>();
        println!("AVX2 4-lane radix-2^29 multiply: equal to Fr::mul_mod on 8,000 products");
    }
    if avx512f {
        floor::check::<Avx512f>();
        println!("AVX-512F 8-lane radix-2^29 multiply: equal to Fr::mul_mod on 16,000 products");
    }
    println!("CPU ns per element multiplied (thread CPU time), 4 independent chains each");
    for round in 1..=3 {
        let mut line = format!("round {round}:");
        let mulx = adx.map(floor::scalar_ns);
        if let Some(ns) = mulx {
            line += &format!(" mulx/adx {ns:.2}");
        }
        for (name, ok, f) in [
            ("avx2 x4", avx2, floor::vector_ns::<Avx2> as fn() -> f64),
            ("avx512f x8", avx512f, floor::vector_ns::<Avx512f>),
        ] {
            if ok {
                let ns = f();
                line += &format!(" | {name} {ns:.2}");
                if let Some(m) = mulx {
                    line += &format!(" ({:.2}x mulx)", m / ns);
                }
            } else {
                line += &format!(" | {name}: CPU lacks it");
            }
        }
        if let (Some(adx), true) = (adx, avx2) {
            for (s, ns) in [
                (8, floor::hybrid_ns::<8>(adx)),
                (16, floor::hybrid_ns::<16>(adx)),
            ] {
                line += &format!(" | avx2 x16 + mulx x{s} {ns:.2}");
            }
        }
        if let Some(token) = pora_encode::avx512f::Avx512f::detect() {
            let ns = floor::kernel_avx512f_ns(token);
            line += &format!(" | kernel avx512f x8 {ns:.2}");
            if let Some(m) = mulx {
                line += &format!(" ({:.2}x mulx)", m / ns);
            }
        }
        if let Some(ifma) = ifma {
            let ns = floor::ifma_ns(ifma);
            line += &format!(" | ifma x8 {ns:.2}");
            if let Some(m) = mulx {
                line += &format!(" ({:.2}x mulx)", m / ns);
            }
        }
        println!("{line}");
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    println!("SKIP: vector-mul-floor measures x86-64 vector multiplies; this target is not x86-64");
}
