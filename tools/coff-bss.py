#!/usr/bin/env python3
"""tools/coff-bss.py ARCHIVE: gives every uninitialized-data section (.bss) of the COFF objects in
a static library (ar archive, as tools/go-lib.sh writes the windows_amd64 libpora_ffi.a) no file
contents again, in place, and prints how many it mended.

Why: llvm-objcopy's COFF writer (it strips the library) gives each section whose SizeOfRawData is
not 0 a PointerToRawData, .bss included. GNU ld for PE (MinGW, what cgo links es-node.exe with)
then reads that .bss as CONTENTS, and one such input section makes the output's whole .bss
initialized data: Go's 34 MB .bss was written into es-node.exe as zeros. In a COFF object an
uninitialized section's SizeOfRawData is its size and its PointerToRawData is 0 (what rustc
writes); this puts the 0 back. The bytes the pointer named stay in the member, unreferenced.

Exit status 1, naming the archive and the member, when the archive or an object in it is not what
this reads (it writes nothing then)."""

import struct
import sys

IMAGE_SCN_CNT_UNINITIALIZED_DATA = 0x80
# The class ID of an /bigobj object's header (ANON_OBJECT_HEADER_BIGOBJ).
BIGOBJ_CLASS_ID = bytes.fromhex("c7a1bad1eebaa94baf20faf66aa4dcb8")
SECTION_HEADER_SIZE = 40


def fail(msg):
    print(f"coff-bss.py: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def section_table(obj):
    """The offset and count of an object's section headers, or None for a member that is not a
    COFF object (an import stub, the symbol table, a long-names table)."""
    if len(obj) >= 56 and obj[0:4] == b"\x00\x00\xff\xff":
        version = struct.unpack_from("<H", obj, 4)[0]
        if version >= 2 and obj[12:28] == BIGOBJ_CLASS_ID:
            return 56, struct.unpack_from("<I", obj, 44)[0]
        return None  # a short import object (version 0)
    if len(obj) < 20:
        return None
    machine, count = struct.unpack_from("<HH", obj, 0)
    if machine not in (0x8664, 0x14C, 0xAA64):  # x86-64, i386, arm64
        return None
    optional = struct.unpack_from("<H", obj, 16)[0]
    return 20 + optional, count


def mend(data, start, size, name):
    """Sets PointerToRawData to 0 for each uninitialized section of the member at start."""
    obj = memoryview(data)[start : start + size]
    table = section_table(obj)
    if table is None:
        return 0
    offset, count = table
    if offset + count * SECTION_HEADER_SIZE > size:
        fail(f"member {name}: {count} section headers at {offset} pass its end ({size} bytes)")
    mended = 0
    for i in range(count):
        header = offset + i * SECTION_HEADER_SIZE
        pointer = struct.unpack_from("<I", obj, header + 20)[0]
        flags = struct.unpack_from("<I", obj, header + 36)[0]
        if flags & IMAGE_SCN_CNT_UNINITIALIZED_DATA and pointer != 0:
            struct.pack_into("<I", data, start + header + 20, 0)
            mended += 1
    return mended


def main():
    if len(sys.argv) != 2:
        fail("usage: tools/coff-bss.py ARCHIVE")
    path = sys.argv[1]
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if data[:8] != b"!<arch>\n":
        fail(f"{path}: not an ar archive")
    pos, mended = 8, 0
    while pos < len(data):
        if pos + 60 > len(data):
            fail(f"{path}: a member header at byte {pos} passes the end")
        header = data[pos : pos + 60]
        name = header[0:16].decode("ascii", "replace").strip()
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            fail(f"{path}: member {name!r} at byte {pos}: size field {header[48:58]!r}")
        start = pos + 60
        if start + size > len(data):
            fail(f"{path}: member {name!r} at byte {pos}: {size} bytes pass the end")
        mended += mend(data, start, size, name)
        pos = start + size + (size & 1)
    with open(path, "r+b") as f:
        f.write(data)
    print(f"coff-bss.py: {path}: {mended} .bss sections given no file contents")


if __name__ == "__main__":
    main()
