//! End-to-end tests of `pora bench`: JSON output with every documented key and sane values, the
//! default range of an es-node data file, clear rejection of bad flags, read-only access, and a
//! clean partial result on SIGTERM.

#[macro_use]
mod common;

use common::{ok, pora as run, s};
use pora_measure::bench::record::JSON_KEYS;
use serde_json::Value;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A plain (non es-node) file of pseudo-random bytes.
fn plain_file(dir: &Path, len: usize) -> PathBuf {
    let path = dir.join("plain.bin");
    let mut x = 0x1234_5678_9abc_def0u64;
    let bytes: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&path, bytes).expect("write test file");
    path
}

fn json_lines(out: &Output) -> Vec<Value> {
    common::json_lines(&String::from_utf8_lossy(&out.stdout))
}

/// `pora bench FILE --method METHOD --duration SECONDS EXTRA...`, asserting it succeeded.
fn bench_ok(file: &Path, method: &str, seconds: &str, extra: &[&str]) -> Output {
    let args = ["bench", s(file), "--method", method, "--duration", seconds];
    let out = run(&[&args[..], extra].concat());
    ok(&out, &format!("pora {args:?} {extra:?}"));
    out
}

fn checksum(path: &Path) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::read(path).expect("read").hash(&mut h);
    h.finish()
}

fn assert_sane(obj: &Value) {
    for k in JSON_KEYS {
        assert!(obj.get(k).is_some(), "key {k} missing in {obj}");
    }
    let reads = obj["reads"].as_u64().expect("reads");
    assert!(reads > 0, "{obj}");
    assert!(obj["iops"].as_f64().expect("iops") > 0.0);
    assert!(obj["seconds"].as_f64().expect("seconds") > 0.0);
    let lat = &obj["latencyUs"];
    let (p50, p99, p999) = (
        lat["p50"].as_f64().unwrap(),
        lat["p99"].as_f64().unwrap(),
        lat["p999"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99 && p99 <= p999, "{lat}");
    if let Some(cpu) = obj["cpuPercent"].as_f64() {
        assert!(cpu >= 0.0, "{obj}");
    }
    assert!(
        obj["deviceReads"].is_null() || obj["deviceReads"].is_u64(),
        "{obj}"
    );
    assert_eq!(obj["readErrors"].as_u64(), Some(0), "{obj}");
    assert_eq!(obj["interrupted"], Value::Bool(false));
}

#[test]
fn json_has_every_key_and_sane_values_for_each_combination() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = plain_file(dir.path(), 4 << 20);
    let out = bench_ok(
        &file,
        "pread",
        "0.3",
        &["--depth", "1,4", "--threads", "2", "--json"],
    );
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2, "one line per combination");
    for (obj, depth) in lines.iter().zip([1, 4]) {
        assert_sane(obj);
        assert_eq!(obj["method"], "pread");
        assert_eq!(obj["depth"], depth);
        assert_eq!(obj["threads"], 2);
        assert_eq!(obj["blockSize"], 32, "natural pread moves one sample");
        assert_eq!(
            obj["range"],
            serde_json::json!([0, 4 << 20]),
            "a plain file is read whole"
        );
        let mbps = obj["mbps"].as_f64().unwrap();
        let expect = obj["iops"].as_f64().unwrap() * 32.0 / 1e6;
        assert!((mbps - expect).abs() <= expect * 1e-9, "{mbps} vs {expect}");
    }
}

#[test]
fn esnode_file_is_read_over_its_data_region_and_never_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("shard.dat");
    let f = file.to_str().unwrap();
    let created = run(&[
        "create",
        f,
        "--shard",
        "0",
        "--kv-entries-bits",
        "4",
        "--fill",
        "random",
    ]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let (mtime, sum) = (
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        checksum(&file),
    );
    let out = bench_ok(&file, "pread-shared", "0.3", &["--cold", "--json"]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1);
    assert_sane(&lines[0]);
    // 16 KVs of 128 KiB after the 4096-byte header; the meta region is not read.
    assert_eq!(
        lines[0]["range"],
        serde_json::json!([4096, 4096 + (16u64 << 17)])
    );
    assert!(
        lines[0]["eviction"].is_string(),
        "--cold reports the eviction"
    );
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        mtime,
        "mtime changed"
    );
    assert_eq!(checksum(&file), sum, "contents changed");
}

