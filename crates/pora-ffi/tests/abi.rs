//! The C ABI called from Rust exactly as a C caller would: null pointers, wrong lengths, bad enum
//! values, double free, use after close, wrong-kind ids, a second concurrent slot (busy), cancel
//! with partial counts, close during a slot, hash / mine results that agree with each other, and,
//! on a stalling FUSE mount, slots that end by the caller's deadline (through steering, and
//! beside a hash stuck on a held read).
//! (Panics are covered by the unit tests of `guard.rs`, which can make the body panic.)

#[path = "../../pora-core/tests/fixtures/mod.rs"]
mod fixtures;

use fixtures::v1_header;
use pora_core::header::HEADER_SIZE;
use pora_core::keccak::keccak256;
use pora_core::{Address, EncodeType};
use pora_ffi::*;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A complete shard of 2^kv_entries_bits 4 KiB KVs filled with keccak-derived bytes.
fn write_shard(dir: &Path, shard: u64, kv_entries_bits: u32) -> PathBuf {
    let chunks = 1u64 << kv_entries_bits;
    let header = v1_header(
        shard * chunks,
        chunks,
        EncodeType::None,
        4096,
        Address([0x5c; 20]),
    );
    let path = dir.join(format!("shard{shard}.dat"));
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(&header.encode()).unwrap();
    let len = (header.allocated_len().unwrap() - HEADER_SIZE) as usize;
    let mut data = Vec::with_capacity(len + 32);
    let mut block = keccak256(&[&shard.to_be_bytes()]);
    while data.len() < len {
        block = keccak256(&[&block]);
        data.extend_from_slice(&block);
    }
    file.write_all(&data[..len]).unwrap();
    path
}

fn take(buf: &mut PoraBuf) -> String {
    let text = if buf.ptr.is_null() {
        String::new()
    } else {
        let bytes = unsafe { std::slice::from_raw_parts(buf.ptr, buf.len) };
        String::from_utf8(bytes.to_vec()).unwrap()
    };
    assert_eq!(unsafe { pora_buf_free(buf) }, PoraStatus::Ok);
    text
}

fn bytes(b: &[u8]) -> PoraBytes {
    PoraBytes {
        ptr: b.as_ptr(),
        len: b.len(),
    }
}

fn empty_options() -> PoraOpenOptions {
    PoraOpenOptions {
        profile: 2,
        ..Default::default()
    }
}

fn open(paths: &[&Path], options: &PoraOpenOptions) -> Result<(u64, String), (PoraStatus, String)> {
    let raw: Vec<Vec<u8>> = paths
        .iter()
        .map(|p| p.to_str().unwrap().as_bytes().to_vec())
        .collect();
    let files: Vec<PoraBytes> = raw.iter().map(|r| bytes(r)).collect();
    let sizes = vec![1usize; files.len()];
    let (mut handle, mut out) = (
        0u64,
        PoraBuf {
            ptr: std::ptr::null_mut(),
            len: 0,
        },
    );
    let status = unsafe {
        pora_open(
            files.as_ptr(),
            files.len(),
            sizes.as_ptr(),
            sizes.len(),
            options,
            &mut handle,
            &mut out,
        )
    };
    let text = take(&mut out);
    match status {
        PoraStatus::Ok => Ok((handle, text)),
        s => Err((s, text)),
    }
}

fn no_difficulty() -> PoraDifficulty {
    PoraDifficulty {
        kind: 0,
        required_diff: [0; 32],
        difficulty: [0; 32],
        interval: 0,
        cutoff: 0,
        diff_adj_divisor: 0,
        minimum_diff: [0; 32],
    }
}

fn slot_params(
    randao: &[u8],
    nonces: std::ops::Range<u64>,
    find: u32,
    slot_length_ms: u64,
) -> PoraSlotParams {
    PoraSlotParams {
        randao: bytes(randao),
        nonce_start: nonces.start,
        nonce_end: nonces.end,
        deadline_remaining_ns: slot_length_ms * 1_000_000,
        find,
        slot_number: 3,
        difficulty: no_difficulty(),
        overlay: 0,
    }
}

fn mine(handle: u64, params: &PoraSlotParams, cancel: u64) -> (PoraStatus, String) {
    let mut out = PoraBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    let status = unsafe { pora_mine_slot(handle, params, cancel, &mut out) };
    (status, take(&mut out))
}

