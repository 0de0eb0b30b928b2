//! The `pora` binary on the core commands: `create`, `info`, `hash` — es-node vectors through
//! the real binary, and every kind of bad input rejected with a message naming the file or flag,
//! a non-zero exit and no panic.

mod common;

use common::fixtures::v1_header;
use common::{
    build_vector_shard, fails_with, hash_args, ok, pora, s, testdata_json, vector_difficulty_args,
    ZERO_RANDAO,
};
use pora_core::header::{Header, STATUS_INCOMPLETE};
use pora_core::{Address, EncodeType};
use serde_json::Value;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

fn header(start: u64, len: u64) -> Header {
    v1_header(
        start,
        len,
        EncodeType::BlobPoseidon,
        1 << 17,
        Address([0x11; 20]),
    )
}

/// Writes `bytes` as a header and makes the file `len` bytes long (sparse).
fn write_raw(path: &Path, bytes: &[u8], len: u64) {
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
    f.set_len(len).unwrap();
}

fn write_header(path: &Path, h: &Header) {
    write_raw(path, &h.encode(), h.allocated_len().unwrap());
}

fn set_field(h: &Header, at: usize, value: u64) -> Vec<u8> {
    let mut buf = h.encode();
    buf[at..at + 8].copy_from_slice(&value.to_be_bytes());
    buf
}

#[test]
fn vectors_reproduce_through_pora_create_and_pora_hash() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = testdata_json("esnode-sample.json");
    for v in vectors["vectors"].as_array().unwrap().iter().take(3) {
        let shard = v["shard"].as_u64().unwrap();
        let path = dir.path().join(format!("shard{shard}.dat"));
        build_vector_shard(&path, v);
        let nonce = v["nonce"].to_string();
        let hash = hash_args(s(&path), v["randao"].as_str().unwrap(), &nonce);
        let difficulty = vector_difficulty_args(v);
        let difficulty: Vec<&str> = difficulty.iter().map(String::as_str).collect();
        let out = pora(&[&hash[..], &["--json"], &difficulty].concat());
        ok(&out, "pora hash");
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        for key in [
            "hash0",
            "hash1",
            "sampleIdxs",
            "encodedSamples",
            "requiredDiff",
        ] {
            let want = &v[key];
            let want = want
                .as_str()
                .map(|s| Value::String(s.to_lowercase()))
                .unwrap_or(want.clone());
            assert_eq!(got[key], want, "{key} for nonce {nonce}");
        }
        assert_eq!(got["valid"], v["hash1MeetsRequiredDiff"]);
        for key in ["kvIdxs", "sampleIdxsInKv"] {
            assert_eq!(got[key].as_array().unwrap().len(), 2, "{key}");
        }
    }
}

#[test]
fn create_refuses_to_overwrite_and_info_reports_the_shard() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.dat");
    let args = [
        "create",
        s(&path),
        "--shard",
        "3",
        "--kv-entries-bits",
        "2",
        "--kv-size-bits",
        "12",
        "--seed",
        "7",
        "--quiet",
    ];
    assert!(pora(&args).status.success());
    let first = std::fs::read(&path).unwrap();
    assert_eq!(
        first.len() as u64,
        4096 + 4 * (4096 + 32),
        "es-node's preallocated size"
    );
    fails_with(&pora(&args), &[s(&path), "--force"]);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        first,
        "refused create must not touch the file"
    );
    let mut forced = args.to_vec();
    forced.push("--force");
    assert!(pora(&forced).status.success());
    assert_eq!(
        std::fs::read(&path).unwrap(),
        first,
        "same seed, same bytes"
    );
    let out = pora(&["info", s(&path), "--json"]);
    assert!(out.status.success());
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["completeShard"], true);
    assert_eq!(info["shard"]["shard"], 3);
    assert_eq!(info["shard"]["kvEntriesBits"], 2);
}

#[test]
fn an_interrupted_create_does_not_look_valid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wip.dat");
    let mut h = header(0, 8192);
    h.status = STATUS_INCOMPLETE;
    write_header(&path, &h);
    fails_with(&pora(&["info", s(&path)]), &[s(&path), "never finished"]);
}

