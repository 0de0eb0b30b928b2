#!/usr/bin/env python3
"""Writes THIRD-PARTY-LICENSES.txt for one release archive (called by tools/dist.sh).

Lists every third-party crate statically linked into pora and libpora_ffi for one target: the
normal (not dev, not build) dependencies of the given packages, proc-macros left out (they run in
the compiler and are not linked), as Cargo.lock resolves them. Each crate gets its name, version,
declared licence and the text of the licence files in its source directory (LICENSE*, LICENCE*,
COPYING*, NOTICE*, and the manifest's `license-file`).

The crate set comes from `cargo tree -e normal`, which resolves features as a build of those
packages does; `cargo metadata`'s resolve unifies features with the dev-dependencies (the tests
turn on pora-io's `sim`, which pulls in crates the release build never links). Licence, source
directory and the workspace members come from `cargo metadata`.

The output is deterministic: sorted by crate name and version, no paths, no dates.

Usage: third_party_licenses.py --target TRIPLE --package pora --package pora-ffi [--out FILE]
Standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import textwrap

LICENSE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE)", re.IGNORECASE)
RULE = "=" * 78


def fail(message):
    print(f"third_party_licenses.py: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def run(cmd, cwd):
    try:
        done = subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.PIPE, text=True)
    except (OSError, subprocess.CalledProcessError) as err:
        fail(f"`{' '.join(cmd)}` failed: {err}")
    return done.stdout


def version_key(version):
    """Sorts 1.10.0 after 1.9.0; pre-release and build suffixes sort as text."""
    core, _, rest = version.partition("-")
    parts = [int(p) if p.isdigit() else 0 for p in core.split("+")[0].split(".")]
    return (parts, rest)


def linked_crates(root, target, packages):
    """(name, version) of every crate in the normal dependency graph, proc-macros left out."""
    cmd = ["cargo", "tree", "--locked", "--target", target, "-e", "normal,no-proc-macro",
           "--prefix", "none", "--format", "{p}"]
    for p in packages:
        cmd += ["-p", p]
    found = set()
    for line in run(cmd, root).splitlines():
        fields = line.split()
        if len(fields) < 2 or not fields[1].startswith("v"):
            continue
        found.add((fields[0], fields[1][1:]))
    if not found:
        fail(f"cargo tree listed no crates for {' '.join(packages)} on {target}")
    return found


def read_text(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", errors="replace")
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", "")
    return text.rstrip() + "\n"


def licence_files(package):
    """(file name, text) of the crate's licence files, sorted by name: those at the top of its
    source, else those in its sub-folders (a vendored C or assembly part, e.g. sha3-asm's
    cryptogams/LICENSE), plus the manifest's `license-file`."""
    src = os.path.dirname(package["manifest_path"])
    names = {}
    for depth in (0, 1, 2):
        for folder, dirs, files in os.walk(src):
            dirs.sort()
            rel = os.path.relpath(folder, src)
            level = 0 if rel == "." else rel.count(os.sep) + 1
            if level > depth:
                dirs.clear()
                continue
            if level < depth:
                continue
            for entry in sorted(files):
                if LICENSE_FILE.match(entry):
                    name = entry if level == 0 else rel.replace(os.sep, "/") + "/" + entry
                    names[name] = os.path.join(folder, entry)
        if names:
            break
    declared = package.get("license_file")
    if declared:
        path = os.path.normpath(os.path.join(src, declared))
        if os.path.isfile(path):
            names.setdefault(declared.replace(os.sep, "/"), path)
    return [(name, read_text(names[name])) for name in sorted(names)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="target triple, e.g. x86_64-unknown-linux-musl")
    parser.add_argument("--package", action="append", required=True, help="workspace package (repeat)")
    parser.add_argument("--manifest-dir", default=".", help="workspace root (default: .)")
    parser.add_argument("--out", help="output file (default: stdout)")
    args = parser.parse_args()

    root = args.manifest_dir
    meta = json.loads(run(["cargo", "metadata", "--format-version", "1", "--locked",
                           "--filter-platform", args.target], root))
    members = set(meta["workspace_members"])
    by_key = {}
    own = []
    for p in meta["packages"]:
        if p["id"] in members:
            own.append(p["name"])
        else:
            by_key[(p["name"], p["version"])] = p

    pora_version = next((p["version"] for p in meta["packages"]
                         if p["id"] in members and p["name"] == args.package[0]), None)
    if pora_version is None:
        fail(f"package {args.package[0]} is not a workspace member")

    third = []
    for key in linked_crates(root, args.target, args.package):
        if key[0] in own and key not in by_key:
            continue
        if key not in by_key:
            fail(f"cargo tree lists {key[0]} {key[1]} but cargo metadata does not know it")
        third.append(by_key[key])
    third.sort(key=lambda p: (p["name"], version_key(p["version"])))

    if "musl" in args.target:
        runtime = ("and, from the toolchain's self-contained musl objects, musl libc (MIT) and LLVM "
                   "libunwind (Apache-2.0 WITH LLVM-exception).")
    elif "windows-gnu" in args.target:
        runtime = ("and, from the MinGW-w64 toolchain, the mingw-w64 C runtime start-up objects and "
                   "libgcc's unwinder (GPL-3.0 WITH GCC-exception-3.1, the runtime library exception).")
    else:
        runtime = ""
    paragraphs = [
        f"pora's own crates ({', '.join(sorted(own))}) are licensed MIT OR Apache-2.0: "
        "LICENSE-MIT and LICENSE-APACHE.",
        f"{' and '.join(args.package)} statically link the {len(third)} crates below: the normal "
        "dependencies for this target as Cargo.lock resolves them (proc-macros, build and dev "
        "dependencies are not linked and not listed). Each entry gives the crate's declared "
        "licence and the licence files found in its published source.",
        "They also link the Rust standard library (MIT OR Apache-2.0; its own notices, with the "
        "crates it is built from, are in COPYRIGHT-rust-std.html, copied from the Rust toolchain)"
        + (" " + runtime if runtime else "."),
    ]
    title = f"Third-party licences: pora {pora_version}, {args.target}"
    out = [title, "=" * len(title), ""]
    for para in paragraphs:
        out += [textwrap.fill(para, width=78, break_on_hyphens=False), ""]
    out += ["Summary", "-------"]
    width = max(len(f"{p['name']} {p['version']}") for p in third)
    for p in third:
        out.append(f"{p['name'] + ' ' + p['version']:<{width}}  {p.get('license') or '(none declared)'}")
    out.append("")

    missing = []
    for p in third:
        out += [RULE, f"{p['name']} {p['version']}", f"License: {p.get('license') or '(none declared)'}"]
        if p.get("authors"):
            out.append(f"Authors: {', '.join(p['authors'])}")
        if p.get("repository"):
            out.append(f"Repository: {p['repository']}")
        out.append(RULE)
        files = licence_files(p)
        if not files:
            missing.append(f"{p['name']} {p['version']}")
            out += ["(the crate's published source holds no licence file: it is licensed under its",
                    "declared licence above, whose standard text is in this archive's LICENSE-MIT",
                    "or LICENSE-APACHE where it is MIT or Apache-2.0, with its authors as the",
                    "copyright holders)", ""]
        for name, text in files:
            out += [f"--- {name} ---", "", text]
    text = "\n".join(out).rstrip() + "\n"

    if missing:
        print(f"third_party_licenses.py: {args.target}: no licence file in {', '.join(missing)} "
              "(declared licence listed instead)", file=sys.stderr)
    if args.out:
        with open(args.out, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
