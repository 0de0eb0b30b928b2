//! Multi-buffer Keccak-256: many one-block messages hashed together by the widest kernel the CPU
//! runs (8-way AVX-512F, 4-way AVX2), the rest by the scalar single-block function. The kernel is
//! chosen once per process (overridable with `PORA_KECCAK`) and cached, so a call costs one
//! relaxed atomic load beyond the hashing itself. Every kernel is bit-identical to
//! `keccak256_padded_block`.

use super::keccak256_padded_block;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU8, Ordering};

/// Environment variable that forces a kernel: `scalar`, `x4`, `x8` or `auto` (the default).
pub const KECCAK_KERNEL_ENV: &str = "PORA_KECCAK";

/// A way of running the batch API's permutations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchKernel {
    /// `keccak256_padded_block` once per message (assembly on Linux, portable elsewhere).
    Scalar,
    /// Four messages per permutation pass with AVX2 (x86_64 builds, any OS).
    X4Avx2,
    /// Eight messages per pass with AVX-512F, remainders with AVX2 (x86_64 builds, any OS).
    X8Avx512,
}

impl BatchKernel {
    /// Every kernel, narrowest first.
    pub const ALL: [BatchKernel; 3] = [Self::Scalar, Self::X4Avx2, Self::X8Avx512];

    /// Short name for reports: `scalar`, `x4-avx2`, `x8-avx512`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Scalar => "scalar",
            Self::X4Avx2 => "x4-avx2",
            Self::X8Avx512 => "x8-avx512",
        }
    }

    /// Whether this CPU and build can run the kernel (std caches the CPUID answer).
    pub fn is_supported(self) -> bool {
        self.detected().is_some()
    }

    fn detected(self) -> Option<DetectedKernel> {
        let supported = match self {
            Self::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Self::X4Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            // The x8 kernel hands remainders of four to the x4 kernel, so it needs both.
            #[cfg(target_arch = "x86_64")]
            Self::X8Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx2")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Self::X4Avx2 | Self::X8Avx512 => false,
        };
        supported.then_some(DetectedKernel(self))
    }

    /// The widest kernel this CPU runs.
    pub fn best_supported() -> BatchKernel {
        Self::ALL
            .into_iter()
            .rev()
            .find(|k| k.is_supported())
            .unwrap_or(Self::Scalar)
    }

    /// The kernel `PORA_KECCAK` asks for, or the widest supported one when it is unset or
    /// `auto`. An unknown value, or a kernel this CPU cannot run, is an error naming both.
    pub fn from_env() -> Result<BatchKernel> {
        match std::env::var(KECCAK_KERNEL_ENV) {
            Err(std::env::VarError::NotPresent) => Ok(Self::best_supported()),
            Err(std::env::VarError::NotUnicode(value)) => Err(Error::bad_value(
                KECCAK_KERNEL_ENV,
                value.to_string_lossy(),
                "not UTF-8",
            )),
            Ok(value) => Self::parse(&value),
        }
    }

    /// Parses a `PORA_KECCAK` value (see [`KECCAK_KERNEL_ENV`]).
    pub fn parse(value: &str) -> Result<BatchKernel> {
        let kernel = match value.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => return Ok(Self::best_supported()),
            "scalar" => Self::Scalar,
            "x4" | "avx2" | "x4-avx2" => Self::X4Avx2,
            "x8" | "avx512" | "x8-avx512" => Self::X8Avx512,
            _ => {
                return Err(Error::bad_value(
                    KECCAK_KERNEL_ENV,
                    value,
                    "expected scalar, x4, x8 or auto",
                ))
            }
        };
        if kernel.is_supported() {
            Ok(kernel)
        } else {
            Err(Error::bad_value(
                KECCAK_KERNEL_ENV,
                value,
                format!("this CPU or build cannot run the {} kernel", kernel.name()),
            ))
        }
    }
}

/// A kernel whose CPU features were detected at run time: the only way to reach the
/// `#[target_feature]` kernels, which is what makes calling them sound.
#[derive(Clone, Copy)]
struct DetectedKernel(BatchKernel);

