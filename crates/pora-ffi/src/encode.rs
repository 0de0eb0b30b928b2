//! The encoder over the C ABI, for es-node's own writes (BLOB_POSEIDON, encodeType 3): the encode
//! key (`CalcEncodeKey`), one KV's mask, `EncodeChunk` / `DecodeChunk` of one KV, and the empty
//! fill of a KV range of a data file (`pora create --fill empty`, through `pora_prepare`).
//!
//! Binary results go into bytes the caller owns, passed as pointer + length and checked against
//! the one length that is right: a 128 KiB mask is written where the caller wants it, with no
//! pora allocation to free and no copy, and a wrong length is refused before anything is written.
//! The `PoraBuf` of these calls carries only the error message (and the fill's JSON summary).

use crate::buf::{PoraBuf, PoraBytes};
use crate::failure::{Failure, Outcome};
use crate::guard;
use crate::{PoraStatus, PORA_ADDRESS_LEN, PORA_COMMIT_LEN, PORA_ENCODE_KEY_LEN, PORA_KV_LEN};
use pora_encode::{EncodeKey, COMMIT_LEN, MASK_BYTES};
use pora_prepare::empty::{EmptyFill, FillSummary};
use pora_prepare::PrepareError;
use serde::Serialize;

// The ABI's lengths are the encoder's; a change there must show up here, not corrupt memory.
const _: () = assert!(PORA_KV_LEN == MASK_BYTES);
const _: () = assert!(PORA_ENCODE_KEY_LEN == std::mem::size_of::<EncodeKey>());
const _: () = assert!(COMMIT_LEN <= PORA_COMMIT_LEN);

/// Exactly `N` borrowed bytes; `what` names the argument in the error.
///
/// # Safety
/// `bytes` must be a valid borrowed byte string.
unsafe fn fixed<const N: usize>(bytes: &PoraBytes, what: &str) -> Result<[u8; N], Failure> {
    let raw = bytes.as_slice(what)?;
    raw.try_into()
        .map_err(|_| Failure::invalid(format!("{what}: {} bytes, expected {N}", raw.len())))
}

/// The caller's output bytes, which must be exactly `want` long. Checked before any byte is
/// written, so a wrong call leaves the caller's memory as it was.
///
/// # Safety
/// `ptr` must be null or point to `len` writable bytes, valid for the call and not aliasing
/// any input still to be read (inputs are copied before this is called).
unsafe fn output<'a>(
    ptr: *mut u8,
    len: usize,
    what: &str,
    want: usize,
) -> Result<&'a mut [u8], Failure> {
    if len != want {
        return Err(Failure::invalid(format!(
            "{what}: {len} bytes, expected {want}"
        )));
    }
    if ptr.is_null() {
        return Err(Failure::invalid(format!(
            "{what}: null pointer (needs {want} writable bytes)"
        )));
    }
    Ok(std::slice::from_raw_parts_mut(ptr, len))
}

/// The body of an export that takes an encode key and writes into the caller's bytes: inside
/// the guard, with the key checked first; such an export returns nothing in `out`.
///
/// # Safety
/// `out` must be writable; `key` a valid borrowed byte string.
unsafe fn keyed(
    out: *mut PoraBuf,
    key: &PoraBytes,
    body: impl FnOnce(EncodeKey) -> Result<(), Failure>,
) -> PoraStatus {
    guard::call(out, || {
        fault_point();
        body(fixed(key, "key")?)?;
        Ok(Vec::new())
    })
}

/// The body of an export that works on the shard file named by `path`: inside the guard, with
/// the path checked first.
///
/// # Safety
/// `out` writable; `path` a valid borrowed byte string.
unsafe fn on_shard_file(
    out: *mut PoraBuf,
    path: &PoraBytes,
    body: impl FnOnce(std::path::PathBuf) -> Outcome,
) -> PoraStatus {
    guard::call(out, || {
        fault_point();
        body(crate::params::path(path, "path")?)
    })
}

/// How much of a KV an in-place export takes.
#[derive(Clone, Copy)]
enum KvLen {
    /// Exactly one KV (`PORA_KV_LEN` bytes).
    Whole,
    /// Its first bytes, at most one KV; none does nothing (the pointer may then be null).
    Prefix,
}