#[test]
fn human_table_names_every_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = plain_file(dir.path(), 1 << 20);
    let out = bench_ok(&file, "pread", "0.2", &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    for col in [
        "method",
        "IOPS",
        "MB/s",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "CPU%",
        "devReads",
        "errors",
    ] {
        assert!(text.contains(col), "column {col} missing:\n{text}");
    }
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("1 pread")),
        "{text}"
    );
}

#[test]
fn bad_flags_are_rejected_naming_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = plain_file(dir.path(), 1 << 20);
    let f = file.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--depth", "0"], "--depth"),
        (&["--depth", "65537"], "--depth"),
        (&["--depth", "-1"], "--depth"),
        (&["--threads", "0"], "--threads"),
        (&["--threads", "1025"], "--threads"),
        (&["--block-size", "1000"], "--block-size"),
        (&["--block-size", "256"], "--block-size"),
        (&["--duration", "0"], "--duration"),
        (&["--duration", "-2"], "--duration"),
        (&["--range", "0..2M"], "--range"),
        (&["--range", "5..5"], "--range"),
        (&["--method", "warp-drive"], "--method"),
    ];
    for (flags, name) in cases {
        let mut args = vec!["bench", f, "--duration", "0.1"];
        args.extend_from_slice(flags);
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} accepted");
        assert!(
            stderr.contains(name),
            "{flags:?}: message does not name {name}: {stderr}"
        );
        assert!(
            out.stdout.is_empty() || !String::from_utf8_lossy(&out.stdout).contains("\"reads\""),
            "{flags:?} ran"
        );
    }
    let missing = run(&["bench", "/nonexistent/pora-bench-file", "--duration", "0.1"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/pora-bench-file"));
}

#[cfg(target_os = "linux")]
#[test]
fn unavailable_method_is_skipped_visibly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = plain_file(dir.path(), 1 << 20);
    // pread still runs.
    let out = bench_ok(&file, "iocp,pread", "0.2", &["--json"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("SKIP iocp"));
    assert_eq!(json_lines(&out).len(), 1);
    let only = run(&["bench", s(&file), "--method", "iocp", "--duration", "0.2"]);
    assert!(
        !only.status.success(),
        "nothing ran, so the exit status says so"
    );
}

#[cfg(unix)]
#[test]
fn sigterm_prints_the_partial_result_and_exits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = plain_file(dir.path(), 4 << 20);
    let child = common::pora_command()
        .args([
            "bench",
            file.to_str().unwrap(),
            "--method",
            "pread",
            "--duration",
            "60",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    common::fixtures::wait_until_mining(child.id(), std::time::Duration::from_millis(800));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let sent = std::time::Instant::now();
    let out = child.wait_with_output().expect("wait");
    // Generous bound: the point is "not the remaining 59 s", not a speed target.
    assert!(
        sent.elapsed().as_secs() < 10,
        "took {:?} to stop",
        sent.elapsed()
    );
    assert_eq!(out.status.code(), Some(130));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "the partial result is printed");
    assert_eq!(lines[0]["interrupted"], Value::Bool(true));
    assert!(lines[0]["seconds"].as_f64().unwrap() < 30.0);
    assert!(lines[0]["reads"].as_u64().unwrap() > 0);
}

#[test]
fn every_available_method_runs_deep_queues_with_4k_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = plain_file(dir.path(), 8 << 20);
    let methods = [
        "pread",
        "pread-shared",
        "direct",
        "mmap",
        "uring",
        "uring-direct",
        "iocp",
        "iocp-unbuffered",
    ];
    for method in methods {
        let args = [
            "bench",
            file.to_str().unwrap(),
            "--method",
            method,
            "--block-size",
            "4096",
        ];
        let out = run(&[
            &args[..],
            &[
                "--depth",
                "8",
                "--threads",
                "2",
                "--duration",
                "0.2",
                "--json",
            ],
        ]
        .concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains(&format!("SKIP {method}")) {
            let skip_line = stderr
                .lines()
                .find(|l| l.starts_with("SKIP"))
                .unwrap_or_default();
            skip_note!("{skip_line}");
            continue;
        }
        assert!(out.status.success(), "{method}: {stderr}");
        let lines = json_lines(&out);
        assert_eq!(lines.len(), 1, "{method}");
        assert_sane(&lines[0]);
        assert_eq!(lines[0]["method"], method);
        assert_eq!(lines[0]["blockSize"], 4096);
    }
}
