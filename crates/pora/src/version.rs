//! `pora --version`: the version and commit, then what this build runs on this CPU and host —
//! the Keccak kernel in use (after `PORA_KECCAK`) with every kernel the CPU could run, the
//! encoder's multiply kernel (after `PORA_ENCODE_ARITH`) with every one the CPU could run, and
//! the I/O methods that open here. A support request then says which code paths a slow miner ran.

use pora_core::keccak::{keccak_batch_kernel, BatchKernel};
use pora_io::Method;

/// The commit the binary was built from (`build.rs`: `PORA_BUILD_COMMIT`, else git, else
/// `unknown`).
pub const COMMIT: &str = env!("PORA_BUILD_COMMIT");

/// Checks `PORA_KECCAK`. The library falls back to the widest kernel on a value it cannot use,
/// so that a library caller never fails on it; the CLI refuses it instead, naming the variable,
/// since someone who set it wants to know it did not take.
pub fn check_keccak_env() -> Result<BatchKernel, pora_core::Error> {
    BatchKernel::from_env()
}

/// The whole `--version` text, one fact per line; the first line starts with `pora `. A bad
/// `PORA_KECCAK` or `PORA_ENCODE_ARITH` is the error naming the variable.
pub fn text() -> Result<String, String> {
    check_keccak_env().map_err(|e| e.to_string())?;
    // The kernel every mask of this process runs on, chosen and checked once.
    let encode = pora_encode::Kernel::selected().map_err(|e| e.to_string())?;
    let encode_supported: Vec<&str> = pora_encode::Kernel::ALL
        .into_iter()
        .filter(|k| k.supported())
        .map(pora_encode::Kernel::name)
        .collect();
    let supported: Vec<&str> = BatchKernel::ALL
        .into_iter()
        .filter(|k| k.is_supported())
        .map(BatchKernel::name)
        .collect();
    let mut io: Vec<&str> = Method::available_real()
        .into_iter()
        .map(Method::name)
        .collect();
    // The simulated disk is a method only in test builds (`--features sim`); say so when it is.
    if Method::Sim.availability().is_ok() {
        io.push(Method::Sim.name());
    }
    Ok(format!(
        "pora {} (commit {COMMIT})\nkeccak: {} (supported: {})\nencode: {} (supported: {})\nio: {}\n",
        env!("CARGO_PKG_VERSION"),
        keccak_batch_kernel(),
        supported.join(", "),
        encode,
        encode_supported.join(", "),
        io.join(", "),
    ))
}
