//! The crate reads top to bottom: every `crate::` and `super::` path in `src/` names a module of
//! the same layer or one below (src/lib.rs lists the layers). An import upward would start a
//! circle again (kernel → vector field → NTT → kernel was one), so it fails here, naming the file,
//! the line and both layers. A new file in `src/` fails too until it is given a layer below.

use std::collections::BTreeMap;
use std::path::Path;

/// Each source file of `src/` and its layer, bottom first. One line a file.
const LAYERS: &[(&str, u32)] = &[
    // 0, the base: the crate root's constants, errors, the encode key, the reference path.
    ("lib", 0),
    ("error", 0),
    ("key", 0),
    ("reference", 0),
    // 1, field arithmetic on 4×64 limbs.
    ("field", 1),
    ("arith", 1),
    ("adx", 1),
    // 2, the lane operations: eight elements per vector.
    ("lanes", 2),
    ("ifma", 2),
    ("avx512f", 2),
    // 3, the NTT.
    ("ntt", 3),
    ("ntt_lanes", 3),
    ("ntt_ifma", 3),
    ("ntt_avx512f", 3),
    // 4, the Poseidon permutation.
    ("poseidon", 4),
    ("poseidon_lanes", 4),
    ("poseidon_ifma", 4),
    ("poseidon_avx512f", 4),
    // 5, the kernels: which implementation runs, and the dispatch to it.
    ("kernel", 5),
    // 6, the mask.
    ("mask", 6),
];

/// The layer of `crate::$v` in the lane macros: `$v` is the vector module that expands them
/// (`ifma` or `avx512f`).
const VECTOR_MODULE_LAYER: u32 = 2;

/// The source with `//` comments (and so doc comments) removed: a doc link to a module above is
/// no import.
fn code_of(source: &str) -> String {
    source
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first path segment of every name a `crate::` path brings in, with the 1-based line it
/// starts on: `crate::ntt::omega` gives `ntt`, `crate::{reference, WORDS_PER_KV}` gives both.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let line = code[..at].matches('\n').count() + 1;
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => found.extend(group_items(group).map(|item| (line, first_segment(item)))),
            None => found.push((line, first_segment(rest))),
        }
    }
    found
}

/// The items of a `{...}` group (`group` starts after the `{`), split at its own commas: nested
/// groups (`a::{b, c}`) stay inside their item.
fn group_items(group: &str) -> impl Iterator<Item = &str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.into_iter().map(str::trim).filter(|i| !i.is_empty())
}

fn first_segment(path: &str) -> String {
    path.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
        .collect()
}

/// What a root-level name means: a module (its own layer), an item lib.rs re-exports from a
/// module (that module's layer), a `#[macro_export]` macro (the layer of the file defining it),
/// or one of lib.rs's own items (layer 0).
struct Resolver {
    layers: BTreeMap<&'static str, u32>,
    reexports: BTreeMap<String, String>,
    exported_macros: BTreeMap<String, String>,
    root_items: Vec<String>,
}

impl Resolver {
    fn layer_of(&self, name: &str) -> Option<u32> {
        if name == "$v" {
            return Some(VECTOR_MODULE_LAYER);
        }
        if let Some(&layer) = self.layers.get(name) {
            return Some(layer);
        }
        if let Some(module) = self.reexports.get(name) {
            return self.layers.get(module.as_str()).copied();
        }
        if let Some(file) = self.exported_macros.get(name) {
            return self.layers.get(file.as_str()).copied();
        }
        self.root_items.iter().any(|i| i == name).then_some(0)
    }
}

fn sources() -> BTreeMap<String, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    std::fs::read_dir(&src)
        .expect("read src/")
        .map(|entry| entry.expect("a src/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| {
            let module = path.file_stem().unwrap().to_string_lossy().into_owned();
            (
                module,
                std::fs::read_to_string(&path).expect("read a source file"),
            )
        })
        .collect()
}

