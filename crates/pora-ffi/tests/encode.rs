//! The encoder's C ABI called from Rust as a C caller would: every vector of
//! `testdata/esnode-encode.json` (docs/encoding.md, "Test vectors") through `pora_encode_key` and
//! `pora_mask`, encode/decode round trips and es-node's prefix decode, null and short buffers,
//! wrong lengths (nothing written), and `pora_fill_empty` on a data file: the same bytes as the
//! library's own `--fill empty --kv-range`, resumable, and refusing bad files and ranges without
//! changing a byte. (A panic inside each export is covered by the unit tests of `encode.rs`.)

use pora_core::header::{Header, HEADER_SIZE, META_SIZE};
use pora_core::{Address, EncodeType};
use pora_ffi::*;
use pora_prepare::create::{plan_header, CreateSpec, Fill};
use pora_prepare::empty::{EmptyFill, EmptyFillOptions};
use pora_prepare::mask::sha256;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn vectors() -> Value {
    serde_json::from_str(include_str!("../../../testdata/esnode-encode.json")).unwrap()
}

fn hex(s: &str) -> Vec<u8> {
    let s = s.trim_start_matches("0x");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn hex_of(v: &Value) -> Vec<u8> {
    hex(v.as_str().unwrap())
}

fn bytes(b: &[u8]) -> PoraBytes {
    PoraBytes {
        ptr: b.as_ptr(),
        len: b.len(),
    }
}

fn empty_buf() -> PoraBuf {
    PoraBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    }
}

fn take(buf: &mut PoraBuf) -> String {
    let text = if buf.ptr.is_null() {
        String::new()
    } else {
        let b = unsafe { std::slice::from_raw_parts(buf.ptr, buf.len) };
        String::from_utf8(b.to_vec()).unwrap()
    };
    assert_eq!(unsafe { pora_buf_free(buf) }, PoraStatus::Ok);
    text
}

/// Runs one call with a fresh `out` and returns its status and message (or JSON).
fn call(f: impl FnOnce(*mut PoraBuf) -> PoraStatus) -> (PoraStatus, String) {
    let mut out = empty_buf();
    let status = f(&mut out);
    (status, take(&mut out))
}

fn encode_key(commit: &[u8], kv_idx: u64, miner: &[u8]) -> [u8; 32] {
    let mut key = [0u8; 32];
    let (s, msg) = call(|out| unsafe {
        pora_encode_key(
            bytes(commit),
            kv_idx,
            bytes(miner),
            key.as_mut_ptr(),
            key.len(),
            out,
        )
    });
    assert_eq!(s, PoraStatus::Ok, "{msg}");
    assert!(msg.is_empty(), "a binary result leaves out empty: {msg}");
    key
}

fn mask(key: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; PORA_KV_LEN];
    let (s, msg) = call(|out| unsafe { pora_mask(bytes(key), m.as_mut_ptr(), m.len(), out) });
    assert_eq!(s, PoraStatus::Ok, "{msg}");
    assert!(msg.is_empty(), "{msg}");
    m
}

fn word(mask: &[u8], j: usize) -> &[u8] {
    &mask[32 * j..32 * j + 32]
}

/// Deterministic bytes that are not a mask: a xorshift stream.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

#[test]
fn encode_keys_match_es_node() {
    let v = vectors();
    let miner = hex_of(&v["miner"]);
    let full = &v["fullMask"][0];
    let key = encode_key(&[0; 32], full["kvIdx"].as_u64().unwrap(), &miner);
    assert_eq!(key.to_vec(), hex_of(&full["encodeKey"]));

    let c = &v["commitKey"];
    let commit24 = hex_of(&c["commit"]);
    assert_eq!(commit24.len(), 24);
    let kv_idx = c["kvIdx"].as_u64().unwrap();
    let want = hex_of(&c["encodeKey"]);
    // es-node's commit is a 32-byte hash of which only the first 24 bytes count: the same key
    // with zeros and with a meta entry's flags in the last 8 bytes.
    for tail in [[0u8; 8], [0x80, 0, 0, 0, 0, 0, 0, 0], [0xff; 8]] {
        let commit: Vec<u8> = commit24.iter().chain(tail.iter()).copied().collect();
        assert_eq!(
            encode_key(&commit, kv_idx, &hex_of(&c["miner"])).to_vec(),
            want
        );
    }
    // ...and a different commit, KV or miner is a different key.
    let commit: Vec<u8> = commit24.iter().chain([0u8; 8].iter()).copied().collect();
    assert_ne!(
        encode_key(&commit, kv_idx + 1, &hex_of(&c["miner"])).to_vec(),
        want
    );
    assert_ne!(encode_key(&commit, kv_idx, &miner).to_vec(), want);
}

