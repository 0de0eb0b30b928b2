//! The exported functions: version, open/close, hash one nonce, mine one slot, cancel tokens.
//! Each is a thin shell: check arguments, run the pora-mine call inside [`guard::call`], and
//! return the records every front end shares (`pora_mine::records`) as JSON.

use crate::buf::{PoraBuf, PoraBytes};
use crate::failure::{json, mine_failure, Failure, Outcome};
use crate::guard;
use crate::params::{self, PoraDifficulty, PoraOpenOptions, PoraSlotParams};
use crate::registry::{self, Shards};
use crate::{PoraStatus, PORA_ABI_VERSION};
use pora_core::keccak::BatchKernel;
use pora_mine::session::Session;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The ABI version of the loaded library (compare with `PORA_ABI_VERSION` from the header).
#[no_mangle]
pub extern "C" fn pora_abi_version() -> u32 {
    PORA_ABI_VERSION
}

/// Frees a buffer pora wrote into `*buf` and resets it to `{NULL, 0}`. Freeing an empty buffer
/// is a no-op; freeing one twice, or bytes pora did not allocate, returns
/// `PORA_STATUS_INVALID_ARGUMENT` and touches nothing.
///
/// # Safety
/// `buf` must be null or point to a writable `PoraBuf`.
#[no_mangle]
pub unsafe extern "C" fn pora_buf_free(buf: *mut PoraBuf) -> PoraStatus {
    guard::status_only(|| crate::buf::free(buf))
}

/// Opens a shard set read-only: `files_len` paths, split into `groups_len` shards of
/// `group_sizes[i]` consecutive files each (one group per `--file` of `pora mine`). `options`
/// may be null for the defaults. On success `*handle` is the set's id and `out` holds
/// `{"shards":[{shard,files,miner,kvEntriesBits,kvSizeBits} per group],"choice":{method,threads,
/// depth,profile,why,device,shards,io},"choices":[one such per device],"randomChecks":N,
/// "notes":[...]}`: `pora_mine::records::SessionRecord`, as `pora_status` of the service.
///
/// # Safety
/// Pointers must be null or valid for their lengths; `handle` and `out` writable.
#[no_mangle]
pub unsafe extern "C" fn pora_open(
    files: *const PoraBytes,
    files_len: usize,
    group_sizes: *const usize,
    groups_len: usize,
    options: *const PoraOpenOptions,
    handle: *mut u64,
    out: *mut PoraBuf,
) -> PoraStatus {
    guard::call(out, || {
        if handle.is_null() {
            return Err(Failure::invalid("handle: null pointer"));
        }
        *handle = 0;
        let groups = groups(files, files_len, group_sizes, groups_len)?;
        let options = match options.as_ref() {
            Some(o) => o.options()?,
            None => Default::default(),
        };
        // The Keccak kernel a slot will hash with (`PORA_KECCAK`): a bad value is refused here,
        // as the CLI refuses it, instead of falling back silently.
        BatchKernel::from_env().map_err(|e| Failure::invalid(e.to_string()))?;
        let session = Session::open(&groups, &options).map_err(mine_failure)?;
        let result = json(&session.record())?;
        *handle = registry::add_shards(Shards::new(session));
        Ok(result)
    })
}

/// The file groups from the flat list and the group sizes.
unsafe fn groups(
    files: *const PoraBytes,
    files_len: usize,
    group_sizes: *const usize,
    groups_len: usize,
) -> Result<Vec<Vec<PathBuf>>, Failure> {
    if files.is_null() || files_len == 0 {
        return Err(Failure::invalid("files: no files given"));
    }
    if group_sizes.is_null() || groups_len == 0 {
        return Err(Failure::invalid("group_sizes: no groups given"));
    }
    let files = std::slice::from_raw_parts(files, files_len);
    let sizes = std::slice::from_raw_parts(group_sizes, groups_len);
    if sizes.contains(&0)
        || sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s)) != Some(files_len)
    {
        return Err(Failure::invalid(format!(
            "group_sizes {sizes:?}: each must be at least 1 and they must add up to files_len {files_len}"
        )));
    }
    let mut groups = Vec::with_capacity(groups_len);
    let mut at = 0;
    for &size in sizes {
        let group = files[at..at + size]
            .iter()
            .enumerate()
            .map(|(i, f)| params::path(f, &format!("files[{}]", at + i)))
            .collect::<Result<Vec<_>, _>>()?;
        groups.push(group);
        at += size;
    }
    Ok(groups)
}

/// Closes a shard set. A slot running on it is stopped and returns PORA_STATUS_CLOSED; the files
/// are released when that slot returns. Closing twice returns PORA_STATUS_CLOSED.
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn pora_close(handle: u64, out: *mut PoraBuf) -> PoraStatus {
    guard::call(out, || {
        registry::remove_shards(handle)?.close();
        Ok(Vec::new())
    })
}

