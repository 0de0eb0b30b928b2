//! `PORA_KECCAK` chooses the batch Keccak kernel of a whole process, once. This test runs itself
//! again as a child process per value (the choice is cached per process, and setting the
//! variable in-process would race other threads), and checks the kernel each child reports and
//! that the child's hashes equal the scalar function's.

use pora_core::keccak::{
    keccak256_padded_block, keccak256_padded_blocks, keccak_batch_kernel, BatchKernel,
    KECCAK_KERNEL_ENV,
};
use std::process::Command;

/// Set in a child: it reports its kernel and checks a batch instead of spawning.
const CHILD_MARK: &str = "PORA_KECCAK_ENV_TEST_CHILD";

/// Child: print the process kernel; exit non-zero if a batch differs from the scalar function.
fn child() {
    let blocks: Vec<[u64; 17]> = (0..19u64)
        .map(|i| core::array::from_fn(|j| (i * 17 + j as u64).wrapping_mul(0x9E37_79B9)))
        .collect();
    let mut out = vec![[0u64; 4]; blocks.len()];
    keccak256_padded_blocks(&blocks, &mut out);
    let same = blocks
        .iter()
        .zip(&out)
        .all(|(block, hash)| keccak256_padded_block(block) == *hash);
    println!("{}", keccak_batch_kernel());
    std::process::exit(if same { 0 } else { 3 });
}

/// The kernel a child reports when run with `PORA_KECCAK=value` (None: unset).
fn kernel_of_child(value: Option<&str>) -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let mut command = Command::new(exe);
    command.env(CHILD_MARK, "1").env_remove(KECCAK_KERNEL_ENV);
    if let Some(value) = value {
        command.env(KECCAK_KERNEL_ENV, value);
    }
    let output = command.output().expect("run the child");
    assert!(
        output.status.success(),
        "child with {KECCAK_KERNEL_ENV}={value:?}: {:?}, stderr {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn main() {
    if std::env::var_os(CHILD_MARK).is_some() {
        return child();
    }
    let best = BatchKernel::best_supported().name();
    let cases = [
        (None, best),
        (Some("auto"), best),
        (Some("scalar"), "scalar"),
        (Some("SCALAR"), "scalar"),
        // Unknown values and kernels the CPU lacks fall back to the widest supported kernel
        // (BatchKernel::from_env reports them as errors to callers that ask).
        (Some("sse9"), best),
        (
            Some("x4"),
            if BatchKernel::X4Avx2.is_supported() {
                "x4-avx2"
            } else {
                best
            },
        ),
        (
            Some("x8"),
            if BatchKernel::X8Avx512.is_supported() {
                "x8-avx512"
            } else {
                best
            },
        ),
    ];
    for (value, want) in cases {
        let got = kernel_of_child(value);
        assert_eq!(got, want, "{KECCAK_KERNEL_ENV}={value:?}");
        println!("{KECCAK_KERNEL_ENV}={value:?} -> {got} ... ok");
    }
}
