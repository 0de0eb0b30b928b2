//! CPU time per KV of the fast path (portable multiply with 1, 2, 4 interleaved lanes; the
//! MULX/ADX assembly multiply with 1 and 4 lanes; AVX-512 IFMA and AVX-512F without IFMA with 1,
//! 2, 4 groups of eight lanes) and the reference path, measured interleaved in one run with per-thread CPU time
//! (robust to other load on a shared machine), and the throughput of N threads. Run:
//! `cargo run --release -p pora-encode --example encode-bench`.
//!
//! `encode-bench kernels [ROUNDS]` prints only the whole mask (permutations + NTT) in ms per KV
//! per core on each kernel this CPU runs (portable / adx / avx512f / ifma), side by side, interleaved.

use pora_encode::field::Fr;
use pora_encode::mask::coefficients_with_lanes;
use pora_encode::{mask, mask_with_kernel, reference, Kernel, WORDS_PER_KV};
use std::time::Instant;

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::thread_cpu_time;

/// A benchmark variant: name, KVs per round, the work for KV n.
type Variant<'a> = (&'a str, u64, &'a dyn Fn(u64));

fn key(n: u64) -> [u8; 32] {
    let mut k = [0u8; 32];
    k[..8].copy_from_slice(&n.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    k[24..].copy_from_slice(&n.to_be_bytes());
    k
}

fn ms_per_kv(kvs: u64, f: &dyn Fn(u64)) -> f64 {
    let start = thread_cpu_time();
    for n in 0..kvs {
        f(n);
    }
    (thread_cpu_time() - start).as_secs_f64() * 1e3 / kvs as f64
}

fn coeffs<const L: usize>(n: u64) {
    let mut out = Box::new([Fr::ZERO; WORDS_PER_KV]);
    coefficients_with_lanes::<L>(&key(n), &mut out);
    std::hint::black_box(&out);
}

/// The assembly multiply with `L` lanes (falls back to portable on a CPU without BMI2/ADX).
fn coeffs_asm<const L: usize>(n: u64) {
    let mut out = Box::new([Fr::ZERO; WORDS_PER_KV]);
    #[cfg(target_arch = "x86_64")]
    if let Some(adx) = pora_encode::adx::Adx::detect() {
        pora_encode::mask::coefficients_with::<L, _>(adx, &key(n), &mut out);
        std::hint::black_box(&out);
        return;
    }
    coefficients_with_lanes::<L>(&key(n), &mut out);
    std::hint::black_box(&out);
}

/// IFMA with `G` groups of eight lanes (falls back to portable on a CPU without IFMA).
fn coeffs_ifma<const G: usize>(n: u64) {
    let mut out = Box::new([Fr::ZERO; WORDS_PER_KV]);
    #[cfg(target_arch = "x86_64")]
    if let Some(ifma) = pora_encode::ifma::Ifma::detect() {
        pora_encode::mask::coefficients_lane_groups::<G, _>(ifma, &key(n), &mut out);
        std::hint::black_box(&out);
        return;
    }
    coefficients_with_lanes::<4>(&key(n), &mut out);
    std::hint::black_box(&out);
}

/// AVX-512F (no IFMA) with `G` groups of eight lanes (falls back to portable on a CPU without it).
fn coeffs_avx512f<const G: usize>(n: u64) {
    let mut out = Box::new([Fr::ZERO; WORDS_PER_KV]);
    #[cfg(target_arch = "x86_64")]
    if let Some(avx512f) = pora_encode::avx512f::Avx512f::detect() {
        pora_encode::mask::coefficients_lane_groups::<G, _>(avx512f, &key(n), &mut out);
        std::hint::black_box(&out);
        return;
    }
    coefficients_with_lanes::<4>(&key(n), &mut out);
    std::hint::black_box(&out);
}

/// Whole masks on every kernel this CPU runs, interleaved round by round: ms per KV per core.
fn compare_kernels(rounds: usize) {
    let kernels: Vec<Kernel> = Kernel::ALL.into_iter().filter(|k| k.supported()).collect();
    let mut results = vec![Vec::new(); kernels.len()];
    for _ in 0..rounds {
        for (i, &k) in kernels.iter().enumerate() {
            results[i].push(ms_per_kv(10, &|n| {
                std::hint::black_box(mask_with_kernel(k, &key(n)).expect("supported"));
            }));
        }
    }
    let line: Vec<String> = kernels
        .iter()
        .zip(&results)
        .map(|(k, r)| {
            let min = r.iter().cloned().fold(f64::INFINITY, f64::min);
            format!("{k} {min:.2}")
        })
        .collect();
    println!(
        "ms per KV per core (whole mask, thread CPU time, min of {rounds}): {}",
        line.join(" | ")
    );
    for k in Kernel::ALL.iter().filter(|k| !k.supported()) {
        println!("  {k}: CPU lacks {}", k.needs());
    }
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("kernels") {
        args.next();
        compare_kernels(args.next().and_then(|s| s.parse().ok()).unwrap_or(5));
        return;
    }
    let pairs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    println!("CPU ms per KV (thread CPU time), {pairs} interleaved rounds");
    let variants: [Variant; 14] = [
        ("reference mask", 3, &|n| {
            std::hint::black_box(reference::mask(&key(n)));
        }),
        ("portable coeffs L=1", 20, &coeffs::<1>),
        ("portable coeffs L=2", 20, &coeffs::<2>),
        ("portable coeffs L=4", 20, &coeffs::<4>),
        ("asm coeffs L=1", 20, &coeffs_asm::<1>),
        ("asm coeffs L=4", 20, &coeffs_asm::<4>),
        ("ifma coeffs G=1 (x8)", 20, &coeffs_ifma::<1>),
        ("ifma coeffs G=2 (x16)", 20, &coeffs_ifma::<2>),
        ("ifma coeffs G=4 (x32)", 20, &coeffs_ifma::<4>),
        ("avx512f coeffs G=1 (x8)", 20, &coeffs_avx512f::<1>),
        ("avx512f coeffs G=2 (x16)", 20, &coeffs_avx512f::<2>),
        ("avx512f coeffs G=4 (x32)", 20, &coeffs_avx512f::<4>),
        ("coeffs dispatched", 20, &|n| {
            let mut out = Box::new([Fr::ZERO; WORDS_PER_KV]);
            pora_encode::mask::coefficients_into(&key(n), &mut out);
            std::hint::black_box(&out);
        }),
        ("fast mask (default)", 20, &|n| {
            std::hint::black_box(mask(&key(n)));
        }),
    ];
    let mut results = vec![Vec::new(); variants.len()];
    for _ in 0..pairs {
        for (i, (_, kvs, f)) in variants.iter().enumerate() {
            results[i].push(ms_per_kv(*kvs, *f));
        }
    }
    for (i, (name, _, _)) in variants.iter().enumerate() {
        let r = &results[i];
        let min = r.iter().cloned().fold(f64::INFINITY, f64::min);
        println!("{name:22} min {min:8.2}  all {r:.2?}");
    }
    let last = variants.len() - 1;
    let ratio: Vec<f64> = (0..pairs)
        .map(|p| results[0][p] / results[last][p])
        .collect();
    println!("reference / fast mask, per round: {ratio:.2?}");
    for threads in [1u64, 2] {
        let kvs_per_thread = 30;
        let start = Instant::now();
        let cpu_ms: Vec<f64> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || {
                        ms_per_kv(kvs_per_thread, &|n| {
                            std::hint::black_box(mask(&key(t * 1000 + n)));
                        })
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{threads} thread(s): CPU ms per KV per thread {cpu_ms:.2?}; wall {:.1} KV/s ({} KVs in {secs:.2} s)",
            (threads * kvs_per_thread) as f64 / secs,
            threads * kvs_per_thread
        );
    }
}
