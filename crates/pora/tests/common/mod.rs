//! Helpers shared by the CLI tests (every OS): running the `pora` binary (optionally with a
//! `PORA_KECCAK` choice), asserting success or a clean failure, `pora create` of a small random
//! shard, the JSON records `pora mine --json` prints, the es-node vector files, SKIP lines that
//! show despite libtest's output capture, an HTTP client for `pora serve` and the metrics
//! listener, and pora-core's shared test fixtures. Each test file uses a part of it.
#![allow(dead_code)]

/// The fixtures pora-core's tests share with the other crates' (a v1 header, the vector files, an
/// exact positional read).
#[path = "../../../pora-core/tests/fixtures/mod.rs"]
pub mod fixtures;

use pora_core::keccak::KECCAK_KERNEL_ENV;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
#[allow(unused_macros)] // some test files skip nothing
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// The `pora` binary under test, not yet started.
pub fn pora_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pora"))
}

/// `pora args...`, run to the end.
pub fn pora(args: &[&str]) -> Output {
    pora_command()
        .args(args)
        .output()
        .expect("the pora binary runs")
}

/// `pora args...` with `PORA_KECCAK` set to `keccak`, or removed when `None` (so the caller's
/// environment cannot choose the kernel).
pub fn pora_with_keccak(keccak: Option<&str>, args: &[&str]) -> Output {
    let mut command = pora_command();
    command.args(args).env_remove(KECCAK_KERNEL_ENV);
    if let Some(value) = keccak {
        command.env(KECCAK_KERNEL_ENV, value);
    }
    command.output().expect("the pora binary runs")
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that `pora` succeeded and returns its stdout; `what` names the run in the message.
pub fn ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        stderr(out)
    );
    stdout
}

/// Asserts failure with a clean message (no panic) containing every `needle`.
pub fn fails_with(out: &Output, needles: &[&str]) {
    let err = stderr(out);
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {err}"
    );
    assert!(!err.contains("panicked"), "panicked: {err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}: {err}");
    }
}

/// Every line of `text` as JSON (a blank line is not JSON either).
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

/// `pora create FILE --shard SHARD --kv-entries-bits BITS`, to which callers add the fill.
pub fn create_args<'a>(file: &'a str, shard: &'a str, kv_entries_bits: &'a str) -> [&'a str; 6] {
    [
        "create",
        file,
        "--shard",
        shard,
        "--kv-entries-bits",
        kv_entries_bits,
    ]
}

/// `pora create DIR/shardN.dat --shard N --kv-entries-bits 4 --quiet --seed SEED`: 16 random
/// KVs of 128 KiB.
pub fn create_small(dir: &Path, shard: u64, seed: u64) -> PathBuf {
    let path = dir.join(format!("shard{shard}.dat"));
    let shard = shard.to_string();
    let seed = ["--quiet", "--seed", &seed.to_string()];
    let out = pora(&[&create_args(s(&path), &shard, "4")[..], &seed[..]].concat());
    ok(&out, "pora create");
    path
}

/// `pora create FILE --shard 0 --kv-entries-bits 7 --fill random --quiet` (with `PORA_KECCAK`
/// removed, so the caller's environment cannot refuse it): 16 MiB of random KVs, just written,
/// so in the page cache.
pub fn create_random_16mib(file: &Path) {
    let args = [
        &create_args(s(file), "0", "7")[..],
        &["--fill", "random", "--quiet"],
    ]
    .concat();
    ok(&pora_with_keccak(None, &args), "pora create");
}

/// The last JSON record `pora mine --json` printed; `what` names the run in the message.
pub fn mine_report(stdout: &str, what: &str) -> Value {
    let line = stdout.lines().rfind(|l| l.starts_with('{'));
    let line = line.unwrap_or_else(|| panic!("pora mine ({what}) printed no JSON:\n{stdout}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: bad JSON ({e}): {line}"))
}

/// The valid nonces of a `pora mine` record as (nonce, lower-case hash1), sorted.
pub fn found_sorted(report: &Value) -> Vec<(u64, String)> {
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

/// The repository's `testdata/` folder.
pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(name)
}

