//! The fast mask: 2048 interleaved Poseidon permutations give 4096 coefficients, the NTT turns
//! them into the 4096 mask words; one word alone is a Horner evaluation at ω^j (no NTT).
//! Encoding and decoding are the same byte-wise XOR with the mask. The functions without a
//! kernel argument run on [`Kernel::selected`]; the `_with_kernel` ones on the caller's choice.
//!
//! Layer 6 of the crate (the mask); it imports only from this layer or below.

#[cfg(target_arch = "x86_64")]
use crate::adx::Adx;
use crate::arith::{Arith, Portable};
#[cfg(target_arch = "x86_64")]
use crate::avx512f::Avx512f;
use crate::error::{Error, Result};
use crate::field::Fr;
#[cfg(target_arch = "x86_64")]
use crate::ifma::{Ifma, LANES as IFMA_LANES};
use crate::kernel::Kernel;
use crate::ntt::omega_pow;
use crate::poseidon::{optimized, permute_lanes};
use crate::{MASK_BYTES, PERMUTATIONS_PER_KV, WORDS_PER_KV};

/// Permutations run side by side per core (chosen by measurement, docs/BENCHMARKS.md).
pub const LANES: usize = 4;

/// The 4096 coefficients of the key's polynomial (fast path), `L` permutations interleaved,
/// multiplying with `arith`. Inlined into its callers so each dispatch target gets its own copy.
#[inline(always)]
pub fn coefficients_with<const L: usize, A: Arith>(
    arith: A,
    key: &[u8; 32],
    out: &mut [Fr; WORDS_PER_KV],
) {
    const { assert!(L > 0 && PERMUTATIONS_PER_KV / L * L == PERMUTATIONS_PER_KV) };
    let opt = optimized();
    let k = Fr::from_be_bytes_mod_order(key);
    let mut a = k; // k + i, wrapping mod r
    for group in out.chunks_exact_mut(2 * L) {
        let mut states = [[Fr::ZERO; 3]; L];
        for s in states.iter_mut() {
            let next = a.add_mod(Fr::ONE);
            *s = [Fr::ZERO, a, next];
            a = next;
        }
        permute_lanes(arith, opt, &mut states);
        for (pair, s) in group.chunks_exact_mut(2).zip(states.iter()) {
            pair[0] = s[0];
            pair[1] = s[1];
        }
    }
}

/// [`coefficients_with`] on the portable multiply (kept for the lane-count benchmark).
pub fn coefficients_with_lanes<const L: usize>(key: &[u8; 32], out: &mut [Fr; WORDS_PER_KV]) {
    coefficients_with::<L, _>(Portable, key, out)
}

/// The coefficients, compiled for any CPU of the target (the fallback, and the only path off
/// x86-64).
pub fn coefficients_portable(key: &[u8; 32], out: &mut [Fr; WORDS_PER_KV]) {
    coefficients_with::<LANES, _>(Portable, key, out)
}

/// The coefficients on the MULX/ADCX/ADOX assembly multiply; the function is also compiled with
/// BMI2/ADX so the Rust around the assembly may use them. Bit-identical to
/// [`coefficients_portable`].
#[cfg(target_arch = "x86_64")]
pub fn coefficients_adx(adx: Adx, key: &[u8; 32], out: &mut [Fr; WORDS_PER_KV]) {
    #[target_feature(enable = "bmi2,adx")]
    unsafe fn inner(adx: Adx, key: &[u8; 32], out: &mut [Fr; WORDS_PER_KV]) {
        coefficients_with::<LANES, _>(adx, key, out)
    }
    // SAFETY: an `Adx` token exists only when the CPU supports bmi2 and adx.
    unsafe { inner(adx, key, out) }
}

/// Groups of eight IFMA lanes interleaved (chosen by measurement, docs/encoding.md).
#[cfg(target_arch = "x86_64")]
pub const IFMA_GROUPS: usize = 4;

/// Groups of eight AVX-512F lanes interleaved (chosen by measurement, docs/BENCHMARKS.md 27.2).
#[cfg(target_arch = "x86_64")]
pub const AVX512F_GROUPS: usize = 2;

/// A vector kernel that runs `8·G` Poseidon permutations at once (the IFMA and AVX-512F tokens):
/// the coefficient loop is written once for both.
#[cfg(target_arch = "x86_64")]
pub trait LanePermute: Copy {
    /// `8·G` permutations, element-major: `states[g][e][lane]`.
    fn permute_groups<const G: usize>(self, states: &mut [[[Fr; IFMA_LANES]; 3]; G]);
}

