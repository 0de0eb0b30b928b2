//! Micro-benchmark of the field operations in thread CPU time: latency (one dependent chain) and
//! throughput (four independent chains, as the 4-lane Poseidon interleaves them) of multiply,
//! square and `dot3`, portable Rust vs the MULX/ADX assembly vs ark-ff, measured interleaved
//! (three rounds); and, on CPUs with AVX-512 IFMA, the eight-lane kernels per element (one and
//! two chains of eight lanes, lazy IFMA form) and the IFMA instruction throughput on 512- and
//! 256-bit vectors. Run:
//! `cargo run --release -p pora-encode --example mul-bench`.

use ark_ff::Field;
use pora_encode::arith::{Arith, Portable};
use pora_encode::field::Fr;
#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::thread_cpu_time;

const N: u64 = 10_000_000;

/// CPU ns per iteration of `f`, run `N` times.
fn ns_per_op(mut f: impl FnMut()) -> f64 {
    let t = thread_cpu_time();
    for _ in 0..N {
        f();
    }
    (thread_cpu_time() - t).as_nanos() as f64 / N as f64
}

/// Latency and throughput figures for one implementation.
fn measure<A: Arith>(arith: A) -> [f64; 5] {
    let y = Fr::from_u64(11);
    let mut x = Fr::from_u64(7);
    let mul = ns_per_op(|| x = arith.mul(x, y));
    let sq = ns_per_op(|| x = arith.square(x));
    let m = [y, Fr::from_u64(13), Fr::from_u64(17)];
    let mut v = [x, y, x];
    let dot = ns_per_op(|| {
        let d = arith.dot3(m, v);
        v = [d, v[0], v[1]];
    });
    // Four independent chains: time per multiply when the CPU may overlap them.
    let mut xs = [x, y, v[0], v[1]];
    let mul4 = ns_per_op(|| {
        for x in xs.iter_mut() {
            *x = arith.mul(*x, y);
        }
    }) / 4.0;
    let sq4 = ns_per_op(|| {
        for x in xs.iter_mut() {
            *x = arith.square(*x);
        }
    }) / 4.0;
    std::hint::black_box((x, v, xs));
    [mul, sq, dot, mul4, sq4]
}

/// The variants that lost or are only here for comparison: the portable multiply with a
/// branch-free final subtraction (the earlier code), and the assembly square done as a multiply.
fn alternatives() {
    let y = Fr::from_u64(11);
    let mut x = Fr::from_u64(7);
    let branch_free = ns_per_op(|| x = x.mul_mod_branch_free(y));
    let mut xs = [x, y, Fr::from_u64(3), Fr::from_u64(5)];
    let branch_free4 = ns_per_op(|| {
        for x in xs.iter_mut() {
            *x = x.mul_mod_branch_free(y);
        }
    }) / 4.0;
    print!("  portable mul, branch-free subtraction: {branch_free:.2}, 4 chains {branch_free4:.2}");
    #[cfg(target_arch = "x86_64")]
    if let Some(adx) = pora_encode::adx::Adx::detect() {
        let sq = ns_per_op(|| x = adx.square_by_mul(x));
        let sq4 = ns_per_op(|| {
            for x in xs.iter_mut() {
                *x = adx.square_by_mul(*x);
            }
        }) / 4.0;
        print!("; asm square as a multiply: {sq:.2}, 4 chains {sq4:.2}");
    }
    println!();
    std::hint::black_box((x, xs));
}

fn ark_mul() -> f64 {
    let mut a = ark_bn254::Fr::from(7u64);
    let b = ark_bn254::Fr::from(11u64);
    let ns = ns_per_op(|| a *= b);
    std::hint::black_box(a.square());
    ns
}

fn print(name: &str, r: [f64; 5]) {
    println!(
        "  {name:9} mul {:6.2}  square {:6.2}  dot3 {:6.2}  | 4 chains: mul {:6.2}  square {:6.2}",
        r[0], r[1], r[2], r[3], r[4]
    );
}

