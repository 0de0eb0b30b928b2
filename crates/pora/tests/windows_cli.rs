//! The `pora` binary on Windows (under Wine in CI): `pora create --fill sparse` builds each es-node
//! vector's shard, the logged samples are written in place, and `pora hash` must reproduce
//! es-node's hash0/hash1/requiredDiff; then a short `pora mine` runs with every Windows method,
//! and `pora serve` answers a `pora_mineSlot` call over HTTP.
#![cfg(windows)]

/// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
#[allow(unused_macros)] // some platforms skip nothing
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use serde_json::Value;
use std::fs::OpenOptions;
use std::os::windows::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const WINDOWS_METHODS: [&str; 5] = ["pread", "pread-shared", "mmap", "iocp", "iocp-unbuffered"];

fn pora(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pora"))
        .args(args)
        .output()
        .expect("the pora binary runs")
}

fn ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Every vector from `testdata/` and, when present, `../shared/vectors/` beside the repository.
fn vectors() -> Vec<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("testdata/esnode-sample.json")];
    if let Ok(dir) = std::fs::read_dir(root.join("../shared/vectors")) {
        files.extend(
            dir.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json")),
        );
    }
    let mut out = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let doc: Value = serde_json::from_str(&text).unwrap();
        out.extend(doc["vectors"].as_array().cloned().unwrap_or_default());
    }
    assert!(!out.is_empty(), "no vectors found");
    out
}

fn text(v: &Value, key: &str) -> String {
    match &v[key] {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("{key}: {other}"),
    }
}