#[cfg(target_arch = "x86_64")]
impl LanePermute for Ifma {
    fn permute_groups<const G: usize>(self, states: &mut [[[Fr; IFMA_LANES]; 3]; G]) {
        Ifma::permute_groups(self, states)
    }
}

#[cfg(target_arch = "x86_64")]
const _: () = assert!(crate::avx512f::LANES == IFMA_LANES);

#[cfg(target_arch = "x86_64")]
impl LanePermute for Avx512f {
    fn permute_groups<const G: usize>(self, states: &mut [[[Fr; IFMA_LANES]; 3]; G]) {
        Avx512f::permute_groups(self, states)
    }
}

/// The coefficients on a vector kernel, `8·G` permutations at once. Bit-identical to
/// [`coefficients_portable`].
#[cfg(target_arch = "x86_64")]
pub fn coefficients_lane_groups<const G: usize, P: LanePermute>(
    kernel: P,
    key: &[u8; 32],
    out: &mut [Fr; WORDS_PER_KV],
) {
    let batch_len = G * IFMA_LANES;
    assert!(
        PERMUTATIONS_PER_KV.is_multiple_of(batch_len),
        "whole batches per KV"
    );
    let mut a = Fr::from_be_bytes_mod_order(key); // k + i, wrapping mod r
    for chunk in out.chunks_exact_mut(2 * batch_len) {
        // Element-major: batch[g][e][lane] is element e of permutation 8g + lane of the chunk.
        let mut batch = [[[Fr::ZERO; IFMA_LANES]; 3]; G];
        for [_, inputs, next_inputs] in batch.iter_mut() {
            for (k_plus_i, k_plus_i_plus_1) in inputs.iter_mut().zip(next_inputs.iter_mut()) {
                let next = a.add_mod(Fr::ONE);
                *k_plus_i = a;
                *k_plus_i_plus_1 = next;
                a = next;
            }
        }
        kernel.permute_groups(&mut batch);
        for (n, pair) in chunk.chunks_exact_mut(2).enumerate() {
            let group = &batch[n / IFMA_LANES];
            pair[0] = group[0][n % IFMA_LANES];
            pair[1] = group[1][n % IFMA_LANES];
        }
    }
}

/// [`coefficients_lane_groups`] on IFMA with [`IFMA_GROUPS`] groups.
#[cfg(target_arch = "x86_64")]
pub fn coefficients_ifma(ifma: Ifma, key: &[u8; 32], out: &mut [Fr; WORDS_PER_KV]) {
    coefficients_lane_groups::<IFMA_GROUPS, _>(ifma, key, out)
}

/// [`coefficients_lane_groups`] on AVX-512F with [`AVX512F_GROUPS`] groups.
#[cfg(target_arch = "x86_64")]
pub fn coefficients_avx512f(avx512f: Avx512f, key: &[u8; 32], out: &mut [Fr; WORDS_PER_KV]) {
    coefficients_lane_groups::<AVX512F_GROUPS, _>(avx512f, key, out)
}

