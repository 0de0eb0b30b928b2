//! RELIABILITY.md: every command that reads a shard (`mine`, `hash`, `bench`, `tune`, `doctor`,
//! `info`) opens it read-only. As root (CI), the shard is owned by root with mode 0444 and pora
//! runs as uid/gid 65534, so any open for writing fails; otherwise the shard is our own file with
//! mode 0444. Each command must succeed, and the file's bytes and mtime must be unchanged.
#![cfg(unix)]

#[macro_use]
mod common;
mod reliability_common;

use reliability_common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

/// The pora binary where an unprivileged uid can execute it: the build directory may sit under
/// a home directory only root can enter.
fn reachable_binary(dir: &Path) -> PathBuf {
    let bin = dir.join("pora");
    if std::fs::hard_link(pora_bin(), &bin).is_err() {
        std::fs::copy(pora_bin(), &bin).expect("copy pora");
    }
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// Sets mode 0444 and an mtime in the past, so that even a write within the same clock tick
/// would show as a changed mtime.
fn make_read_only(path: &Path) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000))
        .unwrap();
    drop(f);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o444)).unwrap();
}

struct Runner {
    bin: PathBuf,
    unprivileged: bool,
}

impl Runner {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args);
        default_signals(&mut cmd);
        if self.unprivileged {
            drop_privileges(&mut cmd);
        }
        cmd
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.command(args).output().expect("run pora");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{args:?} failed on a read-only shard: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

#[test]
fn reading_commands_work_on_a_foreign_0444_shard_and_leave_it_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shard = create(dir.path(), "shard.dat", 4, 7);
    make_read_only(&shard);
    let writable = dir.path().join("out");
    std::fs::create_dir(&writable).unwrap();
    std::fs::set_permissions(&writable, std::fs::Permissions::from_mode(0o777)).unwrap();
    let runner = Runner {
        bin: reachable_binary(dir.path()),
        unprivileged: is_root(),
    };
    if !runner.unprivileged {
        skip_note!("NOTE reliability_readonly: not root, so the 0444 shard is owned by this user (mode bits still refuse writes)");
    }
    // The setup must make a write impossible, or the test proves nothing.
    let probe = runner
        .command(&["info", s(&shard)])
        .output()
        .expect("spawn");
    assert!(probe.status.success());
    let write_attempt = {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &format!("printf x >> '{}'", s(&shard))]);
        if runner.unprivileged {
            drop_privileges(&mut cmd);
        }
        cmd.output().expect("sh")
    };
    assert!(
        !write_attempt.status.success(),
        "the shard is still writable for the test user: the test would prove nothing"
    );
    let before = fingerprint(&shard);
    let f = s(&shard);
    let randao = format!("0x{}", "22".repeat(32));

    let info = runner.ok(&["info", f, "--json"]);
    assert!(info.contains("\"completeShard\": true"), "{info}");
    let hashed = runner.ok(&["hash", "--file", f, "--randao", &randao, "--nonce", "3"]);
    assert!(hashed.contains("hash1"), "{hashed}");
    for method in pora_io::Method::available_real() {
        let args = [
            "mine",
            "--file",
            f,
            "--method",
            method.name(),
            "--random-randao",
            "--slot",
            "0.5",
            "--nonces",
            "0..2000",
        ];
        let line = runner.ok(&[&args[..], &SMALL_POOL, &FIND_ALL_EASY].concat());
        let v = &json_lines(&line)[0];
        assert_eq!(v["noncesTried"], 2000, "{method}: {v}");
        assert_eq!(v["ioErrors"], 0, "{method}: {v}");
        assert!(!v["found"].as_array().unwrap().is_empty(), "{method}: {v}");
    }
    let methods: Vec<&str> = pora_io::Method::available_real()
        .iter()
        .map(|m| m.name())
        .collect();
    let bench = runner.ok(&[
        "bench",
        f,
        "--method",
        &methods.join(","),
        "--duration",
        "0.2",
        "--json",
    ]);
    assert_eq!(json_lines(&bench).len(), methods.len(), "{bench}");
    runner.ok(&["doctor", f]);
    let profile = writable.join("shard.pora-profile.toml");
    let tuned = runner.ok(&[&quick_tune(f)[..], &["--profile", s(&profile), "--json"]].concat());
    assert!(tuned.contains("\"method\": \"pread\""), "{tuned}");
    assert!(
        profile.exists(),
        "tune wrote its profile to the writable dir"
    );

    let after = fingerprint(&shard);
    assert_eq!(before, after, "the shard's bytes or mtime changed");
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !["shard.dat", "pora", "out"].contains(&n.as_str()))
        .collect();
    assert!(
        leftovers.is_empty(),
        "nothing new next to the shard: {leftovers:?}"
    );
}
