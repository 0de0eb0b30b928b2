//! `pora mine --help` says what `pora mine` does: `--demo` (the README's first command) is
//! listed, and the `--threads` / `--depth` defaults it states for a shard cached in memory and a
//! cold one are the knobs a run on such a shard reports.

mod common;

use common::{ok, pora, s};
use serde_json::Value;
use std::path::Path;

const RANDAO: &str = "0x2222222222222222222222222222222222222222222222222222222222222222";

/// `pora mine --help`, its whitespace collapsed (clap wraps to the terminal).
fn help() -> String {
    let text = ok(&pora(&["mine", "--help"]), "pora mine --help");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `[default: ...]` text of `flag`'s help.
fn default_of(help: &str, flag: &str) -> String {
    let at = help
        .find(&format!("{flag} <"))
        .unwrap_or_else(|| panic!("{flag} missing from pora mine --help: {help}"));
    let rest = &help[at..];
    let start = rest.find("[default:").expect("a [default: ...]") + "[default:".len();
    let end = start + rest[start..].find(']').expect("closing ]");
    rest[start..end].trim().to_string()
}

/// Mines 64 nonces of `file` with `--method pread` and returns the (threads, depth) it reports.
fn pread_knobs(file: &Path) -> (u64, u64) {
    let args = [
        "mine",
        "--file",
        s(file),
        "--randao",
        RANDAO,
        "--nonces",
        "0..64",
        "--json",
        "--method",
        "pread",
    ];
    let out = ok(&pora(&args), "pora mine --method pread");
    let report: Value = common::mine_report(&out, "pora mine --method pread");
    let knob = |k: &str| {
        report[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {report}"))
    };
    (knob("threads"), knob("depth"))
}

fn cpus() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

#[test]
fn demo_is_listed() {
    let help = help();
    assert!(
        help.contains("--demo Create ./pora-demo/shard0.dat"),
        "{help}"
    );
}

/// The help's figures for a synchronous method, read back from a run: CPUs x 256 on a shard just
/// written (in the page cache), max(64, CPUs) x 1 once it is evicted.
#[test]
fn the_defaults_the_help_states_are_the_knobs_a_run_takes() {
    let help = help();
    let threads = default_of(&help, "--threads");
    let depth = default_of(&help, "--depth");
    assert!(
        threads.contains("synchronous ones on a shard cached in memory")
            && threads.contains("max(64, CPUs) for synchronous ones on a cold shard"),
        "{threads}"
    );
    assert!(
        depth.contains("256 for asynchronous methods")
            && depth.contains("and for synchronous ones on a shard cached in memory")
            && depth.contains("1 for synchronous ones on a cold shard"),
        "{depth}"
    );
    // Under the target directory: a real file system, whose pages can be evicted (not tmpfs).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("shard0.dat");
    common::create_random_16mib(&file);
    assert_eq!(pread_knobs(&file), (cpus(), 256), "a shard in memory");
    // Elsewhere the OS may not evict one file: the cold half is Linux's.
    #[cfg(target_os = "linux")]
    {
        evict(&file);
        assert_eq!(pread_knobs(&file), (cpus().max(64), 1), "a cold shard");
    }
}

#[cfg(target_os = "linux")]
fn evict(file: &Path) {
    std::fs::File::open(file).unwrap().sync_all().unwrap();
    let eviction = pora_io::host::page_cache::evict(file).unwrap();
    assert!(eviction.is_verified(), "{}: {eviction:?}", file.display());
}
