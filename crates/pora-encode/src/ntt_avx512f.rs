//! The NTT on AVX-512F without IFMA, as [`crate::ntt_ifma`] (the same code, expanded by
//! [`crate::ntt_lanes::lane_ntt`]): bit reversal and the first three stages scalar, the other
//! nine on eight lanes of nine 29-bit limbs ([`crate::avx512f`]), the results leaving as canonical
//! big-endian words. Bounds as there: values stay below `38r`, far below the `168r < 2^261` a
//! multiplicand may reach here.
//!
//! Layer 3 of the crate (the NTT); it imports only from this layer or below.

use crate::avx512f::{form_constant, Avx512f};

crate::ntt_lanes::lane_ntt! {
    features: "avx512f",
    vector: avx512f,
    constant: form_constant,
    token: Avx512f,
}