/// IFMA per element: `C` chains of eight lanes, time divided by the elements multiplied.
#[cfg(target_arch = "x86_64")]
fn measure_ifma<const C: usize>(ifma: pora_encode::ifma::Ifma) -> [f64; 3] {
    use pora_encode::ifma::{ChainOp, LANES};
    let rounds = N / 8;
    let per_element = |op| {
        let t = thread_cpu_time();
        std::hint::black_box(ifma.chain::<C>(op, rounds));
        (thread_cpu_time() - t).as_nanos() as f64 / (rounds * (C * LANES) as u64) as f64
    };
    [
        per_element(ChainOp::Mul),
        per_element(ChainOp::Square),
        per_element(ChainOp::Dot3),
    ]
}

#[cfg(target_arch = "x86_64")]
fn print_ifma() {
    let Some(ifma) = pora_encode::ifma::Ifma::detect() else {
        println!("  ifma      (CPU without avx512ifma)");
        return;
    };
    for (name, r) in [
        ("ifma x8", measure_ifma::<1>(ifma)),
        ("ifma x16", measure_ifma::<2>(ifma)),
    ] {
        println!(
            "  {name:9} per element: mul {:6.2}  square {:6.2}  dot3 {:6.2}",
            r[0], r[1], r[2]
        );
    }
    if std::arch::is_x86_feature_detected!("avx512vl") {
        let (zmm, ymm) = ifma_peak();
        println!(
            "  ifma peak: {zmm:.2} zmm or {ymm:.2} ymm vpmadd52luq per ns ({:.1} and {:.1} lanes per ns)",
            zmm * 8.0,
            ymm * 4.0
        );
    }
}

/// The IFMA instruction throughput: twelve independent `vpmadd52luq` chains on 512-bit and on
/// 256-bit vectors, instructions per ns of thread CPU time. Zen 4 runs 512-bit operations as two
/// 256-bit halves: equal lanes per ns mean narrower vectors buy nothing. The factors go through
/// `black_box` so the compiler cannot fold the chains.
#[cfg(target_arch = "x86_64")]
fn ifma_peak() -> (f64, f64) {
    use std::arch::x86_64::*;
    const CHAINS: usize = 12;
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
    fn zmm(n: u64) -> __m512i {
        let b = std::hint::black_box(_mm512_set1_epi64(3));
        let c = std::hint::black_box(_mm512_set1_epi64(5));
        let mut acc = [_mm512_set1_epi64(1); CHAINS];
        for _ in 0..n {
            for a in acc.iter_mut() {
                *a = _mm512_madd52lo_epu64(*a, b, c);
            }
        }
        acc.iter()
            .fold(_mm512_setzero_si512(), |s, a| _mm512_add_epi64(s, *a))
    }
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
    fn ymm(n: u64) -> __m256i {
        let b = std::hint::black_box(_mm256_set1_epi64x(3));
        let c = std::hint::black_box(_mm256_set1_epi64x(5));
        let mut acc = [_mm256_set1_epi64x(1); CHAINS];
        for _ in 0..n {
            for a in acc.iter_mut() {
                *a = _mm256_madd52lo_epu64(*a, b, c);
            }
        }
        acc.iter()
            .fold(_mm256_setzero_si256(), |s, a| _mm256_add_epi64(s, *a))
    }
    let per_ns = |f: &dyn Fn()| {
        let t = thread_cpu_time();
        f();
        (N * CHAINS as u64) as f64 / (thread_cpu_time() - t).as_nanos() as f64
    };
    let z = per_ns(&|| {
        // SAFETY: the caller checked avx512vl, and `print_ifma` avx512ifma (an `Ifma` token),
        // which implies avx512f.
        std::hint::black_box(unsafe { zmm(N) });
    });
    let y = per_ns(&|| {
        // SAFETY: as for `zmm` just above.
        std::hint::black_box(unsafe { ymm(N) });
    });
    (z, y)
}

fn main() {
    #[cfg(target_arch = "x86_64")]
    let adx = pora_encode::adx::Adx::detect();
    println!("CPU ns per op (thread CPU time), dependent chains unless noted");
    for round in 0..3 {
        println!("round {round}: ark-ff mul {:.2}", ark_mul());
        print("portable", measure(Portable));
        #[cfg(target_arch = "x86_64")]
        match adx {
            Some(adx) => print("asm", measure(adx)),
            None => println!("  asm       (CPU without BMI2/ADX)"),
        }
        #[cfg(target_arch = "x86_64")]
        print_ifma();
        alternatives();
    }
}
