//! `pora serve` end to end: the real binary on 127.0.0.1 (ephemeral port), driven with a real
//! HTTP client (ureq) and raw TCP for malformed traffic. Every method (results equal to
//! `pora hash --json` / `pora mine --json`), batches, each error code, 64 concurrent clients,
//! cancel and busy, size and time limits, the bearer token, SIGTERM during a slot, the shared
//! es-node vector, `promtool check metrics`, a real Prometheus server scraping the service, and
//! `pora mine --metrics-listen`.

#[macro_use]
mod common;

use common::{http_agent, http_get};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const RANDAO: &str = "0x2222222222222222222222222222222222222222222222222222222222222222";
/// 2^246: about one nonce in 1024 is valid.
const REQUIRED: &str = "0x0040000000000000000000000000000000000000000000000000000000000000";
/// Fields of a slot record that measure time rather than what was mined.
const TIMING_FIELDS: [&str; 6] = [
    "elapsedSec",
    "endLateMs",
    "samplesPerSec",
    "ioWaitFraction",
    "cpuBusyFraction",
    "bottleneck",
];
/// The same knobs for `pora serve` and `pora mine`, so that their records can be compared.
const KNOBS: [&str; 6] = ["--method", "pread", "--threads", "2", "--depth", "4"];
/// One read in flight: the slowest slot, for tests that need one to run a while.
const ONE_CHAIN: [&str; 6] = ["--method", "pread", "--threads", "1", "--depth", "1"];
/// The top-level keys of `pora_status`: the session record (`pora_mine::records::SessionRecord`,
/// also the C ABI's open answer), flattened between what the service adds.
const STATUS_KEYS: [&str; 10] = [
    "version",
    "uptimeSec",
    "shards",
    "choice",
    "choices",
    "randomChecks",
    "notes",
    "slotRunning",
    "slotsStarted",
    "lastSlot",
];
/// The keys of a session record's `choice` (and of each of its `choices`).
const CHOICE_KEYS: [&str; 9] = [
    "method", "threads", "depth", "profile", "why", "device", "shards", "io", "steering",
];
/// The keys of a session record's shard.
const SHARD_KEYS: [&str; 5] = ["shard", "files", "miner", "kvEntriesBits", "kvSizeBits"];

fn pora(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pora"))
        .args(args)
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `parts`, one after the other: flags built from constants and per-test values.
fn flags<'a>(parts: &[&[&'a str]]) -> Vec<&'a str> {
    parts.concat()
}

/// `base` with the fields of `extra` added (or replaced).
fn with(base: &Value, extra: Value) -> Value {
    let mut merged = base.clone();
    let extra = extra.as_object().unwrap().clone();
    merged.as_object_mut().unwrap().extend(extra);
    merged
}

/// The keys of the object `v`, sorted.
fn keys(v: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

/// `expected`, sorted: to compare with [`keys`].
fn sorted<'a>(expected: &[&'a str]) -> Vec<&'a str> {
    let mut expected = expected.to_vec();
    expected.sort_unstable();
    expected
}

