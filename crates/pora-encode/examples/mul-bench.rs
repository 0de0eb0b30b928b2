//! Micro-benchmark: latency-bound chains of field multiplications, fast field vs ark-ff, in
//! thread CPU time. Run: `cargo run --release -p pora-encode --example mul-bench`.

use ark_ff::Field;
use pora_encode::field::Fr;
#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::thread_cpu_time;

fn main() {
    const N: u64 = 20_000_000;
    for _ in 0..3 {
        let t = thread_cpu_time();
        let mut x = Fr::from_u64(7);
        let y = Fr::from_u64(11);
        for _ in 0..N {
            x = x.mul_mod(y);
        }
        std::hint::black_box(x);
        let fast = (thread_cpu_time() - t).as_nanos() as f64 / N as f64;
        let t = thread_cpu_time();
        let mut a = ark_bn254::Fr::from(7u64);
        let b = ark_bn254::Fr::from(11u64);
        for _ in 0..N {
            a *= b;
        }
        std::hint::black_box(a.square());
        let ark = (thread_cpu_time() - t).as_nanos() as f64 / N as f64;
        let t = thread_cpu_time();
        let mut x = Fr::from_u64(7);
        for _ in 0..N {
            x = x.square();
        }
        std::hint::black_box(x);
        let sq = (thread_cpu_time() - t).as_nanos() as f64 / N as f64;
        println!(
            "CPU ns per dependent op: fast mul {fast:.2}, fast square {sq:.2}, ark mul {ark:.2}"
        );
    }
}
