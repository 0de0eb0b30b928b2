//! No import circle between the modules of any crate (docs/ARCHITECTURE.md, "Module
//! direction"): the `use` lines of every `crates/*/src` file, read as text, make a graph of
//! which module imports which, and the graph has no cycle. The crate root (`lib.rs`) is left
//! out: it is the crate's shared vocabulary, which every module below it uses, and it declares
//! those modules; so is a module's use of its own ancestors (`uring/submit.rs` of the backend
//! `uring.rs` defines), for the same reason. A module is a file; inline modules
//! (`mod tests { .. }`) count as their file.
//! The one place that names the sysfs mount is checked too: every other reader takes a root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src` (`session/open.rs` -> `session::open`, `lib.rs` and
/// `main.rs` -> the root, `x/mod.rs` -> `x`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The code of a line without its comment, string and char literals (so braces in them do not
/// count).
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                while let Some(s) = chars.next() {
                    match s {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                // A char literal ('{', '\n') or a lifetime ('a): skip only a literal.
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') {
                    let end = rest.find('\'').map_or(0, |i| i + 1);
                    for _ in 0..end.max(2) {
                        chars.next();
                    }
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.next();
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The full paths a use tree names (`a::{b, c::{d, e}}` -> `a::b`, `a::c::d`, `a::c::e`).
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or("").trim();
        return vec![path.trim_end_matches("::*").to_string()];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|p| match p.as_str() {
            "self" => prefix.to_string(),
            _ if prefix.is_empty() => p,
            _ => format!("{prefix}::{p}"),
        })
        .collect()
}

/// The file module a use path leads to from module `at` (the module the `use` sits in), if it
/// is one of `modules` below the root.
fn target(path: &str, at: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut absolute: Vec<String> = match segments.first()? {
        &"crate" => Vec::new(),
        &"self" => at.to_vec(),
        &"super" => at.to_vec(),
        first => {
            // A child module of `at`, else another crate.
            let mut child = at.to_vec();
            child.push(first.to_string());
            if !modules.contains(&child) {
                return None;
            }
            at.to_vec()
        }
    };
    let mut rest = segments.as_slice();
    match rest.first() {
        Some(&"crate") | Some(&"self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first() == Some(&"super") {
        absolute.pop()?;
        rest = &rest[1..];
    }
    absolute.extend(rest.iter().map(|s| s.to_string()));
    // The longest prefix that is a file module.
    (1..=absolute.len())
        .rev()
        .map(|n| absolute[..n].to_vec())
        .find(|m| modules.contains(m))
}

/// Edges module -> modules it imports, for the crate at `src`.
fn import_graph(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.retain(|f| !f.starts_with(src.join("bin")));
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        // Inline modules open at a brace depth: (name, depth inside it).
        let mut inline: Vec<(String, i32)> = Vec::new();
        let mut depth = 0i32;
        let mut statement: Option<String> = None;
        for line in text.lines() {
            let code = code_of(line);
            let trimmed = code.trim();
            if let Some(s) = statement.as_mut() {
                s.push_str(trimmed);
            } else if let Some(rest) = trimmed
                .strip_prefix("use ")
                .or_else(|| trimmed.strip_prefix("pub use "))
                .or_else(|| trimmed.strip_prefix("pub(crate) use "))
                .or_else(|| trimmed.strip_prefix("pub(super) use "))
            {
                statement = Some(rest.to_string());
            }
            if statement.as_ref().is_some_and(|s| s.ends_with(';')) {
                let tree = statement.take().unwrap();
                let mut at = module.clone();
                at.extend(inline.iter().map(|(name, _)| name.clone()));
                for path in expand(tree.trim_end_matches(';')) {
                    // `super` from an inline module resolves in its terms (often to its own
                    // file, no edge); the edge is counted between files.
                    let Some(to) = target(&path, &at, &modules) else {
                        continue;
                    };
                    // Up to an ancestor: its parent is a module's vocabulary, as the root is.
                    let ancestor = to.len() < module.len() && module.starts_with(&to);
                    if !to.is_empty() && !module.is_empty() && to != module && !ancestor {
                        graph.entry(module.clone()).or_default().insert(to);
                    }
                }
            }
            let opens = code.matches('{').count() as i32;
            let closes = code.matches('}').count() as i32;
            if let Some(name) = trimmed
                .strip_prefix("mod ")
                .or_else(|| trimmed.strip_prefix("pub mod "))
                .or_else(|| trimmed.strip_prefix("pub(crate) mod "))
                .and_then(|r| r.strip_suffix('{'))
            {
                inline.push((name.trim().to_string(), depth + 1));
            }
            depth += opens - closes;
            while inline.last().is_some_and(|(_, d)| depth < *d) {
                inline.pop();
            }
        }
    }
    graph
}

/// A cycle of `graph`, if it has one.
fn find_cycle(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<String>> {
    fn visit(
        node: &Vec<String>,
        graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        done: &mut BTreeSet<Vec<String>>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle: Vec<String> = stack[at..].iter().map(|m| m.join("::")).collect();
            cycle.push(node.join("::"));
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut checked = 0;
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let graph = import_graph(&src);
        if let Some(cycle) = find_cycle(&graph) {
            panic!(
                "{}: modules import each other: {}",
                src.display(),
                cycle.join(" -> ")
            );
        }
        checked += usize::from(!graph.is_empty());
    }
    assert!(
        checked >= 5,
        "only {checked} crates with imports between modules"
    );
}

/// The reader finds a circle it is shown, through a multi-line use tree and `super`, and
/// leaves inline test modules' `use super::*` inside their file.
#[test]
fn the_reader_sees_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nuse crate::a::b::X;\n").unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "mod b;\nmod c;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/b.rs"),
        "use super::{\n    c::{Y, Z as W},\n};\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/c.rs"),
        "fn f() {}\nmod t {\n    use super::super::b::X;\n}\n",
    )
    .unwrap();
    let graph = import_graph(src);
    let module = |m: &str| m.split("::").map(String::from).collect::<Vec<_>>();
    assert_eq!(
        graph.get(&module("a::b")),
        Some(&BTreeSet::from([module("a::c")]))
    );
    assert_eq!(
        graph.get(&module("a::c")),
        Some(&BTreeSet::from([module("a::b")]))
    );
    assert!(!graph.contains_key(&module("a")), "{graph:?}");
    let cycle = find_cycle(&graph).expect("a::b and a::c import each other");
    assert_eq!(cycle.len(), 3, "{cycle:?}");
    // Without c's import, no circle.
    std::fs::write(src.join("a/c.rs"), "fn f() {}\n").unwrap();
    assert_eq!(find_cycle(&import_graph(src)), None);
}

/// Only `pora_io::host` names where sysfs is mounted (`Roots`); every device fact is read
/// through a root, so tests point the readers at canned trees and a session reads each once.
#[test]
fn only_the_host_roots_name_the_sysfs_mount() {
    let mut naming = Vec::new();
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let reads_block_sysfs = text.lines().any(|l| {
                let code = l.split("//").next().unwrap_or("");
                code.contains("\"/sys\"")
                    || code.contains("\"/sys/dev/block")
                    || code.contains("\"/sys/class/block")
            });
            if reads_block_sysfs {
                naming.push(file.strip_prefix(crates_dir()).unwrap().to_path_buf());
            }
        }
    }
    assert_eq!(naming, [PathBuf::from("pora-io/src/host/mod.rs")]);
}