fn close(handle: u64) -> (PoraStatus, String) {
    let mut out = PoraBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    let status = unsafe { pora_close(handle, &mut out) };
    (status, take(&mut out))
}

fn sim_options(latency_us: u32) -> PoraOpenOptions {
    PoraOpenOptions {
        method: bytes(b"sim"),
        threads: 2,
        depth: 4,
        sim_latency_us_min: latency_us,
        sim_latency_us_max: latency_us,
        ..empty_options()
    }
}

#[test]
fn version_matches_the_header_constant() {
    assert_eq!(pora_abi_version(), PORA_ABI_VERSION);
}

#[test]
fn bad_arguments_are_reported_not_undefined() {
    let mut out = PoraBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    let mut handle = 0u64;
    // No files.
    let s = unsafe {
        pora_open(
            std::ptr::null(),
            0,
            std::ptr::null(),
            0,
            std::ptr::null(),
            &mut handle,
            &mut out,
        )
    };
    assert_eq!(s, PoraStatus::InvalidArgument);
    assert!(take(&mut out).contains("files"));
    // Null out buffer: refused without touching anything.
    let s = unsafe { pora_close(1, std::ptr::null_mut()) };
    assert_eq!(s, PoraStatus::InvalidArgument);
    // A path whose pointer is null but length is not.
    let files = [PoraBytes {
        ptr: std::ptr::null(),
        len: 5,
    }];
    let s = unsafe {
        pora_open(
            files.as_ptr(),
            1,
            [1usize].as_ptr(),
            1,
            std::ptr::null(),
            &mut handle,
            &mut out,
        )
    };
    assert_eq!(s, PoraStatus::InvalidArgument);
    assert!(take(&mut out).contains("files[0]"));
    // Group sizes that do not add up.
    let name = b"x.dat";
    let files = [bytes(name)];
    let s = unsafe {
        pora_open(
            files.as_ptr(),
            1,
            [2usize].as_ptr(),
            1,
            std::ptr::null(),
            &mut handle,
            &mut out,
        )
    };
    assert_eq!(s, PoraStatus::InvalidArgument);
    assert!(take(&mut out).contains("group_sizes"));
    // A missing file is named.
    let (s, msg) = open(
        &[Path::new("/nonexistent/pora-ffi-missing.dat")],
        &empty_options(),
    )
    .unwrap_err();
    assert_eq!(s, PoraStatus::Io);
    assert!(msg.contains("pora-ffi-missing.dat"), "{msg}");
    // Bad enum values and method names.
    let dir = tempfile::tempdir().unwrap();
    let path = write_shard(dir.path(), 0, 4);
    let options = PoraOpenOptions {
        on_io_error: 9,
        ..empty_options()
    };
    assert_eq!(
        open(&[&path], &options).unwrap_err().0,
        PoraStatus::InvalidArgument
    );
    let options = PoraOpenOptions {
        method: bytes(b"warp"),
        ..empty_options()
    };
    let (s, msg) = open(&[&path], &options).unwrap_err();
    assert_eq!(s, PoraStatus::InvalidArgument);
    assert!(msg.contains("warp"), "{msg}");
}

