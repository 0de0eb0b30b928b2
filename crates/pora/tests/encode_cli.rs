//! The encoder commands through the real binary: `create --fill empty` reproduces real es-node
//! shard-1 results (`pora hash`) on a sparse file holding only the KVs those samples lie in;
//! `--resume` after an interruption; `scrub` finds a flipped byte; `decode` inverts the mask;
//! `mask` matches the shared vectors; bad input fails with a message naming the flag or field.

mod common;

use common::{fails_with, pora, testdata_json as vectors};
use pora_core::header::{HEADER_SIZE, META_SIZE, STATUS_INCOMPLETE};
use serde_json::Value;
use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Output;

const MINER: &str = "0x5C935469C5592Aeeac3372e922d9bCEabDF8830d";
const KV: u64 = 131072;

/// The stdout of a `pora` run that must succeed.
fn ok(out: &Output) -> String {
    common::ok(out, "pora")
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&ok(out)).expect("JSON output")
}

/// `pora create --fill empty` of a shard with the given extra flags.
fn create_empty(file: &Path, shard: u64, bits: u32, miner: &str, extra: &[&str]) -> Output {
    let (shard, bits) = (shard.to_string(), bits.to_string());
    let mut args = vec![
        "create",
        file.to_str().unwrap(),
        "--shard",
        &shard,
        "--kv-entries-bits",
        &bits,
        "--miner",
        miner,
        "--encode-type",
        "3",
        "--fill",
        "empty",
        "--quiet",
        "--threads",
        "2",
    ];
    args.extend_from_slice(extra);
    pora(&args)
}

fn read_at(path: &Path, offset: u64, len: usize) -> Vec<u8> {
    let mut f = std::fs::File::open(path).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    let mut buf = vec![0u8; len];
    f.read_exact(&mut buf).unwrap();
    buf
}

fn write_at(path: &Path, offset: u64, bytes: &[u8]) {
    let mut f = OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(bytes).unwrap();
}

fn meta_at(kvs_in_file: u64, kv_in_file: u64) -> u64 {
    HEADER_SIZE + kvs_in_file * KV + kv_in_file * META_SIZE
}

#[test]
fn filled_empty_shard_reproduces_esnode_shard_1_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shard1.dat");
    let samples = vectors("esnode-sample.json");
    // The shard-1 vectors whose samples both lie in KVs es-node had filled as empty (vectors:
    // KVs 12817/12988 and 14978/15952); only those KVs are written (a sparse 1 GiB file).
    let empty_filled = [[12817u64, 12988], [14978, 15952]];
    let kv_pair = |v: &Value| -> Vec<u64> {
        v["sampleIdxs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_u64().unwrap() / 4096)
            .collect()
    };
    let wanted: Vec<&Value> = samples["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["shard"] == 1 && v["kvEntriesBits"] == 13)
        .filter(|v| empty_filled.iter().any(|pair| kv_pair(v) == pair))
        .collect();
    assert_eq!(
        wanted.len(),
        2,
        "both vectors named in the issue are in the file"
    );
    let kvs: BTreeSet<u64> = wanted
        .iter()
        .flat_map(|v| v["sampleIdxs"].as_array().unwrap().iter())
        .map(|s| s.as_u64().unwrap() / 4096)
        .collect();
    for (i, kv) in kvs.iter().enumerate() {
        let range = format!("{kv}..{}", kv + 1);
        let mut extra = vec!["--kv-range", range.as_str()];
        if i > 0 {
            extra.push("--resume");
        }
        ok(&create_empty(&file, 1, 13, MINER, &extra));
    }
    for v in &wanted {
        let nonce = v["nonce"].as_u64().unwrap().to_string();
        let out = json(&pora(&[
            "hash",
            "--file",
            file.to_str().unwrap(),
            "--randao",
            v["randao"].as_str().unwrap(),
            "--nonce",
            &nonce,
            "--json",
        ]));
        assert_eq!(out["encodedSamples"], v["encodedSamples"], "nonce {nonce}");
        assert_eq!(out["hash1"], v["hash1"], "nonce {nonce}");
    }
    // Filled KVs carry the empty meta entry, the others stay all zero.
    for kv in 8192..8192 + 8192u64 {
        if kvs.contains(&kv) || kv % 997 == 0 {
            let meta = read_at(&file, meta_at(8192, kv - 8192), 32);
            let mut want = [0u8; 32];
            if kvs.contains(&kv) {
                want[24] = 0x80;
            }
            assert_eq!(meta, want, "meta of KV {kv}");
        }
    }
}

/// A filled 4-KV shard (shard 2, KVs 8..12) for `miner`.
fn small_shard(dir: &Path, miner: &str) -> std::path::PathBuf {
    let file = dir.join("small.dat");
    ok(&create_empty(&file, 2, 2, miner, &[]));
    file
}

#[test]
fn scrub_passes_a_fresh_fill_and_reports_a_flipped_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = small_shard(dir.path(), MINER);
    let path = file.to_str().unwrap();
    let clean = json(&pora(&["scrub", path, "--empty", "--json", "--quiet"]));
    assert_eq!(clean["checked"], 4);
    assert_eq!(clean["differing"].as_array().unwrap().len(), 0);
    // Flip one bit of word 100 of KV 10 (the third KV of the file).
    let at = HEADER_SIZE + 2 * KV + 32 * 100 + 7;
    let byte = read_at(&file, at, 1)[0];
    write_at(&file, at, &[byte ^ 0x10]);
    let out = pora(&["scrub", path, "--empty", "--json", "--quiet"]);
    fails_with(&out, &["1 of 4 checked KVs differ"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let bad = report["differing"].as_array().unwrap();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0]["kvIdx"], 10);
    assert_eq!(bad[0]["firstDifferingWord"], 100);
}