/// `pora create --fill sparse` for the vector's shard, then its encoded samples written at
/// their offsets (`4096 + sampleIdx*32 - chunkIdxStart*chunkSize`).
fn build_shard(dir: &Path, n: usize, v: &Value) -> PathBuf {
    let path = dir.join(format!("vector{n}-shard{}.dat", v["shard"]));
    let p = path.to_str().unwrap();
    let (shard, eb, kb) = (
        text(v, "shard"),
        text(v, "kvEntriesBits"),
        text(v, "kvSizeBits"),
    );
    let args = [
        "create",
        p,
        "--shard",
        &shard,
        "--kv-entries-bits",
        &eb,
        "--kv-size-bits",
        &kb,
    ];
    let miner = text(v, "miner");
    ok(
        &pora(
            &[
                &args[..],
                &[
                    "--miner",
                    &miner,
                    "--encode-type",
                    "3",
                    "--fill",
                    "sparse",
                    "--quiet",
                ],
            ]
            .concat(),
        ),
        "pora create",
    );
    let shard_start_byte = v["shard"].as_u64().unwrap()
        << (v["kvEntriesBits"].as_u64().unwrap() + v["kvSizeBits"].as_u64().unwrap());
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    for (idx, sample) in v["sampleIdxs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(v["encodedSamples"].as_array().unwrap())
    {
        let hex = sample.as_str().unwrap().trim_start_matches("0x");
        let bytes: Vec<u8> = (0..32)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        file.seek_write(&bytes, 4096 + idx.as_u64().unwrap() * 32 - shard_start_byte)
            .unwrap();
    }
    file.sync_all().unwrap();
    path
}

#[test]
fn pora_hash_reproduces_every_esnode_vector() {
    let dir = tempfile::tempdir().unwrap();
    for (n, v) in vectors().iter().enumerate() {
        let path = build_shard(dir.path(), n, v);
        let (randao, nonce) = (text(v, "randao"), text(v, "nonce"));
        let diff = [
            "--difficulty",
            &text(v, "difficulty"),
            "--interval",
            &text(v, "interval"),
            "--cutoff",
            &text(v, "cutoff"),
            "--diff-adj-divisor",
            &text(v, "diffAdjDivisor"),
            "--minimum-diff",
            &text(v, "minimumDiff"),
        ];
        let args = [
            &[
                "hash",
                "--file",
                path.to_str().unwrap(),
                "--randao",
                &randao,
                "--nonce",
                &nonce,
                "--json",
            ][..],
            &diff[..],
        ]
        .concat();
        let got: Value = serde_json::from_str(&ok(&pora(&args), "pora hash")).unwrap();
        let lower = |v: &Value| v.as_str().unwrap().to_lowercase();
        assert_eq!(
            lower(&got["hash0"]),
            lower(&v["hash0"]),
            "hash0 of nonce {nonce}"
        );
        assert_eq!(
            lower(&got["hash1"]),
            lower(&v["hash1"]),
            "hash1 of nonce {nonce}"
        );
        assert_eq!(
            got["sampleIdxs"], v["sampleIdxs"],
            "sample indices of nonce {nonce}"
        );
        let samples: Vec<String> = got["encodedSamples"]
            .as_array()
            .unwrap()
            .iter()
            .map(lower)
            .collect();
        let want: Vec<String> = v["encodedSamples"]
            .as_array()
            .unwrap()
            .iter()
            .map(lower)
            .collect();
        assert_eq!(samples, want, "samples of nonce {nonce}");
        assert_eq!(
            text(&got, "requiredDiff"),
            text(v, "requiredDiff"),
            "requiredDiff of nonce {nonce}"
        );
        assert_eq!(
            got["valid"], v["hash1MeetsRequiredDiff"],
            "validity of nonce {nonce}"
        );
    }
}

#[test]
fn pora_hash_names_a_missing_file() {
    let out = pora(&[
        "hash",
        "--file",
        "C:\\no\\such\\shard.dat",
        "--randao",
        &format!("0x{}", "11".repeat(32)),
        "--nonce",
        "1",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("shard.dat"), "{stderr}");
}

/// Whether this build's `pora mine` is the real command (it was written on another branch).
/// One JSON report line of `pora mine --json`.
fn mine_report(stdout: &str, method: &str) -> Value {
    let line = stdout.lines().rfind(|l| l.starts_with('{'));
    let line =
        line.unwrap_or_else(|| panic!("pora mine --method {method} printed no JSON:\n{stdout}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{method}: bad JSON ({e}): {line}"))
}

/// The valid nonces of a report as (nonce, hash1), sorted.
fn found(report: &Value) -> Vec<(u64, String)> {
    let mut found: Vec<(u64, String)> = report["found"]
        .as_array()
        .expect("found is a list")
        .iter()
        .map(|p| {
            (
                p["nonce"].as_u64().unwrap(),
                p["hash1"].as_str().unwrap().to_lowercase(),
            )
        })
        .collect();
    found.sort();
    found
}

#[test]
fn pora_mine_finds_the_same_nonces_with_every_windows_method() {
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("mine.dat");
    let s = shard.to_str().unwrap();
    // A 16 MiB shard of random bytes: small enough for Wine, large enough for random reads.
    let create = [
        "create",
        s,
        "--shard",
        "0",
        "--kv-entries-bits",
        "7",
        "--fill",
        "random",
    ];
    ok(&pora(&[&create[..], &["--quiet"]].concat()), "pora create");
    let randao = format!("0x{}", "5a".repeat(32));
    // About one nonce in 64 is valid: every method must find exactly the same ones.
    let required = format!("0x04{}", "0".repeat(62));
    let mut reference: Option<Vec<(u64, String)>> = None;
    for method in WINDOWS_METHODS {
        let args = [
            "mine",
            "--file",
            s,
            "--method",
            method,
            "--threads",
            "2",
            "--depth",
            "8",
            "--nonces",
            "0..4096",
            "--slots",
            "1",
            "--slot",
            "600",
            "--find",
            "all",
            "--required-diff",
            &required,
            "--randao",
            &randao,
            "--json",
        ];
        let stdout = ok(&pora(&args), &format!("pora mine --method {method}"));
        let report = mine_report(&stdout, method);
        assert_eq!(report["method"], method, "{report}");
        assert_eq!(report["nonceLimit"], 4096, "{method}: {report}");
        assert_eq!(
            report["noncesTried"], 4096,
            "{method}: every nonce of the slot: {report}"
        );
        assert_eq!(report["ioErrors"], 0, "{method}: {report}");
        let found = found(&report);
        assert!(
            !found.is_empty(),
            "{method}: nothing found at 1/64 odds in 4096 nonces"
        );
        match &reference {
            None => reference = Some(found),
            Some(r) => assert_eq!(
                &found, r,
                "{method} found other nonces than {}",
                WINDOWS_METHODS[0]
            ),
        }
    }
    // The first find, recomputed by `pora hash` (plain single-nonce path), has the same hash1.
    let (nonce, hash1) = reference.unwrap()[0].clone();
    let args = [
        "hash",
        "--file",
        s,
        "--randao",
        &randao,
        "--nonce",
        &nonce.to_string(),
        "--json",
    ];
    let proof: Value = serde_json::from_str(&ok(&pora(&args), "pora hash")).unwrap();
    assert_eq!(proof["hash1"].as_str().unwrap().to_lowercase(), hash1);
}

#[test]
fn pora_doctor_reports_the_volume_and_bitlocker() {
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("doctor.dat");
    let s = shard.to_str().unwrap();
    ok(
        &pora(&[
            "create",
            s,
            "--shard",
            "0",
            "--kv-entries-bits",
            "3",
            "--quiet",
        ]),
        "pora create",
    );
    let out = ok(&pora(&["doctor", s]), "pora doctor");
    assert!(
        out.contains("win-volume") && out.contains("aligns to"),
        "{out}"
    );
    assert!(out.contains("bitlocker"), "{out}");
}

/// One HTTP/1.1 POST of `body` to `/` over a fresh connection; the response body.
fn http_post(addr: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to pora serve");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .unwrap();
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap()
}

#[test]
fn pora_serve_answers_rpc_as_a_console_program() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("serve.dat");
    let s = shard.to_str().unwrap();
    let create = ["create", s, "--shard", "0", "--kv-entries-bits", "4"];
    ok(&pora(&[&create[..], &["--quiet"]].concat()), "pora create");
    /// Ends `pora serve` however the test ends.
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let serve = ["serve", "--file", s, "--method", "pread"];
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_pora"))
            .args(serve)
            .args(["--listen", "127.0.0.1:0"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("pora serve starts"),
    );
    let stderr = std::io::BufReader::new(child.0.stderr.take().unwrap());
    let mut lines = stderr.lines().map_while(Result::ok);
    let addr = lines
        .find_map(|l| {
            l.strip_prefix("pora serve: listening on http://")
                .map(String::from)
        })
        .expect("a `listening on` line");
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let randao = format!("0x{}", "5a".repeat(32));
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"pora_mineSlot","params":{{"randao":"{randao}","nonceStart":0,"nonceEnd":"0x200","slotMs":600000}}}}"#
    );
    let answer: Value = serde_json::from_str(&http_post(&addr, &body)).unwrap();
    let record = &answer["result"]["shards"][0];
    assert_eq!(record["noncesTried"], 512, "{answer}");
    assert_eq!(record["method"], "pread", "{answer}");
    assert_eq!(record["samplesRead"], 1024, "{answer}");
}
