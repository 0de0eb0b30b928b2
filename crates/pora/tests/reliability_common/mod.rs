//! Helpers shared by the `reliability_*` tests: running the `pora` binary (optionally
//! as an unprivileged uid, with default signal dispositions), creating shards, a fingerprint of a
//! file's bytes and mtime, running a child with a time limit while its output goes to files, and
//! SKIP lines that show despite libtest's output capture. Builds on `common` (the helpers of every
//! CLI test), which each `reliability_*` test declares before this module.
#![allow(dead_code)]

use serde_json::Value;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// The uid/gid the read-only tests drop to when run as root (`nobody` on Debian and most others).
pub const UNPRIVILEGED_ID: u32 = 65534;

/// About one nonce in 64 is valid (hash1 <= 2^250).
pub const EASY_DIFF: &str = "0x0400000000000000000000000000000000000000000000000000000000000000";

/// How the reliability tests end a `pora mine`: every nonce valid at [`EASY_DIFF`] reported, as
/// JSON, so there are found nonces to check against an intact copy.
pub const FIND_ALL_EASY: [&str; 5] = ["--find", "all", "--required-diff", EASY_DIFF, "--json"];

/// The reliability tests' small pool: 2 workers of 4 reads each, so a few held or failing reads
/// reach every worker and a slot's counts stay small enough to check.
pub const SMALL_POOL: [&str; 4] = ["--threads", "2", "--depth", "4"];

/// `pora tune SHARD` kept short: a 5 s budget, pread only, at most 2 threads.
pub fn quick_tune(shard: &str) -> [&str; 8] {
    [
        "tune",
        shard,
        "--budget",
        "5",
        "--method",
        "pread",
        "--max-threads",
        "2",
    ]
}

pub fn pora_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pora"))
}

/// `pora` with SIGINT/SIGTERM at their default dispositions in the child: a test harness started
/// from a background shell job inherits SIGINT ignored, which would make interrupt tests lie.
pub fn pora() -> Command {
    let mut cmd = Command::new(pora_bin());
    default_signals(&mut cmd);
    cmd
}

pub fn default_signals(cmd: &mut Command) {
    // SAFETY: between fork and exec only async-signal-safe calls (signal) are made.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// Makes `cmd` run as uid/gid [`UNPRIVILEGED_ID`] with no supplementary groups (caller is root).
pub fn drop_privileges(cmd: &mut Command) {
    // SAFETY: between fork and exec only async-signal-safe system calls are made, and a failure
    // is returned as an error, which makes spawn fail instead of running as root.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(UNPRIVILEGED_ID) != 0
                || libc::setuid(UNPRIVILEGED_ID) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn run(args: &[&str]) -> Output {
    pora().args(args).output().expect("run pora")
}

pub use crate::common::s;

/// `pora create DIR/NAME --shard 0 --kv-entries-bits BITS --seed SEED` (random fill).
pub fn create(dir: &Path, name: &str, kv_entries_bits: u32, seed: u64) -> PathBuf {
    let path = dir.join(name);
    let out = run(&[
        "create",
        s(&path),
        "--shard",
        "0",
        "--kv-entries-bits",
        &kv_entries_bits.to_string(),
        "--seed",
        &seed.to_string(),
        "--quiet",
    ]);
    assert!(
        out.status.success(),
        "create: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

/// A file's content hash, length and modification time.
#[derive(Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub content_hash: u64,
    pub len: u64,
    pub modified: SystemTime,
}

pub fn fingerprint(path: &Path) -> Fingerprint {
    let mut file = std::fs::File::open(path).expect("open for checksum");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf).expect("read for checksum");
        if n == 0 {
            break;
        }
        buf[..n].hash(&mut hasher);
        len += n as u64;
    }
    Fingerprint {
        content_hash: hasher.finish(),
        len,
        modified: file.metadata().unwrap().modified().unwrap(),
    }
}

/// A child whose stdout and stderr go to files (no pipe can fill up and stall it).
pub struct Running {
    pub child: Child,
    pub started: Instant,
    out: PathBuf,
    err: PathBuf,
}

/// What a finished child left.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// From the start (or from the `since` given to `finish_since`) to the exit.
    pub took: Duration,
}

