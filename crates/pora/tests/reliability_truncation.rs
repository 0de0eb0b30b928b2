//! RELIABILITY.md: a shard truncated (to half, or to just its header) or replaced (another file
//! renamed over its path) while `pora mine` runs, for every real access method available here.
//!
//! Truncation must give clear read errors naming the file and offset, never SIGBUS (mmap) or a
//! reported nonce computed from missing bytes; the process must end on time. Replacement: pora
//! keeps reading the files it opened (their inodes stay alive), so the slot goes on over the
//! original data and every nonce it reports is valid on the original.
#![cfg(unix)]

#[macro_use]
mod common;
mod reliability_common;

use reliability_common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// 16 MiB of data: large enough that a slot keeps reading after the change.
const KV_ENTRIES_BITS: u32 = 7;
const SLOT_SEC: f64 = 1.5;
/// Without /proc to see a run mining (not Linux), the change comes this long after the start.
const CHANGE_AFTER: Duration = Duration::from_millis(500);
/// Reported nonces re-checked with `pora hash` per run (each is one process start).
const RECHECKED: usize = 4;

#[derive(Clone, Copy, Debug)]
enum Change {
    TruncateToHalf,
    TruncateToHeader,
    ReplaceByRename,
}

struct Case {
    method: pora_io::Method,
    file: PathBuf,
    replacement: PathBuf,
}

fn mine_command(file: &Path, method: pora_io::Method) -> std::process::Command {
    let mut cmd = pora();
    cmd.args([
        "mine",
        "--file",
        s(file),
        "--method",
        method.name(),
        "--random-randao",
        "--slot",
        &SLOT_SEC.to_string(),
        "--nonces",
        "0..1000000000000",
        "--threads",
        "4",
    ])
    .args(FIND_ALL_EASY);
    cmd
}

/// Runs every available method at once on its own copy of the shard, applies `change` to each
/// copy once every run is mining, and checks the common guarantees; returns each method's result.
fn run_all(change: Change) -> Vec<(pora_io::Method, Finished, PathBuf)> {
    let dir = tempfile::tempdir().unwrap();
    let intact = create(dir.path(), "intact.dat", KV_ENTRIES_BITS, 11);
    let other = create(dir.path(), "other.dat", KV_ENTRIES_BITS, 12);
    let cases: Vec<Case> = pora_io::Method::available_real()
        .into_iter()
        .map(|method| {
            let file = dir.path().join(format!("{}.dat", method.name()));
            let replacement = dir.path().join(format!("{}.new", method.name()));
            std::fs::copy(&intact, &file).unwrap();
            std::fs::copy(&other, &replacement).unwrap();
            Case {
                method,
                file,
                replacement,
            }
        })
        .collect();
    let mut running: Vec<Running> = cases
        .iter()
        .map(|c| spawn_logged(mine_command(&c.file, c.method), dir.path(), c.method.name()))
        .collect();
    for child in &running {
        common::fixtures::wait_until_mining(child.pid() as u32, CHANGE_AFTER);
    }
    let header_len = 4096;
    let full_len = std::fs::metadata(&intact).unwrap().len();
    for (case, child) in cases.iter().zip(running.iter_mut()) {
        assert!(
            child.is_running(),
            "{}: ended before the file changed",
            case.method
        );
        match change {
            Change::TruncateToHalf => truncate(&case.file, full_len / 2),
            Change::TruncateToHeader => truncate(&case.file, header_len),
            Change::ReplaceByRename => std::fs::rename(&case.replacement, &case.file).unwrap(),
        }
    }
    let limit = Duration::from_secs_f64(SLOT_SEC + 4.0);
    let results: Vec<(pora_io::Method, Finished, PathBuf)> = cases
        .iter()
        .zip(running)
        .map(|(c, r)| (c.method, r.finish(limit), c.file.clone()))
        .collect();
    for (method, done, _) in &results {
        let what = format!("{method} after {change:?}");
        done.assert_no_signal(&what);
        assert!(done.status.success(), "{what}: {}", done.stderr);
        let lines = done.json_lines();
        assert_eq!(lines.len(), 1, "{what}: {}", done.stdout);
        assert!(lines[0]["noncesTried"].as_u64().unwrap() > 0, "{what}");
        assert_found_are_valid(&lines[0], &intact, EASY_DIFF, RECHECKED);
    }
    // Keep the directory (and `intact`) alive until every check above ran.
    drop(dir);
    results
}

fn truncate(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// The read errors are counted and shown with the file's path and an offset.
fn assert_truncation_reported(method: pora_io::Method, done: &Finished, file: &Path) {
    let line = &done.json_lines()[0];
    assert!(
        line["ioErrors"].as_u64().unwrap() > 0,
        "{method}: no read errors counted after truncation: {line}"
    );
    let shown = done
        .stderr
        .lines()
        .find(|l| l.contains("read error"))
        .unwrap_or_else(|| panic!("{method}: no read error shown: {}", done.stderr));
    assert!(
        shown.contains(s(file)) && shown.contains("offset"),
        "{method}: the error names neither file nor offset: {shown}"
    );
}

#[test]
fn truncated_to_half_while_mining_gives_read_errors_not_sigbus() {
    for (method, done, file) in run_all(Change::TruncateToHalf) {
        assert_truncation_reported(method, &done, &file);
        skip_note!(
            "truncate-half {method}: {}",
            summary(&done.json_lines()[0], &done)
        );
    }
}

#[test]
fn truncated_to_the_header_while_mining_gives_read_errors_not_sigbus() {
    for (method, done, file) in run_all(Change::TruncateToHeader) {
        assert_truncation_reported(method, &done, &file);
        skip_note!(
            "truncate-header {method}: {}",
            summary(&done.json_lines()[0], &done)
        );
    }
}

#[test]
fn replaced_while_mining_keeps_reading_the_opened_file() {
    for (method, done, _) in run_all(Change::ReplaceByRename) {
        let line = &done.json_lines()[0];
        assert_eq!(
            line["ioErrors"], 0,
            "{method}: the opened file is intact, so no read errors: {line}"
        );
        assert!(
            !line["found"].as_array().unwrap().is_empty(),
            "{method}: about 1 nonce in 64 is valid, so some must be found: {line}"
        );
        skip_note!("replace {method}: {}", summary(line, &done));
    }
}

fn summary(line: &serde_json::Value, done: &Finished) -> String {
    format!(
        "exit {:?} after {:.2} s, tried {}, dropped on read errors {}, found {}",
        done.status.code(),
        done.took.as_secs_f64(),
        line["noncesTried"],
        line["ioErrors"],
        line["found"].as_array().map_or(0, Vec::len)
    )
}
