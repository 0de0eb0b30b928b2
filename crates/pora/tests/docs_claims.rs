//! The docs' checkable claims, checked against what they describe: ARCHITECTURE.md's `unsafe`
//! column against each crate's sources, the cancel figures the README, the Go package and
//! `pora.h` state against each other and the workers' longest wait, the `--slots` rhythm the help
//! and docs/mining.md state, and the prefetching gain against BENCHMARKS 31. A doc that drifts
//! from the code fails here, not in a reader's hands. The docs are text, the same on every OS:
//! checked on the Unix legs only (the Windows leg's binary sees the checkout through Wine).
#![cfg(unix)]

mod common;

use common::{ok, pora};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every line of `.rs` code under `dir` (comments cut off) with the keyword `unsafe`, as
/// `file:line: text`.
fn unsafe_lines(dir: &Path, found: &mut Vec<String>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            unsafe_lines(&path, found);
            continue;
        }
        if path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let words = code.split(|c: char| !(c.is_alphanumeric() || c == '_'));
            if words.into_iter().any(|w| w == "unsafe") {
                found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
            }
        }
    }
}

/// Each crate ARCHITECTURE.md's table says has no `unsafe` has none in its sources; each it
/// says has some, has some.
#[test]
fn the_architecture_tables_unsafe_column_matches_the_sources() {
    let doc = read("docs/ARCHITECTURE.md");
    let mut rows = 0;
    for line in doc.lines().filter(|l| l.starts_with("| `crates/")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let name = cells[0].trim_start_matches("| `").trim_end_matches('`');
        let claim = cells.last().unwrap().trim_end_matches(" |").trim();
        let mut found = Vec::new();
        unsafe_lines(&root().join(name).join("src"), &mut found);
        if claim.starts_with("none") {
            assert!(
                found.is_empty(),
                "ARCHITECTURE.md says {name} has no unsafe; it has:\n{}",
                found.join("\n")
            );
        } else {
            assert!(
                !found.is_empty(),
                "ARCHITECTURE.md says {name} has unsafe ({claim}); its sources have none"
            );
        }
        rows += 1;
    }
    assert!(rows >= 10, "the crate table was not found ({rows} rows)");
}

/// The millisecond figures `within about N ms` in the 200 characters after each mention of
/// cancelling in `text`.
fn cancel_figures(text: &str) -> Vec<u64> {
    let mut figures = Vec::new();
    for (at, _) in text.match_indices("ancel") {
        let after: String = text[at..].chars().take(200).collect();
        let Some(i) = after.find("within about ") else {
            continue;
        };
        let digits: String = after[i + 13..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(ms) = digits.parse() {
            figures.push(ms);
        }
    }
    figures
}

/// The README, the Go package and the C header give one cancel figure, and the README's reason
/// for it names the workers' real longest wait (`MAX_WAIT` in worker.rs). The figure itself is
/// measured by the Go package's `TestCancelLatencyOnTheSimulatedDisk`.
#[test]
fn the_cancel_figure_is_one_and_names_the_workers_longest_wait() {
    let mut all = Vec::new();
    for doc in [
        "README.md",
        "bindings/go/mine.go",
        "crates/pora-ffi/include/pora.h",
    ] {
        let figures = cancel_figures(&read(doc));
        assert!(!figures.is_empty(), "{doc} states no cancel figure");
        all.extend(figures.into_iter().map(|f| (doc, f)));
    }
    assert!(
        all.iter().all(|&(_, f)| f == all[0].1),
        "cancel figures differ: {all:?}"
    );
    let worker = read("crates/pora-mine/src/worker.rs");
    let line = worker
        .lines()
        .find(|l| l.starts_with("const MAX_WAIT: Duration = Duration::from_millis("))
        .expect("MAX_WAIT in worker.rs");
    let ms: String = line
        .rsplit('(')
        .next()
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let readme = read("README.md");
    assert!(
        readme.contains(&format!("at least every {ms} ms")),
        "README.md's cancel sentence does not name MAX_WAIT ({ms} ms)"
    );
}

/// `--slots`: slot k, counted from 0, ends k + 1 slot lengths after the first began, in the help
/// and in docs/mining.md alike (`reliability_stalls.rs` checks the rhythm itself).
#[test]
fn the_slots_rhythm_reads_the_same_in_the_help_and_the_docs() {
    let help = ok(&pora(&["mine", "--help"]), "pora mine --help");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("slot k (from 0) ends (k + 1) x --slot after the first began"),
        "{help}"
    );
    let mining = read("docs/mining.md");
    let mining = mining.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        mining.contains("slot k, counted from 0, ends k + 1 slot lengths after the first began"),
        "docs/mining.md's --slots sentence"
    );
}

/// The mmap backend prefetches at push on x86_64 only, and docs/mining.md says so; the gain
/// docs/mining.md and worker.rs give is BENCHMARKS 31.2's pair of medians.
#[test]
fn the_prefetch_claims_name_the_platform_and_the_measured_gain() {
    let mmap = read("crates/pora-io/src/unix/mmap.rs");
    let body = &mmap[mmap.find("fn prefetch(").expect("mmap.rs's prefetch")..];
    let body = &body[..body.find("\n}\n").unwrap()];
    assert!(body.contains("#[cfg(target_arch = \"x86_64\")]"), "{body}");
    let mining = read("docs/mining.md");
    let mining = mining.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        mining.contains(
            "on x86_64 the mmap backend prefetches each read's cache line as it is pushed"
        ),
        "docs/mining.md's prefetch sentence"
    );
    // The medians as BENCHMARKS 31.2 measured them (thousandths), rounded half up to the
    // hundredths the docs give: 1.050 -> 1.05 with `--method mmap`, 1.075 -> 1.08 by default.
    let benchmarks = read("docs/BENCHMARKS.md");
    let row = benchmarks
        .lines()
        .find(|l| l.starts_with("| 8628cb0 → this change |"))
        .expect("BENCHMARKS 31.2's row against the commit before");
    let bold: Vec<u32> = row
        .split("**")
        .skip(1)
        .step_by(2)
        .map(|m| m.replace('.', "").parse().expect("a median in thousandths"))
        .collect();
    let [mmap_median, default_median] = bold[..] else {
        panic!("two bold medians in {row}");
    };
    let hundredths = |thousandths: u32| {
        let h = (thousandths + 5) / 10;
        format!("{}.{:02}", h / 100, h % 100)
    };
    let (mmap_median, default_median) = (hundredths(mmap_median), hundredths(default_median));
    assert_eq!(
        (mmap_median.as_str(), default_median.as_str()),
        ("1.05", "1.08")
    );
    // Both give the gain as a range of whole percents and the medians.
    let percent = |m: &str| (m.replace('.', "").parse::<u32>().unwrap() - 100).to_string();
    let (low, high) = (percent(&mmap_median), percent(&default_median));
    let sentence = format!(
        "a further {low}-{high}%: medians {mmap_median} with `--method mmap` and {default_median} by default against the commit before, 31.2"
    );
    assert!(mining.contains(&sentence), "docs/mining.md: {sentence}");
    let worker = read("crates/pora-mine/src/worker.rs")
        .replace("///", " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let claim = format!(
        "({low}–{high}% more nonces/s on a cached shard than one push per batch: medians {mmap_median} and {default_median}, docs/BENCHMARKS.md 31.2)"
    );
    assert!(worker.contains(&claim), "worker.rs: {claim}");
}
