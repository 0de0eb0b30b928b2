//! `pora --version` run as a binary: the version and build commit on the first line, the Keccak
//! kernel `PORA_KECCAK` forces (or the widest one the CPU runs, as pora-core says in this
//! process), the I/O methods pora-io says open here, and a clear error for a bad `PORA_KECCAK`.
//! Runs on every OS (the Windows leg runs it under Wine).

#[macro_use]
mod common;

use common::{ok, pora_with_keccak};
use pora_core::keccak::{BatchKernel, KECCAK_KERNEL_ENV};
use pora_io::Method;
use std::process::Command;

/// The `--version` text, asserting the command succeeded.
fn version(keccak: Option<&str>, args: &[&str]) -> String {
    ok(
        &pora_with_keccak(keccak, args),
        &format!("pora {args:?} with {KECCAK_KERNEL_ENV}={keccak:?}"),
    )
}

/// The line starting with `prefix`, without it.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{text}"))
}

fn supported_kernels() -> String {
    let names: Vec<&str> = BatchKernel::ALL
        .into_iter()
        .filter(|k| k.is_supported())
        .map(BatchKernel::name)
        .collect();
    names.join(", ")
}

#[test]
fn first_line_names_the_version_and_the_build_commit() {
    let text = version(None, &["--version"]);
    let first = text.lines().next().unwrap_or_default();
    let commit = env!("PORA_BUILD_COMMIT");
    assert_eq!(
        first,
        format!("pora {} (commit {commit})", env!("CARGO_PKG_VERSION")),
        "{text}"
    );
    // The same text on `-V` and after a subcommand (clap propagates the flag).
    assert_eq!(version(None, &["-V"]), text);
    assert_eq!(version(None, &["mine", "--version"]), text);
    // build.rs says where the commit came from: check it against that source.
    match env!("PORA_BUILD_COMMIT_SOURCE") {
        "env" => skip_note!("SKIP commit vs git: the build took PORA_BUILD_COMMIT=`{commit}`"),
        "none" => assert_eq!(commit, "unknown", "no git and no PORA_BUILD_COMMIT"),
        "git" => {
            let git = Command::new("git")
                .args(["-C", env!("CARGO_MANIFEST_DIR")])
                .args(["rev-parse", "--short=12", "HEAD"])
                .output();
            match git {
                Ok(out) if out.status.success() => {
                    let head = String::from_utf8_lossy(&out.stdout).trim().to_string();
                    assert_eq!(commit, head, "the build's commit is not HEAD's");
                }
                // Under Wine no git runs; the build (on Linux) asked git, so the id is git's.
                _ => skip_note!(
                    "SKIP commit vs HEAD: git does not run here{} (commit `{commit}`)",
                    if cfg!(windows) {
                        " (Wine has no git)"
                    } else {
                        ""
                    }
                ),
            }
            assert!(
                commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
                "{commit}"
            );
        }
        other => panic!("build.rs gave an unknown commit source `{other}`"),
    }
}

#[test]
fn keccak_line_names_the_kernel_pora_keccak_forces_else_the_widest() {
    let supported = supported_kernels();
    let best = BatchKernel::best_supported().name();
    let unset = version(None, &["--version"]);
    assert_eq!(
        line(&unset, "keccak: "),
        format!("{best} (supported: {supported})")
    );
    assert_eq!(
        line(&version(Some("auto"), &["--version"]), "keccak: "),
        line(&unset, "keccak: ")
    );
    for kernel in BatchKernel::ALL {
        if !kernel.is_supported() {
            skip_note!("SKIP {}: this CPU or build cannot run it", kernel.name());
            continue;
        }
        let text = version(Some(kernel.name()), &["--version"]);
        assert_eq!(
            line(&text, "keccak: "),
            format!("{} (supported: {supported})", kernel.name()),
            "{KECCAK_KERNEL_ENV}={}",
            kernel.name()
        );
    }
    // The short spellings the variable's docs give.
    for (value, name) in [("x4", "x4-avx2"), ("x8", "x8-avx512")] {
        if BatchKernel::parse(value).is_ok() {
            let text = version(Some(value), &["--version"]);
            assert!(line(&text, "keccak: ").starts_with(name), "{value}: {text}");
        }
    }
}

#[test]
fn io_line_lists_the_methods_pora_io_opens_here() {
    let mut want: Vec<&str> = Method::available_real()
        .into_iter()
        .map(Method::name)
        .collect();
    if Method::Sim.availability().is_ok() {
        want.push("sim");
    }
    let text = version(None, &["--version"]);
    assert_eq!(line(&text, "io: "), want.join(", "));
    // Whatever the OS, positional reads and the memory map always open.
    for always in ["pread", "pread-shared", "mmap"] {
        assert!(want.contains(&always), "{text}");
    }
}

#[test]
fn a_bad_pora_keccak_is_an_error_naming_the_variable_not_a_panic() {
    let mut cases = vec![("sse9", "expected scalar, x4, x8 or auto")];
    for kernel in [BatchKernel::X4Avx2, BatchKernel::X8Avx512] {
        if kernel.is_supported() {
            skip_note!(
                "SKIP {KECCAK_KERNEL_ENV}={} refused: this CPU runs it",
                kernel.name()
            );
        } else {
            cases.push((kernel.name(), "cannot run"));
        }
    }
    for (value, why) in cases {
        // `--version`, and a command: the CLI refuses the value before doing anything.
        for args in [&["--version"][..], &["info", "no-such-file.dat"][..]] {
            let out = pora_with_keccak(Some(value), args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(
                stderr.contains(KECCAK_KERNEL_ENV)
                    && stderr.contains(value)
                    && stderr.contains(why),
                "{args:?} with {KECCAK_KERNEL_ENV}={value}: {stderr}"
            );
            assert!(!stderr.contains("panicked"), "{stderr}");
            assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
        }
    }
}

/// `pora --version` with `PORA_ENCODE_ARITH` set to `value`, or removed when `None`.
fn version_with_encode(value: Option<&str>) -> std::process::Output {
    let mut command = common::pora_command();
    command.arg("--version").env_remove(pora_encode::ARITH_ENV);
    if let Some(v) = value {
        command.env(pora_encode::ARITH_ENV, v);
    }
    command.output().expect("the pora binary runs")
}

#[test]
fn encode_line_names_the_kernel_pora_encode_arith_forces_else_the_fastest() {
    let supported: Vec<&str> = pora_encode::Kernel::ALL
        .into_iter()
        .filter(|k| k.supported())
        .map(pora_encode::Kernel::name)
        .collect();
    let supported = supported.join(", ");
    let unset = ok(&version_with_encode(None), "pora --version");
    assert_eq!(
        line(&unset, "encode: "),
        format!(
            "{} (supported: {supported})",
            pora_encode::Kernel::best().name()
        )
    );
    for kernel in pora_encode::Kernel::ALL {
        let out = version_with_encode(Some(kernel.name()));
        if kernel.supported() {
            let text = ok(&out, "pora --version");
            assert_eq!(
                line(&text, "encode: "),
                format!("{} (supported: {supported})", kernel.name())
            );
        } else {
            // A kernel this CPU cannot run is an error naming the variable, never a quiet fallback.
            common::fails_with(&out, &[pora_encode::ARITH_ENV, kernel.name()]);
        }
    }
    common::fails_with(
        &version_with_encode(Some("bogus")),
        &[pora_encode::ARITH_ENV, "bogus"],
    );
}