#[test]
fn masks_match_every_es_node_vector() {
    let v = vectors();
    let miner = hex_of(&v["miner"]);
    let full = &v["fullMask"][0];
    let m = mask(&hex_of(&full["encodeKey"]));
    assert_eq!(word(&m, 0), hex_of(&full["mask0"]));
    assert_eq!(sha256(&m).to_vec(), hex_of(&full["sha256"]));

    for raw in v["rawKeys"].as_array().unwrap() {
        let m = mask(&hex_of(&raw["key"]));
        let j = raw["sample"].as_u64().unwrap() as usize;
        assert_eq!(word(&m, j), hex_of(&raw["word"]), "raw key {}", raw["key"]);
        if let Some(digest) = raw.get("sha256") {
            assert_eq!(sha256(&m).to_vec(), hex_of(digest));
        }
    }

    let c = &v["commitKey"];
    let mut commit = hex_of(&c["commit"]);
    commit.resize(32, 0);
    let key = encode_key(&commit, c["kvIdx"].as_u64().unwrap(), &hex_of(&c["miner"]));
    assert_eq!(sha256(&mask(&key)).to_vec(), hex_of(&c["maskSha256"]));

    // Words es-node wrote into empty-filled KVs of a real shard: encode key then mask.
    for s in v["samples"].as_array().unwrap() {
        let key = encode_key(&[0; 32], s["kvIdx"].as_u64().unwrap(), &miner);
        let j = s["sample"].as_u64().unwrap() as usize;
        assert_eq!(
            word(&mask(&key), j),
            hex_of(&s["word"]),
            "KV {}",
            s["kvIdx"]
        );
    }
}

#[test]
fn encode_then_decode_is_the_identity_and_decodes_prefixes() {
    let key = hex(vectors()["rawKeys"][1]["key"].as_str().unwrap());
    let m = mask(&key);
    let blob = noise(PORA_KV_LEN, 0x9e37_79b9_7f4a_7c15);
    let mut data = blob.clone();
    let (s, msg) =
        call(|out| unsafe { pora_encode_kv(bytes(&key), data.as_mut_ptr(), data.len(), out) });
    assert_eq!(s, PoraStatus::Ok, "{msg}");
    let want: Vec<u8> = blob.iter().zip(&m).map(|(b, m)| b ^ m).collect();
    assert!(data == want, "encoded = blob XOR mask");
    let encoded = data.clone();

    // es-node decodes a blob's first `size` bytes only: the rest is left as it is.
    let size = 1000;
    let (s, msg) = call(|out| unsafe { pora_decode_kv(bytes(&key), data.as_mut_ptr(), size, out) });
    assert_eq!(s, PoraStatus::Ok, "{msg}");
    assert_eq!(data[..size], blob[..size]);
    assert_eq!(data[size..], encoded[size..]);

    let mut data = encoded.clone();
    let (s, msg) =
        call(|out| unsafe { pora_decode_kv(bytes(&key), data.as_mut_ptr(), data.len(), out) });
    assert_eq!(s, PoraStatus::Ok, "{msg}");
    assert!(data == blob, "decode(encode(x)) == x");

    // A zero blob encodes to the mask: what an empty KV holds.
    let mut zero = vec![0u8; PORA_KV_LEN];
    let (s, _) =
        call(|out| unsafe { pora_encode_kv(bytes(&key), zero.as_mut_ptr(), zero.len(), out) });
    assert_eq!(s, PoraStatus::Ok);
    assert!(zero == m);

    // Decoding nothing is nothing (es-node returns an empty slice), even with no pointer.
    let (s, msg) = call(|out| unsafe { pora_decode_kv(bytes(&key), std::ptr::null_mut(), 0, out) });
    assert_eq!((s, msg.as_str()), (PoraStatus::Ok, ""));
}

