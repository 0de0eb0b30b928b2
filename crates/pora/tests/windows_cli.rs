//! The `pora` binary on Windows (under Wine in CI): `pora create --fill sparse` builds each es-node
//! vector's shard, the logged samples are written in place, and `pora hash` must reproduce
//! es-node's hash0/hash1/requiredDiff; then a short `pora mine` runs with every Windows method,
//! and `pora serve` answers a `pora_mineSlot` call over HTTP.
#![cfg(windows)]

#[macro_use]
mod common;

use common::{
    create_args, found_sorted, mine_all_args, mine_report, ok, pora, pora_command,
    vector_text as text,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

const WINDOWS_METHODS: [&str; 5] = ["pread", "pread-shared", "mmap", "iocp", "iocp-unbuffered"];

/// Every vector of `testdata/esnode-sample.json`.
fn vectors() -> Vec<Value> {
    let files = common::fixtures::vector_files();
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

/// The vector's shard as es-node had it (see [`common::build_vector_shard`]).
fn build_shard(dir: &Path, n: usize, v: &Value) -> PathBuf {
    let path = dir.join(format!("vector{n}-shard{}.dat", v["shard"]));
    common::build_vector_shard(&path, v);
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

#[test]
fn pora_mine_finds_the_same_nonces_with_every_windows_method() {
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("mine.dat");
    let s = shard.to_str().unwrap();
    // 16 MiB of random bytes: small enough for Wine, large enough for random reads.
    common::create_random_16mib(&shard);
    let randao = format!("0x{}", "5a".repeat(32));
    // About one nonce in 64 is valid: every method must find exactly the same ones.
    let required = format!("0x04{}", "0".repeat(62));
    let mut reference: Option<Vec<(u64, String)>> = None;
    for method in WINDOWS_METHODS {
        let args = mine_all_args(s, method, "8", "0..4096", &required, &randao);
        let stdout = ok(&pora(&args), &format!("pora mine --method {method}"));
        let report = mine_report(&stdout, &format!("--method {method}"));
        assert_eq!(report["method"], method, "{report}");
        assert_eq!(report["nonceLimit"], 4096, "{method}: {report}");
        assert_eq!(
            report["noncesTried"], 4096,
            "{method}: every nonce of the slot: {report}"
        );
        assert_eq!(report["ioErrors"], 0, "{method}: {report}");
        let found = found_sorted(&report);
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
    let create = [&create_args(s, "0", "3")[..], &["--quiet"]].concat();
    ok(&pora(&create), "pora create");
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
        pora_command()
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