/// `pora create path --shard shard --kv-entries-bits bits --quiet`, with `extra` flags.
fn pora_create(path: &Path, shard: u64, kv_entries_bits: &str, extra: &[&str]) {
    let shard = shard.to_string();
    let bits = ["--kv-entries-bits", kv_entries_bits];
    let out = pora(&flags(&[
        &["create", s(path), "--shard", &shard, "--quiet"],
        &bits,
        extra,
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A small random shard (16 KVs of 128 KiB).
fn create(dir: &Path, shard: u64) -> PathBuf {
    let path = dir.join(format!("shard{shard}.dat"));
    pora_create(&path, shard, "4", &["--seed", "7"]);
    path
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn agent() -> ureq::Agent {
    http_agent(Duration::from_secs(60))
}

/// A running `pora serve`, killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
    agent: ureq::Agent,
    token: Option<String>,
}

impl Served {
    /// `pora serve --file path` with `args` besides.
    fn file(path: &Path, args: &[&str]) -> Served {
        Served::start(&flags(&[&["--file", s(path)], args]))
    }

    fn start(args: &[&str]) -> Served {
        let args = flags(&[&["serve"], args, &["--listen", "127.0.0.1:0"]]);
        let (child, addr) = spawn_listening(&args, "pora serve: listening on http://");
        Served {
            child,
            addr,
            agent: agent(),
            token: None,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// POSTs `body` to `/`: (HTTP status, body).
    fn post(&self, body: &str) -> (u16, String) {
        let mut request = self
            .agent
            .post(self.url("/"))
            .header("content-type", "application/json");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let mut response = request.send(body).unwrap();
        let status = response.status().as_u16();
        (status, response.body_mut().read_to_string().unwrap())
    }

    fn get(&self, path: &str) -> (u16, String) {
        let mut request = self.agent.get(self.url(path));
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let mut response = request.call().unwrap();
        let status = response.status().as_u16();
        (status, response.body_mut().read_to_string().unwrap())
    }

    /// The response object of one call (HTTP 200 asserted).
    fn call(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (status, text) = self.post(&body.to_string());
        assert_eq!(status, 200, "{text}");
        serde_json::from_str(&text).unwrap()
    }

    fn result(&self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params);
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    fn metrics(&self) -> String {
        let (status, text) = self.get("/metrics");
        assert_eq!(status, 200);
        text
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `pora args` and waits for its stderr line starting with `prefix`: the child and the
/// address that line names.
fn spawn_listening(args: &[&str], prefix: &'static str) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pora"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = listening_addr(&mut child, prefix);
    (child, addr)
}

/// Reads `child`'s stderr until the line starting with `prefix` and parses the address after
/// it; the rest of stderr keeps being drained so the child never blocks on a full pipe.
fn listening_addr(child: &mut Child, prefix: &'static str) -> SocketAddr {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = String::new();
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix(prefix) {
                let addr = rest.trim_end_matches("/metrics").to_string();
                let _ = tx.send(Ok(addr));
                sent = true;
            } else if !sent {
                seen.push_str(&line);
                seen.push('\n');
            }
        }
        if !sent {
            let _ = tx.send(Err(seen));
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(addr)) => addr.parse().unwrap(),
        Ok(Err(stderr)) => panic!("no `{prefix}` line; stderr:\n{stderr}"),
        Err(_) => panic!("no `{prefix}` line within 60 s"),
    }
}

/// The value of the sample line `series` (name and labels exactly) in a /metrics text.
fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{series} not in /metrics:\n{text}"))
        .parse()
        .unwrap()
}

/// `promtool check metrics` on `text`; prints SKIP when promtool is not installed.
fn promtool_check(text: &str) {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            skip_note!(
                "SKIP: promtool not installed (Debian package `prometheus`); /metrics not linted"
            );
            return;
        }
        Err(e) => panic!("promtool: {e}"),
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
}

/// `pora mine --json` records of one slot.
fn mine_json(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["mine", "--json"];
    all.extend_from_slice(args);
    let out = pora(&all);
    assert!(out.status.success(), "pora mine: {}", stderr(&out));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn without_timings(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            for key in TIMING_FIELDS {
                r.as_object_mut().unwrap().remove(key).expect(key);
            }
            r
        })
        .collect()
}

fn mine_params(start: u64, end: u64, slot_ms: u64) -> Value {
    json!({
        "randao": RANDAO, "nonceStart": start, "nonceEnd": end, "requiredDiff": REQUIRED,
        "find": "all", "slotMs": slot_ms,
    })
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

fn error_field(answer: &Value) -> &str {
    assert_eq!(error_code(answer), -32602, "{answer}");
    let field = answer["error"]["data"]["field"].as_str().unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("`{field}`")),
        "{answer}"
    );
    field
}

#[test]
fn every_method_matches_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let (s0, s1) = (create(dir.path(), 0), create(dir.path(), 1));
    let served = Served::start(&flags(&[&["--file", s(&s0), "--file", s(&s1)], &KNOBS]));

    let status = served.result("pora_status", json!({}));
    assert_eq!(status["shards"].as_array().unwrap().len(), 2);
    assert_eq!(status["shards"][1]["shard"], 1);
    assert_eq!(status["shards"][1]["files"][0], s(&s1));
    let choice = &status["choice"];
    assert_eq!(
        (&choice["method"], &choice["threads"], &choice["depth"]),
        (&json!("pread"), &json!(2), &json!(4))
    );
    assert!(choice["why"].as_str().unwrap().contains("--method pread"));
    assert_eq!(
        status["choices"][0], *choice,
        "one device: its choice is the first"
    );
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(status["lastSlot"], Value::Null);

    // pora_hash: a hex nonce, a named shard, the object `pora hash --json` prints.
    let hash = served.result(
        "pora_hash",
        json!({"randao": RANDAO, "nonce": "0x7", "shard": 1, "requiredDiff": REQUIRED}),
    );
    let out = pora(&[
        "hash",
        "--file",
        s(&s1),
        "--randao",
        RANDAO,
        "--nonce",
        "7",
        "--required-diff",
        REQUIRED,
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(hash, serde_json::from_slice::<Value>(&out.stdout).unwrap());

    // pora_mineSlot: the records of `pora mine --json`, timings aside.
    let slot = served.result("pora_mineSlot", mine_params(0, 4096, 60_000));
    let files = ["--file", s(&s0), "--file", s(&s1)];
    let cli = mine_json(&flags(&[
        &files,
        &[
            "--randao",
            RANDAO,
            "--nonces",
            "0..4096",
            "--required-diff",
            REQUIRED,
        ],
        &["--find", "all", "--slot", "60"],
        &KNOBS,
    ]));
    let served_records = slot["shards"].as_array().unwrap();
    assert_eq!(without_timings(served_records), without_timings(&cli));
    let found: usize = served_records
        .iter()
        .map(|r| r["found"].as_array().unwrap().len())
        .sum();
    assert!(found > 0, "about 8 valid nonces expected: {slot}");

    let status = served.result("pora_status", json!([]));
    assert_eq!(status["lastSlot"], slot);
    assert_eq!(status["slotsStarted"], 1);

    let text = served.metrics();
    for (shard, record) in served_records.iter().enumerate() {
        let series = |name: &str| format!("{name}{{shard=\"{shard}\"}}");
        assert_eq!(
            metric(&text, &series("pora_nonces_tried_total")),
            record["noncesTried"].as_f64().unwrap()
        );
        assert_eq!(
            metric(&text, &series("pora_found_total")),
            record["found"].as_array().unwrap().len() as f64
        );
        let samples = format!("pora_samples_read_total{{method=\"pread\",shard=\"{shard}\"}}");
        assert_eq!(
            metric(&text, &samples),
            record["samplesRead"].as_f64().unwrap()
        );
    }
    assert_eq!(
        metric(&text, "pora_slots_total{outcome=\"found\"}"),
        1.0,
        "{text}"
    );
    assert_eq!(metric(&text, "pora_slot_duration_seconds_count"), 1.0);
    assert_eq!(metric(&text, "pora_build_info{version=\"0.1.0\"}"), 1.0);
    promtool_check(&text);
}

/// `pora_status` is the session record with the service's fields around it: a key added to or
/// dropped from either shows here, so the two doors (this and the C ABI's open) stay alike.
#[test]
fn status_keys_are_the_session_record_and_the_service_fields() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::file(&create(dir.path(), 0), &ONE_CHAIN);
    served.result("pora_mineSlot", mine_params(0, 16, 10_000));
    let status = served.result("pora_status", json!({}));
    assert_eq!(keys(&status), sorted(&STATUS_KEYS), "{status}");
    assert_eq!(keys(&status["choice"]), sorted(&CHOICE_KEYS), "{status}");
    assert_eq!(
        keys(&status["choices"][0]),
        sorted(&CHOICE_KEYS),
        "{status}"
    );
    assert_eq!(keys(&status["shards"][0]), sorted(&SHARD_KEYS), "{status}");
    let last = &status["lastSlot"];
    assert_eq!(
        keys(last),
        sorted(&["shards", "ioErrorMessages"]),
        "{status}"
    );
}

#[test]
fn protocol_errors_have_their_codes() {
    let dir = tempfile::tempdir().unwrap();
    let s0 = create(dir.path(), 0);
    let served = Served::file(&s0, &[]);
    let parse = |text: &str| -> Value { serde_json::from_str(text).unwrap() };

    let (status, text) = served.post("{\"jsonrpc\": \"2.0\", \"method\": ");
    assert_eq!(status, 200);
    assert_eq!(error_code(&parse(&text)), -32700);
    assert_eq!(parse(&text)["id"], Value::Null);

    let answer = parse(&served.post(r#"{"id": 4, "method": "pora_status"}"#).1);
    assert_eq!((error_code(&answer), &answer["id"]), (-32600, &json!(4)));
    assert_eq!(error_code(&parse(&served.post("[]").1)), -32600);
    assert_eq!(error_code(&parse(&served.post("7").1)), -32600);

    let too_many: Vec<Value> = (0..101)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "pora_status"}))
        .collect();
    let answer = parse(&served.post(&Value::Array(too_many).to_string()).1);
    assert_eq!(error_code(&answer), -32600, "one error for the batch");
    assert!(answer["error"]["message"].as_str().unwrap().contains("100"));

    // A batch: answered in order, the notification not at all, each error on its own.
    let batch = json!([
        {"jsonrpc": "2.0", "id": "a", "method": "pora_status"},
        {"jsonrpc": "2.0", "id": 2, "method": "pora_nope"},
        {"jsonrpc": "2.0", "method": "pora_status"},
        {"jsonrpc": "2.0", "id": 3, "method": "pora_hash", "params": {"nonce": 1}},
        42,
        {"jsonrpc": "2.0", "id": 5, "method": "pora_hash", "params": {"randao": RANDAO, "nonce": 1}},
    ]);
    let (status, text) = served.post(&batch.to_string());
    assert_eq!(status, 200);
    let answers = parse(&text);
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), 5, "{text}");
    assert_eq!(answers[0]["id"], "a");
    assert!(answers[0]["result"]["shards"].is_array());
    assert_eq!(
        (error_code(&answers[1]), &answers[1]["id"]),
        (-32601, &json!(2))
    );
    assert_eq!(error_field(&answers[2]), "randao");
    assert_eq!(
        (error_code(&answers[3]), &answers[3]["id"]),
        (-32600, &Value::Null)
    );
    assert_eq!(answers[4]["result"]["nonce"], 1);

    let notifications = json!([{"jsonrpc": "2.0", "method": "pora_status"}]);
    assert_eq!(
        served.post(&notifications.to_string()),
        (204, String::new())
    );

    // -32602 names the field.
    // Each case changes a valid call's params.
    let hash = ("pora_hash", json!({"randao": RANDAO, "nonce": 1}));
    let slot = (
        "pora_mineSlot",
        json!({"randao": RANDAO, "nonceStart": 0, "nonceEnd": 9}),
    );
    let status = ("pora_status", json!({}));
    let cases = [
        (&hash, json!({"randao": "0x12"}), "randao"),
        (&hash, json!({"nonce": -1}), "nonce"),
        (&hash, json!({"shard": 9}), "shard"),
        (&hash, json!({"randomChecks": 3}), "randomChecks"),
        (&hash, json!({"difficulty": 5}), "interval"),
        (&slot, json!({"nonceStart": 5, "nonceEnd": 5}), "nonceEnd"),
        (&slot, json!({"nonceEnd": "0xzz"}), "nonceEnd"),
        (&slot, json!({"find": "most"}), "find"),
        (&slot, json!({"slotMs": 0}), "slotMs"),
        (&slot, json!({"nonce_end": 9}), "nonce_end"),
        (
            &slot,
            json!({"requiredDiff": 1, "difficulty": 1}),
            "requiredDiff",
        ),
        (&status, json!({"verbose": true}), "verbose"),
    ];
    for ((method, valid), change, field) in cases {
        let params = with(valid, change);
        let answer = served.call(method, params.clone());
        assert_eq!(error_field(&answer), field, "{method} {params}: {answer}");
    }
    let answer = served.call("pora_status", json!([1, 2]));
    assert_eq!(error_field(&answer), "params", "{answer}");

    assert_eq!(served.get("/nope").0, 404);
    assert_eq!(served.get("/").0, 405);
    assert_eq!(served.get("/healthz"), (200, "ok\n".to_string()));
    // The failures above left the service as it was.
    assert_eq!(served.result("pora_status", Value::Null)["slotsStarted"], 0);
    let text = served.metrics();
    assert!(
        metric(
            &text,
            "pora_rpc_requests_total{method=\"unknown\",outcome=\"error\"}"
        ) >= 1.0
    );
}