#[test]
fn wrong_lengths_and_null_pointers_are_refused_and_nothing_is_written() {
    let key = [3u8; 32];
    let miner = [5u8; 20];
    let commit = [0u8; 32];
    let expect = |(s, msg): (PoraStatus, String), words: &[&str]| {
        assert_eq!(s, PoraStatus::InvalidArgument, "{msg}");
        for w in words {
            assert!(msg.contains(w), "`{w}` missing from: {msg}");
        }
    };

    // The encode key: each argument named, with its expected length.
    let mut out_key = [0xaau8; 33];
    for (commit_len, miner_len, key_len, words) in [
        (24, 20, 32, ["commit", "24 bytes", "expected 32"]),
        (33, 20, 32, ["commit", "33 bytes", "expected 32"]),
        (32, 19, 32, ["miner", "19 bytes", "expected 20"]),
        (32, 20, 31, ["key", "31 bytes", "expected 32"]),
        (32, 20, 33, ["key", "33 bytes", "expected 32"]),
    ] {
        let big = [0u8; 40];
        expect(
            call(|out| unsafe {
                pora_encode_key(
                    bytes(&big[..commit_len]),
                    1,
                    bytes(&big[..miner_len]),
                    out_key.as_mut_ptr(),
                    key_len,
                    out,
                )
            }),
            &words,
        );
    }
    expect(
        call(|out| unsafe {
            pora_encode_key(
                bytes(&commit),
                1,
                bytes(&miner),
                std::ptr::null_mut(),
                32,
                out,
            )
        }),
        &["key", "null"],
    );
    let null_commit = PoraBytes {
        ptr: std::ptr::null(),
        len: 32,
    };
    expect(
        call(|out| unsafe {
            pora_encode_key(null_commit, 1, bytes(&miner), out_key.as_mut_ptr(), 32, out)
        }),
        &["commit", "null"],
    );
    assert_eq!(
        out_key, [0xaa; 33],
        "a refused call wrote into the key buffer"
    );

    // The mask: exactly one KV, never more or less.
    let mut m = vec![0x55u8; PORA_KV_LEN + 1];
    for len in [0, 32, PORA_KV_LEN - 1, PORA_KV_LEN + 1, usize::MAX] {
        expect(
            call(|out| unsafe { pora_mask(bytes(&key), m.as_mut_ptr(), len, out) }),
            &["mask", &format!("{len} bytes"), "expected 131072"],
        );
    }
    expect(
        call(|out| unsafe { pora_mask(bytes(&key), std::ptr::null_mut(), PORA_KV_LEN, out) }),
        &["mask", "null"],
    );
    expect(
        call(|out| unsafe { pora_mask(bytes(&key[..31]), m.as_mut_ptr(), PORA_KV_LEN, out) }),
        &["key", "31 bytes", "expected 32"],
    );
    let huge_key = PoraBytes {
        ptr: key.as_ptr(),
        len: usize::MAX,
    };
    expect(
        call(|out| unsafe { pora_mask(huge_key, m.as_mut_ptr(), PORA_KV_LEN, out) }),
        &["key"],
    );
    assert!(
        m.iter().all(|&b| b == 0x55),
        "a refused call wrote into the mask"
    );

    // Encode wants a whole (zero-padded) KV; decode at most one.
    let mut data = vec![0x11u8; PORA_KV_LEN + 1];
    for len in [0, 4096, PORA_KV_LEN - 1, PORA_KV_LEN + 1] {
        expect(
            call(|out| unsafe { pora_encode_kv(bytes(&key), data.as_mut_ptr(), len, out) }),
            &["data", &format!("{len} bytes"), "expected 131072"],
        );
    }
    expect(
        call(|out| unsafe { pora_decode_kv(bytes(&key), data.as_mut_ptr(), PORA_KV_LEN + 1, out) }),
        &["data", "131073 bytes", "at most 131072"],
    );
    for f in [pora_encode_kv, pora_decode_kv] {
        expect(
            call(|out| unsafe { f(bytes(&key), std::ptr::null_mut(), PORA_KV_LEN, out) }),
            &["data", "null"],
        );
        expect(
            call(|out| unsafe { f(bytes(&key[..0]), data.as_mut_ptr(), PORA_KV_LEN, out) }),
            &["key", "0 bytes", "expected 32"],
        );
    }
    assert!(
        data.iter().all(|&b| b == 0x11),
        "a refused call wrote into data"
    );

    // No out buffer: refused before anything runs.
    let s = unsafe {
        pora_mask(
            bytes(&key),
            m.as_mut_ptr(),
            PORA_KV_LEN,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(s, PoraStatus::InvalidArgument);
    assert!(m.iter().all(|&b| b == 0x55));
}

const MINER: Address = Address([0x5c; 20]);

/// `pora create --encode-type 3 --fill sparse`: a ready encodeType-3 file of shard 1 with 8 KVs
/// (KVs 8..16), data and metas all zero.
fn spec(path: &Path, encode_type: u64) -> CreateSpec {
    CreateSpec {
        file: path.to_path_buf(),
        shard: 1,
        kv_entries_bits: 3,
        kv_size_bits: 17,
        chunk_size: None,
        miner: MINER,
        encode_type,
        fill: Fill::Sparse,
        seed: 1,
        force: false,
    }
}

fn sparse_file(dir: &Path, name: &str, encode_type: u64) -> PathBuf {
    let path = dir.join(name);
    let spec = spec(&path, encode_type);
    let header = plan_header(&spec).unwrap();
    pora_prepare::create::create(&spec, &header, &|_| {}).unwrap();
    path
}

fn fill_empty(path: &Path, kvs: std::ops::Range<u64>, threads: u32) -> (PoraStatus, String) {
    let raw = path.to_str().unwrap().as_bytes();
    call(|out| unsafe { pora_fill_empty(bytes(raw), kvs.start, kvs.end, threads, out) })
}

fn header(path: &Path) -> Header {
    let bytes = std::fs::read(path).unwrap();
    Header::parse(path, &bytes[..HEADER_SIZE as usize]).unwrap()
}

#[test]
fn fill_empty_writes_what_create_fill_empty_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = sparse_file(dir.path(), "ffi.dat", 3);
    let (s, json) = fill_empty(&path, 10..13, 2);
    assert_eq!(s, PoraStatus::Ok, "{json}");
    let record: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(record["kvs"], 3);
    assert_eq!(record["kvStart"], 10);
    assert_eq!(record["kvEnd"], 13);
    assert_eq!(record["skipped"], 0);
    assert_eq!(record["threads"], 2);
    assert_eq!(record["file"], path.to_str().unwrap());

    // The library's `pora create --fill empty --kv-range 10..13` on a new file.
    let fresh = dir.path().join("create.dat");
    let mut spec = spec(&fresh, 3);
    spec.fill = Fill::Empty;
    let opts = EmptyFillOptions {
        threads: 1,
        resume: false,
        kv_range: Some(10..13),
    };
    EmptyFill::open(&spec, &plan_header(&spec).unwrap(), &opts)
        .unwrap()
        .run(&|_| {})
        .unwrap();
    let (ours, theirs) = (
        std::fs::read(&path).unwrap(),
        std::fs::read(&fresh).unwrap(),
    );
    assert_eq!(ours.len(), theirs.len());
    assert!(ours == theirs, "pora_fill_empty and --fill empty differ");

    // And what that is: masks of (miner, KV, commit 0), metas "filled, commit 0", the rest zero.
    let h = header(&path);
    assert_eq!(h.status, 0, "ready again after the fill");
    for kv in 8..16u64 {
        let at = h.kv_data_offset(kv) as usize;
        let data = &ours[at..at + PORA_KV_LEN];
        let meta_at = h.kv_meta_offset(kv) as usize;
        let meta = &ours[meta_at..meta_at + META_SIZE as usize];
        if (10..13).contains(&kv) {
            let key = encode_key(&[0; 32], kv, &MINER.0);
            assert!(data == mask(&key), "KV {kv} is not its mask");
            let mut filled = [0u8; 32];
            filled[24] = 0x80;
            assert_eq!(meta, filled);
        } else {
            assert!(
                data.iter().chain(meta).all(|&b| b == 0),
                "KV {kv} was touched"
            );
        }
    }

    // Again: nothing left to write. A wider range writes only the new KVs.
    let (s, json) = fill_empty(&path, 10..13, 1);
    assert_eq!(s, PoraStatus::Ok, "{json}");
    let record: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (record["kvs"].as_u64(), record["skipped"].as_u64()),
        (Some(0), Some(3))
    );
    let (s, json) = fill_empty(&path, 8..14, 0);
    assert_eq!(s, PoraStatus::Ok, "{json}");
    let record: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (record["kvs"].as_u64(), record["skipped"].as_u64()),
        (Some(3), Some(3))
    );
    assert!(
        record["threads"].as_u64().unwrap() >= 1,
        "0 threads = every CPU"
    );
}