#[test]
fn bad_files_are_named_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = header(0, 8192);
    let full = good.allocated_len().unwrap();
    let cases: Vec<(&str, Vec<u8>, u64, Vec<&str>)> = vec![
        ("magic", set_field(&good, 0, 0x1234), full, vec!["magic"]),
        (
            "version",
            set_field(&good, 8, 2),
            full,
            vec!["`version`", "2"],
        ),
        (
            "encode",
            set_field(&good, 32, 9),
            full,
            vec!["`encodeType`", "9"],
        ),
        (
            "chunkpow",
            set_field(&good, 48, 3 << 15),
            full,
            vec!["`chunkSize`", "power of two"],
        ),
        (
            "chunkbig",
            set_field(&good, 48, 1 << 18),
            full,
            vec!["`chunkSize`", "larger than maxKvSize"],
        ),
        (
            "overflow",
            set_field(&good, 24, u64::MAX / 1024),
            full,
            vec!["`chunkIdxLen`", "overflows 64 bits"],
        ),
        (
            "short",
            good.encode(),
            4096 + (1 << 30) - 1,
            vec!["needs at least"],
        ),
        (
            "tiny",
            good.encode()[..50].to_vec(),
            50,
            vec!["needs at least"],
        ),
    ];
    for (name, bytes, len, needles) in cases {
        let path = dir.path().join(format!("{name}.dat"));
        write_raw(&path, &bytes, len);
        let mut all = needles.clone();
        all.push(s(&path));
        fails_with(&pora(&["info", s(&path)]), &all);
        fails_with(&pora(&hash_args(s(&path), ZERO_RANDAO, "1")), &all);
    }
    let missing = dir.path().join("missing.dat");
    fails_with(
        &pora(&["info", s(&missing)]),
        &[s(&missing), "No such file"],
    );
}

#[test]
fn gaps_and_overlaps_between_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| -> PathBuf { dir.path().join(n) };
    write_header(&p("a.dat"), &header(0, 4096));
    write_header(&p("gap.dat"), &header(4097, 4095));
    write_header(&p("over.dat"), &header(4000, 4192));
    write_header(&p("b.dat"), &header(4096, 4096));
    let randao = format!("0x{}", "ab".repeat(32));
    let hash = |a: &Path, b: &Path| {
        pora(&[
            "hash",
            "--file",
            s(a),
            s(b),
            "--randao",
            &randao,
            "--nonce",
            "5",
            "--kv-entries-bits",
            "13",
        ])
    };
    fails_with(
        &hash(&p("a.dat"), &p("gap.dat")),
        &["gap", "a.dat", "gap.dat"],
    );
    fails_with(
        &hash(&p("a.dat"), &p("over.dat")),
        &["overlaps", "a.dat", "over.dat"],
    );
    let ok = hash(&p("b.dat"), &p("a.dat"));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

#[test]
fn bad_flags_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ok.dat");
    write_header(&path, &header(0, 8192));
    let zero = format!("0x{}", "00".repeat(32));
    let run = |extra: &[&str]| {
        let mut args = vec!["hash", "--file", s(&path)];
        args.extend_from_slice(extra);
        pora(&args)
    };
    fails_with(&run(&["--randao", "0x12zz", "--nonce", "1"]), &["--randao"]);
    let bad_randao = format!("0x{}g", "0".repeat(63));
    fails_with(
        &run(&["--randao", &bad_randao, "--nonce", "1"]),
        &["--randao", "non-hex"],
    );
    fails_with(
        &run(&["--randao", &zero, "--nonce", "1", "--miner", "0x1234"]),
        &["--miner", "40 hex digits"],
    );
    fails_with(
        &run(&["--randao", &zero, "--nonce", "18446744073709551616"]),
        &["--nonce"],
    );
    fails_with(&run(&["--randao", &zero, "--nonce", "-1"]), &["--nonce"]);
    fails_with(
        &run(&["--randao", &zero, "--nonce", "1", "--shard", "4"]),
        &["--shard 4", "shard 0"],
    );
    fails_with(
        &run(&["--randao", &zero, "--nonce", "1", "--required-diff", "12q"]),
        &["--required-diff"],
    );
    fails_with(
        &run(&[
            "--randao",
            &zero,
            "--nonce",
            "1",
            "--difficulty",
            "5",
            "--interval",
            "1",
            "--cutoff",
            "0",
        ]),
        &["--cutoff"],
    );
}
