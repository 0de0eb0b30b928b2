//! Fuzz target: the C ABI's inputs, through the real `extern "C"` functions of pora-ffi exactly
//! as a C caller calls them: open options (method name, counts, enum values, miner, profile
//! source, a profile file with fuzzed contents, file groups), slot params (randao length, nonce
//! range, slot length, find, every difficulty field, overlay id), single-nonce hashes, overlay
//! puts by KV index (any KV, any power-of-two or wrong length), retain/drop, and the encoder's
//! lengths and pointers. Every pointer passed is valid for its length (fuzzed bytes); every
//! call must return a status other than `PORA_STATUS_PANIC` (a caught panic is still a bug) and
//! never abort. Overflow checks are on.
//!
//! Bounded so each input runs in about a millisecond or less (what they leave out is said where):
//! one tiny shard file and one open handle are made once per process; slots run with a
//! cancel token that is already cancelled (the params are checked in full, then the slot ends
//! at once); thread and depth counts inside the library's limits are reduced modulo a few
//! (counts over the limits are passed as they are, to be refused).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pora_core::header::{Header, HEADER_SIZE, META_SIZE};
use pora_core::{Address, EncodeType};
use pora_ffi::*;
use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

/// log2 of the shard's KVs, and a KV's size: 8 KVs of 4 KiB.
const KV_ENTRIES_BITS: u32 = 3;
const KV_SIZE: u64 = 4096;

/// What is made once per process.
struct World {
    dir: PathBuf,
    shard: Vec<u8>,
    handle: u64,
    cancelled: u64,
    overlay: u64,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("pora-fuzz-ffi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chunks = 1u64 << KV_ENTRIES_BITS;
        let header = Header {
            version: 1,
            chunk_idx_start: 0,
            chunk_idx_len: chunks,
            encode_type: EncodeType::None,
            max_kv_size: KV_SIZE,
            chunk_size: KV_SIZE,
            meta_size: META_SIZE,
            miner: Address([0x5c; 20]),
            status: 0,
        };
        let path = dir.join("shard0.dat");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&header.encode()).unwrap();
        let len = (header.allocated_len().unwrap() - HEADER_SIZE) as usize;
        let data: Vec<u8> = (0..len).map(|i| (i * 131 % 251) as u8).collect();
        file.write_all(&data).unwrap();
        let shard = path.to_str().unwrap().as_bytes().to_vec();
        let options = PoraOpenOptions {
            method: bytes(b"pread"),
            threads: 1,
            depth: 4,
            profile: 2,
            ..zero_options()
        };
        let (status, handle, message) = open(&[bytes(&shard)], &[1], Some(&options));
        assert_eq!(status, PoraStatus::Ok, "{message}");
        let mut cancelled = 0;
        assert_eq!(
            call(|out| unsafe { pora_cancel_new(&mut cancelled, out) }).0,
            PoraStatus::Ok
        );
        assert_eq!(
            call(|out| unsafe { pora_cancel(cancelled, out) }).0,
            PoraStatus::Ok
        );
        let mut overlay = 0;
        assert_eq!(
            call(|out| unsafe { pora_overlay_new(&mut overlay, out) }).0,
            PoraStatus::Ok
        );
        World {
            dir,
            shard,
            handle,
            cancelled,
            overlay,
        }
    })
}

fn bytes(b: &[u8]) -> PoraBytes {
    PoraBytes {
        ptr: if b.is_empty() {
            std::ptr::null()
        } else {
            b.as_ptr()
        },
        len: b.len(),
    }
}

fn zero_options() -> PoraOpenOptions {
    PoraOpenOptions::default()
}

/// Calls `f` with an `out` buffer; frees it; the status and the message or result. Any status
/// but `Panic` is an answer; the buffer must be one pora can free.
fn call(f: impl FnOnce(*mut PoraBuf) -> PoraStatus) -> (PoraStatus, String) {
    let mut out = PoraBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    let status = f(&mut out);
    let text = if out.ptr.is_null() {
        String::new()
    } else {
        let raw = unsafe { std::slice::from_raw_parts(out.ptr, out.len) };
        String::from_utf8_lossy(raw).into_owned()
    };
    assert_eq!(unsafe { pora_buf_free(&mut out) }, PoraStatus::Ok);
    assert_ne!(status, PoraStatus::Panic, "pora panicked: {text}");
    if status != PoraStatus::Ok {
        assert!(!text.is_empty(), "status {status:?} without a message");
    }
    (status, text)
}

fn open(
    files: &[PoraBytes],
    groups: &[usize],
    options: Option<&PoraOpenOptions>,
) -> (PoraStatus, u64, String) {
    let mut handle = 0u64;
    let options = options.map_or(std::ptr::null(), |o| o as *const _);
    let (status, text) = call(|out| unsafe {
        pora_open(
            files.as_ptr(),
            files.len(),
            groups.as_ptr(),
            groups.len(),
            options,
            &mut handle,
            out,
        )
    });
    (status, handle, text)
}