/// The process-wide kernel, coded 1 = scalar, 2 = x4, 3 = x8; 0 until first use. Only
/// `choose_process_kernel` stores into it, and only a `DetectedKernel`'s code, so decoding it
/// back into a `DetectedKernel` keeps that type's guarantee.
static PROCESS_KERNEL: AtomicU8 = AtomicU8::new(0);

fn process_kernel() -> DetectedKernel {
    match PROCESS_KERNEL.load(Ordering::Relaxed) {
        1 => DetectedKernel(BatchKernel::Scalar),
        2 => DetectedKernel(BatchKernel::X4Avx2),
        3 => DetectedKernel(BatchKernel::X8Avx512),
        _ => choose_process_kernel(),
    }
}

#[cold]
fn choose_process_kernel() -> DetectedKernel {
    // A bad PORA_KECCAK falls back to the widest kernel; callers that want to report it call
    // `BatchKernel::from_env` themselves. Racing first calls all store the same answer.
    let kernel = BatchKernel::from_env()
        .unwrap_or_else(|_| BatchKernel::best_supported())
        .detected()
        .unwrap_or(DetectedKernel(BatchKernel::Scalar));
    let code = match kernel.0 {
        BatchKernel::Scalar => 1,
        BatchKernel::X4Avx2 => 2,
        BatchKernel::X8Avx512 => 3,
    };
    PROCESS_KERNEL.store(code, Ordering::Relaxed);
    kernel
}

/// Name of the kernel [`keccak256_padded_blocks`] uses in this process, for reports.
pub fn keccak_batch_kernel() -> &'static str {
    process_kernel().0.name()
}

/// Keccak-256 of each padded one-block message (layout of `keccak256_padded_block`):
/// `out[i] = keccak256_padded_block(&blocks[i])`, with the process's kernel.
///
/// `blocks` and `out` must have the same length; debug builds assert it, release builds hash
/// the first `min(blocks.len(), out.len())` blocks. Never allocates or locks.
#[inline]
pub fn keccak256_padded_blocks(blocks: &[[u64; 17]], out: &mut [[u64; 4]]) {
    run(process_kernel(), blocks, out);
}

/// [`keccak256_padded_blocks`] with a chosen kernel (for measurements and tests); a kernel this
/// CPU cannot run falls back to `Scalar`.
pub fn keccak256_padded_blocks_with(
    kernel: BatchKernel,
    blocks: &[[u64; 17]],
    out: &mut [[u64; 4]],
) {
    let kernel = kernel
        .detected()
        .unwrap_or(DetectedKernel(BatchKernel::Scalar));
    run(kernel, blocks, out);
}

