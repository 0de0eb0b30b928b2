//! The hot field operations (multiply, square, `dot3`) in x86-64 inline assembly with MULX, ADCX
//! and ADOX, used only on CPUs that have BMI2 and ADX (checked at run time, see [`Adx::detect`]).
//!
//! Why assembly: the portable CIOS goes through `u128`, which compiles to `mul` (rdx:rax fixed,
//! flags clobbered) and one `add/adc` chain, so the two carry chains of a Montgomery row (low
//! words, high words) are serialised through the single carry flag. MULX leaves the flags alone,
//! and ADCX/ADOX carry through CF and OF separately, so both chains run side by side — this is
//! the form no compiler emits from portable code.
//!
//! Algorithm: CIOS with the "no-carry" shortcut (the top limb of r is below `2^63 - 1`, so the
//! running value never needs a sixth limb). The accumulator lives in five registers whose roles
//! rotate by one per outer iteration instead of being shifted with moves. `dot3` runs the same
//! interleaved loop over three products at once (`Σ a_k·b_k[i]` per row, one reduction per row):
//! the running value stays below `4r·2^64 + r < 2^320` (five limbs) and the result below `2r`.
//! The square builds the 512-bit square from 10 word products (6 cross products doubled, 4 on the
//! diagonal) and reduces it afterwards (SOS), 26 multiplies instead of 32. Every result goes through one final conditional subtraction, so outputs are canonical (`< r`)
//! exactly like the portable path, bit for bit.
//!
//! Layer 1 of the crate (field arithmetic); it imports only from this layer or below.

use crate::arith::Arith;
use crate::field::{Fr, INV, MODULUS};
use core::arch::asm;

/// The modulus limbs, then `-r^{-1} mod 2^64`: the assembly reads them through one pointer.
static MONT: [u64; 5] = [MODULUS[0], MODULUS[1], MODULUS[2], MODULUS[3], INV];

/// Proof that this CPU runs MULX (BMI2) and ADCX/ADOX (ADX): the only way to reach the assembly,
/// so safe code cannot execute it on a CPU without those instructions.
#[derive(Clone, Copy, Debug)]
pub struct Adx(());

impl Adx {
    /// `Some` when the CPU has BMI2 and ADX (std caches the CPUID result, so this is cheap; still,
    /// callers detect once per mask, not per multiply).
    pub fn detect() -> Option<Adx> {
        let ok = std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("adx");
        ok.then_some(Adx(()))
    }

    /// The square as a plain multiply (the benchmark compares it with [`Arith::square`]).
    #[doc(hidden)]
    pub fn square_by_mul(self, a: Fr) -> Fr {
        Fr(mont_mul(&a.0, &a.0))
    }
}

/// `T += a_k·b_k[i]` for one 4-limb `a_k` at byte offset `$k` of `{a}` and word `i` of `b_k`, at
/// byte offset `$k + $i` of `{b}` (`$i` is `8·i`; the assembler adds the two). Low halves go
/// down the OF chain, high halves down the CF chain. `$zero` is cleared first to clear both
/// flags: `T4` at the first product of a row (the top limb starts at zero there), otherwise the
/// scratch `lo`.
// One instruction per line: rustfmt would split every `concat!` piece onto its own line.
#[rustfmt::skip]
macro_rules! product_row {
    ($zero:literal, $k:literal, $i:literal, $t0:literal, $t1:literal, $t2:literal, $t3:literal, $t4:literal) => {
        concat!(
            "mov rdx, qword ptr [{b} + ", $k, " + ", $i, "]\n",
            "xor {", $zero, ":e}, {", $zero, ":e}\n",
            "mulx {hi}, {lo}, qword ptr [{a} + ", $k, "]\n",
            "adox {", $t0, "}, {lo}\n",
            "adcx {", $t1, "}, {hi}\n",
            "mulx {hi}, {lo}, qword ptr [{a} + ", $k, " + 8]\n",
            "adox {", $t1, "}, {lo}\n",
            "adcx {", $t2, "}, {hi}\n",
            "mulx {hi}, {lo}, qword ptr [{a} + ", $k, " + 16]\n",
            "adox {", $t2, "}, {lo}\n",
            "adcx {", $t3, "}, {hi}\n",
            "mulx {hi}, {lo}, qword ptr [{a} + ", $k, " + 24]\n",
            "adox {", $t3, "}, {lo}\n",
            "adcx {", $t4, "}, {hi}\n",
            // `mov` leaves the flags alone: OF still holds the low chain's carry into T4.
            "mov {lo:e}, 0\n",
            "adox {", $t4, "}, {lo}\n",
        )
    };
}