/// The fuzzed input, read front to back; zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
    fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }
    fn u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        let got = self.take(4);
        b[..got.len()].copy_from_slice(got);
        u32::from_le_bytes(b)
    }
    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        let got = self.take(8);
        b[..got.len()].copy_from_slice(got);
        u64::from_le_bytes(b)
    }
    fn arr32(&mut self) -> [u8; 32] {
        let mut b = [0u8; 32];
        let got = self.take(32);
        b[..got.len()].copy_from_slice(got);
        b
    }
    /// A byte string of a fuzzed length (one length byte).
    fn bytes(&mut self) -> &'a [u8] {
        let n = self.u8() as usize;
        self.take(n)
    }
    /// A count for a field with limit `max`: over the limit as it is (to be refused), inside it
    /// reduced to `0..=keep` so an open never starts thousands of threads.
    fn count(&mut self, max: u32, keep: u32) -> u32 {
        let v = self.u32();
        if v > max {
            v
        } else {
            v % (keep + 1)
        }
    }
    /// An id: 0, one of the world's, or any 64-bit value.
    fn id(&mut self, ours: u64) -> u64 {
        match self.u8() % 3 {
            0 => 0,
            1 => ours,
            _ => self.u64(),
        }
    }
}

fn difficulty(input: &mut Input) -> PoraDifficulty {
    PoraDifficulty {
        kind: input.u32() % 4,
        required_diff: input.arr32(),
        difficulty: input.arr32(),
        interval: input.u64(),
        cutoff: input.u64(),
        diff_adj_divisor: input.u64(),
        minimum_diff: input.arr32(),
    }
}

/// `pora_open` with fuzzed options and file groups, closed again when it opened.
fn open_fuzzed(w: &World, input: &mut Input) {
    let method: &[u8] = match input.u8() % 6 {
        0 => b"",
        1 => b"pread",
        2 => b"pread-shared",
        3 => b"mmap",
        4 => b"auto",
        _ => input.bytes(),
    };
    let threads = input.count(PORA_MAX_THREADS, 2);
    let depth = input.count(PORA_MAX_DEPTH, 8);
    let random_checks = input.u32();
    let on_io_error = input.u32();
    let kv_entries_bits = input.u32() % 66;
    let profile = input.u32();
    // A profile file with fuzzed contents beside the shard (`profile` 1 points at it); paths
    // stay inside the temporary directory, so no fuzzed path reaches a device or a FIFO.
    let profile_text = input.bytes();
    let profile_path = w.dir.join("fuzzed.pora-profile.toml");
    std::fs::write(&profile_path, profile_text).unwrap();
    let profile_path = profile_path.to_str().unwrap().as_bytes().to_vec();
    let miner = input.bytes();
    let (sim_min, sim_max, sim_seed) = (input.u32() % 100, input.u32() % 100, input.u64());
    let options = PoraOpenOptions {
        method: bytes(method),
        threads,
        depth,
        random_checks,
        on_io_error,
        kv_entries_bits,
        profile,
        profile_path: bytes(&profile_path),
        miner: bytes(miner),
        sim_latency_us_min: sim_min,
        sim_latency_us_max: sim_max,
        sim_seed,
    };
    // Files: the shard, the shard again (a duplicate), a missing file, an empty path.
    let missing = w
        .dir
        .join("missing.dat")
        .to_str()
        .unwrap()
        .as_bytes()
        .to_vec();
    let mut files = Vec::new();
    for _ in 0..(input.u8() % 4) {
        files.push(match input.u8() % 3 {
            0 => bytes(&w.shard),
            1 => bytes(&missing),
            _ => bytes(b""),
        });
    }
    let groups: Vec<usize> = (0..(input.u8() % 4))
        .map(|_| input.u8() as usize % 4)
        .collect();
    let options = (input.u8() % 8 != 0).then_some(&options);
    let (status, handle, text) = open(&files, &groups, options);
    if status == PoraStatus::Ok {
        assert!(text.starts_with('{'), "{text}");
        let randao = [7u8; 32];
        call(|out| unsafe { pora_hash(handle, 0, bytes(&randao), 1, std::ptr::null(), out) });
        assert_eq!(
            call(|out| unsafe { pora_close(handle, out) }).0,
            PoraStatus::Ok
        );
    } else {
        assert_eq!(handle, 0, "a failed open leaves no handle");
    }
}

fn slot_fuzzed(w: &World, input: &mut Input) {
    let randao = input.bytes();
    let params = PoraSlotParams {
        randao: bytes(randao),
        nonce_start: input.u64(),
        nonce_end: input.u64(),
        deadline_remaining_ns: input.u64(),
        find: input.u32(),
        slot_number: input.u64(),
        difficulty: difficulty(input),
        overlay: input.id(w.overlay),
    };
    let handle = input.id(w.handle);
    let null_params = input.u8() % 16 == 0;
    let params_ptr = if null_params {
        std::ptr::null()
    } else {
        &params as *const _
    };
    let (status, text) =
        call(|out| unsafe { pora_mine_slot(handle, params_ptr, w.cancelled, out) });
    if status == PoraStatus::Ok {
        // The slot ended at once (cancelled, or its own short deadline came first): one record
        // for the handle's one shard, with no more nonces than it was given.
        let record: serde_json::Value = serde_json::from_str(&text).expect("a slot answers JSON");
        let shards = record["shards"].as_array().expect("shards");
        assert_eq!(shards.len(), 1, "{text}");
        let tried = shards[0]["noncesTried"].as_u64().expect("noncesTried");
        assert!(
            tried <= params.nonce_end.saturating_sub(params.nonce_start),
            "{text}"
        );
    }
}

