//! Compares the keccak crates pora could use on the hot path's two message shapes (96-byte
//! hash0, 64-byte chain step), interleaving candidates in rounds so that machine noise hits
//! both alike. `cargo run --release -p pora-core --example keccak-candidates`

use sha3::Digest;
use std::hint::black_box;
use std::time::Instant;

fn tiny(msg: &[u8]) -> [u8; 32] {
    use tiny_keccak::Hasher;
    let mut k = tiny_keccak::Keccak::v256();
    k.update(msg);
    let mut out = [0u8; 32];
    k.finalize(&mut out);
    out
}

fn rustcrypto(msg: &[u8]) -> [u8; 32] {
    sha3::Keccak256::digest(msg).into()
}

/// Hashes per second of `f` chained over `n` messages of `len` bytes.
fn rate(f: fn(&[u8]) -> [u8; 32], len: usize, n: u32) -> f64 {
    let mut msg = vec![7u8; len];
    let start = Instant::now();
    for _ in 0..n {
        let h = f(black_box(&msg));
        msg[..32].copy_from_slice(&h);
    }
    black_box(&msg);
    n as f64 / start.elapsed().as_secs_f64()
}

/// keccak-asm where pora-core depends on it; elsewhere this arm measures pora's own choice.
fn asm(msg: &[u8]) -> [u8; 32] {
    pora_core::keccak::keccak256(&[msg])
}

fn main() {
    assert_eq!(tiny(b"abc"), rustcrypto(b"abc"), "candidates disagree");
    assert_eq!(tiny(b"abc"), asm(b"abc"), "candidates disagree");
    const N: u32 = 2_000_000;
    for len in [64usize, 96] {
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..5 {
            a.push(rate(tiny, len, N));
            b.push(rate(rustcrypto, len, N));
            c.push(rate(asm, len, N));
        }
        let best = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
        println!(
            "{len:>3}-byte message: tiny-keccak {:.2} M/s, sha3 (RustCrypto) {:.2} M/s, pora_core::keccak (keccak-asm on Linux) {:.2} M/s (best of 5 interleaved rounds)",
            best(&a) / 1e6,
            best(&b) / 1e6,
            best(&c) / 1e6,
        );
    }
}