/// The product rows of one outer iteration of the CIOS: word `i` (`$i` = `8·i`) of every `b_k`
/// times its `a_k`, with the accumulator in the registers `$t0..$t4` of this iteration's
/// rotation. `a_0·b_0[i]` (at offset 0) comes first and clears the flags with `$t4`, the top
/// limb, still zero; then one row for each further term's byte offset in `[$k, ...]`.
macro_rules! product_rows {
    ($i:literal, [$($k:literal),*], $t0:literal, $t1:literal, $t2:literal, $t3:literal, $t4:literal) => {
        concat!(
            product_row!($t4, "0", $i, $t0, $t1, $t2, $t3, $t4),
            $(product_row!("lo", $k, $i, $t0, $t1, $t2, $t3, $t4),)*
        )
    };
}

/// One Montgomery step: `m = T0·(-r^{-1})`, `T += m·r` (T0 becomes zero and is dropped: the
/// caller rotates the register roles). Needs `{m}` = [`MONT`].
// One instruction per line: rustfmt would split every `concat!` piece onto its own line.
#[rustfmt::skip]
macro_rules! reduce_row {
    ($t0:literal, $t1:literal, $t2:literal, $t3:literal, $t4:literal) => {
        concat!(
            "mov rdx, {", $t0, "}\n",
            "imul rdx, qword ptr [{m} + 32]\n",
            // imul sets CF/OF; clear both before the two chains.
            "xor {lo:e}, {lo:e}\n",
            "mulx {hi}, {lo}, qword ptr [{m}]\n",
            "adcx {lo}, {", $t0, "}\n",
            "adox {", $t1, "}, {hi}\n",
            "mulx {hi}, {lo}, qword ptr [{m} + 8]\n",
            "adcx {", $t1, "}, {lo}\n",
            "adox {", $t2, "}, {hi}\n",
            "mulx {hi}, {lo}, qword ptr [{m} + 16]\n",
            "adcx {", $t2, "}, {lo}\n",
            "adox {", $t3, "}, {hi}\n",
            "mulx {hi}, {lo}, qword ptr [{m} + 24]\n",
            "adcx {", $t3, "}, {lo}\n",
            "adox {", $t4, "}, {hi}\n",
            "mov {lo:e}, 0\n",
            "adcx {", $t4, "}, {lo}\n",
        )
    };
}

/// `T = T - r if T >= r` for `T < 2r`, branch-free (the borrow of `T - r` picks with cmov);
/// `$t4`, `lo`, `hi` and rdx are scratch. A branch instead measured within the noise here
/// (docs/BENCHMARKS.md §10), so the select stays: no mispredictions, data-independent timing.
// One instruction per line: rustfmt would split every `concat!` piece onto its own line.
#[rustfmt::skip]
macro_rules! final_subtract {
    ($t0:literal, $t1:literal, $t2:literal, $t3:literal, $t4:literal) => {
        concat!(
            "mov {lo}, {", $t0, "}\n",
            "sub {lo}, qword ptr [{m}]\n",
            "mov {hi}, {", $t1, "}\n",
            "sbb {hi}, qword ptr [{m} + 8]\n",
            "mov rdx, {", $t2, "}\n",
            "sbb rdx, qword ptr [{m} + 16]\n",
            "mov {", $t4, "}, {", $t3, "}\n",
            "sbb {", $t4, "}, qword ptr [{m} + 24]\n",
            "cmovae {", $t0, "}, {lo}\n",
            "cmovae {", $t1, "}, {hi}\n",
            "cmovae {", $t2, "}, rdx\n",
            "cmovae {", $t3, "}, {", $t4, "}\n",
        )
    };
}