fn hash_fuzzed(w: &World, input: &mut Input) {
    let handle = input.id(w.handle);
    let shard = input.u64() % 4;
    let randao = input.bytes();
    let nonce = input.u64();
    let diff = difficulty(input);
    let diff_ptr = if input.u8() % 2 == 0 {
        std::ptr::null()
    } else {
        &diff as *const _
    };
    let overlay = input.id(w.overlay);
    call(|out| unsafe {
        pora_hash_overlay(handle, shard, bytes(randao), nonce, diff_ptr, overlay, out)
    });
}

fn overlay_fuzzed(w: &World, input: &mut Input) {
    let overlay = input.id(w.overlay);
    match input.u8() % 3 {
        0 => {
            // By KV index: one of the shard's, or one of a few outside it (a fixed few, so the
            // process's one overlay cannot grow without bound over millions of inputs).
            let outside = [
                1 << KV_ENTRIES_BITS,
                1 << 32,
                1 << 63,
                u64::MAX - 1,
                u64::MAX,
            ];
            let kv = match input.u8() % 2 {
                0 => input.u64() % (1 << KV_ENTRIES_BITS),
                _ => outside[input.u8() as usize % outside.len()],
            };
            let len = 1usize << (input.u8() % 14);
            let len = len.wrapping_add(usize::from(input.u8() % 4 == 0));
            let data = vec![input.u8(); len];
            call(|out| unsafe { pora_overlay_put(overlay, kv, bytes(&data), out) });
        }
        1 => {
            let kvs: Vec<u64> = (0..(input.u8() % 8)).map(|_| input.u64()).collect();
            let ptr = if kvs.is_empty() && input.u8() % 2 == 0 {
                std::ptr::null()
            } else {
                kvs.as_ptr()
            };
            call(|out| unsafe { pora_overlay_retain(overlay, ptr, kvs.len(), out) });
        }
        _ => {
            let kv = input.u64();
            call(|out| unsafe { pora_overlay_drop(overlay, kv, out) });
        }
    }
}

/// The encoder's lengths and pointers. A length that makes it compute a mask (27 ms without
/// AVX-512 IFMA) is steered away, so the target stays fast: its arithmetic is checked against
/// es-node's vectors by pora-ffi's tests, its argument checks here.
fn encoder_fuzzed(input: &mut Input) {
    let mut scratch = vec![0u8; PORA_KV_LEN + 64];
    let key = input.bytes();
    let len = match input.u8() % 4 {
        0 => input.u8() as usize,
        1 => PORA_KV_LEN - 1 - input.u8() as usize % 32,
        2 => PORA_KV_LEN + 1 + input.u8() as usize % 32,
        _ => 0,
    };
    let null = input.u8() % 4 == 0;
    let ptr = if null {
        std::ptr::null_mut()
    } else {
        scratch.as_mut_ptr()
    };
    match input.u8() % 4 {
        0 => {
            let commit = input.bytes();
            let miner = input.bytes();
            let kv = input.u64();
            let key_len = if input.u8() % 2 == 0 {
                PORA_ENCODE_KEY_LEN
            } else {
                len.min(64)
            };
            let (status, _) = call(|out| unsafe {
                pora_encode_key(bytes(commit), kv, bytes(miner), ptr, key_len, out)
            });
            if status == PoraStatus::Ok {
                assert_eq!((commit.len(), miner.len(), key_len), (32, 20, 32));
            }
        }
        1 => {
            let (status, _) = call(|out| unsafe { pora_mask(bytes(key), ptr, len, out) });
            assert_ne!(status, PoraStatus::Ok, "mask of {len} bytes");
        }
        2 => {
            let (status, _) = call(|out| unsafe { pora_encode_kv(bytes(key), ptr, len, out) });
            assert_ne!(status, PoraStatus::Ok, "encode of {len} bytes");
        }
        _ => {
            // 0 bytes (nothing to do) or more than a KV (refused): no mask is computed.
            let len = if len > PORA_KV_LEN { len } else { 0 };
            call(|out| unsafe { pora_decode_kv(bytes(key), ptr, len, out) });
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    let mut input = Input(data);
    // A few calls per input, so a put can be followed by the hash or slot that uses it.
    for _ in 0..4 {
        if input.0.is_empty() {
            break;
        }
        match input.u8() % 5 {
            0 => open_fuzzed(w, &mut input),
            1 => slot_fuzzed(w, &mut input),
            2 => hash_fuzzed(w, &mut input),
            3 => overlay_fuzzed(w, &mut input),
            _ => encoder_fuzzed(&mut input),
        }
    }
});
