//! `pora tune` groups `--file` as `pora mine` does: each `--file` one shard, its files together.
//! Seen from outside: the same files and flags fail the same way in both commands, and the
//! older positional form cannot be mixed with `--file`.

mod common;

use common::{create_small, pora, s, stderr};
use std::process::Output;

const RANDAO: &str = "0x2222222222222222222222222222222222222222222222222222222222222222";

/// The error line after the command's name (`pora tune: error: X` -> `X`).
fn error_of(out: &Output, command: &str) -> String {
    assert!(
        !out.status.success(),
        "{command} succeeded: {}",
        stderr(out)
    );
    let text = stderr(out);
    let prefix = format!("pora {command}: error: ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in: {text}"))
        .to_string()
}

#[test]
fn tune_reads_file_groups_as_mine_does() {
    let dir = tempfile::tempdir().unwrap();
    let (s0, s1) = (
        create_small(dir.path(), 0, 7),
        create_small(dir.path(), 1, 7),
    );
    let mine = |files: &[&str]| {
        let args = [&["mine"], files, &["--randao", RANDAO]].concat();
        error_of(&pora(&args), "mine")
    };
    // The shortest budget: a tune that wrongly starts ends within seconds.
    let tune = |files: &[&str]| {
        let args = [&["tune"], files, &["--budget", "5"]].concat();
        error_of(&pora(&args), "tune")
    };
    // `--file A B`: one shard of both files, which two 16-KV shards are not with 16 KVs.
    let one_group = ["--file", s(&s0), s(&s1), "--kv-entries-bits", "4"];
    let e = tune(&one_group);
    assert!(e.starts_with("--file group 1 (shard files)"), "{e}");
    assert_eq!(e, mine(&one_group));
    // `--file A --file A`: two shards, the same one twice.
    let twice = ["--file", s(&s0), "--file", s(&s0)];
    let e = tune(&twice);
    assert!(e.contains("--file groups 1 and 2 both hold shard 0"), "{e}");
    assert_eq!(e, mine(&twice));
}

#[test]
fn tune_takes_positional_files_or_file_never_both_and_needs_one() {
    let dir = tempfile::tempdir().unwrap();
    let (s0, s1) = (
        create_small(dir.path(), 0, 7),
        create_small(dir.path(), 1, 7),
    );
    let mixed = pora(&["tune", s(&s0), "--file", s(&s1)]);
    assert!(!mixed.status.success());
    let text = stderr(&mixed);
    assert!(text.contains("cannot be used with '--file"), "{text}");
    // The older positional form alone still parses: the refusal is the budget's.
    let older = pora(&["tune", s(&s0), "--budget", "4"]);
    let e = error_of(&older, "tune");
    assert!(e.starts_with("--budget 4"), "{e}");
    let none = pora(&["tune"]);
    assert!(!none.status.success());
    let text = stderr(&none);
    assert!(text.contains("--file <FILE>"), "{text}");
}
