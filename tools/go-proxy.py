#!/usr/bin/env python3
"""tools/go-proxy.py: writes a Go module, as staged by tools/dist.sh (its files with their
libraries), in the Go module proxy's own layout (https://go.dev/ref/mod#goproxy-protocol), so a
consumer needs only `require <module> v<version>` with GOPROXY=file://<out> (or the tree served
over HTTPS as a GOPROXY, or a proxy that caches it):

  <out>/<escaped module path>/@v/list            the version, one per line
  <out>/<escaped module path>/@v/<version>.info  {"Version": ..., "Time": ...} (RFC 3339, UTC)
  <out>/<escaped module path>/@v/<version>.mod   the module's go.mod
  <out>/<escaped module path>/@v/<version>.zip   the module zip (https://go.dev/ref/mod#zip-files)
  <out>/GOSUM.txt                                the two go.sum lines of that version (h1: hashes)

The zip follows Go's rules for module zips: every file under "<module>@<version>/", files only (no
directory entries), regular files only (no links), no file of a nested module (a directory with a
go.mod) or of vendor/ directories below the root, paths that are valid and unique when folded to
lower case, at most 500 MiB uncompressed and go.mod at most 16 MiB. Entries are sorted, dated
SOURCE_DATE_EPOCH's time and compressed with a fixed level: the same staged tree gives the same
bytes. GOSUM.txt's h1: lines are Go's dirhash.Hash1 of the zip's files and of go.mod, so a consumer
that writes them into its go.sum has the downloaded zip checked against the release's own hashes.

Usage: tools/go-proxy.py STAGED_MODULE_DIR MODULE_PATH VERSION OUT_DIR  (VERSION like v0.1.0)
Fails (exit 1, "go-proxy.py: FAIL: ...") on a tree that breaks a rule, naming the file.
"""
import base64
import hashlib
import json
import os
import re
import sys
import time
import zipfile

MAX_ZIP_BYTES = 500 << 20
MAX_GO_MOD_BYTES = 16 << 20


def fail(msg):
    print(f"go-proxy.py: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def escape_path(path):
    """The module path as the proxy protocol escapes it: an upper-case letter is '!' + lower."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), path)


def module_files(root):
    """The module's files, relative, sorted, by Go's rules (see the module doc)."""
    files = []
    for d, dirs, names in os.walk(root):
        rel_dir = os.path.relpath(d, root)
        if rel_dir != "." and (os.path.exists(os.path.join(d, "go.mod")) or os.path.basename(d) == "vendor"):
            dirs[:] = []
            continue
        dirs.sort()
        for n in sorted(names):
            full = os.path.join(d, n)
            rel = os.path.normpath(os.path.join(rel_dir, n)).replace(os.sep, "/")
            if os.path.islink(full) or not os.path.isfile(full):
                fail(f"{rel}: not a regular file (a module zip holds regular files only)")
            if not re.fullmatch(r"[A-Za-z0-9._~+\-/]+", rel) or any(p in ("", ".", "..") for p in rel.split("/")):
                fail(f"{rel}: not a valid file path in a module zip")
            files.append(rel)
    folded = {}
    for rel in files:
        if rel.lower() in folded:
            fail(f"{rel} and {folded[rel.lower()]} are the same path folded to lower case")
        folded[rel.lower()] = rel
    if "go.mod" not in files:
        fail(f"{root} has no go.mod")
    return sorted(files)


def hash1(named_contents):
    """Go's dirhash.Hash1: SHA-256 over the sorted lines "<sha256 hex>  <name>\\n"."""
    summary = hashlib.sha256()
    for name, data in sorted(named_contents):
        summary.update(f"{hashlib.sha256(data).hexdigest()}  {name}\n".encode())
    return "h1:" + base64.b64encode(summary.digest()).decode()


def main():
    if len(sys.argv) != 5:
        fail("usage: tools/go-proxy.py STAGED_MODULE_DIR MODULE_PATH VERSION OUT_DIR")
    root, module, version, out = sys.argv[1:]
    if not re.fullmatch(r"v\d+\.\d+\.\d+(-[0-9A-Za-z.\-]+)?", version):
        fail(f"version {version!r} is not a semantic version like v0.1.0")
    major = int(version[1:].split(".")[0])
    if major >= 2 and not module.endswith(f"/v{major}"):
        fail(f"{module} {version}: a v{major} module's path must end in /v{major}")
    files = module_files(root)
    prefix = f"{module}@{version}/"
    contents, total = [], 0
    for rel in files:
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
        total += len(data)
        contents.append((prefix + rel, data))
    if total > MAX_ZIP_BYTES:
        fail(f"the module's files are {total} bytes, over the module zip limit of {MAX_ZIP_BYTES}")
    with open(os.path.join(root, "go.mod"), "rb") as f:
        go_mod = f.read()
    if len(go_mod) > MAX_GO_MOD_BYTES:
        fail(f"go.mod is {len(go_mod)} bytes, over {MAX_GO_MOD_BYTES}")
    declared = re.search(rb"^module\s+(\S+)", go_mod, re.M)
    if not declared or declared.group(1).decode().strip('"') != module:
        fail(f"go.mod declares {declared.group(1).decode() if declared else 'no module'}, not {module}")

    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    vdir = os.path.join(out, escape_path(module), "@v")
    os.makedirs(vdir, exist_ok=True)
    date = max(time.gmtime(epoch)[:6], (1980, 1, 1, 0, 0, 0))
    zip_path = os.path.join(vdir, f"{version}.zip")
    with zipfile.ZipFile(zip_path, "w") as z:
        for name, data in contents:
            info = zipfile.ZipInfo(name, date_time=date)
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    with open(os.path.join(vdir, f"{version}.mod"), "wb") as f:
        f.write(go_mod)
    with open(os.path.join(vdir, f"{version}.info"), "w") as f:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
        json.dump({"Version": version, "Time": stamp}, f)
        f.write("\n")
    with open(os.path.join(vdir, "list"), "w") as f:
        f.write(version + "\n")
    with open(os.path.join(out, "GOSUM.txt"), "w") as f:
        f.write(f"{module} {version} {hash1(contents)}\n")
        f.write(f"{module} {version}/go.mod {hash1([('go.mod', go_mod)])}\n")
    print(f"go-proxy.py: {module} {version}: {len(files)} files, {total} bytes -> {zip_path} ({os.path.getsize(zip_path)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
