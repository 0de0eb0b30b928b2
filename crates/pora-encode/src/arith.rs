//! The multiply primitives the hot loops are generic over, so each implementation is chosen once
//! per mask (not tested per multiply) and inlined everywhere below that choice:
//! [`Portable`] (the Rust code in [`crate::field`], every target) and, on x86-64 CPUs with BMI2
//! and ADX, [`crate::adx::Adx`] (inline assembly). Both return canonical values (`< r`) and are
//! bit-identical; the tests check them against each other and against ark-ff. Which one a mask
//! runs on is chosen in `kernel.rs`.
//!
//! Layer 1 of the crate (field arithmetic); it imports only from this layer or below.

use crate::field::Fr;

/// Field multiplication as used by Poseidon and the NTT. Inputs must be canonical (`< r`), as
/// every [`Fr`] is.
pub trait Arith: Copy {
    /// `a·b`.
    fn mul(self, a: Fr, b: Fr) -> Fr;
    /// `a²`.
    fn square(self, a: Fr) -> Fr;
    /// `a[0]·b[0] + a[1]·b[1] + a[2]·b[2]`, reduced once (lazy reduction).
    fn dot3(self, a: [Fr; 3], b: [Fr; 3]) -> Fr;

    /// `x^5`, the Poseidon S-box: two squares and a multiply.
    #[inline(always)]
    fn pow5(self, x: Fr) -> Fr {
        let x2 = self.square(x);
        let x4 = self.square(x2);
        self.mul(x4, x)
    }
}

/// The portable implementation: [`Fr::mul_mod`], [`Fr::square`], [`Fr::dot3`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Portable;

impl Arith for Portable {
    #[inline(always)]
    fn mul(self, a: Fr, b: Fr) -> Fr {
        a.mul_mod(b)
    }

    #[inline(always)]
    fn square(self, a: Fr) -> Fr {
        a.square()
    }

    #[inline(always)]
    fn dot3(self, a: [Fr; 3], b: [Fr; 3]) -> Fr {
        Fr::dot3(a, b)
    }
}