fn resolver(sources: &BTreeMap<String, String>) -> Resolver {
    let lib = code_of(&sources["lib"]);
    let mut reexports = BTreeMap::new();
    let mut root_items = Vec::new();
    // Statements, not lines: rustfmt may wrap a long `pub use` group.
    for statement in lib.split(';') {
        let item_at = |keyword: &str| {
            statement
                .find(keyword)
                .map(|i| &statement[i + keyword.len()..])
        };
        if let Some(path) = item_at("pub use ") {
            let (module, names) = path.split_once("::").expect("`pub use module::...`");
            match names.strip_prefix('{') {
                Some(group) => {
                    for name in group_items(group) {
                        reexports.insert(first_segment(name), module.to_string());
                    }
                }
                None => {
                    reexports.insert(first_segment(names), module.to_string());
                }
            }
        } else if let Some(item) = item_at("pub const ") {
            root_items.push(first_segment(item));
        }
    }
    let mut exported_macros = BTreeMap::new();
    for (file, source) in sources {
        let code = code_of(source);
        let mut lines = code.lines().map(str::trim);
        while let Some(line) = lines.next() {
            if line == "#[macro_export]" {
                let definition = lines.next().unwrap_or("");
                let name = definition
                    .strip_prefix("macro_rules! ")
                    .expect("#[macro_export] before a macro_rules!");
                exported_macros.insert(first_segment(name), file.clone());
            }
        }
    }
    Resolver {
        layers: LAYERS.iter().copied().collect(),
        reexports,
        exported_macros,
        root_items,
    }
}

/// Every upward (or unresolvable) path in `sources`, one message each.
fn violations(sources: &BTreeMap<String, String>) -> Vec<String> {
    let resolver = resolver(sources);
    let mut found = Vec::new();
    for (file, source) in sources {
        let Some(&own) = resolver.layers.get(file.as_str()) else {
            found.push(format!(
                "src/{file}.rs has no layer in tests/layers.rs's LAYERS"
            ));
            continue;
        };
        let code = code_of(source);
        for (line, name) in crate_paths(&code) {
            match resolver.layer_of(&name) {
                Some(layer) if layer <= own => {}
                Some(layer) => found.push(format!(
                    "src/{file}.rs:{line}: `crate::{name}` is layer {layer}, above {file}'s {own}"
                )),
                None => found.push(format!(
                    "src/{file}.rs:{line}: `crate::{name}` is no module or root item of the table"
                )),
            }
        }
        // Every file is flat in src/, so `super::` inside a file's nested module (its tests, a
        // macro's module) is that file itself; at a file's top level it would be the crate root,
        // which this table does not resolve, so it must not appear there.
        for (i, text) in code.lines().enumerate() {
            if text.starts_with("use super::") || text.starts_with("pub use super::") {
                found.push(format!(
                    "src/{file}.rs:{}: `super::` at the top level (name `crate::` instead)",
                    i + 1
                ));
            }
        }
    }
    found
}

#[test]
fn every_import_points_to_the_same_layer_or_below() {
    let sources = sources();
    for (module, _) in LAYERS {
        assert!(
            sources.contains_key(*module),
            "LAYERS names src/{module}.rs, which is gone"
        );
    }
    let found = violations(&sources);
    assert!(
        found.is_empty(),
        "imports against the layers:\n{}",
        found.join("\n")
    );
}

/// The check itself: an import from above, one inside a nested, wrapped group, a re-exported
/// name (with lib.rs's `pub use` wrapped as rustfmt may wrap it) and a file with no layer are
/// each reported; imports from below and from the same layer are not.
#[test]
fn the_check_reports_what_it_should() {
    let mut sources = sources();
    assert!(violations(&sources).is_empty());
    let lib = sources["lib"].replace(
        "pub use kernel::{Kernel, ARITH_ENV};",
        "pub use kernel::{\n    Kernel,\n    ARITH_ENV,\n};",
    );
    assert_ne!(
        lib, sources["lib"],
        "lib.rs re-exports Kernel as the test expects"
    );
    sources.insert("lib".into(), lib);
    let ntt = sources["ntt"].clone();
    let upward = [
        "use crate::kernel::Kernel;",
        "use crate::{",
        "    field::{Fr as F, MODULUS},",
        "    mask::mask,",
        "};",
        "fn f() -> crate::Kernel { todo!() }",
    ];
    sources.insert("ntt".into(), format!("{ntt}\n{}\n", upward.join("\n")));
    sources.insert("new_file".into(), "use crate::field::Fr;\n".into());
    let found = violations(&sources);
    let at = |i: usize| ntt.lines().count() + 2 + i;
    assert_eq!(
        found,
        [
            "src/new_file.rs has no layer in tests/layers.rs's LAYERS".to_string(),
            format!(
                "src/ntt.rs:{}: `crate::kernel` is layer 5, above ntt's 3",
                at(0)
            ),
            format!(
                "src/ntt.rs:{}: `crate::mask` is layer 6, above ntt's 3",
                at(1)
            ),
            format!(
                "src/ntt.rs:{}: `crate::Kernel` is layer 5, above ntt's 3",
                at(5)
            ),
        ]
    );
}