/// The body of an export that rewrites `len` of the caller's bytes at `ptr` (named `what` in
/// errors) with an encode key: the key checked first, then the length against `taken`.
///
/// # Safety
/// As [`keyed`]; `ptr` null or `len` readable and writable bytes.
unsafe fn kv_in_place(
    (ptr, len, what): (*mut u8, usize, &str),
    taken: KvLen,
    out: *mut PoraBuf,
    key: &PoraBytes,
    body: impl FnOnce(EncodeKey, &mut [u8]) -> Result<(), Failure>,
) -> PoraStatus {
    keyed(out, key, |key| {
        let want = match taken {
            KvLen::Whole => PORA_KV_LEN,
            KvLen::Prefix if len > PORA_KV_LEN => {
                return Err(Failure::invalid(format!(
                    "{what}: {len} bytes, expected at most {PORA_KV_LEN} (one KV)"
                )));
            }
            KvLen::Prefix if len == 0 => return Ok(()),
            KvLen::Prefix => len,
        };
        body(key, output(ptr, len, what, want)?)
    })
}

/// The encoder's kernel (`PORA_ENCODE_ARITH`), checked before the infallible `mask` calls so a
/// bad value is INVALID_ARGUMENT naming the variable, not a caught panic.
fn encode_kernel() -> Result<(), Failure> {
    pora_encode::Kernel::selected()
        .map(|_| ())
        .map_err(|e| Failure::invalid(e.to_string()))
}

/// The encoder's multiply kernel for this process, chosen once (the fastest this CPU runs, or
/// `PORA_ENCODE_ARITH`) and checked: `out` holds `{"kernel":"ifma","supported":["portable",...]}`.
/// A bad `PORA_ENCODE_ARITH` (an unknown name, or a kernel this CPU lacks) is
/// PORA_STATUS_INVALID_ARGUMENT naming the variable. A caller that writes KVs calls this once
/// before the first one: every later mask call would fail the same way, and a caller that drops
/// their errors (es-node v0.2.10 drops `Encode`'s) would write zeros.
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn pora_encode_kernel(out: *mut PoraBuf) -> PoraStatus {
    guard::call(out, || {
        let kernel =
            pora_encode::Kernel::selected().map_err(|e| Failure::invalid(e.to_string()))?;
        let supported: Vec<&str> = pora_encode::Kernel::ALL
            .into_iter()
            .filter(|k| k.supported())
            .map(pora_encode::Kernel::name)
            .collect();
        let record = serde_json::json!({"kernel": kernel.name(), "supported": supported});
        Ok(record.to_string().into_bytes())
    })
}

/// `mask_into` wants the array type; `output` already checked the length.
fn as_kv(bytes: &mut [u8]) -> &mut [u8; MASK_BYTES] {
    bytes.try_into().expect("length checked to be one KV")
}

/// es-node's `CalcEncodeKey(commit, kvIdx, miner)`: writes the 32-byte encode key of KV `kv_idx`
/// (a global KV index) for `miner` into `key` (`key_len` must be `PORA_ENCODE_KEY_LEN`).
/// `commit` is exactly `PORA_COMMIT_LEN` (32) bytes, es-node's `common.Hash`: like es-node, only
/// its first 24 bytes (the data hash the contract keeps) enter the key and the rest is ignored,
/// so a KV's meta entry can be passed as it is. An empty KV has an all-zero commit. The key is
/// raw (not reduced mod the field prime), as es-node returns it. `out` stays empty on success.
///
/// # Safety
/// `commit` and `miner` must be valid borrowed byte strings; `key` null or `key_len` writable
/// bytes; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn pora_encode_key(
    commit: PoraBytes,
    kv_idx: u64,
    miner: PoraBytes,
    key: *mut u8,
    key_len: usize,
    out: *mut PoraBuf,
) -> PoraStatus {
    guard::call(out, || {
        fault_point();
        let commit: [u8; PORA_COMMIT_LEN] = fixed(&commit, "commit")?;
        let miner: [u8; PORA_ADDRESS_LEN] = fixed(&miner, "miner")?;
        let dst = output(key, key_len, "key", PORA_ENCODE_KEY_LEN)?;
        let derived = pora_encode::encode_key(&commit[..COMMIT_LEN], &miner, kv_idx)
            .map_err(|e| Failure::invalid(e.to_string()))?;
        dst.copy_from_slice(&derived);
        Ok(Vec::new())
    })
}