/// The CIOS [`mont_mul`] and [`mont_dot3`] share, as one `asm!` statement in an `unsafe` block,
/// evaluating to the result limbs of `Σ a_k·b_k·R^{-1}`: the accumulator t0..t3 cleared, four
/// outer iterations (the products with word `i` of every `b_k`, then one reduction row; the
/// register roles rotate by one per iteration instead of moving values), the final subtraction.
/// `$a` and `$b` are the input pointers (`{a}`, `{b}`), `a_0`/`b_0` at offset 0 and each further
/// term at the byte offsets `[$k, ...]` (none for a plain product); `{m}` is [`MONT`]. The result
/// is in t4, t0, t1, t2 after the four rotations; t3, lo, hi and rdx are clobbered. Each caller
/// says (`Reads:`) why the reads at `{a}` and `{b}` are in bounds.
macro_rules! cios {
    ($a:expr, $b:expr, [$($k:literal),*]) => {{
        let (r0, r1, r2, r3): (u64, u64, u64, u64);
        // SAFETY: reachable only through an `Adx` token, i.e. on a CPU with BMI2 and ADX. The
        // assembly reads at `{a}` and `{b}` only what the caller's `Reads:` comment shows is
        // inside its operands, 40 bytes at `MONT` (valid, aligned u64s), writes only its
        // declared register outputs, and does not touch the stack.
        unsafe {
            asm!(
                "xor {t0:e}, {t0:e}",
                "xor {t1:e}, {t1:e}",
                "xor {t2:e}, {t2:e}",
                "xor {t3:e}, {t3:e}",
                product_rows!("0", [$($k),*], "t0", "t1", "t2", "t3", "t4"),
                reduce_row!("t0", "t1", "t2", "t3", "t4"),
                product_rows!("8", [$($k),*], "t1", "t2", "t3", "t4", "t0"),
                reduce_row!("t1", "t2", "t3", "t4", "t0"),
                product_rows!("16", [$($k),*], "t2", "t3", "t4", "t0", "t1"),
                reduce_row!("t2", "t3", "t4", "t0", "t1"),
                product_rows!("24", [$($k),*], "t3", "t4", "t0", "t1", "t2"),
                reduce_row!("t3", "t4", "t0", "t1", "t2"),
                final_subtract!("t4", "t0", "t1", "t2", "t3"),
                a = in(reg) $a,
                b = in(reg) $b,
                m = in(reg) MONT.as_ptr(),
                t0 = out(reg) r1,
                t1 = out(reg) r2,
                t2 = out(reg) r3,
                t3 = out(reg) _,
                t4 = out(reg) r0,
                lo = out(reg) _,
                hi = out(reg) _,
                out("rdx") _,
                options(pure, readonly, nostack),
            );
        }
        [r0, r1, r2, r3]
    }};
}

/// Montgomery product `a·b·R^{-1} mod r` of two canonical values, canonical result.
#[inline(always)]
fn mont_mul(a: &[u64; 4], b: &[u64; 4]) -> [u64; 4] {
    // Reads: 32 bytes at `a` and 32 at `b` (offsets 0..32), both `[u64; 4]`.
    cios!(a.as_ptr(), b.as_ptr(), [])
}

