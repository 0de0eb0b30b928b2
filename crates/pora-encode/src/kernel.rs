//! [`Kernel`] names the implementation a mask runs on (the scalar multiplies of `arith.rs`, the
//! eight-lane AVX-512F permutation of `crate::poseidon_avx512f`, or the eight-lane AVX-512 IFMA
//! permutation of `crate::poseidon_ifma`): the fastest this CPU runs, unless
//! `PORA_ENCODE_ARITH` says otherwise; and the dispatch from a kernel to its code for the scalar
//! entry points ([`Kernel::ntt_in_place`], [`Kernel::permute`]). The choice sits above the NTT
//! and the permutation, so they never ask which kernel runs: their callers pass it down.
//!
//! Layer 5 of the crate (the kernels); it imports only from this layer or below.

use crate::arith::Portable;
use crate::error::{Error, Result};
use crate::field::Fr;
use crate::ntt::ntt_in_place_with;
use crate::poseidon::permute_with;
use crate::WORDS_PER_KV;
use std::sync::OnceLock;

/// The environment variable that overrides the kernel choice: `portable`, `adx`, `avx512f`,
/// `ifma` or `auto` (the default: the fastest this CPU runs).
pub const ARITH_ENV: &str = "PORA_ENCODE_ARITH";

/// The multiply kernels a mask can run on. Every kernel is bit-identical; they differ in the CPU
/// they need and in speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// [`crate::arith::Portable`]: every target.
    Portable,
    /// `crate::adx::Adx`: MULX/ADCX/ADOX assembly, x86-64 with BMI2 and ADX.
    Adx,
    /// `crate::avx512f`: eight lanes of 29-bit limbs on AVX-512F (no IFMA) for the permutations
    /// and nine NTT stages (`crate::ntt_avx512f`). Chosen only where IFMA is missing.
    Avx512f,
    /// `crate::ifma`: eight lanes of 52-bit limbs on AVX-512 IFMA for the permutations (the NTT
    /// runs on `Adx` where the CPU has it, else portable).
    Ifma,
}

impl Kernel {
    /// All kernels, slowest first.
    pub const ALL: [Kernel; 4] = [Kernel::Portable, Kernel::Adx, Kernel::Avx512f, Kernel::Ifma];