#[test]
fn double_free_use_after_close_and_wrong_kind_ids_are_detected() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_shard(dir.path(), 0, 4);
    let (handle, info) = open(&[&path], &empty_options()).unwrap();
    assert_open_record(&info);

    // A result buffer freed twice: the second free is refused, even from a copy of the struct.
    let randao = [7u8; 32];
    let mut out = PoraBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    assert_eq!(
        unsafe { pora_hash(handle, 0, bytes(&randao), 1, std::ptr::null(), &mut out) },
        PoraStatus::Ok
    );
    let mut copy = PoraBuf {
        ptr: out.ptr,
        len: out.len,
    };
    assert_eq!(unsafe { pora_buf_free(&mut out) }, PoraStatus::Ok);
    assert!(out.ptr.is_null(), "free resets the buffer");
    assert_eq!(
        unsafe { pora_buf_free(&mut copy) },
        PoraStatus::InvalidArgument
    );
    assert_eq!(
        unsafe { pora_buf_free(std::ptr::null_mut()) },
        PoraStatus::InvalidArgument
    );

    // A short randao, an unknown shard, a bad find value.
    let s = unsafe {
        pora_hash(
            handle,
            0,
            bytes(&randao[..31]),
            1,
            std::ptr::null(),
            &mut out,
        )
    };
    assert_eq!(s, PoraStatus::InvalidArgument);
    assert!(take(&mut out).contains("31 bytes"));
    let s = unsafe { pora_hash(handle, 9, bytes(&randao), 1, std::ptr::null(), &mut out) };
    assert_eq!(s, PoraStatus::InvalidArgument);
    assert!(take(&mut out).contains("shard 9"));
    let (s, msg) = mine(handle, &slot_params(&randao, 0..8, 7, 1000), 0);
    assert_eq!(s, PoraStatus::InvalidArgument);
    assert!(msg.contains("find 7"), "{msg}");
    let s = unsafe { pora_mine_slot(handle, std::ptr::null(), 0, &mut out) };
    assert_eq!(s, PoraStatus::InvalidArgument);
    assert!(take(&mut out).contains("params"));
    let (s, msg) = mine(handle, &slot_params(&randao, 5..5, 0, 1000), 0);
    assert_eq!(s, PoraStatus::InvalidArgument);
    assert!(msg.contains("5..5"), "{msg}");

    // A cancel token is not a shard handle, and vice versa.
    let mut token = 0u64;
    assert_eq!(
        unsafe { pora_cancel_new(&mut token, &mut out) },
        PoraStatus::Ok
    );
    take(&mut out);
    assert_eq!(
        mine(token, &slot_params(&randao, 0..8, 0, 1000), 0).0,
        PoraStatus::InvalidArgument
    );
    assert_eq!(
        unsafe { pora_cancel(handle, &mut out) },
        PoraStatus::InvalidArgument
    );
    take(&mut out);
    assert_eq!(unsafe { pora_cancel_free(token, &mut out) }, PoraStatus::Ok);
    assert_eq!(
        unsafe { pora_cancel_free(token, &mut out) },
        PoraStatus::Closed
    );
    take(&mut out);

    // Use after close and double close.
    assert_eq!(close(handle).0, PoraStatus::Ok);
    let (s, msg) = mine(handle, &slot_params(&randao, 0..8, 0, 1000), 0);
    assert_eq!(s, PoraStatus::Closed);
    assert!(msg.contains("closed"), "{msg}");
    assert_eq!(close(handle).0, PoraStatus::Closed);
    assert_eq!(close(0).0, PoraStatus::InvalidArgument);
}

#[test]
fn hash_and_mine_agree_and_match_the_record_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_shard(dir.path(), 0, 5);
    let b = write_shard(dir.path(), 1, 5);
    let options = PoraOpenOptions {
        method: bytes(b"pread"),
        threads: 2,
        depth: 1,
        ..empty_options()
    };
    let (handle, _) = open(&[&a, &b], &options).unwrap();
    let randao = [0x42u8; 32];
    // Every nonce valid: `--find all` reports each with its samples.
    let mut params = slot_params(&randao, 10..74, 2, 60_000);
    params.difficulty.kind = 1;
    params.difficulty.required_diff = [0xff; 32];
    let (s, text) = mine(handle, &params, 0);
    assert_eq!(s, PoraStatus::Ok, "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    let shards = report["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 2);
    for (i, shard) in shards.iter().enumerate() {
        assert_eq!(shard["shard"], i as u64);
        assert_eq!(shard["slot"], 3);
        assert_eq!(shard["noncesTried"], 64);
        assert_eq!(shard["found"].as_array().unwrap().len(), 64);
        let found = &shard["found"][5];
        let nonce = found["nonce"].as_u64().unwrap();
        let mut out = PoraBuf {
            ptr: std::ptr::null_mut(),
            len: 0,
        };
        let s = unsafe {
            pora_hash(
                handle,
                i as u64,
                bytes(&randao),
                nonce,
                &params.difficulty,
                &mut out,
            )
        };
        assert_eq!(s, PoraStatus::Ok);
        let hashed: Value = serde_json::from_str(&take(&mut out)).unwrap();
        for key in ["hash0", "hash1", "sampleIdxs", "encodedSamples", "kvIdxs"] {
            assert_eq!(hashed[key], found[key], "shard {i} nonce {nonce} {key}");
        }
        assert_eq!(hashed["valid"], true);
        assert_eq!(
            hashed["miner"],
            "0x5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c"
        );
    }
    // Difficulty inputs: a huge interval drops expectedDiff to the minimum.
    params.difficulty = PoraDifficulty {
        kind: 2,
        interval: 1_000_000,
        ..no_difficulty()
    };
    params.difficulty.difficulty[31] = 1;
    params.find = 0;
    let (s, text) = mine(handle, &params, 0);
    assert_eq!(s, PoraStatus::Ok, "{text}");
    assert_eq!(close(handle).0, PoraStatus::Ok);
}