/// One reduction row of the separate (SOS) reduction in [`mont_square`]: `m = P_i·(-r^{-1})`,
/// `P[i..i+4] += m·r` (low halves down CF, high halves down OF), then `{a}` (the input pointer,
/// dead by now) carries the two chains' carries out of limb `i+4` into the next row. The modulus
/// comes as immediates: no register is left for a pointer.
// One instruction per line: rustfmt would split every `concat!` piece onto its own line.
#[rustfmt::skip]
macro_rules! square_reduce_row {
    ($p0:literal, $p1:literal, $p2:literal, $p3:literal, $p4:literal) => {
        concat!(
            "mov rdx, {", $p0, "}\n",
            "mov {lo}, {inv}\n",
            "imul rdx, {lo}\n",
            "xor {lo:e}, {lo:e}\n",
            "mov {hi}, {r0}\n",
            "mulx {hi}, {lo}, {hi}\n",
            "adcx {", $p0, "}, {lo}\n",
            "adox {", $p1, "}, {hi}\n",
            "mov {hi}, {r1}\n",
            "mulx {hi}, {lo}, {hi}\n",
            "adcx {", $p1, "}, {lo}\n",
            "adox {", $p2, "}, {hi}\n",
            "mov {hi}, {r2}\n",
            "mulx {hi}, {lo}, {hi}\n",
            "adcx {", $p2, "}, {lo}\n",
            "adox {", $p3, "}, {hi}\n",
            "mov {hi}, {r3}\n",
            "mulx {hi}, {lo}, {hi}\n",
            "adcx {", $p3, "}, {lo}\n",
            "adox {", $p4, "}, {hi}\n",
            // Limb i+4 also takes the previous row's carry; both chains then end in `{a}`.
            "adcx {", $p4, "}, {a}\n",
            "mov {a:e}, 0\n",
            "adcx {a}, {a}\n",
            "mov {lo:e}, 0\n",
            "adox {a}, {lo}\n",
        )
    };
}

