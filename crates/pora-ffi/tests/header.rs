//! Keeps `include/pora.h` in step with the Rust source: regenerates it with cbindgen and fails on
//! any difference. After changing the ABI, run `PORA_BLESS=1 cargo test -p pora-ffi --test header`
//! and commit the new header.

use std::path::Path;

#[test]
fn committed_header_matches_the_source() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).unwrap();
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not read crates/pora-ffi/src");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).unwrap();
    let path = crate_dir.join("include/pora.h");
    if std::env::var_os("PORA_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "the end".to_string(), |n| format!("line {}", n + 1));
        panic!(
            "crates/pora-ffi/include/pora.h is out of date with the Rust source (first difference at {line}).\n\
             Regenerate it with `PORA_BLESS=1 cargo test -p pora-ffi --test header` and commit it."
        );
    }
}
