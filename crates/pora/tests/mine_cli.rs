//! `pora mine` end to end: JSON keys, the same valid nonces as the single-nonce library path
//! (and `pora hash` for the ones found), clear errors for bad flags, and Ctrl-C handling.

mod common;

use common::fixtures::read_exact_at;
use common::{ok, pora, pora_command};
use pora_core::{hashimoto, ShardSet, H256, U256};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const RANDAO: &str = "0x2222222222222222222222222222222222222222222222222222222222222222";
/// 2^246: about one nonce in 1024 is valid.
const REQUIRED: &str = "0x0040000000000000000000000000000000000000000000000000000000000000";

fn create(dir: &Path, shard: u64) -> PathBuf {
    common::create_small(dir, shard, 7)
}

/// Valid nonces of `0..n` computed one at a time with the library's single-nonce path.
fn library_scan(path: &Path, n: u64) -> Vec<(u64, String)> {
    let shard = ShardSet::open(&[path.to_path_buf()], None).unwrap();
    let file = std::fs::File::open(path).unwrap();
    let randao = H256::parse("randao", RANDAO).unwrap();
    let required = U256::from_str_radix(&REQUIRED[2..], 16).unwrap();
    (0..n)
        .filter_map(|nonce| {
            let proof = hashimoto(&shard.geometry, 2, &shard.miner, &randao, nonce, |idx| {
                let mut buf = [0u8; 32];
                read_exact_at(&file, &mut buf, shard.locate(idx).unwrap().offset);
                Ok::<_, ()>(buf)
            })
            .unwrap();
            (U256::from_be_bytes(proof.hash1.0) <= required)
                .then(|| (nonce, proof.hash1.to_string()))
        })
        .collect()
}

fn json_lines(out: &Output) -> Vec<Value> {
    common::json_lines(&ok(out, "pora mine"))
}

#[test]
fn json_report_has_the_keys_and_the_library_paths_nonces() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (create(dir.path(), 0), create(dir.path(), 5));
    let args = [
        "mine",
        "--file",
        a.to_str().unwrap(),
        "--file",
        b.to_str().unwrap(),
        "--randao",
        RANDAO,
        "--nonces",
        "0..5000",
        "--find",
        "all",
        "--required-diff",
        REQUIRED,
        "--method",
        "pread",
        "--threads",
        "3",
        "--depth",
        "4",
        "--json",
    ];
    let objects = json_lines(&pora(&args));
    assert_eq!(objects.len(), 2, "one object per shard");
    for (obj, path, shard) in [(&objects[0], &a, 0), (&objects[1], &b, 5)] {
        for key in [
            "shard",
            "randao",
            "nonceLimit",
            "noncesTried",
            "miningPower",
            "elapsedSec",
            "endLateMs",
            "samplesRead",
            "samplesPerSec",
            "method",
            "threads",
            "depth",
            "found",
        ] {
            assert!(obj.get(key).is_some(), "missing key {key} in {obj}");
        }
        assert_eq!(obj["shard"], shard);
        assert_eq!(
            (obj["nonceLimit"].as_u64(), obj["noncesTried"].as_u64()),
            (Some(5000), Some(5000))
        );
        assert_eq!(
            (
                obj["method"].as_str(),
                obj["threads"].as_u64(),
                obj["depth"].as_u64()
            ),
            (Some("pread"), Some(3), Some(4))
        );
        let found: Vec<(u64, String)> = obj["found"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                for key in [
                    "nonce",
                    "hash1",
                    "sampleIdxs",
                    "kvIdxs",
                    "sampleIdxsInKv",
                    "encodedSamples",
                ] {
                    assert!(f.get(key).is_some(), "missing found key {key}");
                }
                (
                    f["nonce"].as_u64().unwrap(),
                    f["hash1"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let want = library_scan(path, 5000);
        assert!(!want.is_empty(), "the difficulty should yield a few nonces");
        assert_eq!(found, want, "shard {shard}");
        // And `pora hash` agrees on the first one.
        let (nonce, hash1) = &want[0];
        let out = pora(&[
            "hash",
            "--file",
            path.to_str().unwrap(),
            "--randao",
            RANDAO,
            "--nonce",
            &nonce.to_string(),
            "--json",
        ]);
        let hashed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(hashed["hash1"].as_str(), Some(hash1.as_str()));
    }
}

/// `cargo test` builds the binary under test with pora-io's `sim` feature (this crate's
/// dev-dependency turns it on, and cargo unifies dev-dependency features when it builds tests),
/// so `--method sim` mines here and finds the library path's nonces. A release build without the
/// feature refuses the method instead (docs/io-methods.md, "`sim` (tests)").
#[test]
fn the_binary_under_test_has_the_simulated_disk() {
    let dir = tempfile::tempdir().unwrap();
    let a = create(dir.path(), 0);
    let out = pora(&[
        "mine",
        "--file",
        a.to_str().unwrap(),
        "--randao",
        RANDAO,
        "--nonces",
        "0..3000",
        "--find",
        "all",
        "--required-diff",
        REQUIRED,
        "--method",
        "sim",
        "--threads",
        "2",
        "--depth",
        "4",
        "--json",
    ]);
    let objects = json_lines(&out);
    assert_eq!(objects[0]["method"].as_str(), Some("sim"));
    let found: Vec<(u64, String)> = objects[0]["found"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["nonce"].as_u64().unwrap(),
                f["hash1"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(found, library_scan(&a, 3000));
}

#[test]
fn human_output_and_random_randao_are_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let a = create(dir.path(), 0);
    let args = [
        "mine",
        "--file",
        a.to_str().unwrap(),
        "--random-randao",
        "--seed",
        "9",
        "--slots",
        "2",
        "--nonces",
        "0..500",
        "--method",
        "pread",
        "--threads",
        "2",
    ];
    let human = pora(&args);
    assert!(
        human.status.success(),
        "{}",
        String::from_utf8_lossy(&human.stderr)
    );
    let text = String::from_utf8(human.stdout).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("tried 500/500 nonces"))
            .count(),
        2,
        "{text}"
    );
    let json_args: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
    let randaos = || -> Vec<String> {
        json_lines(&pora(&json_args))
            .iter()
            .map(|o| o["randao"].as_str().unwrap().to_string())
            .collect()
    };
    let (r1, r2) = (randaos(), randaos());
    assert_eq!(r1, r2, "same seed, same randaos");
    assert_ne!(r1[0], r1[1], "each slot gets its own randao");
}

#[test]
fn bad_flags_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let a = create(dir.path(), 0);
    let f = a.to_str().unwrap();
    let cases: [(&[&str], &str); 8] = [
        (&["--depth", "0"], "--depth"),
        (&["--depth", "1000000000"], "--depth"),
        (&["--threads", "1000000"], "--threads"),
        (&["--nonces", "9..3"], "--nonces"),
        (&["--nonces", "abc"], "--nonces"),
        (&["--find", "most"], "--find"),
        (&["--on-io-error", "ignore"], "--on-io-error"),
        (&["--slot", "0"], "--slot"),
    ];
    for (extra, flag) in cases {
        let mut args = vec!["mine", "--file", f, "--random-randao", "--method", "pread"];
        args.extend_from_slice(extra);
        let out = pora(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?} accepted");
        assert!(
            stderr.contains(flag) && !stderr.contains("panicked"),
            "{extra:?}: {stderr}"
        );
    }
    let out = pora(&["mine", "--file", "/nonexistent/x.dat", "--random-randao"]);
    assert!(
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.dat")
    );
}