/// Montgomery square `a²·R^{-1} mod r` of a canonical value, canonical result: the 512-bit
/// square from 6 cross products (doubled) and 4 diagonal ones — 10 word products instead of 16 —
/// then the 16-product reduction.
#[inline(always)]
fn mont_square(a: &[u64; 4]) -> [u64; 4] {
    let (s0, s1, s2, s3): (u64, u64, u64, u64);
    // SAFETY: reachable only through an `Adx` token (CPU with BMI2 and ADX). Reads 32 bytes at
    // `a` (valid, aligned), writes only its declared register operands, no stack.
    unsafe {
        asm!(
            // Cross products a_i·a_j (i < j) into p1..p6; p0 = 0 serves as a zero source.
            "xor {p0:e}, {p0:e}",
            "mov rdx, qword ptr [{a}]",
            "mulx {p2}, {p1}, qword ptr [{a} + 8]",
            "mulx {p3}, {lo}, qword ptr [{a} + 16]",
            "adcx {p2}, {lo}",
            "mulx {p4}, {lo}, qword ptr [{a} + 24]",
            "adcx {p3}, {lo}",
            "mov rdx, qword ptr [{a} + 8]",
            "mulx {p5}, {lo}, qword ptr [{a} + 24]",
            "adcx {p4}, {lo}",
            "mulx {hi}, {lo}, qword ptr [{a} + 16]",
            "adox {p3}, {lo}",
            "adox {p4}, {hi}",
            "adcx {p5}, {p0}",
            "mov rdx, qword ptr [{a} + 16]",
            "mulx {p6}, {lo}, qword ptr [{a} + 24]",
            "adox {p5}, {lo}",
            "adox {p6}, {p0}",
            // Double (p7 takes the top bit), then add the squares a_i² on the diagonal.
            "xor {p7:e}, {p7:e}",
            "add {p1}, {p1}",
            "adc {p2}, {p2}",
            "adc {p3}, {p3}",
            "adc {p4}, {p4}",
            "adc {p5}, {p5}",
            "adc {p6}, {p6}",
            "adc {p7}, {p7}",
            "mov rdx, qword ptr [{a}]",
            "mulx {hi}, {p0}, rdx",
            "add {p1}, {hi}",
            "mov rdx, qword ptr [{a} + 8]",
            "mulx {hi}, {lo}, rdx",
            "adc {p2}, {lo}",
            "adc {p3}, {hi}",
            "mov rdx, qword ptr [{a} + 16]",
            "mulx {hi}, {lo}, rdx",
            "adc {p4}, {lo}",
            "adc {p5}, {hi}",
            "mov rdx, qword ptr [{a} + 24]",
            "mulx {hi}, {lo}, rdx",
            "adc {p6}, {lo}",
            "adc {p7}, {hi}",
            // Reduction: the pointer register becomes the carry between rows.
            "xor {a:e}, {a:e}",
            square_reduce_row!("p0", "p1", "p2", "p3", "p4"),
            square_reduce_row!("p1", "p2", "p3", "p4", "p5"),
            square_reduce_row!("p2", "p3", "p4", "p5", "p6"),
            square_reduce_row!("p3", "p4", "p5", "p6", "p7"),
            // p4..p7 < 2r: subtract r unless that borrows (p0..p3 are scratch now).
            "mov {p0}, {p4}",
            "mov {lo}, {r0}",
            "sub {p0}, {lo}",
            "mov {p1}, {p5}",
            "mov {lo}, {r1}",
            "sbb {p1}, {lo}",
            "mov {p2}, {p6}",
            "mov {lo}, {r2}",
            "sbb {p2}, {lo}",
            "mov {p3}, {p7}",
            "mov {lo}, {r3}",
            "sbb {p3}, {lo}",
            "cmovae {p4}, {p0}",
            "cmovae {p5}, {p1}",
            "cmovae {p6}, {p2}",
            "cmovae {p7}, {p3}",
            a = inout(reg) a.as_ptr() => _,
            p0 = out(reg) _,
            p1 = out(reg) _,
            p2 = out(reg) _,
            p3 = out(reg) _,
            p4 = out(reg) s0,
            p5 = out(reg) s1,
            p6 = out(reg) s2,
            p7 = out(reg) s3,
            lo = out(reg) _,
            hi = out(reg) _,
            out("rdx") _,
            // As i64: the same 64 bits, printed as a decimal every assembler takes for `mov r64`.
            r0 = const MODULUS[0] as i64,
            r1 = const MODULUS[1] as i64,
            r2 = const MODULUS[2] as i64,
            r3 = const MODULUS[3] as i64,
            inv = const INV as i64,
            options(pure, readonly, nostack),
        );
    }
    [s0, s1, s2, s3]
}

/// `a[0]·b[0] + a[1]·b[1] + a[2]·b[2]` times `R^{-1}`, canonical: one interleaved CIOS over the
/// three products (three product rows, one reduction per outer iteration).
#[inline(always)]
fn mont_dot3(a: &[Fr; 3], b: &[Fr; 3]) -> [u64; 4] {
    // Reads: `Fr` is `repr(transparent)` over `[u64; 4]`, so `[Fr; 3]` is 96 contiguous bytes and
    // every offset read (terms at 0, 32 and 64, plus at most 24) is inside it.
    cios!(a.as_ptr(), b.as_ptr(), ["32", "64"])
}

impl Arith for Adx {
    #[inline(always)]
    fn mul(self, a: Fr, b: Fr) -> Fr {
        Fr(mont_mul(&a.0, &b.0))
    }

    #[inline(always)]
    fn square(self, a: Fr) -> Fr {
        Fr(mont_square(&a.0))
    }

    #[inline(always)]
    fn dot3(self, a: [Fr; 3], b: [Fr; 3]) -> Fr {
        Fr(mont_dot3(&a, &b))
    }
}

#[cfg(test)]
mod tests {
    //! The assembly against the portable code and ark-ff: edge values, a deterministic sweep that
    //! hits both outcomes of the final subtraction, and random canonical inputs.