#[test]
fn decode_inverts_a_stored_blob_and_an_empty_kv() {
    let dir = tempfile::tempdir().unwrap();
    let file = small_shard(dir.path(), MINER);
    let path = file.to_str().unwrap();
    // An empty-filled KV decodes to zeros.
    let word = json(&pora(&[
        "decode", "--file", path, "--kv-idx", "9", "--sample", "4000", "--json",
    ]));
    assert_eq!(word["decoded"], format!("0x{}", "00".repeat(32)));
    // Store a blob the way es-node does: blob XOR mask(commit, miner, kv), commit in the meta.
    let commit = "0x0107231cf9721e9e4b44f360798ec498ddaf20bb7a779038";
    let mask_file = dir.path().join("mask.bin");
    let mask_path = mask_file.to_str().unwrap();
    ok(&pora(&[
        "mask", "--miner", MINER, "--kv-idx", "11", "--commit", commit, "--out", mask_path,
    ]));
    let mask = std::fs::read(&mask_file).unwrap();
    let blob: Vec<u8> = (0..KV).map(|i| (i * 7 % 251) as u8).collect();
    let stored: Vec<u8> = blob.iter().zip(&mask).map(|(b, m)| b ^ m).collect();
    write_at(&file, HEADER_SIZE + 3 * KV, &stored);
    let mut meta = [0u8; 32];
    meta[..24].copy_from_slice(&hex(commit));
    meta[24] = 0x80;
    write_at(&file, meta_at(4, 3), &meta);
    let out_file = dir.path().join("blob.bin");
    // KV 11 decoded whole into `out_file`.
    let decode_to_out_file = || {
        pora(&[
            "decode",
            "--file",
            path,
            "--kv-idx",
            "11",
            "--out",
            out_file.to_str().unwrap(),
        ])
    };
    ok(&decode_to_out_file());
    assert_eq!(std::fs::read(&out_file).unwrap(), blob);
    let word = json(&pora(&[
        "decode", "--file", path, "--kv-idx", "11", "--sample", "5", "--json",
    ]));
    assert_eq!(
        word["decoded"],
        format!("0x{}", hex_string(&blob[160..192]))
    );
    // With the wrong commit the word does not decode to the blob.
    let wrong = json(&pora(&[
        "decode", "--file", path, "--kv-idx", "11", "--sample", "5", "--commit", "0x01", "--json",
    ]));
    assert_ne!(wrong["decoded"], word["decoded"]);
    // Scrub leaves the KV holding a blob alone.
    let scrub = json(&pora(&["scrub", path, "--empty", "--json", "--quiet"]));
    assert_eq!(
        (scrub["checked"].as_u64(), scrub["notEmptyFilled"].as_u64()),
        (Some(3), Some(1))
    );
    // The existing --out is not overwritten without --force.
    fails_with(&decode_to_out_file(), &["--out", "--force"]);
}