/// One nonce of shard `shard` (the shard index, e.g. 0 for the first 2^kvEntriesBits KVs)
/// through the plain single-nonce path: `out` holds what `pora hash --json` prints (hash0,
/// sample and KV indices, encoded samples, hash1, and with a difficulty requiredDiff and
/// valid). `difficulty` may be null.
///
/// # Safety
/// Pointers must be null or valid; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn pora_hash(
    handle: u64,
    shard: u64,
    randao: PoraBytes,
    nonce: u64,
    difficulty: *const PoraDifficulty,
    out: *mut PoraBuf,
) -> PoraStatus {
    guard::call(out, || {
        hash_json(handle, shard, &randao, nonce, difficulty, 0)
    })
}

/// The record of `pora_hash` and `pora_hash_overlay` (overlay 0: the files only).
///
/// # Safety
/// `difficulty` must be null or valid; `randao` valid for its length.
pub(crate) unsafe fn hash_json(
    handle: u64,
    shard: u64,
    randao: &PoraBytes,
    nonce: u64,
    difficulty: *const PoraDifficulty,
    overlay: u64,
) -> Outcome {
    let set = registry::shards(handle)?;
    let randao = params::randao(randao)?;
    let required = match difficulty.as_ref() {
        Some(d) => d.required()?,
        None => None,
    };
    let view = registry::overlay_snapshot(overlay)?;
    let record = set
        .session
        .hash_record(shard, &randao, nonce, required, view.as_deref());
    json(&record.map_err(mine_failure)?)
}

/// Mines one slot on every shard of the set. `cancel` is a token from `pora_cancel_new` (0 for
/// none): cancelling it ends the slot within about 50 ms with partial counts and
/// `"interrupted": true`. `out` holds `{"shards":[...],"ioErrorMessages":[...]}` where each
/// shard record is one line of `pora mine --json`, with `endLateMs` (when the answer was built
/// against the caller's deadline, ms, negative = early). The deadline is
/// `params.deadline_remaining_ns` from the call's entry; the call returns by it + 1 s whatever
/// steering or the device does. A second call while a slot runs on the same set returns
/// PORA_STATUS_BUSY at once.
///
/// # Safety
/// `params` must be null or valid; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn pora_mine_slot(
    handle: u64,
    params: *const PoraSlotParams,
    cancel: u64,
    out: *mut PoraBuf,
) -> PoraStatus {
    // The caller's deadline is `deadline_remaining_ns` from here: taken first, so nothing this
    // call does (validation, steering) adds to the slot.
    let entered = Instant::now();
    guard::call(out, || {
        let set = registry::shards(handle)?;
        let params = params
            .as_ref()
            .ok_or_else(|| Failure::invalid("params: null pointer"))?;
        let request = params.request(entered)?;
        let stop = match cancel {
            0 => Arc::new(AtomicBool::new(false)),
            id => registry::cancel(id)?,
        };
        if set.closed.load(Ordering::SeqCst) {
            return Err(Failure::new(PoraStatus::Closed, "shard handle was closed"));
        }
        // The session is the one place that allows one slot at a time (PORA_STATUS_BUSY);
        // closing the handle stops the slot through `closed`.
        let mined = set
            .session
            .mine_slot_until(&request, &[&stop, &set.closed])
            .map_err(mine_failure)?;
        if set.closed.load(Ordering::SeqCst) {
            return Err(Failure::new(
                PoraStatus::Closed,
                format!("shard handle {handle:#x} was closed while the slot ran; its results are discarded"),
            ));
        }
        json(&mined.record_numbered(params.slot_number))
    })
}

/// A new cancel token in `*token` (not cancelled). One token may serve many slots; once
/// cancelled it stays cancelled, so use a fresh one per slot.
///
/// # Safety
/// `token` and `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn pora_cancel_new(token: *mut u64, out: *mut PoraBuf) -> PoraStatus {
    guard::call(out, || {
        if token.is_null() {
            return Err(Failure::invalid("token: null pointer"));
        }
        *token = registry::add_cancel();
        Ok(Vec::new())
    })
}

/// Cancels: every slot running with this token stops issuing reads and returns its partial
/// counts. Safe to call from any thread, any number of times.
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn pora_cancel(token: u64, out: *mut PoraBuf) -> PoraStatus {
    guard::call(out, || {
        registry::cancel(token)?.store(true, Ordering::SeqCst);
        Ok(Vec::new())
    })
}

/// Frees a cancel token. A slot still running with it keeps its own reference and can still be
/// cancelled by closing its handle. Freeing twice returns PORA_STATUS_CLOSED.
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn pora_cancel_free(token: u64, out: *mut PoraBuf) -> PoraStatus {
    guard::call(out, || {
        registry::remove_cancel(token)?;
        Ok(Vec::new())
    })
}
