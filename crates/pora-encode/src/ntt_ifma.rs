//! The NTT on AVX-512 IFMA: the bit reversal and the first three stages (half-blocks of 1, 2, 4
//! elements, which pair elements inside one vector of eight) stay scalar; the other nine stages
//! run eight butterflies per vector on the limb-sliced IFMA form (`crate::ifma::butterfly`),
//! and the results leave as canonical big-endian words straight from that form.
//!
//! Bounds (units of r, as in [`crate::ifma`]): the conversion gives values below `1.02`; a
//! butterfly stage adds at most 4 (`a + 4r - b·w`, `b·w < 1.48` while values stay below 40), so
//! after the nine stages every value is below `1.02 + 9·4 < 38`, within the 40 the butterfly
//! bound assumes and far below the `84r < 2^260` a multiplicand may reach.
//!
//! The code is [`crate::ntt_lanes::lane_ntt`]'s, shared with [`crate::ntt_avx512f`].
//!
//! Layer 3 of the crate (the NTT); it imports only from this layer or below.

use crate::ifma::{ifma_constant, Ifma};

crate::ntt_lanes::lane_ntt! {
    features: "avx512f,avx512ifma",
    vector: ifma,
    constant: ifma_constant,
    token: Ifma,
}