impl Finished {
    pub fn json_lines(&self) -> Vec<Value> {
        json_lines(&self.stdout)
    }
    /// Not killed by a signal (SIGBUS, SIGSEGV, SIGABRT from a panic=abort, ...).
    pub fn assert_no_signal(&self, what: &str) {
        assert_eq!(
            self.status.signal(),
            None,
            "{what}: killed by a signal; stderr: {}",
            self.stderr
        );
        assert!(
            !self.stderr.contains("panicked"),
            "{what} panicked: {}",
            self.stderr
        );
    }
}

/// Spawns `cmd` with its output into `dir/<tag>.out` and `dir/<tag>.err`.
pub fn spawn_logged(mut cmd: Command, dir: &Path, tag: &str) -> Running {
    let out = dir.join(format!("{tag}.out"));
    let err = dir.join(format!("{tag}.err"));
    let child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("spawn pora");
    Running {
        child,
        started: Instant::now(),
        out,
        err,
    }
}

impl Running {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Still running (has not exited yet)?
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Waits until the child's stderr shows `text`; fails the test after `limit` or if the child
    /// ends first.
    pub fn wait_for_stderr(&mut self, text: &str, limit: Duration) {
        let until = Instant::now() + limit;
        loop {
            let err = std::fs::read_to_string(&self.err).unwrap_or_default();
            if err.contains(text) {
                return;
            }
            assert!(
                Instant::now() < until && self.is_running(),
                "{text:?} not on stderr within {limit:?}: {err}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill with a pid of our own live (not yet reaped) child and a valid signal.
        assert_eq!(unsafe { libc::kill(self.pid(), sig) }, 0, "kill");
    }

    /// Waits at most `limit` (then kills the child and fails the test).
    pub fn finish(self, limit: Duration) -> Finished {
        let since = self.started;
        self.finish_since(since, limit)
    }

    /// Waits at most `limit` after `since`, measuring `took` from `since`.
    pub fn finish_since(mut self, since: Instant, limit: Duration) -> Finished {
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if since.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "still running {:?} after the limit; stderr so far: {}",
                    since.elapsed(),
                    std::fs::read_to_string(&self.err).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let took = since.elapsed();
        Finished {
            status,
            stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.err).unwrap_or_default(),
            took,
        }
    }
}

pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

/// `pora hash` of one nonce on `file`: (hash1, valid under `required_diff`).
pub fn hash_nonce(file: &Path, randao: &str, nonce: u64, required_diff: &str) -> (String, bool) {
    let out = run(&[
        "hash",
        "--file",
        s(file),
        "--randao",
        randao,
        "--nonce",
        &nonce.to_string(),
        "--required-diff",
        required_diff,
        "--json",
    ]);
    assert!(
        out.status.success(),
        "pora hash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("hash JSON");
    (
        v["hash1"].as_str().expect("hash1").to_string(),
        v["valid"].as_bool().expect("valid"),
    )
}

/// Checks every nonce a `pora mine --json` line reports (at most `max` of them) against
/// `pora hash` on an intact copy: same hash1, and valid.
pub fn assert_found_are_valid(line: &Value, intact: &Path, required_diff: &str, max: usize) {
    let randao = line["randao"].as_str().expect("randao");
    for f in line["found"].as_array().expect("found").iter().take(max) {
        let nonce = f["nonce"].as_u64().expect("nonce");
        let (hash1, valid) = hash_nonce(intact, randao, nonce, required_diff);
        assert_eq!(
            f["hash1"].as_str(),
            Some(hash1.as_str()),
            "nonce {nonce}: reported hash1 differs from the intact file's"
        );
        assert!(
            valid,
            "nonce {nonce} reported but not valid on the intact file"
        );
    }
}

/// The address `pora serve` (spawned by [`spawn_logged`] with tag `tag`) says it listens on,
/// waited for at most 30 s.
pub fn served_address(served: &mut Running, dir: &Path, tag: &str) -> String {
    let err_path = dir.join(format!("{tag}.err"));
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&err_path).unwrap_or_default();
        if let Some(rest) = text.split("listening on http://").nth(1) {
            return rest
                .split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches('/')
                .to_string();
        }
        assert!(
            Instant::now() < until && served.is_running(),
            "serve did not start: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