fn no_out() -> PoraBuf {
    PoraBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    }
}

fn overlay_put(overlay: u64, kv_idx: u64, data: &[u8]) -> (PoraStatus, String) {
    let mut out = no_out();
    let status = unsafe { pora_overlay_put(overlay, kv_idx, bytes(data), &mut out) };
    (status, take(&mut out))
}

#[test]
fn overlay_kvs_are_sampled_from_memory_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_shard(dir.path(), 1, 5);
    let options = PoraOpenOptions {
        method: bytes(b"pread"),
        threads: 1,
        depth: 4,
        ..empty_options()
    };
    let (handle, _) = open(&[&a], &options).unwrap();
    let mut overlay = 0u64;
    let mut out = no_out();
    assert_eq!(
        unsafe { pora_overlay_new(&mut overlay, &mut out) },
        PoraStatus::Ok
    );
    take(&mut out);
    // Shard 1 holds KVs 32..64; KV 40's current bytes are all 0xab, KV 50's all 0xcd.
    let (kv_a, kv_b) = (vec![0xabu8; 4096], vec![0xcdu8; 4096]);
    assert_eq!(overlay_put(overlay, 40, &kv_a).0, PoraStatus::Ok);
    assert_eq!(overlay_put(overlay, 50, &kv_b).0, PoraStatus::Ok);
    let randao = [0x17u8; 32];
    let mut params = slot_params(&randao, 0..2000, 2, 60_000);
    params.difficulty.kind = 1;
    params.difficulty.required_diff = [0xff; 32];
    let (_, plain) = mine(handle, &params, 0);
    params.overlay = overlay;
    let (s, text) = mine(handle, &params, 0);
    assert_eq!(s, PoraStatus::Ok, "{text}");
    let (plain, cached): (Value, Value) = (
        serde_json::from_str(&plain).unwrap(),
        serde_json::from_str(&text).unwrap(),
    );
    let (plain, cached) = (&plain["shards"][0], &cached["shards"][0]);
    let overlay_samples = cached["samplesFromOverlay"].as_u64().unwrap();
    assert!(overlay_samples > 0, "{cached}");
    assert_eq!(plain["samplesFromOverlay"], 0);
    let mut differing = 0;
    for (p, c) in plain["found"]
        .as_array()
        .unwrap()
        .iter()
        .zip(cached["found"].as_array().unwrap())
    {
        assert_eq!(p["nonce"], c["nonce"]);
        let first_kv = c["kvIdxs"][0].as_u64().unwrap();
        let want_first = match first_kv {
            40 => format!("0x{}", "ab".repeat(32)),
            50 => format!("0x{}", "cd".repeat(32)),
            _ => p["encodedSamples"][0].as_str().unwrap().to_string(),
        };
        assert_eq!(
            c["encodedSamples"][0],
            want_first.as_str(),
            "nonce {}",
            c["nonce"]
        );
        if p["hash1"] != c["hash1"] {
            differing += 1;
            assert!(c["kvIdxs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k == 40 || k == 50));
        }
    }
    assert!(differing > 0, "the overlay changed no nonce");
    // pora_hash_overlay answers each found nonce as the slot with the overlay read it.
    let hash_with = |overlay: u64, nonce: u64| -> Value {
        let mut out = no_out();
        let s = unsafe {
            pora_hash_overlay(
                handle,
                1,
                bytes(&randao),
                nonce,
                &params.difficulty,
                overlay,
                &mut out,
            )
        };
        let text = take(&mut out);
        assert_eq!(s, PoraStatus::Ok, "{text}");
        serde_json::from_str(&text).unwrap()
    };
    let on_50 = cached["found"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kvIdxs"].as_array().unwrap().iter().any(|k| k == 50))
        .expect("a found nonce samples KV 50");
    let nonce_50 = on_50["nonce"].as_u64().unwrap();
    for key in ["hash1", "encodedSamples", "sampleIdxs"] {
        assert_eq!(hash_with(overlay, nonce_50)[key], on_50[key], "{key}");
    }
    // Dropped by its index, KV 50 is read from the file again: overlay 0's (the file's) answer.
    let drop = |kv: u64| {
        let mut out = no_out();
        let s = unsafe { pora_overlay_drop(overlay, kv, &mut out) };
        (s, take(&mut out))
    };
    assert_eq!(
        drop(50),
        (PoraStatus::Ok, r#"{"kvs":1,"removed":1}"#.to_string())
    );
    assert_eq!(
        drop(50),
        (PoraStatus::Ok, r#"{"kvs":1,"removed":0}"#.to_string())
    );
    let (after, file) = (hash_with(overlay, nonce_50), hash_with(0, nonce_50));
    assert_eq!(after["encodedSamples"], file["encodedSamples"]);
    assert_eq!(after["hash1"], file["hash1"]);
    assert_eq!(overlay_put(overlay, 50, &kv_b).0, PoraStatus::Ok);
    // Bad input: a length that is no KV, a KV of another size than the shard's, a stale id.
    let (s, why) = overlay_put(overlay, 41, &[0u8; 4095]);
    assert_eq!(
        (s, why.contains("data: 4095 bytes for KV 41")),
        (PoraStatus::InvalidArgument, true),
        "{why}"
    );
    assert_eq!(overlay_put(overlay, 42, &[0u8; 8192]).0, PoraStatus::Ok);
    let (s, why) = mine(handle, &params, 0);
    assert_eq!(s, PoraStatus::InvalidArgument, "{why}");
    assert!(why.contains("overlay KV 42: 8192 bytes"), "{why}");
    let keep = [40u64];
    let s = unsafe { pora_overlay_retain(overlay, keep.as_ptr(), keep.len(), &mut out) };
    assert_eq!(
        (s, take(&mut out)),
        (PoraStatus::Ok, r#"{"kvs":1,"removed":2}"#.to_string())
    );
    assert_eq!(mine(handle, &params, 0).0, PoraStatus::Ok);
    assert_eq!(
        unsafe { pora_overlay_free(overlay, &mut out) },
        PoraStatus::Ok
    );
    take(&mut out);
    let (s, why) = mine(handle, &params, 0);
    assert_eq!(s, PoraStatus::Closed, "{why}");
    assert_eq!(overlay_put(overlay, 40, &kv_a).0, PoraStatus::Closed);
    assert_eq!(drop(40).0, PoraStatus::Closed);
    let mut out = no_out();
    let s = unsafe {
        pora_hash_overlay(
            handle,
            1,
            bytes(&randao),
            0,
            &params.difficulty,
            overlay,
            &mut out,
        )
    };
    assert_eq!(
        (s, take(&mut out).contains("overlay")),
        (PoraStatus::Closed, true)
    );
    params.overlay = handle; // a shard handle is not an overlay
    assert_eq!(mine(handle, &params, 0).0, PoraStatus::InvalidArgument);
    assert_eq!(close(handle).0, PoraStatus::Ok);
}

/// Starts a long slot on `handle` in a thread and waits until a second call reports BUSY. The
/// probe may itself hold the set when the long slot starts; a long slot refused as busy is
/// started again.
fn start_long_slot(handle: u64, cancel: u64) -> std::thread::JoinHandle<(PoraStatus, String)> {
    let started = Instant::now();
    loop {
        let reads_before = fixtures::work(None).map_or(0, |w| w.read_calls);
        let worker = std::thread::spawn(move || {
            let randao = [1u8; 32];
            mine(
                handle,
                &slot_params(&randao, 0..1 << 30, 1, 120_000),
                cancel,
            )
        });
        // Probe once the long slot reads (the simulated disk reads the file's bytes, in this
        // process): a probe holds the set for a whole (short) slot, and probing before the long
        // slot took the set starves it on a loaded machine. Without a read count (not Linux), a
        // fixed 100 ms instead.
        let reading =
            |w: &fixtures::Work| w.read_calls >= reads_before + 64 || worker.is_finished();
        if !fixtures::wait_for_work(
            None,
            reading,
            Duration::from_secs(30),
            "the long slot reading",
        ) {
            std::thread::sleep(Duration::from_millis(100));
        }
        while !worker.is_finished() {
            let (s, msg) = mine(handle, &slot_params(&[2u8; 32], 0..1, 0, 1000), 0);
            if s == PoraStatus::Busy {
                assert!(msg.contains("already running"), "{msg}");
                return worker;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let (s, msg) = worker.join().unwrap();
        assert_eq!(s, PoraStatus::Busy, "the long slot ended: {msg}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the long slot never started"
        );
    }
}

#[test]
fn a_second_slot_is_busy_and_cancel_returns_partial_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_shard(dir.path(), 0, 6);
    let (handle, _) = open(&[&path], &sim_options(2000)).unwrap();
    let mut out = PoraBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    let mut token = 0u64;
    assert_eq!(
        unsafe { pora_cancel_new(&mut token, &mut out) },
        PoraStatus::Ok
    );
    let worker = start_long_slot(handle, token);
    assert_eq!(unsafe { pora_cancel(token, &mut out) }, PoraStatus::Ok);
    let (s, text) = worker.join().unwrap();
    assert_eq!(s, PoraStatus::Ok, "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    let shard = &report["shards"][0];
    assert_eq!(shard["interrupted"], true);
    let tried = shard["noncesTried"].as_u64().unwrap();
    assert!(
        tried < 1 << 30,
        "cancel must cut the slot short, tried {tried}"
    );
    // The handle is free again after the cancelled slot.
    let randao = [3u8; 32];
    assert_eq!(
        mine(handle, &slot_params(&randao, 0..4, 0, 10_000), 0).0,
        PoraStatus::Ok
    );
    unsafe { pora_cancel_free(token, &mut out) };
    assert_eq!(close(handle).0, PoraStatus::Ok);
}

#[test]
fn close_during_a_slot_stops_it_and_reports_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_shard(dir.path(), 0, 6);
    let (handle, _) = open(&[&path], &sim_options(2000)).unwrap();
    let worker = start_long_slot(handle, 0);
    assert_eq!(close(handle).0, PoraStatus::Ok);
    let (s, msg) = worker.join().unwrap();
    assert_eq!(s, PoraStatus::Closed, "{msg}");
    assert!(msg.contains("closed while the slot ran"), "{msg}");
}

/// `pora_open`'s answer is `pora_mine::records::SessionRecord`, the body of the service's
/// `pora_status` too: exactly these keys, so a door cannot drift from the shared record.
fn assert_open_record(info: &str) {
    let v: serde_json::Value = serde_json::from_str(info).unwrap();
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&v),
        ["choice", "choices", "notes", "randomChecks", "shards"],
        "{info}"
    );
    let shard = ["files", "kvEntriesBits", "kvSizeBits", "miner", "shard"];
    assert_eq!(keys(&v["shards"][0]), shard, "{info}");
    let choice = [
        "depth", "device", "io", "method", "profile", "shards", "steering", "threads", "why",
    ];
    assert_eq!(keys(&v["choice"]), choice, "{info}");
    assert_eq!(v["choices"][0], v["choice"], "{info}");
    assert_eq!(v["randomChecks"], PORA_DEFAULT_RANDOM_CHECKS, "{info}");
}

#[test]
fn slot_inputs_are_checked_by_the_library_naming_the_c_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_shard(dir.path(), 0, 4);
    let (handle, _) = open(&[&path], &empty_options()).unwrap();
    let randao = [7u8; 32];
    let cases = [
        (slot_params(&randao, 5..5, 0, 1000), "nonces 5..5"),
        (slot_params(&randao, 0..5, 0, 0), "deadline_remaining_ns 0"),
        (
            slot_params(&randao, 0..5, 0, PORA_MAX_SLOT_LENGTH_MS + 1),
            "deadline_remaining_ns",
        ),
    ];
    for (params, named) in cases {
        let (s, msg) = mine(handle, &params, 0);
        assert_eq!(s, PoraStatus::InvalidArgument, "{msg}");
        assert!(msg.contains(named) && !msg.contains("--"), "{msg}");
    }
    assert_eq!(close(handle).0, PoraStatus::Ok);
}

/// The caller's deadline is `deadline_remaining_ns` from the call's entry, whatever steering
/// costs: `auto` on a FUSE mount (pora-faultfs) whose every request — the page-cache facts'
/// open, a switch's opens, each read — is answered 200 ms late from slot 1 on. Measured on this
/// caller's clock (the instant `deadline_remaining_ns` was measured from, just before the call):
/// each call returns by the deadline + 1 s, and the steering that waited on the device is inside
/// that. Needs root and /dev/fuse; elsewhere prints SKIP with the reason.
/// pora-faultfs over `intact`, mounted at `<dir>/mnt` with its rules file in `dir`, passing
/// every request through until a test sets a rule.
#[cfg(target_os = "linux")]
fn mount_faultfs(dir: &std::path::Path, intact: &std::path::Path) -> pora_faultfs::FaultMount {
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let fs = pora_faultfs::FaultMount::mount_with(
        intact,
        &mnt,
        &dir.join("rules"),
        pora_faultfs::MountOptions::default(),
    )
    .expect("mount faultfs");
    fs.set_rules("").unwrap();
    fs
}

#[cfg(target_os = "linux")]
#[test]
fn a_slot_ends_by_the_callers_deadline_while_steering_waits_on_a_stalling_device() {
    if let Some(why) = pora_faultfs::fuse_unavailable() {
        // Straight to stderr: libtest captures `eprintln!`, and CI's skip table reads this line.
        let _ = writeln!(
            std::io::stderr(),
            "SKIP deadline through a stalling device: {why}"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let intact = write_shard(dir.path(), 0, 12);
    let fs = mount_faultfs(dir.path(), &intact);
    let (handle, _) = open(&[fs.path()], &empty_options()).unwrap();
    let randao = [9u8; 32];
    const SLOT: Duration = Duration::from_millis(1500);
    let mut steering_ms = Vec::new();
    let mut worst = f64::MIN;
    for slot in 0..4 {
        if slot == 1 {
            fs.set_rules("stall 200\n").unwrap();
        }
        let mut params = slot_params(&randao, 0..1 << 20, 0, 0);
        let measured_at = Instant::now();
        params.deadline_remaining_ns = SLOT.as_nanos() as u64;
        let (s, msg) = mine(handle, &params, 0);
        let late = measured_at.elapsed().as_secs_f64() - SLOT.as_secs_f64();
        assert_eq!(s, PoraStatus::Ok, "{msg}");
        let v: Value = serde_json::from_str(&msg).unwrap();
        let shard = &v["shards"][0];
        let end_late_ms = shard["endLateMs"].as_f64().unwrap();
        assert!(
            late <= 1.0 && end_late_ms <= 1000.0 && end_late_ms <= late * 1e3 + 1.0,
            "slot {slot}: returned {late:.3} s past the caller's deadline, endLateMs {end_late_ms}: {shard}"
        );
        worst = worst.max(late);
        let steering = &shard["steering"];
        steering_ms.push(
            steering["decisionMs"].as_f64().unwrap() + steering["switchMs"].as_f64().unwrap(),
        );
    }
    fs.set_rules("").unwrap();
    assert_eq!(close(handle).0, PoraStatus::Ok);
    let held = steering_ms[1..].iter().cloned().fold(0.0, f64::max);
    assert!(
        held >= 150.0,
        "steering never waited on the stalled device: {steering_ms:?} ms"
    );
    eprintln!(
        "C ABI, auto through a 200 ms stall: steering ms per slot {steering_ms:?}, worst return past the caller's deadline {worst:+.3} s"
    );
}

/// `pora_hash` of `nonce` on `handle`'s shard 0: the status and the record's text.
#[cfg(target_os = "linux")]
fn hash(handle: u64, randao: &[u8; 32], nonce: u64) -> (PoraStatus, String) {
    let mut out = no_out();
    let s = unsafe { pora_hash(handle, 0, bytes(randao), nonce, std::ptr::null(), &mut out) };
    (s, take(&mut out))
}

/// The side door: a `pora_hash` whose first read the disk holds must not hold a slot started
/// beside it on the same handle. `pread` on a FUSE mount (pora-faultfs) that holds the 4 KiB
/// page of the hash's first sample; once that read is held, a slot of 2 s with nonces to
/// re-verify returns by the caller's deadline + 1 s (on 3ae8b57 it waited for the hash's read).
/// Released, the hash answers what it answers on the intact file. Needs root and /dev/fuse;
/// elsewhere prints SKIP with the reason.
#[cfg(target_os = "linux")]
#[test]
fn a_slot_beside_a_hash_stuck_on_a_held_read_ends_by_the_callers_deadline() {
    if let Some(why) = pora_faultfs::fuse_unavailable() {
        let _ = writeln!(std::io::stderr(), "SKIP hash beside a slot: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let intact = write_shard(dir.path(), 0, 12);
    let options = PoraOpenOptions {
        method: bytes(b"pread"),
        threads: 2,
        depth: 4,
        ..empty_options()
    };
    let randao = [0x33u8; 32];
    const NONCE: u64 = 5;
    // The record on the intact file names the first sample: shard 0 in one file, so its byte
    // is the header's 4 KiB plus 32 bytes a sample.
    let (h, _) = open(&[&intact], &options).unwrap();
    let (s, want) = hash(h, &randao, NONCE);
    assert_eq!(s, PoraStatus::Ok, "{want}");
    assert_eq!(close(h).0, PoraStatus::Ok);
    let want: Value = serde_json::from_str(&want).unwrap();
    let offset = HEADER_SIZE + want["sampleIdxs"][0].as_u64().unwrap() * 32;
    let page = offset & !4095;
    let fs = mount_faultfs(dir.path(), &intact);
    let (handle, _) = open(&[fs.path()], &options).unwrap();
    // Held only once the file is open: the header's read (and its readahead) has been served.
    fs.set_rules(&format!("hold {page} {}\n", page + 4096))
        .unwrap();
    const SLOT: Duration = Duration::from_millis(2000);
    let ((hash_status, hashed), late, (slot_status, slot)) = std::thread::scope(|scope| {
        let hashed = scope.spawn(|| hash(handle, &randao, NONCE));
        fs.wait_for(|c| c.held_now > 0, Duration::from_secs(20))
            .expect("the hash's first read held");
        let measured_at = Instant::now();
        let mined = scope.spawn(move || {
            // 1 nonce in 64 valid, every one reported: the slot re-verifies some.
            let mut params = slot_params(&randao, 0..20000, 2, 0);
            params.deadline_remaining_ns = SLOT.as_nanos() as u64;
            params.difficulty.kind = 1;
            params.difficulty.required_diff[0] = 0x04;
            let answer = mine(handle, &params, 0);
            (measured_at.elapsed(), answer)
        });
        // The slot's return, or its bound long passed: the hold ends either way, so a slot the
        // hash holds returns (late) and the failure says how late.
        while !mined.is_finished() && measured_at.elapsed() < SLOT + Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(2));
        }
        fs.set_rules("").unwrap();
        let (took, answer) = mined.join().unwrap();
        (
            hashed.join().unwrap(),
            took.as_secs_f64() - SLOT.as_secs_f64(),
            answer,
        )
    });
    assert_eq!(close(handle).0, PoraStatus::Ok);
    assert_eq!(slot_status, PoraStatus::Ok, "{slot}");
    assert!(
        late <= 1.0,
        "the slot beside a held pora_hash returned {late:.3} s past the caller's deadline: {slot}"
    );
    let v: Value = serde_json::from_str(&slot).unwrap();
    let found = v["shards"][0]["found"].as_array().map_or(0, Vec::len);
    assert!(
        found > 0 || !v["ioErrorMessages"].as_array().unwrap().is_empty(),
        "the slot re-verified no nonce (the door was not exercised): {slot}"
    );
    assert_eq!(hash_status, PoraStatus::Ok, "{hashed}");
    let hashed: Value = serde_json::from_str(&hashed).unwrap();
    assert_eq!(
        hashed["hash1"], want["hash1"],
        "the hash once its read was released"
    );
    let _ = writeln!(
        std::io::stderr(),
        "C ABI, pora_hash held on page {page}: the slot beside it returned {late:+.3} s past the caller's deadline, {found} found"
    );
}