/// Writes the BLOB_POSEIDON mask of encode key `key` (32 bytes, raw as `pora_encode_key` gives
/// it) into the caller's `mask`: `mask_len` must be `PORA_KV_LEN` (131072, one KV). These are
/// the bytes an empty KV holds on disk (es-node's `encoder.Encode(key, 131072)`). About 5 ms of
/// one core with AVX-512 IFMA, about 27 ms without (docs/BENCHMARKS.md 20); safe to call from many threads at once. `out` stays empty on success.
///
/// # Safety
/// `key` must be a valid borrowed byte string; `mask` null or `mask_len` writable bytes; `out`
/// writable.
#[no_mangle]
pub unsafe extern "C" fn pora_mask(
    key: PoraBytes,
    mask: *mut u8,
    mask_len: usize,
    out: *mut PoraBuf,
) -> PoraStatus {
    let mask_into = |key: EncodeKey, dst: &mut [u8]| {
        encode_kernel()?;
        pora_encode::mask::mask_into(&key, as_kv(dst));
        Ok(())
    };
    kv_in_place((mask, mask_len, "mask"), KvLen::Whole, out, &key, mask_into)
}

/// es-node's `EncodeChunk(131072, data, 3, key)` in place: `data` (`data_len` must be
/// `PORA_KV_LEN`, one whole KV) becomes the bytes stored on disk for it, the blob XOR the mask
/// of `key`. es-node zero-pads a blob shorter than a KV to the KV size before it encodes (and
/// its encoded chunk is always the KV size), so pass such a blob padded with zeros to 131072
/// bytes: a shorter `data` is refused rather than half encoded. `out` stays empty on success; on
/// failure `data` is unchanged.
///
/// # Safety
/// `key` must be a valid borrowed byte string; `data` null or `data_len` readable and writable
/// bytes; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn pora_encode_kv(
    key: PoraBytes,
    data: *mut u8,
    data_len: usize,
    out: *mut PoraBuf,
) -> PoraStatus {
    let encode = |key: EncodeKey, data: &mut [u8]| {
        pora_encode::encode(data, &key).map_err(|e| Failure::invalid(e.to_string()))
    };
    kv_in_place((data, data_len, "data"), KvLen::Whole, out, &key, encode)
}

/// es-node's `DecodeChunk(131072, data, 3, key)` in place: the first `data_len` stored bytes of
/// a KV (at most `PORA_KV_LEN`) become the blob's first `data_len` bytes, each XOR the mask of
/// `key` at the same offset. Like es-node, a prefix may be decoded (reading a blob of `size`
/// bytes reads and decodes only those); `data_len` 0 does nothing (`data` may then be null).
/// `out` stays empty on success; on failure `data` is unchanged.
///
/// # Safety
/// `key` must be a valid borrowed byte string; `data` null or `data_len` readable and writable
/// bytes; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn pora_decode_kv(
    key: PoraBytes,
    data: *mut u8,
    data_len: usize,
    out: *mut PoraBuf,
) -> PoraStatus {
    let decode = |key: EncodeKey, data: &mut [u8]| {
        if data.len() == PORA_KV_LEN {
            pora_encode::decode(data, &key).map_err(|e| Failure::invalid(e.to_string()))?;
        } else {
            // es-node's UnmaskDataInPlace: the mask's prefix, XORed byte by byte.
            encode_kernel()?;
            let mask = pora_encode::mask(&key);
            data.iter_mut().zip(mask.iter()).for_each(|(d, m)| *d ^= m);
        }
        Ok(())
    };
    kv_in_place((data, data_len, "data"), KvLen::Prefix, out, &key, decode)
}

/// Mask workers `pora_fill_empty` accepts. Each holds a 2 MiB batch and the writer queues two per
/// worker, so an unchecked count from a caller (up to 2^32) would exhaust memory or threads and
/// abort the process; no machine computes masks on more cores than this.
const MAX_FILL_THREADS: u32 = 256;

/// What `pora_fill_empty` returns: `pora create --fill empty --json`'s record plus the request.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FillRecord<'a> {
    file: String,
    kv_start: u64,
    kv_end: u64,
    /// `kvs` (KVs written), `skipped` (KVs of the range left alone: they already held their
    /// mask, or a blob), `refilled`, `kernel` and the timings.
    #[serde(flatten)]
    summary: &'a FillSummary,
}

