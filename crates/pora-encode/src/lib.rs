//! pora-encode: es-node-identical BLOB_POSEIDON (encodeType 3) masks, pure computation.
//!
//! An empty KV of an encodeType-3 shard holds `mask(encodeKey)`; a filled one holds the blob XOR
//! that mask (docs/encoding.md). Two implementations live here:
//! - [`reference`]: the obviously-correct path on ark-ff/ark-bn254/ark-poly with light-poseidon's
//!   circom constants, kept so tests can compare against it;
//! - the fast path ([`mask`], [`mask_word`]): a hand-written 4-limb Montgomery field
//!   ([`field`]), Poseidon with sparse partial rounds derived at start-up from the reference
//!   constants ([`poseidon`]), several permutations interleaved, and an iterative NTT ([`ntt`]).
//!   The multiplies go through [`arith::Arith`]: portable Rust everywhere, MULX/ADCX/ADOX
//!   assembly on x86-64 CPUs that have it (`adx`); on CPUs with AVX-512 IFMA the permutations
//!   run eight lanes per vector instead (`ifma`, `poseidon_ifma`), and on CPUs with AVX-512F but
//!   no IFMA eight lanes of 29-bit limbs (`avx512f`, `poseidon_avx512f`; both expand
//!   the macros of `lanes`, `ntt_lanes` and `poseidon_lanes`). The [`Kernel`] is chosen once
//!   per process at run time (the fastest this CPU runs, or `PORA_ENCODE_ARITH`).
//!
//! The modules stand in layers, each importing only from below: the base (errors, the key, the
//! reference), field arithmetic, the lane operations, the NTT, the permutation, the kernels, the
//! mask (the list below, and tests/layers.rs, which keeps it so).
//!
//! No I/O: callers read and write the bytes.

// The modules in layers, bottom first; each imports only from its own layer or below (the crate
// root's constants count as layer 0). tests/layers.rs holds the same table and fails on an
// upward import.
//
// Layer 0, the base: errors, the encode key, the reference path.
pub mod error;
pub mod key;
pub mod reference;
// Layer 1, field arithmetic on 4×64 limbs: the field, the `Arith` trait, the ADX assembly.
#[cfg(target_arch = "x86_64")]
pub mod adx;
pub mod arith;
pub mod field;
// Layer 2, the lane operations: eight elements per vector.
#[cfg(target_arch = "x86_64")]
pub mod avx512f;
#[cfg(target_arch = "x86_64")]
pub mod ifma;
#[cfg(target_arch = "x86_64")]
mod lanes;
// Layer 3, the NTT: scalar, and its last nine stages on vectors.
pub mod ntt;
#[cfg(target_arch = "x86_64")]
pub mod ntt_avx512f;
#[cfg(target_arch = "x86_64")]
pub mod ntt_ifma;
#[cfg(target_arch = "x86_64")]
mod ntt_lanes;
// Layer 4, the Poseidon permutation: scalar and on vectors.
pub mod poseidon;
#[cfg(target_arch = "x86_64")]
pub mod poseidon_avx512f;
#[cfg(target_arch = "x86_64")]
pub mod poseidon_ifma;
#[cfg(target_arch = "x86_64")]
mod poseidon_lanes;
// Layer 5, the kernels: which implementation runs, and the dispatch to it.
pub mod kernel;
// Layer 6, the mask: the entry points callers use.
pub mod mask;

pub use error::{Error, Result};
pub use kernel::{Kernel, ARITH_ENV};
pub use key::{encode_key, EncodeKey, COMMIT_LEN};
pub use mask::{decode, encode, mask, mask_coefficients, mask_with_kernel, mask_word, xor_mask};

/// 32-byte words in one KV (the NTT size).
pub const WORDS_PER_KV: usize = 4096;
/// Bytes of one KV's mask (128 KiB).
pub const MASK_BYTES: usize = WORDS_PER_KV * 32;
/// Poseidon permutations per KV (each yields two coefficients).
pub const PERMUTATIONS_PER_KV: usize = WORDS_PER_KV / 2;