fn hex(s: &str) -> Vec<u8> {
    let d = s.strip_prefix("0x").unwrap();
    (0..d.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&d[i..i + 2], 16).unwrap())
        .collect()
}

fn hex_string(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn mask_command_matches_the_shared_vectors() {
    let v = vectors("esnode-encode.json");
    for case in v["rawKeys"].as_array().unwrap() {
        let j = case["sample"].to_string();
        let out = json(&pora(&[
            "mask",
            "--key",
            case["key"].as_str().unwrap(),
            "--sample",
            &j,
            "--json",
        ]));
        assert_eq!(out["sample"], case["word"]);
        if case.get("sha256").is_some() {
            assert_eq!(out["maskSha256"], case["sha256"]);
        }
    }
    let full = &v["fullMask"][0];
    let kv = full["kvIdx"].to_string();
    let out = json(&pora(&[
        "mask", "--miner", MINER, "--kv-idx", &kv, "--json",
    ]));
    assert_eq!(out["encodeKey"], full["encodeKey"]);
    assert_eq!(out["maskSha256"], full["sha256"]);
    let c = &v["commitKey"];
    let kv = c["kvIdx"].to_string();
    let out = json(&pora(&[
        "mask",
        "--miner",
        c["miner"].as_str().unwrap(),
        "--kv-idx",
        &kv,
        "--commit",
        c["commit"].as_str().unwrap(),
        "--json",
    ]));
    assert_eq!(out["encodeKey"], c["encodeKey"]);
    assert_eq!(out["maskSha256"], c["maskSha256"]);
}

#[test]
fn resume_finishes_an_interrupted_fill_and_rewrites_a_torn_kv() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("torn.dat");
    let path = file.to_str().unwrap();
    // A fill interrupted after KVs 8 and 9: header still "incomplete", KV 9's data torn.
    ok(&create_empty(&file, 2, 2, MINER, &["--kv-range", "8..10"]));
    write_at(&file, 84, &STATUS_INCOMPLETE.to_be_bytes());
    write_at(&file, HEADER_SIZE + KV + 4096, &[0xAB; 64]);
    fails_with(&pora(&["info", path]), &["never finished"]);
    fails_with(
        &create_empty(&file, 2, 2, MINER, &[]),
        &["exists", "--resume"],
    );
    fails_with(
        &create_empty(
            &file,
            2,
            2,
            "0x0000000000000000000000000000000000000001",
            &["--resume"],
        ),
        &["--miner", "differs"],
    );
    ok(&create_empty(&file, 2, 2, MINER, &["--resume"]));
    let clean = json(&pora(&["scrub", path, "--empty", "--json", "--quiet"]));
    assert_eq!(clean["checked"], 4);
    assert_eq!(clean["differing"].as_array().unwrap().len(), 0);
}