#[inline]
fn run(kernel: DetectedKernel, blocks: &[[u64; 17]], out: &mut [[u64; 4]]) {
    debug_assert_eq!(blocks.len(), out.len(), "one output per block");
    let len = blocks.len().min(out.len());
    let (blocks, out) = (&blocks[..len], &mut out[..len]);
    match kernel.0 {
        BatchKernel::Scalar => scalar(blocks, out),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a `DetectedKernel(X4Avx2)` exists only after AVX2 was detected.
        BatchKernel::X4Avx2 => unsafe { x4(blocks, out) },
        #[cfg(target_arch = "x86_64")]
        BatchKernel::X8Avx512 => {
            let (blocks8, blocks_rest) = blocks.as_chunks::<{ super::x8_avx512::WAY }>();
            let (out8, out_rest) = out.as_chunks_mut::<{ super::x8_avx512::WAY }>();
            for (block, hash) in blocks8.iter().zip(out8) {
                // SAFETY: a `DetectedKernel(X8Avx512)` exists only after AVX-512F was detected.
                unsafe { super::x8_avx512::keccak256_padded_x8(block, hash) };
            }
            // SAFETY: a `DetectedKernel(X8Avx512)` exists only after AVX2 was detected too.
            unsafe { x4(blocks_rest, out_rest) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        BatchKernel::X4Avx2 | BatchKernel::X8Avx512 => scalar(blocks, out),
    }
}

fn scalar(blocks: &[[u64; 17]], out: &mut [[u64; 4]]) {
    for (block, hash) in blocks.iter().zip(out) {
        *hash = keccak256_padded_block(block);
    }
}

/// The x4 kernel over whole groups of four; a remainder of two or three is zero-padded to a
/// group (one x4 pass costs less than two scalar permutations, measured in
/// `examples/keccak-batch.rs`), a single block goes to the scalar function.
///
/// # Safety
/// The CPU must support AVX2 (the caller holds a `DetectedKernel` that implies it).
#[cfg(target_arch = "x86_64")]
unsafe fn x4(blocks: &[[u64; 17]], out: &mut [[u64; 4]]) {
    use super::x4_avx2::{keccak256_padded_x4, WAY};
    let (blocks4, blocks_rest) = blocks.as_chunks::<WAY>();
    let (out4, out_rest) = out.as_chunks_mut::<WAY>();
    for (block, hash) in blocks4.iter().zip(out4) {
        // SAFETY: AVX2 is present, this function's precondition.
        unsafe { keccak256_padded_x4(block, hash) };
    }
    if blocks_rest.len() < 2 {
        return scalar(blocks_rest, out_rest);
    }
    let mut group = [[0u64; 17]; WAY];
    for (slot, block) in group.iter_mut().zip(blocks_rest) {
        *slot = *block;
    }
    let mut hashes = [[0u64; 4]; WAY];
    // SAFETY: AVX2 is present, this function's precondition.
    unsafe { keccak256_padded_x4(&group, &mut hashes) };
    for (hash, computed) in out_rest.iter_mut().zip(hashes) {
        *hash = computed;
    }
}

#[cfg(test)]
mod tests {
    //! Every kernel this CPU runs against the scalar function, `hash0`/`hash_step` and
    //! tiny-keccak, on every one-block message length and on batch sizes that leave every
    //! remainder; kernels the CPU lacks print `SKIP:`.
    use super::*;
    use crate::{hash0, hash_step, Address, H256};

    /// xorshift64: reproducible random contents without a dependency.
    struct Random(u64);
    impl Random {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn bytes<const N: usize>(&mut self) -> [u8; N] {
            core::array::from_fn(|_| self.next() as u8)
        }
    }

    /// `msg` (at most 135 bytes) as a padded block's lanes.
    fn padded(msg: &[u8]) -> [u64; 17] {
        let mut bytes = [0u8; 136];
        bytes[..msg.len()].copy_from_slice(msg);
        bytes[msg.len()] ^= 0x01;
        bytes[135] ^= 0x80;
        core::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()))
    }

    fn hash_bytes(lanes: [u64; 4]) -> [u8; 32] {
        let mut bytes = [0u8; 32];
        for (chunk, lane) in bytes.chunks_exact_mut(8).zip(lanes) {
            chunk.copy_from_slice(&lane.to_le_bytes());
        }
        bytes
    }

    fn tiny_keccak256(msg: &[u8]) -> [u8; 32] {
        use tiny_keccak::Hasher;
        let mut hasher = tiny_keccak::Keccak::v256();
        hasher.update(msg);
        let mut out = [0u8; 32];
        hasher.finalize(&mut out);
        out
    }

    /// The kernels this CPU runs, each announced by a `RUN:` line; prints a `SKIP:` line for
    /// each other one. CI greps these (with `--nocapture`) to prove the vector kernels were
    /// tested where the CPU has them, e.g. under Wine, rather than skipped.
    fn supported_kernels(test: &str) -> Vec<BatchKernel> {
        let mut kernels = Vec::new();
        for kernel in BatchKernel::ALL {
            if kernel.is_supported() {
                println!("RUN: {test}: {}", kernel.name());
                kernels.push(kernel);
            } else {
                println!(
                    "SKIP: {test}: this CPU or build cannot run {}",
                    kernel.name()
                );
            }
        }
        kernels
    }

    /// Hashes `messages` in one batch with `kernel` and checks each against tiny-keccak and
    /// the scalar single-block function.
    fn check_batch(kernel: BatchKernel, messages: &[Vec<u8>]) {
        let blocks: Vec<[u64; 17]> = messages.iter().map(|m| padded(m)).collect();
        let mut out = vec![[0u64; 4]; blocks.len()];
        keccak256_padded_blocks_with(kernel, &blocks, &mut out);
        for (i, msg) in messages.iter().enumerate() {
            assert_eq!(
                out[i],
                keccak256_padded_block(&blocks[i]),
                "{} vs scalar, message {i} of {} ({} bytes)",
                kernel.name(),
                messages.len(),
                msg.len()
            );
            assert_eq!(
                hash_bytes(out[i]),
                tiny_keccak256(msg),
                "{} vs tiny-keccak",
                kernel.name()
            );
        }
    }

    #[test]
    fn every_kernel_hashes_every_single_block_length() {
        let mut random = Random(0x2545_F491_4F6C_DD1D);
        let messages: Vec<Vec<u8>> = (0..=135usize)
            .map(|len| (0..len).map(|_| random.next() as u8).collect())
            .collect();
        for kernel in supported_kernels("every_kernel_hashes_every_single_block_length") {
            check_batch(kernel, &messages);
        }
    }

    #[test]
    fn every_kernel_handles_every_batch_size_up_to_20() {
        let mut random = Random(0xD1B5_4A32_D192_ED03);
        for kernel in supported_kernels("every_kernel_handles_every_batch_size_up_to_20") {
            for batch in 0..=20usize {
                let messages: Vec<Vec<u8>> = (0..batch)
                    .map(|_| {
                        let len = (random.next() % 136) as usize;
                        (0..len).map(|_| random.next() as u8).collect()
                    })
                    .collect();
                check_batch(kernel, &messages);
            }
        }
    }

    #[test]
    fn every_kernel_matches_hash0_and_hash_step() {
        let mut random = Random(0x9E37_79B9_7F4A_7C15);
        let miner = Address(random.bytes());
        let randao = H256(random.bytes());
        for kernel in supported_kernels("every_kernel_matches_hash0_and_hash_step") {
            // Mixed in one batch, as a completion batch would be: hash0s and chain steps.
            let mut messages = Vec::new();
            let mut want = Vec::new();
            for nonce in 0..13u64 {
                let mut preimage = [0u8; 96];
                preimage[12..32].copy_from_slice(&miner.0);
                preimage[32..64].copy_from_slice(&randao.0);
                preimage[88..].copy_from_slice(&nonce.to_be_bytes());
                messages.push(preimage.to_vec());
                want.push(hash0(&miner, &randao, nonce));
                let (hash, sample) = (random.bytes::<32>(), random.bytes::<32>());
                messages.push([hash, sample].concat());
                want.push(hash_step(&hash, &sample));
            }
            let blocks: Vec<[u64; 17]> = messages.iter().map(|m| padded(m)).collect();
            let mut out = vec![[0u64; 4]; blocks.len()];
            keccak256_padded_blocks_with(kernel, &blocks, &mut out);
            for (i, (got, want)) in out.into_iter().zip(&want).enumerate() {
                assert_eq!(&hash_bytes(got), want, "{}, message {i}", kernel.name());
            }
        }
    }

    #[test]
    fn process_kernel_runs_and_is_named() {
        let name = keccak_batch_kernel();
        assert!(BatchKernel::ALL.iter().any(|k| k.name() == name), "{name}");
        let blocks = [padded(b"abc"); 9];
        let mut out = [[0u64; 4]; 9];
        keccak256_padded_blocks(&blocks, &mut out);
        assert!(out.iter().all(|h| hash_bytes(*h) == tiny_keccak256(b"abc")));
    }

    #[test]
    fn kernel_names_parse_and_bad_values_are_errors_naming_the_variable() {
        assert_eq!(BatchKernel::parse("scalar").unwrap(), BatchKernel::Scalar);
        assert_eq!(
            BatchKernel::parse("auto").unwrap(),
            BatchKernel::best_supported()
        );
        for kernel in BatchKernel::ALL {
            match BatchKernel::parse(kernel.name()) {
                Ok(parsed) => assert!(parsed == kernel && kernel.is_supported()),
                Err(e) => {
                    assert!(!kernel.is_supported());
                    assert!(e.to_string().contains(kernel.name()), "{e}");
                }
            }
        }
        let e = BatchKernel::parse("sse9").unwrap_err().to_string();
        assert!(e.contains(KECCAK_KERNEL_ENV) && e.contains("sse9"), "{e}");
    }
}