#[cfg(unix)]
#[test]
fn sigint_prints_partial_statistics_and_exits_130_within_a_second() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let a = create(dir.path(), 0);
    let child = pora_command()
        .args(common::endless_mine(a.to_str().unwrap()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::fixtures::wait_until_mining(child.id(), Duration::from_millis(700));
    let sent = Instant::now();
    assert!(std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < Duration::from_secs(1), "exit took {took:?}");
    let line: Value =
        serde_json::from_slice(out.stdout.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(line["interrupted"], true);
    assert!(line["noncesTried"].as_u64().unwrap() > 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
}

/// The README's first command (`cargo run --release -- mine --demo`): creates
/// ./pora-demo/shard0.dat (256 MiB, shard 0) once, mines one full slot on it and finds nonces; a
/// second run reuses the file, never rewriting it.
#[test]
fn demo_creates_its_shard_once_and_mines_a_slot() {
    let dir = tempfile::tempdir().unwrap();
    let demo = || {
        let out = pora_command()
            .args(["mine", "--demo", "--json"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let record: Value = serde_json::from_slice(&out.stdout).unwrap();
        (record, stderr)
    };
    let shard = dir.path().join("pora-demo/shard0.dat");
    let (record, stderr) = demo();
    assert!(stderr.contains("creating pora-demo/shard0.dat"), "{stderr}");
    assert_eq!(record["shard"], 0);
    assert_eq!(record["nonceLimit"], 1 << 20);
    assert!(record["noncesTried"].as_u64().unwrap() > 0, "{record}");
    let meta = std::fs::metadata(&shard).unwrap();
    assert!(meta.len() >= 256 << 20, "{} bytes", meta.len());
    let (again, stderr) = demo();
    assert!(!stderr.contains("creating"), "{stderr}");
    assert_eq!(again["shard"], 0);
    let after = std::fs::metadata(&shard).unwrap();
    assert_eq!(
        (after.len(), after.modified().unwrap()),
        (meta.len(), meta.modified().unwrap()),
        "the second run must reuse the file"
    );
}