/// A JSON file from `testdata/`.
pub fn testdata_json(name: &str) -> Value {
    let path = testdata(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `pora mine --json` on `file` that runs until a signal stops it: a random randao, a 60 s
/// slot and every nonce there is (pread, 2 threads).
pub fn endless_mine(file: &str) -> [&str; 13] {
    [
        "mine",
        "--file",
        file,
        "--random-randao",
        "--slot",
        "60",
        "--nonces",
        "0..18446744073709551615",
        "--method",
        "pread",
        "--threads",
        "2",
        "--json",
    ]
}

/// A randao of 32 zero bytes, for runs where any randao will do.
pub const ZERO_RANDAO: &str = "0x0000000000000000000000000000000000000000000000000000000000000000";

/// `pora hash --file FILE --randao RANDAO --nonce NONCE`.
pub fn hash_args<'a>(file: &'a str, randao: &'a str, nonce: &'a str) -> [&'a str; 7] {
    ["hash", "--file", file, "--randao", randao, "--nonce", nonce]
}

/// A vector field that is a string or a number, as text for a command line.
pub fn vector_text(v: &Value, key: &str) -> String {
    match &v[key] {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("{key}: {other}"),
    }
}

/// `pora create --fill sparse --force` of an es-node vector's shard at `path`, then the vector's
/// encoded samples written at their offsets (`4096 + sampleIdx*32 - the shard's first byte`):
/// as far as the vector's nonce samples it, the file es-node read.
pub fn build_vector_shard(path: &Path, v: &Value) {
    use std::io::{Seek, SeekFrom, Write};
    let (shard, eb, kb) = (
        vector_text(v, "shard"),
        vector_text(v, "kvEntriesBits"),
        vector_text(v, "kvSizeBits"),
    );
    let miner = vector_text(v, "miner");
    let sparse = [
        "--kv-size-bits",
        &kb,
        "--miner",
        &miner,
        "--encode-type",
        "3",
        "--fill",
        "sparse",
        "--force",
        "--quiet",
    ];
    let create = [&create_args(s(path), &shard, &eb)[..], &sparse].concat();
    ok(&pora(&create), "pora create");
    let shard_start_byte = v["shard"].as_u64().unwrap()
        << (v["kvEntriesBits"].as_u64().unwrap() + v["kvSizeBits"].as_u64().unwrap());
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    for (idx, sample) in v["sampleIdxs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(v["encodedSamples"].as_array().unwrap())
    {
        let offset = 4096 + idx.as_u64().unwrap() * 32 - shard_start_byte;
        let bytes = pora_core::H256::parse("sample", sample.as_str().unwrap()).unwrap();
        file.seek(SeekFrom::Start(offset)).unwrap();
        file.write_all(&bytes.0).unwrap();
    }
    file.sync_all().unwrap();
}

/// `pora mine --json` of one long slot on `file` that reports every nonce of `0..nonces` valid
/// at `required` for `randao` (2 threads).
pub fn mine_all_args<'a>(
    file: &'a str,
    method: &'a str,
    depth: &'a str,
    nonces: &'a str,
    required: &'a str,
    randao: &'a str,
) -> [&'a str; 22] {
    [
        "mine",
        "--file",
        file,
        "--method",
        method,
        "--threads",
        "2",
        "--depth",
        depth,
        "--nonces",
        nonces,
        "--slots",
        "1",
        "--slot",
        "600",
        "--find",
        "all",
        "--required-diff",
        required,
        "--randao",
        randao,
        "--json",
    ]
}

/// `--difficulty D --interval I --minimum-diff M`: the difficulty parameters an es-node vector
/// was mined with, for `pora hash` and `pora mine`.
pub fn vector_difficulty_args(v: &Value) -> [String; 6] {
    [
        "--difficulty".into(),
        vector_text(v, "difficulty"),
        "--interval".into(),
        vector_text(v, "interval"),
        "--minimum-diff".into(),
        vector_text(v, "minimumDiff"),
    ]
}

/// An HTTP client for `pora serve` and the metrics listener: an error status is an answer, not
/// an error; `timeout` bounds each call.
pub fn http_agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .build()
        .into()
}

/// POSTs `body` to `http://addr/`: (HTTP status, the parsed answer or `null`); status 0 and
/// `{"transport": why}` when no answer came (a closed connection, a timeout).
pub fn post_json(agent: &ureq::Agent, addr: &str, body: &str) -> (u16, Value) {
    match agent
        .post(format!("http://{addr}/"))
        .header("content-type", "application/json")
        .send(body)
    {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let text = r.body_mut().read_to_string().unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        }
        Err(e) => (0, serde_json::json!({ "transport": e.to_string() })),
    }
}

/// The JSON-RPC call `method(params)` with `id`, posted as [`post_json`] does.
pub fn rpc_call(
    agent: &ureq::Agent,
    addr: &str,
    id: u64,
    method: &str,
    params: &Value,
) -> (u16, Value) {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    post_json(agent, addr, &body.to_string())
}

/// The body of `http://addr{path}` (a transport error fails the test).
pub fn http_get(agent: &ureq::Agent, addr: &str, path: &str) -> String {
    agent
        .get(format!("http://{addr}{path}"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap()
}
