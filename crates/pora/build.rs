//! Build script of the `pora` binary: hands the commit it is built from to the compiler as
//! `PORA_BUILD_COMMIT`, for `pora --version`. The release script exports `PORA_BUILD_COMMIT`
//! itself (a tarball has no `.git` to ask); otherwise `git rev-parse --short=12 HEAD` answers,
//! and a build with neither says `unknown`. Only the commit goes in, no time or host, so the
//! same source builds the same binary.

use std::env::VarError;
use std::path::{Path, PathBuf};
use std::process::Command;

const COMMIT_ENV: &str = "PORA_BUILD_COMMIT";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed={COMMIT_ENV}");
    let (commit, source) = match std::env::var(COMMIT_ENV) {
        Ok(value) if !value.trim().is_empty() => (checked(value.trim()), "env"),
        Ok(_) | Err(VarError::NotPresent) => match from_git() {
            Some(commit) => (commit, "git"),
            None => ("unknown".to_string(), "none"),
        },
        Err(VarError::NotUnicode(value)) => refuse(&value.to_string_lossy(), "not UTF-8"),
    };
    println!("cargo:rustc-env={COMMIT_ENV}={commit}");
    // Where the commit came from, for the tests (tests/version_cli.rs) to check it against.
    println!("cargo:rustc-env={COMMIT_ENV}_SOURCE={source}");
}

/// A commit id given in the environment, as long as it prints on one line of `--version`.
fn checked(value: &str) -> String {
    let printable = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'));
    if !printable || value.len() > 64 {
        refuse(
            value,
            "expected a commit id (at most 64 letters, digits, '-', '_', '.', '+')",
        );
    }
    value.to_string()
}

fn refuse(value: &str, why: &str) -> ! {
    eprintln!("error: invalid {COMMIT_ENV} `{value}`: {why}");
    std::process::exit(1);
}

/// `git` run in this crate's directory, its trimmed stdout when it succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        // A build started from a git hook inherits these, and they would point git elsewhere.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// The commit of the repository this crate is checked out in, or `None` when there is no
/// repository, no git, or the enclosing repository is not this project's (a tarball unpacked
/// inside some other checkout must not report that checkout's commit).
fn from_git() -> Option<String> {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    git(&dir, &["ls-files", "--error-unmatch", "Cargo.toml"])?;
    let commit = git(&dir, &["rev-parse", "--short=12", "HEAD"])?;
    // Rerun when HEAD moves: HEAD itself (a checkout), the branch it names (a commit) and
    // packed-refs (where the branch lives once packed). In a worktree HEAD is in the worktree's
    // git dir and the branch in the common one; `--git-path` knows which. Only existing files are
    // named: cargo reruns a script on every build when a named file is missing.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&dir, &["rev-parse", "--symbolic-full-name", "HEAD"]) {
        if branch.starts_with("refs/") {
            watched.push(branch);
        }
    }
    for name in watched {
        if let Some(path) = git(&dir, &["rev-parse", "--git-path", &name]) {
            let path = dir.join(path);
            if path.is_file() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    Some(commit)
}
