//! Runs `pora doctor` for real on a small shard on this machine's own disk: it must exit 0 and
//! report the sector size and the file system (on Linux), in text and JSON.

/// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
#[allow(unused_macros)] // some platforms skip nothing
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use std::path::Path;
use std::process::Command;

fn pora() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pora"))
}

fn create(file: &Path) {
    let out = pora()
        .args([
            "create",
            "--shard",
            "0",
            "--kv-entries-bits",
            "4",
            "--kv-size-bits",
            "12",
            "--quiet",
        ])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn doctor_reports_sector_size_and_file_system() {
    // Under the target dir: on the build machine's real disk, not a tmpfs /tmp.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("shard0.dat");
    create(&file);
    let out = pora().arg("doctor").arg(&file).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "doctor failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("complete shard 0"), "{text}");
    if cfg!(target_os = "linux") {
        assert!(
            text.contains("filesystem") && text.contains("file system "),
            "{text}"
        );
        if text.contains("sector size unknown") {
            skip_note!("SKIP sector size: no block device in sysfs for this file system\n{text}");
        } else {
            assert!(
                text.contains("logical ") && text.contains(" B, physical "),
                "{text}"
            );
        }
    }
    let out = pora()
        .arg("doctor")
        .arg("--json")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    assert!(findings
        .iter()
        .all(|f| ["ok", "info", "warn", "bad"].contains(&f["severity"].as_str().unwrap())));
    assert!(findings
        .iter()
        .any(|f| f["id"] == "shard" && f["severity"] == "ok"));
    assert_eq!(
        v["files"][0]["sizeBytes"].as_u64(),
        Some(std::fs::metadata(&file).unwrap().len())
    );
    if cfg!(target_os = "linux") {
        assert!(
            v["files"][0]["fsType"].is_string(),
            "{}",
            v["files"][0]["fsType"]
        );
    }
}

#[test]
fn doctor_on_a_missing_file_fails_with_its_name() {
    let out = pora()
        .args(["doctor", "/nonexistent/pora/shard.dat"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/pora/shard.dat"));
}
