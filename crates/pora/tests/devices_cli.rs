//! Shards on two devices (mining.md), end to end through the binary: `pora mine` opens one pool
//! per device and says what it chose for each, finds the same nonces as each shard mined alone;
//! `pora tune` tunes each device alone and writes one profile per device, which `pora mine`
//! then uses per device; `pora doctor` reports per device. The second device is the tmpfs at
//! /dev/shm; where it is missing or is the temp dir's own device the tests say SKIP and why.

#[macro_use]
mod common;

use common::{ok, pora, s, stderr};
use serde_json::Value;
use std::path::{Path, PathBuf};

const RANDAO: &str = "0x3333333333333333333333333333333333333333333333333333333333333333";
/// About one nonce in 256 is valid.
const REQUIRED: &str = "0x0100000000000000000000000000000000000000000000000000000000000000";

/// `pora args...`, asserting success: (stdout, stderr).
fn run_ok(args: &[&str]) -> (String, String) {
    let out = pora(args);
    (ok(&out, &format!("pora {args:?}")), stderr(&out))
}

/// A temp dir on the default device and one on /dev/shm, when they are different devices.
fn two_devices(test: &str) -> Option<(tempfile::TempDir, tempfile::TempDir)> {
    let first = tempfile::tempdir().unwrap();
    let Ok(second) = tempfile::tempdir_in("/dev/shm") else {
        skip_note!("SKIP {test}: no writable /dev/shm for a second device");
        return None;
    };
    let groups = pora_mine::devices::by_device([first.path(), second.path()]);
    if groups.len() != 2 {
        skip_note!(
            "SKIP {test}: {} and /dev/shm are on the same device",
            first.path().display()
        );
        return None;
    }
    Some((first, second))
}

/// A small random shard whose bytes differ from shard to shard.
fn create(dir: &Path, shard: u64) -> PathBuf {
    common::create_small(dir, shard, shard + 3)
}

/// `pora mine --file F1 --file F2 ... --randao RANDAO --nonces NONCES EXTRA...`.
fn mine_args<'a>(files: &[&'a Path], nonces: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["mine"];
    for f in files {
        args.extend(["--file", s(f)]);
    }
    args.extend(["--randao", RANDAO, "--nonces", nonces]);
    args.extend(extra);
    args
}

fn mine_json(files: &[&Path], extra: &[&str]) -> (Vec<Value>, String) {
    let find = [
        "--slot",
        "60",
        "--find",
        "all",
        "--required-diff",
        REQUIRED,
        "--json",
    ];
    let (stdout, stderr) = run_ok(&mine_args(files, "0..3000", &[&find[..], extra].concat()));
    (common::json_lines(&stdout), stderr)
}

fn found(record: &Value) -> Vec<u64> {
    record["found"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["nonce"].as_u64().unwrap())
        .collect()
}

#[test]
fn mine_runs_one_pool_per_device_with_the_same_nonces_as_each_shard_alone() {
    let Some((a, b)) = two_devices("mine_runs_one_pool_per_device") else {
        return;
    };
    let (s0, s1, s2) = (
        create(a.path(), 0),
        create(b.path(), 1),
        create(a.path(), 2),
    );
    let (records, _) = mine_json(&[&s0, &s1, &s2], &["--method", "pread", "--depth", "4"]);
    // Device by device, in the given order within a device.
    let order: Vec<u64> = records
        .iter()
        .map(|r| r["shard"].as_u64().unwrap())
        .collect();
    assert_eq!(order, vec![0, 2, 1]);
    // Each record names its pool's device: shards 0 and 2 share one, shard 1 has another.
    let device = |i: usize| records[i]["device"].as_str().unwrap().to_string();
    assert_eq!(device(0), device(1));
    assert_ne!(device(0), device(2));
    for record in &records {
        assert_eq!(record["noncesTried"], 3000, "{record}");
        assert_eq!(record["method"], "pread");
        let shard = record["shard"].as_u64().unwrap();
        let alone = [&s0, &s1, &s2][shard as usize];
        let (solo, _) = mine_json(&[alone], &["--method", "pread", "--depth", "4"]);
        assert!(
            !found(record).is_empty(),
            "the difficulty should yield nonces"
        );
        assert_eq!(found(record), found(&solo[0]), "shard {shard}");
    }
    // The opening lines name each device and its shards.
    let out = pora(&mine_args(&[&s0, &s1], "0..100", &[]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let devices: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("pora mine: device "))
        .collect();
    assert_eq!(devices.len(), 2, "{stderr}");
    assert!(devices[0].contains("(shards 0)") && devices[1].contains("(shards 1)"));
}

#[test]
fn tune_writes_one_profile_per_device_and_mine_uses_each() {
    let Some((a, b)) = two_devices("tune_writes_one_profile_per_device") else {
        return;
    };
    let (s0, s1) = (create(a.path(), 0), create(b.path(), 1));
    let tune = |extra: &[&str]| {
        let mut args = vec![
            "tune",
            s(&s0),
            s(&s1),
            "--budget",
            "10",
            "--method",
            "pread",
            "--max-threads",
            "2",
            // Shards 0 and 1 of 16 KVs would also read as one shard of 32.
            "--kv-entries-bits",
            "4",
        ];
        args.extend(extra);
        pora(&args)
    };
    // One profile path cannot serve two devices.
    let refused = tune(&["--profile", s(&a.path().join("p.toml"))]);
    let msg = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        msg.contains("--profile") && msg.contains("2 devices"),
        "{msg}"
    );
    let out = tune(&["--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record: Value = serde_json::from_str(&stdout).unwrap();
    let devices = record["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2, "{record}");
    let profiles = [
        a.path().join("shard0.dat.pora-profile.toml"),
        b.path().join("shard1.dat.pora-profile.toml"),
    ];
    for p in &profiles {
        assert!(p.exists(), "{} missing", p.display());
    }
    // Mining without --method takes each device's profile: its method (with its knobs and
    // measured rate) is `auto`'s candidate for its read path on that device (docs/mining.md).
    let (records, stderr) = mine_json(&[&s0, &s1], &[]);
    for p in &profiles {
        assert!(
            stderr.contains(&format!("using profile {}", p.display())),
            "{stderr}"
        );
    }
    for r in &records {
        let candidates = r["steering"]["candidates"].as_array().unwrap();
        assert!(
            candidates
                .iter()
                .any(|c| c["method"] == "pread" && c["rateSource"] == "profile"),
            "{r}"
        );
    }
    // Doctor: one profile finding per device, both matching.
    let (doctor, _) = run_ok(&["doctor", s(&s0), s(&s1), "--kv-entries-bits", "4", "--json"]);
    let report: Value = serde_json::from_str(&doctor).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["id"] == "devices"), "{doctor}");
    let per_device: Vec<&Value> = findings
        .iter()
        .filter(|f| f["id"] == "profile" && f["device"].is_string())
        .collect();
    assert_eq!(per_device.len(), 2, "{doctor}");
    assert!(per_device.iter().all(|f| f["severity"] == "ok"), "{doctor}");
}
