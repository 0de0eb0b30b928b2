//! The width-3 Poseidon permutation on AVX-512 IFMA: `8·G` permutations at once, `G` groups of
//! eight lanes ([`crate::ifma`]) interleaved round by round. The rounds, the constants in IFMA
//! form (`a·2^260`) and their bounds are [`crate::poseidon_lanes`]'s, shared with
//! [`crate::poseidon_avx512f`].
//!
//! Layer 4 of the crate (the permutation); it imports only from this layer or below.

use crate::ifma::{from_ifma, ifma_constant, to_ifma, Ifma, Limbs52};

crate::poseidon_lanes::lane_permutation! {
    features: "avx512f,avx512ifma",
    vector: ifma,
    limbs: Limbs52,
    constant: ifma_constant,
    to_form: to_ifma,
    from_form: from_ifma,
    token: Ifma,
}