/// Fills KVs `kv_start .. kv_end` (global KV indices, end exclusive) of the existing
/// encodeType-3 data file `path` with their empty masks for the miner in the file's header, and
/// marks each "filled, commit 0" in its meta entry (`0^24 ‖ 0x80 ‖ 0^7`) once its data is synced:
/// what `pora create FILE --fill empty --resume --kv-range A..B` does with flags matching the
/// file's header (the same `pora_prepare` code). Resumable: KVs already holding their mask are
/// skipped (the last few re-checked), KVs holding a blob are never touched, and an interrupted
/// call leaves the header "incomplete" until a later call finishes. `threads` mask workers
/// (1..=256; 0 = every CPU). Blocks until done (about 5 ms of one core per KV with AVX-512 IFMA, 27 ms without).
///
/// Refused before anything is written, with a message naming the file and field: a file that is
/// not an es-node data file or not encodeType 3 with 128 KiB KVs (PORA_STATUS_SHARD), a range
/// that is empty or outside the file's KVs (PORA_STATUS_INVALID_ARGUMENT), a missing or
/// unreadable file (PORA_STATUS_IO). On success `out` holds `{"file","kvStart","kvEnd","kvs",
/// "skipped","refilled","kernel","seconds","threads","msPerKvPerCore","cpuSeconds","cpuMsPerKv"}`
/// (`kvs` = KVs written, `kernel` the encoder's multiply kernel).
///
/// # Safety
/// `path` must be a valid borrowed byte string; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn pora_fill_empty(
    path: PoraBytes,
    kv_start: u64,
    kv_end: u64,
    threads: u32,
    out: *mut PoraBuf,
) -> PoraStatus {
    on_shard_file(out, &path, |path| {
        if kv_start >= kv_end {
            return Err(Failure::invalid(format!(
                "kv_start..kv_end {kv_start}..{kv_end}: the range is empty (end is exclusive and \
                 must be greater than start)"
            )));
        }
        let threads = fill_threads(threads)?;
        let fill =
            EmptyFill::open_existing(&path, kv_start..kv_end, threads).map_err(prepare_failure)?;
        let summary = fill.run(&|_| {}).map_err(prepare_failure)?;
        fill_json(&FillRecord {
            file: path.display().to_string(),
            kv_start,
            kv_end,
            summary: &summary,
        })
    })
}

/// The mask workers a fill runs on: 0 = every CPU, at most [`MAX_FILL_THREADS`].
fn fill_threads(threads: u32) -> Result<usize, Failure> {
    match threads {
        0 => Ok(pora_mine::session::available_cpus()),
        n if n > MAX_FILL_THREADS => Err(Failure::invalid(format!(
            "threads {n}: at most {MAX_FILL_THREADS} (0 = every CPU)"
        ))),
        n => Ok(n as usize),
    }
}

/// Fills exactly the KVs named in `kv_idxs` (`len` global KV indices, any order, none twice) of
/// the existing encodeType-3 data file `path` with their empty masks and marks each "filled,
/// commit 0", whatever the file holds there: es-node's `CommitEmptyBlobs` view, where the
/// contract says which KVs are empty (es-node v0.2.10 overwrites such a KV even when the file
/// holds a blob there; `pora_fill_empty` would skip it by its meta entry). Checked before
/// anything is written, as `pora_fill_empty` checks (plus: at least one KV, none named twice,
/// every one inside the file). `out` holds the same record as `pora_fill_empty`'s, with
/// `kvStart`/`kvEnd` the span of the named KVs and `skipped` 0.
///
/// # Safety
/// `path` must be a valid borrowed byte string; `kv_idxs` null or valid for `len` values; `out`
/// writable.
#[no_mangle]
pub unsafe extern "C" fn pora_fill_empty_kvs(
    path: PoraBytes,
    kv_idxs: *const u64,
    len: usize,
    threads: u32,
    out: *mut PoraBuf,
) -> PoraStatus {
    on_shard_file(out, &path, |path| {
        let kvs: &[u64] = match (kv_idxs.is_null(), len) {
            (_, 0) => return Err(Failure::invalid("kv_idxs: no KV named (len 0)")),
            (true, _) => return Err(Failure::invalid("kv_idxs: null pointer with len > 0")),
            (false, n) => std::slice::from_raw_parts(kv_idxs, n),
        };
        let threads = fill_threads(threads)?;
        let fill = EmptyFill::open_existing_kvs(&path, kvs, threads).map_err(prepare_failure)?;
        let summary = fill.run(&|_| {}).map_err(prepare_failure)?;
        let (first, last) = (kvs.iter().min(), kvs.iter().max());
        fill_json(&FillRecord {
            file: path.display().to_string(),
            kv_start: first.copied().unwrap_or(0),
            kv_end: last.map_or(0, |k| k + 1),
            summary: &summary,
        })
    })
}

fn fill_json(record: &FillRecord) -> Outcome {
    serde_json::to_vec(record).map_err(|e| Failure::new(PoraStatus::Panic, e.to_string()))
}