    /// The name `PORA_ENCODE_ARITH` takes.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            Kernel::Adx => "adx",
            Kernel::Avx512f => "avx512f",
            Kernel::Ifma => "ifma",
        }
    }

    /// The CPU features the kernel needs (for messages).
    pub fn needs(self) -> &'static str {
        match self {
            Kernel::Portable => "nothing",
            Kernel::Adx => "bmi2 and adx (x86-64)",
            Kernel::Avx512f => "avx512f (x86-64)",
            Kernel::Ifma => "avx512f and avx512ifma (x86-64)",
        }
    }

    /// Whether this CPU runs the kernel.
    pub fn supported(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Adx => crate::adx::Adx::detect().is_some(),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512f => crate::avx512f::Avx512f::detect().is_some(),
            #[cfg(target_arch = "x86_64")]
            Kernel::Ifma => crate::ifma::Ifma::detect().is_some(),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The fastest kernel this CPU runs: IFMA, else AVX-512F, else ADX, else portable.
    pub fn best() -> Kernel {
        let fastest_first = Kernel::ALL.iter().rev();
        fastest_first
            .copied()
            .find(|k| k.supported())
            .unwrap_or(Kernel::Portable)
    }

    /// The error for a kernel this CPU cannot run.
    pub fn unsupported(self) -> Error {
        Error::ArithUnsupported {
            var: ARITH_ENV,
            kernel: self.name(),
            needs: self.needs(),
        }
    }

    /// `self` if this CPU runs it, else the error naming `PORA_ENCODE_ARITH`.
    pub fn check(self) -> Result<Kernel> {
        if self.supported() {
            Ok(self)
        } else {
            Err(self.unsupported())
        }
    }

    /// The kernel a value of `PORA_ENCODE_ARITH` asks for (unset or `auto`: [`Kernel::best`]);
    /// an unknown name or a kernel this CPU cannot run is an error naming the variable.
    pub fn from_env_value(value: Option<&str>) -> Result<Kernel> {
        let value = value.map(str::trim).unwrap_or("auto");
        if value.eq_ignore_ascii_case("auto") {
            return Ok(Kernel::best());
        }
        let kernel = Kernel::ALL
            .into_iter()
            .find(|k| value.eq_ignore_ascii_case(k.name()))
            .ok_or_else(|| Error::ArithName {
                var: ARITH_ENV,
                value: value.to_string(),
            })?;
        kernel.check()
    }

    /// The kernel `PORA_ENCODE_ARITH` asks for, read now.
    pub fn from_env() -> Result<Kernel> {
        let value = std::env::var_os(ARITH_ENV).map(|v| v.to_string_lossy().into_owned());
        Kernel::from_env_value(value.as_deref())
    }

    /// The process's kernel: [`Kernel::from_env`], read once and cached (the mask functions
    /// without a kernel argument use it; callers that want the error up front call this first).
    pub fn selected() -> Result<Kernel> {
        static SELECTED: OnceLock<Result<Kernel>> = OnceLock::new();
        SELECTED.get_or_init(Kernel::from_env).clone()
    }

    /// [`Kernel::selected`] for the infallible entry points (`mask`, `mask_into`, ...): a bad
    /// `PORA_ENCODE_ARITH` is a configuration error they cannot return, so they panic with its
    /// message.
    pub fn selected_or_panic() -> Kernel {
        Kernel::selected().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The NTT on this kernel's CPU, in place on 4×64 elements: `values` holds the 4096
    /// coefficients, afterwards the 4096 evaluations. The MULX/ADX multiply for every kernel but
    /// `Portable` where the CPU has BMI2/ADX, portable otherwise. (The IFMA and AVX-512F masks
    /// themselves go through their tokens' `ntt_to_bytes`, which runs nine of the twelve stages
    /// on vectors.)
    pub fn ntt_in_place(self, values: &mut [Fr; WORDS_PER_KV]) {
        #[cfg(target_arch = "x86_64")]
        if self != Kernel::Portable {
            if let Some(adx) = crate::adx::Adx::detect() {
                return crate::ntt::ntt_in_place_adx(adx, values);
            }
        }
        ntt_in_place_with(Portable, values)
    }

    /// One Poseidon permutation on this kernel (a convenience for tests and single words; the
    /// mask code interleaves many with `permute_lanes` or a vector token's `permute_groups`).
    /// A kernel this CPU cannot run falls back to portable, which is bit-identical.
    pub fn permute(self, state: [Fr; 3]) -> [Fr; 3] {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Adx => {
                if let Some(adx) = crate::adx::Adx::detect() {
                    return permute_with(adx, state);
                }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512f => {
                if let Some(avx512f) = crate::avx512f::Avx512f::detect() {
                    return avx512f.permute(state);
                }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Ifma => {
                if let Some(ifma) = crate::ifma::Ifma::detect() {
                    return ifma.permute(state);
                }
            }
            _ => {}
        }
        permute_with(Portable, state)
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_parse_or_name_the_variable() {
        assert_eq!(Kernel::from_env_value(None).unwrap(), Kernel::best());
        assert_eq!(
            Kernel::from_env_value(Some("auto")).unwrap(),
            Kernel::best()
        );
        assert_eq!(
            Kernel::from_env_value(Some("portable")).unwrap(),
            Kernel::Portable
        );
        let err = Kernel::from_env_value(Some("avx9"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("PORA_ENCODE_ARITH") && err.contains("avx9"),
            "{err}"
        );
        for k in Kernel::ALL {
            match Kernel::from_env_value(Some(k.name())) {
                Ok(got) => assert!(got == k && k.supported()),
                Err(e) => {
                    let msg = e.to_string();
                    assert!(!k.supported(), "{k}: {msg}");
                    assert!(
                        msg.contains("PORA_ENCODE_ARITH") && msg.contains(k.needs()),
                        "{msg}"
                    );
                }
            }
        }
        assert!(Kernel::best().supported());
    }
}