#[test]
fn fill_empty_never_overwrites_a_blob() {
    let dir = tempfile::tempdir().unwrap();
    let path = sparse_file(dir.path(), "blob.dat", 3);
    let h = header(&path);
    // KV 9 holds a blob (encoded bytes and a commit in its meta), as es-node writes one.
    let blob = noise(PORA_KV_LEN, 7);
    let mut meta = [0u8; 32];
    meta[..24].copy_from_slice(&noise(24, 9));
    meta[24] = 0x80;
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.seek(SeekFrom::Start(h.kv_data_offset(9))).unwrap();
        f.write_all(&blob).unwrap();
        f.seek(SeekFrom::Start(h.kv_meta_offset(9))).unwrap();
        f.write_all(&meta).unwrap();
    }
    let (s, json) = fill_empty(&path, 8..11, 1);
    assert_eq!(s, PoraStatus::Ok, "{json}");
    let record: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (record["kvs"].as_u64(), record["skipped"].as_u64()),
        (Some(2), Some(1))
    );
    let after = std::fs::read(&path).unwrap();
    let at = h.kv_data_offset(9) as usize;
    assert!(
        after[at..at + PORA_KV_LEN] == blob[..],
        "the blob was overwritten"
    );
    let meta_at = h.kv_meta_offset(9) as usize;
    assert_eq!(after[meta_at..meta_at + 32], meta);
}