#[test]
fn read_errors_name_the_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let s0 = create(dir.path(), 0);
    let served = Served::file(&s0, &["--method", "pread", "--on-io-error", "stop"]);
    // Another writer cuts the file to its header: every sample read now comes back short.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&s0)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let answers = [
        served.call("pora_hash", json!({"randao": RANDAO, "nonce": 3})),
        served.call("pora_mineSlot", mine_params(0, 64, 10_000)),
    ];
    for answer in answers {
        assert_eq!(error_code(&answer), -32001, "{answer}");
        let data = &answer["error"]["data"];
        assert_eq!(data["path"], s(&s0), "{answer}");
        assert!(data["offset"].as_u64().unwrap() >= 4096, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(s(&s0)) && message.contains("offset"),
            "{message}"
        );
    }
    assert_eq!(
        metric(&served.metrics(), "pora_slots_total{outcome=\"error\"}"),
        1.0
    );
}

#[test]
fn concurrent_clients_busy_and_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let s0 = create(dir.path(), 0);
    let served = Served::file(&s0, &ONE_CHAIN);
    // 64 clients at once, each on its own connection, each answered with its own nonce.
    let barrier = std::sync::Barrier::new(64);
    std::thread::scope(|scope| {
        for nonce in 0..64u64 {
            let (served, barrier) = (&served, &barrier);
            scope.spawn(move || {
                let agent = agent();
                let body = json!({"jsonrpc": "2.0", "id": nonce, "method": "pora_hash",
                    "params": {"randao": RANDAO, "nonce": nonce}});
                barrier.wait();
                let mut response = agent.post(served.url("/")).send(body.to_string()).unwrap();
                assert_eq!(response.status().as_u16(), 200);
                let answer: Value =
                    serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
                assert_eq!(answer["id"], nonce);
                assert_eq!(answer["result"]["nonce"], nonce);
            });
        }
    });

    // A slot far longer than the test: busy for a second slot, ended by pora_cancel.
    std::thread::scope(|scope| {
        let long = scope.spawn(|| served.call("pora_mineSlot", mine_params(0, 1 << 40, 60_000)));
        wait_for_running_slot(&served);
        let second = served.call("pora_mineSlot", mine_params(0, 8, 1000));
        assert_eq!(error_code(&second), -32000, "{second}");
        assert_eq!(
            served.result("pora_cancel", json!({})),
            json!({"cancelled": true})
        );
        let answer = long.join().unwrap();
        let record = &answer["result"]["shards"][0];
        assert_eq!(record["interrupted"], true, "{answer}");
        let tried = record["noncesTried"].as_u64().unwrap();
        assert!(tried > 0 && tried < 1 << 40, "{answer}");
    });
    assert_eq!(
        served.result("pora_cancel", json!({})),
        json!({"cancelled": false})
    );
    let text = served.metrics();
    assert_eq!(
        metric(&text, "pora_slots_total{outcome=\"cancelled\"}"),
        1.0
    );
    assert_eq!(metric(&text, "pora_slot_running"), 0.0);
    // The service mines again after a cancelled slot.
    let slot = served.result("pora_mineSlot", mine_params(0, 16, 10_000));
    assert_eq!(slot["shards"][0]["noncesTried"], 16);
}

