//! Keccak-f\[1600\]'s round constants, rotation offsets and lane permutation, derived once from
//! the specification's definitions (FIPS 202, 3.2), and the round function written once as a
//! macro that every multi-buffer kernel expands over its own vector type.
//!
//! Lanes are indexed `x + 5 * y`, as in the specification and in the padded block layout.

/// Number of rounds of Keccak-f\[1600\].
pub(crate) const ROUNDS: usize = 24;

/// ι's round constants, from the specification's degree-8 LFSR `rc(t)`.
pub(crate) const ROUND_CONSTANTS: [u64; ROUNDS] = round_constants();

/// ρ's left-rotation of each lane, in bits.
pub(crate) const RHO_OFFSETS: [u32; 25] = rho_offsets();

/// π's destination of each lane: lane `(x, y)` moves to `(y, 2x + 3y mod 5)`.
pub(crate) const PI_DESTINATIONS: [usize; 25] = pi_destinations();

/// Bit `t` of the specification's LFSR output `rc(t)`.
const fn lfsr_bit(t: usize) -> u64 {
    let mut register: u32 = 1;
    let mut step = 0;
    while step < t % 255 {
        register <<= 1;
        if register & 0x100 != 0 {
            register ^= 0x171;
        }
        step += 1;
    }
    (register & 1) as u64
}

const fn round_constants() -> [u64; ROUNDS] {
    let mut constants = [0u64; ROUNDS];
    let mut round = 0;
    while round < ROUNDS {
        let mut j = 0;
        while j <= 6 {
            constants[round] |= lfsr_bit(j + 7 * round) << ((1 << j) - 1);
            j += 1;
        }
        round += 1;
    }
    constants
}

const fn rho_offsets() -> [u32; 25] {
    let mut offsets = [0u32; 25];
    let (mut x, mut y) = (1, 0);
    let mut t = 0;
    while t < 24 {
        offsets[x + 5 * y] = (((t + 1) * (t + 2) / 2) % 64) as u32;
        (x, y) = (y, (2 * x + 3 * y) % 5);
        t += 1;
    }
    offsets
}

const fn pi_destinations() -> [usize; 25] {
    let mut destinations = [0usize; 25];
    let mut i = 0;
    while i < 25 {
        let (x, y) = (i % 5, i / 5);
        destinations[i] = y + 5 * ((2 * x + 3 * y) % 5);
        i += 1;
    }
    destinations
}

/// Repeats `$body` with `$index` bound to each listed constant: straight-line code whose array
/// indices and rotation counts are compile-time constants (LLVM does not reliably unroll the
/// nested loops of a round on its own, and a rolled loop keeps the state in memory).
macro_rules! unrolled {
    ($index:ident in [$($value:literal),*] $body:block) => {
        $({
            const $index: usize = $value;
            $body
        })*
    };
}

/// Applies the 24 rounds of Keccak-f\[1600\] to `$state: [V; 25]`, where `V` holds one lane of
/// several independent states. The kernel supplies five lane operations, named in the call:
/// `xor5(a, b, c, d, e)`, `xor(a, b)`, `rol(a, bits: u32)` (left rotation, 0 allowed),
/// `chi(a, b, c) = a ^ (!b & c)` and `splat(u64)` (the same word in every state). Within a round
/// every index and rotation is a constant, so each rotation compiles to immediates.
macro_rules! keccak_f1600_rounds {
    ($state:expr, xor5: $xor5:ident, xor: $xor:ident, rol: $rol:ident, chi: $chi:ident,
     splat: $splat:ident) => {{
        use $crate::keccak::rounds::{PI_DESTINATIONS, RHO_OFFSETS, ROUND_CONSTANTS};
        for round_constant in ROUND_CONSTANTS {
            let a = &mut $state;
            // θ: XOR each lane with the parities of the columns left and right of it.
            let mut parity = [a[0]; 5];
            unrolled!(X in [0, 1, 2, 3, 4] {
                parity[X] = $xor5(a[X], a[X + 5], a[X + 10], a[X + 15], a[X + 20]);
            });
            let mut theta = [a[0]; 5];
            unrolled!(X in [0, 1, 2, 3, 4] {
                theta[X] = $xor(parity[(X + 4) % 5], $rol(parity[(X + 1) % 5], 1));
            });
            // ρ and π, fused with θ's application: rotate each lane and move it.
            let mut moved = [a[0]; 25];
            unrolled!(I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                            20, 21, 22, 23, 24] {
                moved[PI_DESTINATIONS[I]] = $rol($xor(a[I], theta[I % 5]), RHO_OFFSETS[I]);
            });
            // χ: the only non-linear step, along each row.
            unrolled!(I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                            20, 21, 22, 23, 24] {
                let (row, x) = (I - I % 5, I % 5);
                a[I] = $chi(moved[I], moved[row + (x + 1) % 5], moved[row + (x + 2) % 5]);
            });
            // ι
            a[0] = $xor(a[0], $splat(round_constant));
        }
    }};
}

#[cfg(test)]
mod tests {
    //! The macro instantiated over plain `u64` (one state), checked against the `keccak` crate's
    //! permutation, so that the round function the vector kernels share is verified on every
    //! machine, including those without AVX2 or AVX-512.
    use super::*;

    fn xor5(a: u64, b: u64, c: u64, d: u64, e: u64) -> u64 {
        a ^ b ^ c ^ d ^ e
    }
    fn xor(a: u64, b: u64) -> u64 {
        a ^ b
    }
    fn rol(a: u64, bits: u32) -> u64 {
        a.rotate_left(bits)
    }
    fn chi(a: u64, b: u64, c: u64) -> u64 {
        a ^ (!b & c)
    }
    fn splat(word: u64) -> u64 {
        word
    }

    fn permute_with_macro(mut state: [u64; 25]) -> [u64; 25] {
        keccak_f1600_rounds!(state, xor5: xor5, xor: xor, rol: rol, chi: chi, splat: splat);
        state
    }

    #[test]
    fn derived_tables_match_the_published_values() {
        assert_eq!(ROUND_CONSTANTS[0], 0x0000_0000_0000_0001);
        assert_eq!(ROUND_CONSTANTS[1], 0x0000_0000_0000_8082);
        assert_eq!(ROUND_CONSTANTS[23], 0x8000_0000_8000_8008);
        // ρ offsets of row y = 0 and of lane (4, 4), from the specification's table.
        assert_eq!(RHO_OFFSETS[..5], [0, 1, 62, 28, 27]);
        assert_eq!(RHO_OFFSETS[24], 14);
        let mut seen = [false; 25];
        for d in PI_DESTINATIONS {
            seen[d] = true;
        }
        assert!(seen.iter().all(|&s| s), "π must be a permutation");
    }

    #[test]
    fn shared_round_function_equals_the_keccak_crate_on_random_states() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..64 {
            let state: [u64; 25] = core::array::from_fn(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            });
            let mut want = state;
            keccak::f1600(&mut want);
            assert_eq!(permute_with_macro(state), want);
        }
    }
}