#[test]
fn bad_input_names_the_flag_or_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = small_shard(dir.path(), MINER);
    let path = file.to_str().unwrap();
    fails_with(
        &pora(&[
            "create",
            dir.path().join("x.dat").to_str().unwrap(),
            "--shard",
            "0",
            "--kv-entries-bits",
            "2",
            "--fill",
            "empty",
            "--encode-type",
            "0",
        ]),
        &["--encode-type"],
    );
    fails_with(
        &create_empty(
            &dir.path().join("y.dat"),
            2,
            2,
            MINER,
            &["--kv-range", "0..3"],
        ),
        &["--kv-range", "outside"],
    );
    fails_with(
        &pora(&[
            "decode",
            "--file",
            path,
            "--kv-idx",
            "9",
            "--miner",
            "0x0000000000000000000000000000000000000001",
        ]),
        &["--miner", "differs"],
    );
    fails_with(
        &pora(&["decode", "--file", path, "--kv-idx", "12"]),
        &["--kv-idx 12", "outside"],
    );
    fails_with(&pora(&["mask", "--key", "0x123"]), &["--key", "odd"]);
    fails_with(
        &pora(&["mask", "--key", &format!("0x{}", "11".repeat(33))]),
        &["--key", "longer"],
    );
    fails_with(
        &pora(&[
            "mask",
            "--miner",
            MINER,
            "--kv-idx",
            "1",
            "--commit",
            &format!("0x{}", "01".repeat(25)),
        ]),
        &["--commit", "longer"],
    );
    fails_with(
        &pora(&["mask", "--miner", "0x12", "--kv-idx", "1"]),
        &["miner"],
    );
    // A file of another encode type.
    let plain = dir.path().join("plain.dat");
    ok(&pora(&[
        "create",
        plain.to_str().unwrap(),
        "--shard",
        "0",
        "--kv-entries-bits",
        "2",
        "--fill",
        "sparse",
        "--quiet",
    ]));
    fails_with(
        &pora(&["scrub", plain.to_str().unwrap(), "--empty"]),
        &["encodeType"],
    );
    fails_with(
        &pora(&["decode", "--file", plain.to_str().unwrap(), "--kv-idx", "0"]),
        &["encodeType"],
    );
}

/// A bad `PORA_ENCODE_ARITH` (or a kernel this CPU lacks) is a clean error naming the variable
/// for every command that encodes, never a panic, and the fill writes nothing.
#[test]
fn a_bad_encode_kernel_is_an_error_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shard.dat");
    let run = |args: &[&str]| {
        common::pora_command()
            .args(args)
            .env("PORA_ENCODE_ARITH", "bogus")
            .output()
            .expect("run pora")
    };
    let key = format!("0x{}", "11".repeat(32));
    fails_with(
        &run(&["mask", "--key", &key]),
        &["PORA_ENCODE_ARITH", "bogus"],
    );
    let out = run(&[
        "create",
        file.to_str().unwrap(),
        "--shard",
        "0",
        "--kv-entries-bits",
        "2",
        "--miner",
        "0x5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c",
        "--encode-type",
        "3",
        "--fill",
        "empty",
        "--quiet",
    ]);
    fails_with(&out, &["PORA_ENCODE_ARITH"]);
    assert!(!file.exists(), "a refused fill created {}", file.display());
}

/// `--fill empty --json` says what it wrote, what it skipped and the encoder kernel it ran on:
/// a resumed fill over a KV holding a blob (its meta is a commit) leaves that KV alone and
/// counts it in `skipped`.
#[test]
fn fill_empty_json_counts_skipped_kvs_and_names_the_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("resume.dat");
    let first = json(&create_empty(
        &file,
        2,
        2,
        MINER,
        &["--kv-range", "8..9", "--json"],
    ));
    assert_eq!(
        (first["kvs"].as_u64(), first["skipped"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(
        first["kernel"],
        pora_encode::Kernel::selected().unwrap().name()
    );
    // KV 10 (the third of the file) holds a blob: its meta entry is a commit.
    write_at(&file, meta_at(4, 2), &[0x11; 32]);
    let resumed = json(&create_empty(&file, 2, 2, MINER, &["--resume", "--json"]));
    // KV 8 already holds its mask, KV 10 a blob: both skipped; 9 and 11 written.
    assert_eq!(resumed["kvs"], 2, "{resumed}");
    assert_eq!(resumed["skipped"], 2, "{resumed}");
    assert_eq!(resumed["refilled"], 0, "{resumed}");
    assert_eq!(read_at(&file, meta_at(4, 2), 32), vec![0x11; 32]);
}