/// The status of a preparation error: bad requests, bad files, failed I/O, lost workers.
fn prepare_failure(e: PrepareError) -> Failure {
    Failure::new(prepare_status(&e), e.to_string())
}

fn prepare_status(e: &PrepareError) -> PoraStatus {
    match e {
        PrepareError::Io { .. } => PoraStatus::Io,
        // A file that cannot be opened or read is an I/O failure, not a bad shard.
        PrepareError::Format(pora_core::Error::Io { .. }) => PoraStatus::Io,
        PrepareError::Format(_) => PoraStatus::Shard,
        PrepareError::Step { source, .. } => prepare_status(source),
        // A mask worker panicked: the panic stayed on its thread, but say it like one.
        PrepareError::Worker(_) => PoraStatus::Panic,
        _ => PoraStatus::InvalidArgument,
    }
}

#[cfg(test)]
thread_local! {
    /// Armed by a unit test: the next export on this thread panics inside its guard.
    static FAULT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Panics when a unit test armed it, so tests can check that every export of this file runs
/// inside `guard::call`; compiled out of the library.
fn fault_point() {
    #[cfg(test)]
    if FAULT.with(|f| f.replace(false)) {
        panic!("fault injected by a test");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pora_buf_free;

    fn message(buf: &mut PoraBuf) -> String {
        let text = unsafe { String::from_utf8_lossy(std::slice::from_raw_parts(buf.ptr, buf.len)) }
            .into_owned();
        assert_eq!(unsafe { pora_buf_free(buf) }, PoraStatus::Ok);
        text
    }

    #[test]
    fn a_panic_in_any_encode_export_is_a_status_not_an_unwind() {
        let key = [7u8; 32];
        let commit = [0u8; 32];
        let miner = [1u8; 20];
        let b = |s: &[u8]| PoraBytes {
            ptr: s.as_ptr(),
            len: s.len(),
        };
        let mut kv = vec![0u8; PORA_KV_LEN];
        let mut key_out = [0u8; 32];
        let path = b"/nonexistent/pora-fault";
        let calls: [(&str, &mut dyn FnMut(*mut PoraBuf) -> PoraStatus); 5] = [
            ("encode_key", &mut |out| unsafe {
                pora_encode_key(b(&commit), 1, b(&miner), key_out.as_mut_ptr(), 32, out)
            }),
            ("mask", &mut |out| unsafe {
                pora_mask(b(&key), kv.as_mut_ptr(), PORA_KV_LEN, out)
            }),
            ("encode_kv", &mut |out| unsafe {
                pora_encode_kv(b(&key), std::ptr::null_mut(), 0, out)
            }),
            ("decode_kv", &mut |out| unsafe {
                pora_decode_kv(b(&key), std::ptr::null_mut(), 0, out)
            }),
            ("fill_empty", &mut |out| unsafe {
                pora_fill_empty(b(path), 0, 1, 1, out)
            }),
        ];
        for (name, call) in calls {
            FAULT.with(|f| f.set(true));
            let mut out = PoraBuf::EMPTY;
            assert_eq!(call(&mut out), PoraStatus::Panic, "{name}");
            let msg = message(&mut out);
            assert!(msg.contains("fault injected"), "{name}: {msg}");
            assert!(msg.contains("encode.rs:"), "{name}: no location in {msg}");
            assert!(
                !FAULT.with(|f| f.get()),
                "{name}: the fault point was not reached"
            );
        }
        // Nothing was written by the calls that panicked first.
        assert_eq!(key_out, [0u8; 32]);
        assert!(kv.iter().all(|&b| b == 0));
    }

    #[test]
    fn preparation_errors_map_to_their_status() {
        let io = || std::io::Error::other("disk on fire");
        let cases = [
            (
                PrepareError::Invalid("x".into()),
                PoraStatus::InvalidArgument,
            ),
            (PrepareError::io("writing", io()), PoraStatus::Io),
            (
                PrepareError::Format(pora_core::Error::BadHeader {
                    path: "f".into(),
                    field: "encodeType",
                    offset: 32,
                    why: "0".into(),
                }),
                PoraStatus::Shard,
            ),
            (PrepareError::Worker("gone"), PoraStatus::Panic),
            (
                PrepareError::Step {
                    step: "fill",
                    source: Box::new(PrepareError::io("reading", io())),
                },
                PoraStatus::Io,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(prepare_status(&e), want, "{e}");
        }
    }
}
