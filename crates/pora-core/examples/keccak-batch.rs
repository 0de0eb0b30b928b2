//! Permutations per second of the batch Keccak kernels against the scalar single-block function
//! in a loop, on batches of 64 and 256 padded blocks (and 10, whose remainder of two is
//! zero-padded to a group). Variants run interleaved, round after round, in one process, so
//! machine noise hits all alike; the ratio to scalar is what counts. Each sample is timed by the
//! wall clock and, on Unix, by the thread's CPU time (not inflated while other work runs).
//! `cargo run --release -p pora-core --example keccak-batch [rounds]`

use pora_core::keccak::{keccak256_padded_block, keccak256_padded_blocks_with, BatchKernel};
use std::hint::black_box;
use std::time::Instant;

/// Permutations timed per variant per round (about 0.1–0.5 s each).
const PERMUTATIONS_PER_SAMPLE: usize = 1 << 19;

/// One batch of `size` distinct padded blocks (64-byte chain-step shape).
fn blocks(size: usize) -> Vec<[u64; 17]> {
    (0..size as u64)
        .map(|i| {
            let mut block = [0u64; 17];
            for (j, lane) in block.iter_mut().take(8).enumerate() {
                *lane = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ j as u64;
            }
            block[8] = 0x01;
            block[16] = 0x80 << 56;
            block
        })
        .collect()
}

/// This thread's CPU time in seconds (the wall clock where there is no such clock).
#[cfg(unix)]
fn thread_cpu_s() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}
#[cfg(not(unix))]
fn thread_cpu_s() -> f64 {
    use std::sync::OnceLock;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// One timed sample: permutations per second by the wall clock and by thread CPU time.
#[derive(Clone, Copy)]
struct Sample {
    wall_per_s: f64,
    cpu_per_s: f64,
}

/// Times `kernel` (None: the scalar function called in a loop). Each pass feeds its hashes back
/// into the blocks, as a chain would, so no pass can be skipped.
fn sample(kernel: Option<BatchKernel>, blocks: &mut [[u64; 17]], out: &mut [[u64; 4]]) -> Sample {
    let passes = PERMUTATIONS_PER_SAMPLE / blocks.len();
    let (wall_start, cpu_start) = (Instant::now(), thread_cpu_s());
    for _ in 0..passes {
        match kernel {
            None => {
                for (block, hash) in blocks.iter().zip(out.iter_mut()) {
                    *hash = keccak256_padded_block(black_box(block));
                }
            }
            Some(kernel) => keccak256_padded_blocks_with(kernel, black_box(blocks), out),
        }
        for (block, hash) in blocks.iter_mut().zip(out.iter()) {
            block[..4].copy_from_slice(hash);
        }
    }
    let (wall_s, cpu_s) = (
        wall_start.elapsed().as_secs_f64(),
        thread_cpu_s() - cpu_start,
    );
    black_box(&blocks);
    let permutations = (passes * blocks.len()) as f64;
    Sample {
        wall_per_s: permutations / wall_s,
        cpu_per_s: permutations / cpu_s,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Prints one batch size's table: medians over rounds, ratios taken within each round.
fn report(size: usize, names: &[&str], samples: &[Vec<Sample>]) {
    println!("\nbatch of {size}:");
    println!(
        "| variant | wall M perm/s | wall ns/perm | wall ratio | CPU ns/perm (median, best) | CPU ratio |"
    );
    println!("|---|---|---|---|---|---|");
    let scalar = &samples[0];
    for (name, samples) in names.iter().zip(samples) {
        let ratio = |f: fn(&Sample) -> f64| {
            median(
                samples
                    .iter()
                    .zip(scalar)
                    .map(|(v, s)| f(v) / f(s))
                    .collect(),
            )
        };
        let wall = median(samples.iter().map(|s| s.wall_per_s).collect());
        let cpu = median(samples.iter().map(|s| s.cpu_per_s).collect());
        let cpu_best = samples.iter().map(|s| s.cpu_per_s).fold(0.0, f64::max);
        println!(
            "| {name} | {:.2} | {:.1} | {:.2}x | {:.1}, {:.1} | {:.2}x |",
            wall / 1e6,
            1e9 / wall,
            ratio(|s| s.wall_per_s),
            1e9 / cpu,
            1e9 / cpu_best,
            ratio(|s| s.cpu_per_s),
        );
    }
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(7);
    let mut variants: Vec<(&str, Option<BatchKernel>)> = vec![("scalar loop", None)];
    for kernel in [BatchKernel::X4Avx2, BatchKernel::X8Avx512] {
        if kernel.is_supported() {
            variants.push((kernel.name(), Some(kernel)));
        } else {
            println!("SKIP: {}: this CPU or build cannot run it", kernel.name());
        }
    }
    println!(
        "process kernel: {}; {rounds} interleaved rounds of {PERMUTATIONS_PER_SAMPLE} \
         permutations per variant",
        pora_core::keccak::keccak_batch_kernel()
    );
    let names: Vec<&str> = variants.iter().map(|(name, _)| *name).collect();
    for size in [10usize, 64, 256] {
        let mut batch = blocks(size);
        let mut out = vec![[0u64; 4]; size];
        let mut samples = vec![Vec::new(); variants.len()];
        for _ in 0..rounds {
            for (samples, (_, kernel)) in samples.iter_mut().zip(&variants) {
                samples.push(sample(*kernel, &mut batch, &mut out));
            }
        }
        report(size, &names, &samples);
    }
}
