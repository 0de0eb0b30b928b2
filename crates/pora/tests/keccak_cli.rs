//! `pora mine --find all` on a shard in the page cache finds the same nonces and hash1s with
//! every Keccak kernel the CPU runs (`PORA_KECCAK=scalar`, `x4`, `x8`, and the default), so the
//! vector kernels are bit-identical to the scalar one inside the miner, not only in pora-core's
//! unit tests. Runs on every OS (the Windows leg runs it under Wine).

#[macro_use]
mod common;

use common::{create_random_16mib, found_sorted, mine_all_args, mine_report, ok, pora_with_keccak};
use pora_core::keccak::{BatchKernel, KECCAK_KERNEL_ENV};

/// The kernel `pora --version` says a process with this `PORA_KECCAK` uses.
fn kernel_in_use(keccak: Option<&str>) -> String {
    let text = ok(&pora_with_keccak(keccak, &["--version"]), "pora --version");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("keccak: "))
        .unwrap_or_else(|| panic!("no keccak line:\n{text}"));
    line.split(' ').next().unwrap_or_default().to_string()
}

#[test]
fn mine_finds_the_same_nonces_with_every_keccak_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("keccak.dat");
    let s = shard.to_str().unwrap();
    // In the page cache: the slot is hashing-bound.
    create_random_16mib(&shard);
    let randao = format!("0x{}", "c3".repeat(32));
    // About one nonce in 64 is valid.
    let required = format!("0x04{}", "0".repeat(62));
    // Depth 13: a worker's batch of chain steps is 8 + 4 + 1, so one slot runs the x8 pass, the
    // x4 remainder and the scalar single block of the widest kernel.
    let mine = mine_all_args(s, "pread", "13", "0..8192", &required, &randao);
    let mut runs = vec![(Some("scalar"), "scalar")];
    for (value, kernel) in [("x4", BatchKernel::X4Avx2), ("x8", BatchKernel::X8Avx512)] {
        if kernel.is_supported() {
            runs.push((Some(value), kernel.name()));
        } else {
            skip_note!("SKIP {}: this CPU or build cannot run it", kernel.name());
        }
    }
    runs.push((None, BatchKernel::best_supported().name()));
    let mut reference: Option<Vec<(u64, String)>> = None;
    for (keccak, kernel) in runs {
        assert_eq!(
            kernel_in_use(keccak),
            kernel,
            "{KECCAK_KERNEL_ENV}={keccak:?}"
        );
        let stdout = ok(
            &pora_with_keccak(keccak, &mine),
            &format!("pora mine ({kernel})"),
        );
        let report = mine_report(&stdout, kernel);
        assert_eq!(report["noncesTried"], 8192, "{kernel}: {report}");
        assert_eq!(report["ioErrors"], 0, "{kernel}: {report}");
        let found = found_sorted(&report);
        assert!(
            found.len() > 30,
            "{kernel}: {} found at 1/64 odds",
            found.len()
        );
        match &reference {
            None => reference = Some(found),
            Some(scalar) => assert_eq!(&found, scalar, "{kernel} found other nonces than scalar"),
        }
        let found = reference.as_ref().map_or(0, Vec::len);
        println!("{KECCAK_KERNEL_ENV}={keccak:?} ran {kernel}: {found} nonces found, as scalar");
    }
}