fn wait_for_running_slot(served: &Served) {
    let give_up = Instant::now() + Duration::from_secs(30);
    while served.result("pora_status", json!({}))["slotRunning"] != true {
        assert!(Instant::now() < give_up, "the slot never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Raw HTTP on a fresh connection: sends `bytes`, returns what the server sent until it closed
/// the connection (or `None` if it kept it open for 10 s).
fn raw_exchange(addr: SocketAddr, bytes: &[u8]) -> Option<String> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(bytes).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(String::from_utf8_lossy(&got).into_owned())
            }
            Err(_) => return None,
        }
    }
}

#[test]
fn oversized_malformed_and_slow_clients_are_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let s0 = create(dir.path(), 0);
    let served = Served::file(&s0, &["--io-timeout", "0.5", "--max-body-bytes", "4096"]);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"pora_status","pad":"{}"}}"#,
        "x".repeat(5000)
    );
    let (status, text) = served.post(&big);
    assert_eq!(status, 413);
    assert_eq!(error_code(&serde_json::from_str(&text).unwrap()), -32600);
    // Declared too large: refused before the body is sent.
    let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n";
    let answer = raw_exchange(served.addr, head.as_bytes()).expect("closed");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // Chunked, no length: cut at the limit.
    let chunk = "x".repeat(5000);
    let chunked = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len()
    );
    let answer = raw_exchange(served.addr, chunked.as_bytes()).expect("closed");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // Not HTTP at all.
    let answer = raw_exchange(served.addr, b"\x16\x03\x01 hello?\r\n\r\n").expect("closed");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 400"),
        "{answer}"
    );
    // Half a request head, an idle connection, a body that never comes: all closed by the
    // server after --io-timeout (well before raw_exchange's 10 s).
    let stalled: [&[u8]; 3] = [
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Le",
        b"",
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    ];
    for bytes in stalled {
        let answer = raw_exchange(served.addr, bytes);
        let answer =
            answer.unwrap_or_else(|| panic!("connection sending {bytes:?} still open after 10 s"));
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "{answer}"
        );
    }
    // None of this affected the next client.
    assert_eq!(
        served.result("pora_status", json!({}))["slotRunning"],
        false
    );
}