#[test]
// A reversed range is one of the bad inputs under test.
#[allow(clippy::reversed_empty_ranges)]
fn fill_empty_refuses_bad_files_and_ranges_without_changing_a_byte() {
    let dir = tempfile::tempdir().unwrap();
    let good = sparse_file(dir.path(), "good.dat", 3);
    let plain = sparse_file(dir.path(), "plain.dat", 0);
    let keccak = sparse_file(dir.path(), "keccak.dat", 1);
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, b"not a data file\n").unwrap();
    let zeros = dir.path().join("zeros.dat");
    std::fs::write(&zeros, vec![0u8; 8192]).unwrap();
    let snapshot = |p: &Path| std::fs::read(p).unwrap();
    let before: Vec<(PathBuf, Vec<u8>)> = [&good, &plain, &keccak, &text, &zeros]
        .iter()
        .map(|p| (p.to_path_buf(), snapshot(p)))
        .collect();
    let name = |p: &Path| p.to_str().unwrap().to_string();

    let cases: Vec<(&Path, std::ops::Range<u64>, PoraStatus, Vec<String>)> = vec![
        (
            &plain,
            8..9,
            PoraStatus::Shard,
            vec![name(&plain), "encodeType".into(), "needs 3".into()],
        ),
        (
            &keccak,
            8..9,
            PoraStatus::Shard,
            vec![name(&keccak), "encodeType".into()],
        ),
        (&text, 0..1, PoraStatus::Shard, vec![name(&text)]),
        (
            &zeros,
            0..1,
            PoraStatus::Shard,
            vec![name(&zeros), "magic".into()],
        ),
        (
            &good,
            7..9,
            PoraStatus::InvalidArgument,
            vec![name(&good), "7..9".into(), "outside".into(), "8..16".into()],
        ),
        (
            &good,
            15..17,
            PoraStatus::InvalidArgument,
            vec![name(&good), "outside".into()],
        ),
        (
            &good,
            0..u64::MAX,
            PoraStatus::InvalidArgument,
            vec!["outside".into()],
        ),
        (
            &good,
            9..9,
            PoraStatus::InvalidArgument,
            vec!["kv_start..kv_end".into(), "empty".into()],
        ),
        (
            &good,
            12..10,
            PoraStatus::InvalidArgument,
            vec!["kv_start..kv_end".into(), "empty".into()],
        ),
    ];
    for (path, range, want, words) in cases {
        let (s, msg) = fill_empty(path, range.clone(), 1);
        assert_eq!(s, want, "{} {range:?}: {msg}", path.display());
        for w in &words {
            assert!(msg.contains(w.as_str()), "`{w}` missing from: {msg}");
        }
    }
    for threads in [257, u32::MAX] {
        let raw = good.to_str().unwrap().as_bytes();
        let (s, msg) = call(|out| unsafe { pora_fill_empty(bytes(raw), 8, 9, threads, out) });
        assert_eq!(s, PoraStatus::InvalidArgument, "{msg}");
        assert!(msg.contains(&format!("threads {threads}")), "{msg}");
        assert!(msg.contains("at most 256"), "{msg}");
    }
    let missing = dir.path().join("missing.dat");
    let (s, msg) = fill_empty(&missing, 8..9, 1);
    assert_eq!(s, PoraStatus::Io, "{msg}");
    assert!(msg.contains(&name(&missing)), "{msg}");
    assert!(!missing.exists(), "a refused fill created the file");
    let (s, msg) = call(|out| unsafe { pora_fill_empty(bytes(b""), 8, 9, 1, out) });
    assert_eq!(s, PoraStatus::InvalidArgument, "{msg}");
    assert!(msg.contains("path"), "{msg}");
    let null_path = PoraBytes {
        ptr: std::ptr::null(),
        len: 3,
    };
    let (s, msg) = call(|out| unsafe { pora_fill_empty(null_path, 8, 9, 1, out) });
    assert_eq!(s, PoraStatus::InvalidArgument, "{msg}");

    for (path, bytes) in before {
        assert!(
            snapshot(&path) == bytes,
            "{} changed after a refused fill",
            path.display()
        );
    }
    assert_eq!(header(&good).encode_type, EncodeType::BlobPoseidon);
}
