//! Writing a canned sysfs / procfs tree for tests: pora-io's host tests and pora-measure's
//! `doctor` tests (which include this file by path) describe their machines with it.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

/// `text` at `path`, its directories made first.
pub fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A symlink at `at` to `target`, its directory made first (sysfs's `slaves/` and `dev/block/`).
pub fn link(target: &Path, at: &Path) {
    fs::create_dir_all(at.parent().unwrap()).unwrap();
    symlink(target, at).unwrap();
}