    use super::*;
    use crate::arith::Portable;
    use crate::field::needs_final_subtraction;
    use crate::field::test_values::{self, r_minus};
    use ark_ff::PrimeField;
    use proptest::prelude::*;

    fn ark(x: Fr) -> ark_bn254::Fr {
        ark_bn254::Fr::from_be_bytes_mod_order(&x.to_be_bytes())
    }

    /// The token, or `None` after printing `SKIP: <test>: CPU lacks bmi2 and adx` (once per
    /// test): the assembly's tests never pass silently on a CPU that cannot run it.
    fn detect_or_skip(test: &str) -> Option<Adx> {
        test_values::detect_or_skip(test, "bmi2 and adx", Adx::detect)
    }

    /// The shared edge values with one more before the last: r-1 with its third limb one lower
    /// too.
    fn edges() -> Vec<Fr> {
        let mut top = r_minus(1);
        top[2] = MODULUS[2] - 1;
        let mut edges = test_values::edges();
        edges.insert(edges.len() - 1, Fr(top));
        edges
    }

    fn canonical() -> impl Strategy<Value = Fr> {
        test_values::canonical_or(edges())
    }

    fn check_all(adx: Adx, x: Fr, y: Fr, z: Fr) {
        let p = Portable;
        assert_eq!(adx.mul(x, y), p.mul(x, y), "mul {x:?} {y:?}");
        assert_eq!(ark(adx.mul(x, y)), ark(x) * ark(y));
        assert_eq!(adx.square(x), p.square(x), "square {x:?}");
        assert_eq!(adx.square_by_mul(x), p.square(x));
        assert_eq!(x.mul_mod_branch_free(y), p.mul(x, y));
        let (a, b) = ([x, y, z], [z, x, y]);
        assert_eq!(adx.dot3(a, b), p.dot3(a, b), "dot3 {a:?} {b:?}");
        assert_eq!(
            ark(adx.dot3(a, b)),
            ark(x) * ark(z) + ark(y) * ark(x) + ark(z) * ark(y)
        );
    }

    #[test]
    fn edge_values_match_portable_and_ark() {
        let Some(adx) = detect_or_skip("adx::tests::edge_values_match_portable_and_ark") else {
            return;
        };
        let e = edges();
        for &x in &e {
            for &y in &e {
                for &z in &[e[0], e[4], y] {
                    check_all(adx, x, y, z);
                }
                // Every term at its largest: the lazy sum's bound is tightest here.
                assert_eq!(adx.dot3([x; 3], [y; 3]), Portable.dot3([x; 3], [y; 3]));
            }
        }
    }

    #[test]
    fn sweep_hits_both_final_subtraction_outcomes() {
        let Some(adx) = detect_or_skip("adx::tests::sweep_hits_both_final_subtraction_outcomes")
        else {
            return;
        };
        // xorshift64: deterministic and cheap; top limbs below r's keep the inputs canonical.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut element = || Fr([next(), next(), next(), next() % MODULUS[3]]);
        let (mut with_sub, mut without) = (0, 0);
        for _ in 0..200_000 {
            let (x, y, z) = (element(), element(), element());
            if needs_final_subtraction(x, y) {
                with_sub += 1;
            } else {
                without += 1;
            }
            assert_eq!(adx.mul(x, y), Portable.mul(x, y));
            assert_eq!(adx.square(z), Portable.square(z));
            let (a, b) = ([x, y, z], [y, z, x]);
            assert_eq!(adx.dot3(a, b), Portable.dot3(a, b));
        }
        assert!(with_sub > 100 && without > 100, "{with_sub} / {without}");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn random_inputs_match_portable_and_ark(x in canonical(), y in canonical(), z in canonical()) {
            if let Some(adx) = detect_or_skip("adx::tests::random_inputs_match_portable_and_ark") {
                check_all(adx, x, y, z);
            }
        }
    }
}