#[test]
fn bearer_token_and_remote_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let s0 = create(dir.path(), 0);
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let mut served = Served::file(&s0, &["--auth-token-file", s(&token_file)]);
    let status = r#"{"jsonrpc":"2.0","id":1,"method":"pora_status"}"#;
    assert_eq!(served.post(status).0, 401);
    assert_eq!(served.get("/metrics").0, 401);
    served.token = Some("s3cret-tokem".into());
    assert_eq!(served.post(status).0, 401);
    served.token = Some("s3cret-token".into());
    assert_eq!(served.post(status).0, 200);
    assert_eq!(served.get("/metrics").0, 200);

    let out = pora(&["serve", "--file", s(&s0), "--listen", "0.0.0.0:0"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--allow-remote"), "{}", stderr(&out));
    let out = pora(&[
        "serve",
        "--file",
        s(&s0),
        "--listen",
        "0.0.0.0:0",
        "--allow-remote",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--auth-token-file"),
        "{}",
        stderr(&out)
    );
    std::fs::write(&token_file, " \n").unwrap();
    let out = pora(&[
        "serve",
        "--file",
        s(&s0),
        "--auth-token-file",
        s(&token_file),
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("empty"), "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn sigterm_during_a_slot_answers_partial_counts_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let s0 = create(dir.path(), 0);
    let mut served = Served::file(&s0, &ONE_CHAIN);
    std::thread::scope(|scope| {
        let served = &mut served;
        let url = served.url("/");
        let long = scope.spawn(move || {
            let body = json!({"jsonrpc": "2.0", "id": 9, "method": "pora_mineSlot",
                "params": mine_params(0, 1 << 40, 60_000)});
            let mut response = agent().post(&url).send(body.to_string()).unwrap();
            let text = response.body_mut().read_to_string().unwrap();
            serde_json::from_str::<Value>(&text).unwrap()
        });
        wait_for_running_slot(served);
        // `slotRunning` turns true before the worker's first read: wait until the slot reads,
        // so "partial counts" has something to count (a signal 0.5 ms in once answered
        // noncesTried 0 on a loaded CI machine). The slot itself runs for 60 s.
        common::fixtures::wait_until_mining(served.child.id(), Duration::from_millis(300));
        let signalled = Instant::now();
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(
            unsafe { libc::kill(served.child.id() as libc::pid_t, libc::SIGTERM) },
            0
        );
        let answer = long.join().unwrap();
        assert_eq!(answer["id"], 9);
        let record = &answer["result"]["shards"][0];
        assert_eq!(record["interrupted"], true, "{answer}");
        assert!(record["noncesTried"].as_u64().unwrap() > 0, "{answer}");
        let status = loop {
            if let Some(status) = served.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                signalled.elapsed() < Duration::from_secs(2),
                "pora serve still running 2 s after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(0));
    });
}

/// A sparse es-node file for shard `v["shard"]` holding the vector's two samples.
fn vector_file(dir: &Path, v: &Value) -> PathBuf {
    use std::io::{Seek, SeekFrom};
    let shard = v["shard"].as_u64().unwrap();
    let path = dir.join(format!("vector{shard}.dat"));
    let miner = ["--miner", v["miner"].as_str().unwrap()];
    let sparse = ["--encode-type", "3", "--fill", "sparse"];
    let bits = v["kvEntriesBits"].to_string();
    pora_create(&path, shard, &bits, &flags(&[&miner, &sparse]));
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let shard_bytes = 1u64 << (v["kvEntriesBits"].as_u64().unwrap() + 17);
    for (idx, sample) in v["sampleIdxs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(v["encodedSamples"].as_array().unwrap())
    {
        let offset = 4096 + idx.as_u64().unwrap() * 32 - shard * shard_bytes;
        f.seek(SeekFrom::Start(offset)).unwrap();
        let hex = sample.as_str().unwrap();
        let bytes: Vec<u8> = (2..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        f.write_all(&bytes).unwrap();
    }
    path
}

#[test]
fn shared_vector_mines_like_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/esnode-sample.json"),
    )
    .unwrap();
    let vectors: Value = serde_json::from_str(&text).unwrap();
    let v = &vectors["vectors"][0];
    let path = vector_file(dir.path(), v);
    let served = Served::file(&path, &ONE_CHAIN);
    let nonce = v["nonce"].as_u64().unwrap();
    let difficulty = json!({
        "difficulty": v["difficulty"], "interval": v["interval"], "minimumDiff": v["minimumDiff"],
    });
    let hash_params = json!({"randao": v["randao"], "nonce": nonce});
    let hash = served.result("pora_hash", with(&hash_params, difficulty.clone()));
    assert_eq!(hash["hash1"], v["hash1"]);
    assert_eq!(hash["requiredDiff"], v["requiredDiff"]);
    assert_eq!(hash["valid"], v["hash1MeetsRequiredDiff"]);

    let slot_params = json!({
        "randao": v["randao"], "nonceStart": format!("{:#x}", nonce), "nonceEnd": nonce + 1,
        "find": "first", "slotMs": 60_000,
    });
    let slot = served.result("pora_mineSlot", with(&slot_params, difficulty));
    let record = &slot["shards"][0];
    assert_eq!(record["found"][0]["hash1"], v["hash1"], "{slot}");
    let nonces = format!("{nonce}..{}", nonce + 1);
    let text_of = |key: &str| v[key].as_str().unwrap();
    let interval = v["interval"].to_string();
    let cli = mine_json(&flags(&[
        &ONE_CHAIN,
        &["--file", s(&path), "--randao", text_of("randao")],
        &["--nonces", &nonces, "--slot", "60"],
        &[
            "--difficulty",
            text_of("difficulty"),
            "--interval",
            &interval,
        ],
        &["--minimum-diff", text_of("minimumDiff")],
    ]));
    assert_eq!(
        without_timings(slot["shards"].as_array().unwrap()),
        without_timings(&cli)
    );
}

/// A port nobody listens on now (the OS's choice for port 0).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the Prometheus server when the test ends, whatever happens.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn prometheus_scrapes_the_slot_counts() {
    let prometheus = Path::new("/usr/bin/prometheus");
    if !prometheus.exists() {
        skip_note!("SKIP: /usr/bin/prometheus not installed (Debian package `prometheus`)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s0 = create(dir.path(), 0);
    let served = Served::file(&s0, &["--method", "pread"]);
    let slot = served.result("pora_mineSlot", mine_params(0, 3000, 60_000));
    let tried = slot["shards"][0]["noncesTried"].as_u64().unwrap();
    assert_eq!(tried, 3000);

    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: pora\n    static_configs:\n      - targets: ['{}']\n",
            served.addr
        ),
    )
    .unwrap();
    let web = format!("127.0.0.1:{}", free_port());
    let _server = KillOnDrop(
        Command::new(prometheus)
            .arg(format!("--config.file={}", s(&config)))
            .arg(format!(
                "--storage.tsdb.path={}",
                s(&dir.path().join("tsdb"))
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let query =
        format!("http://{web}/api/v1/query?query=pora_nonces_tried_total%7Bshard%3D%220%22%7D");
    let agent = agent();
    let give_up = Instant::now() + Duration::from_secs(40);
    let value = loop {
        let answer = agent
            .get(&query)
            .call()
            .ok()
            .and_then(|mut r| r.body_mut().read_to_string().ok())
            .and_then(|t| serde_json::from_str::<Value>(&t).ok());
        let value = answer.as_ref().and_then(|a| {
            a["data"]["result"][0]["value"][1]
                .as_str()
                .map(String::from)
        });
        if let Some(value) = value {
            break value;
        }
        assert!(
            Instant::now() < give_up,
            "Prometheus never returned the series: {answer:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(value, tried.to_string());
}

#[test]
fn mine_metrics_listen_exports_while_mining() {
    let dir = tempfile::tempdir().unwrap();
    let s0 = create(dir.path(), 0);
    let args = flags(&[
        &["mine", "--file", s(&s0), "--randao", RANDAO, "--json"],
        &ONE_CHAIN,
        &[
            "--nonces",
            "0..1099511627776",
            "--slot",
            "0.3",
            "--slots",
            "8",
        ],
        &["--metrics-listen", "127.0.0.1:0"],
    ]);
    let (mut child, addr) = spawn_listening(&args, "pora mine: metrics on http://");
    let agent = agent();
    let give_up = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let text = http_get(&agent, &addr.to_string(), "/metrics");
        if metric(&text, "pora_slots_total{outcome=\"deadline\"}") >= 1.0 {
            break text;
        }
        assert!(Instant::now() < give_up, "no slot recorded:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(metric(&text, "pora_nonces_tried_total{shard=\"0\"}") > 0.0);
    assert!(
        metric(
            &text,
            "pora_sample_read_latency_seconds_count{method=\"pread\"}"
        ) >= 1.0
    );
    promtool_check(&text);
    // Only the metrics: no RPC on this listener.
    let (status, _) = {
        let mut r = agent.post(format!("http://{addr}/")).send("{}").unwrap();
        (r.status().as_u16(), r.body_mut().read_to_string())
    };
    assert_eq!(status, 404);
    assert!(child.wait().unwrap().success());
}

/// With `auto` (no `--method`), every slot's answer names how `auto` decided (mining.md) and the
/// metrics carry the page cache's share, the hit ratio, the forecast and the switch counters of
/// the shard's device.
#[test]
fn auto_answers_its_decision_and_exports_the_steering_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::file(&create(dir.path(), 0), &[]);
    let answer = served.result("pora_mineSlot", mine_params(0, 64, 10_000));
    let shard = &answer["shards"][0];
    let steering = &shard["steering"];
    assert!(steering.is_object(), "{answer}");
    assert!(
        shard["why"].as_str().unwrap().starts_with("auto"),
        "{answer}"
    );
    let candidates = steering["candidates"].as_array().unwrap();
    assert!(
        candidates.iter().any(|c| c["method"] == shard["method"]),
        "{answer}"
    );
    let device = shard["device"].as_str().unwrap_or("unknown").to_string();
    let (code, text) = served.get("/metrics");
    assert_eq!(code, 200);
    let labelled = |name: &str| format!("{name}{{device=\"{device}\"}}");
    let cached = metric(&text, &labelled("pora_page_cache_cached_ratio"));
    assert!((0.0..=1.0).contains(&cached), "{text}");
    // Prometheus and JSON print floats with different digits: equal to 1e-9.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(
        close(cached, steering["cachedFraction"].as_f64().unwrap()),
        "{text}"
    );
    assert_eq!(metric(&text, &labelled("pora_method_switches_total")), 0.0);
    assert_eq!(metric(&text, &labelled("pora_exploring_slots_total")), 0.0);
    let slot = metric(
        &text,
        &format!("pora_predicted_mining_power_ratio{{device=\"{device}\",horizon=\"slot\"}}"),
    );
    assert!(close(
        slot,
        steering["predictedMiningPower"].as_f64().unwrap()
    ));
    promtool_check(&text);
}
