//! The width-3 Poseidon permutation on AVX-512F without IFMA: `8·G` permutations at once, `G`
//! groups of eight lanes ([`crate::avx512f`], nine 29-bit limbs) interleaved round by round. The
//! rounds, the constants (in the form `a·2^261`) and their bounds are [`crate::poseidon_lanes`]'s,
//! shared with [`crate::poseidon_ifma`].
//!
//! Layer 4 of the crate (the permutation); it imports only from this layer or below.

use crate::avx512f::{form_constant, from_form, to_form, Avx512f, Limbs29};

crate::poseidon_lanes::lane_permutation! {
    features: "avx512f",
    vector: avx512f,
    limbs: Limbs29,
    constant: form_constant,
    to_form: to_form,
    from_form: from_form,
    token: Avx512f,
}