/// The coefficients on `kernel`; an error if this CPU cannot run it.
pub fn coefficients_with_kernel(
    kernel: Kernel,
    key: &[u8; 32],
    out: &mut [Fr; WORDS_PER_KV],
) -> Result<()> {
    match kernel {
        Kernel::Portable => coefficients_portable(key, out),
        #[cfg(target_arch = "x86_64")]
        Kernel::Adx => {
            let adx = Adx::detect().ok_or(kernel.unsupported())?;
            coefficients_adx(adx, key, out)
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512f => {
            let avx512f = Avx512f::detect().ok_or(kernel.unsupported())?;
            coefficients_avx512f(avx512f, key, out)
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Ifma => {
            let ifma = Ifma::detect().ok_or(kernel.unsupported())?;
            coefficients_ifma(ifma, key, out)
        }
        #[cfg(not(target_arch = "x86_64"))]
        _ => return Err(kernel.unsupported()),
    }
    Ok(())
}

/// The coefficients on the process's kernel ([`Kernel::selected`]; panics if
/// `PORA_ENCODE_ARITH` is bad).
pub fn coefficients_into(key: &[u8; 32], out: &mut [Fr; WORDS_PER_KV]) {
    let kernel = Kernel::selected_or_panic();
    coefficients_with_kernel(kernel, key, out).expect("the selected kernel runs on this CPU")
}

/// The 4096 coefficients of the key's polynomial.
pub fn mask_coefficients(key: &[u8; 32]) -> Box<[Fr; WORDS_PER_KV]> {
    let mut coeffs = Box::new([Fr::ZERO; WORDS_PER_KV]);
    coefficients_into(key, &mut coeffs);
    coeffs
}

/// Writes the key's mask (4096 big-endian words) into `out`, on `kernel`; an error if this CPU
/// cannot run it.
pub fn mask_into_with_kernel(
    kernel: Kernel,
    key: &[u8; 32],
    out: &mut [u8; MASK_BYTES],
) -> Result<()> {
    let mut values = Box::new([Fr::ZERO; WORDS_PER_KV]);
    coefficients_with_kernel(kernel, key, &mut values)?;
    #[cfg(target_arch = "x86_64")]
    match kernel {
        Kernel::Ifma => {
            let ifma = Ifma::detect().ok_or(kernel.unsupported())?;
            ifma.ntt_to_bytes(&mut values, out);
            return Ok(());
        }
        Kernel::Avx512f => {
            let avx512f = Avx512f::detect().ok_or(kernel.unsupported())?;
            avx512f.ntt_to_bytes(&mut values, out);
            return Ok(());
        }
        Kernel::Portable | Kernel::Adx => {}
    }
    kernel.ntt_in_place(&mut values);
    for (word, v) in out.chunks_exact_mut(32).zip(values.iter()) {
        word.copy_from_slice(&v.to_be_bytes());
    }
    Ok(())
}

/// Writes the key's mask (4096 big-endian words) into `out`, on the process's kernel
/// ([`Kernel::selected`]; panics if `PORA_ENCODE_ARITH` is bad).
pub fn mask_into(key: &[u8; 32], out: &mut [u8; MASK_BYTES]) {
    let kernel = Kernel::selected_or_panic();
    mask_into_with_kernel(kernel, key, out).expect("the selected kernel runs on this CPU")
}

fn zeroed_mask() -> Box<[u8; MASK_BYTES]> {
    vec![0u8; MASK_BYTES]
        .into_boxed_slice()
        .try_into()
        .expect("MASK_BYTES long")
}

/// The key's whole mask on `kernel`; an error if this CPU cannot run it.
pub fn mask_with_kernel(kernel: Kernel, key: &[u8; 32]) -> Result<Box<[u8; MASK_BYTES]>> {
    let mut out = zeroed_mask();
    mask_into_with_kernel(kernel, key, &mut out)?;
    Ok(out)
}

/// The key's whole mask: 131072 bytes (on [`Kernel::selected`]; panics if `PORA_ENCODE_ARITH`
/// is bad).
pub fn mask(key: &[u8; 32]) -> Box<[u8; MASK_BYTES]> {
    let mut out = zeroed_mask();
    mask_into(key, &mut out);
    out
}

/// Word `j` of the key's mask, without the NTT: the polynomial evaluated at ω^j.
pub fn mask_word(key: &[u8; 32], j: usize) -> Result<[u8; 32]> {
    if j >= WORDS_PER_KV {
        return Err(Error::WordIndex {
            index: j,
            words: WORDS_PER_KV,
        });
    }
    let mut coeffs = Box::new([Fr::ZERO; WORDS_PER_KV]);
    coefficients_with_kernel(Kernel::selected()?, key, &mut coeffs)?;
    let x = omega_pow(j);
    let value = coeffs
        .iter()
        .rev()
        .fold(Fr::ZERO, |acc, c| acc.mul_mod(x).add_mod(*c));
    Ok(value.to_be_bytes())
}

/// XORs `mask` into `data` (both one KV).
pub fn xor_mask(data: &mut [u8], mask: &[u8; MASK_BYTES]) -> Result<()> {
    if data.len() != MASK_BYTES {
        return Err(Error::BlobLength {
            len: data.len(),
            expected: MASK_BYTES,
        });
    }
    for (d, m) in data.iter_mut().zip(mask.iter()) {
        *d ^= m;
    }
    Ok(())
}

/// Encodes one blob in place: the bytes es-node stores for it.
pub fn encode(blob: &mut [u8], key: &[u8; 32]) -> Result<()> {
    if blob.len() != MASK_BYTES {
        return Err(Error::BlobLength {
            len: blob.len(),
            expected: MASK_BYTES,
        });
    }
    let kernel = Kernel::selected()?;
    xor_mask(blob, &*mask_with_kernel(kernel, key)?)
}

/// Decodes stored bytes in place (the same XOR as [`encode`]).
pub fn decode(stored: &mut [u8], key: &[u8; 32]) -> Result<()> {
    encode(stored, key)
}
