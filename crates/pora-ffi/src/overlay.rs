//! Slot overlays through the C ABI: KVs whose current bytes live in the caller's memory (es-node's
//! blob cache: blobs downloaded, encoded with the miner's key, not yet finalized into the data
//! file). A caller makes one overlay, keeps it in step with its cache between slots (put a KV
//! when it arrives, retain the cache's KV set when entries leave), and names it in
//! `PoraSlotParams.overlay`: samples inside those KVs then come from the overlay, not the file.
//!
//! Why an id and copies made once, not bytes per slot or a read-through callback: a KV is copied
//! in once when the cache gains it (128 KiB, about the cost of one of es-node's own encodes'
//! memcpy), a slot takes a snapshot by reference count, and the worker looks reads up in memory
//! without ever calling back into Go from a Rust thread (cgo callbacks from foreign threads cost
//! microseconds and can deadlock a runtime that is stopping).

use crate::buf::{PoraBuf, PoraBytes};
use crate::failure::Failure;
use crate::guard;
use crate::params::PoraDifficulty;
use crate::registry::{self, lock};
use crate::PoraStatus;
use std::sync::Arc;

/// Largest KV an overlay takes: es-node's KVs are 128 KiB; 2^30 bounds a caller's mistake.
const MAX_KV_BYTES: usize = 1 << 30;

/// A new, empty overlay in `*overlay`.
///
/// # Safety
/// `overlay` and `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn pora_overlay_new(overlay: *mut u64, out: *mut PoraBuf) -> PoraStatus {
    guard::call(out, || {
        if overlay.is_null() {
            return Err(Failure::invalid("overlay: null pointer"));
        }
        *overlay = registry::add_overlay();
        Ok(Vec::new())
    })
}

/// Sets KV `kv_idx` (global KV index, `sampleIdx >> (kvSizeBits - 5)`) to a copy of `data`: its
/// current encoded bytes, exactly one KV (`maxKvSize` bytes; checked against the shard when a
/// slot uses the overlay). Replaces earlier bytes of that KV.
///
/// # Safety
/// `data` must be valid for its length; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn pora_overlay_put(
    overlay: u64,
    kv_idx: u64,
    data: PoraBytes,
    out: *mut PoraBuf,
) -> PoraStatus {
    guard::call(out, || {
        let target = registry::overlay(overlay)?;
        let bytes = data.as_slice("data")?;
        if !bytes.len().is_power_of_two() || bytes.len() < 32 || bytes.len() > MAX_KV_BYTES {
            return Err(Failure::invalid(format!(
                "data: {} bytes for KV {kv_idx}; a KV is a power of two of 32 to {MAX_KV_BYTES} bytes",
                bytes.len()
            )));
        }
        let bytes: Arc<[u8]> = Arc::from(bytes);
        Arc::make_mut(&mut lock(&target)).insert(kv_idx, bytes);
        Ok(Vec::new())
    })
}

/// Keeps only the KVs listed in `kv_idxs` (`len` of them; null with 0 keeps none): what a caller
/// does when entries left its cache (finalized into the file). `out` holds
/// `{"kvs":N,"removed":M}`.
///
/// # Safety
/// `kv_idxs` must be null or valid for `len` values; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn pora_overlay_retain(
    overlay: u64,
    kv_idxs: *const u64,
    len: usize,
    out: *mut PoraBuf,
) -> PoraStatus {
    guard::call(out, || {
        let target = registry::overlay(overlay)?;
        let keep: &[u64] = match (kv_idxs.is_null(), len) {
            (_, 0) => &[],
            (true, _) => return Err(Failure::invalid("kv_idxs: null pointer with len > 0")),
            (false, n) => std::slice::from_raw_parts(kv_idxs, n),
        };
        let keep: std::collections::BTreeSet<u64> = keep.iter().copied().collect();
        let mut guard = lock(&target);
        let gone: Vec<u64> = guard.kv_indices().filter(|k| !keep.contains(k)).collect();
        let overlay = Arc::make_mut(&mut guard);
        for kv in &gone {
            overlay.remove(*kv);
        }
        let summary = serde_json::json!({"kvs": overlay.len(), "removed": gone.len()});
        Ok(summary.to_string().into_bytes())
    })
}

/// Drops KV `kv_idx` from the overlay (its bytes are in the data file now, or the cache let it
/// go): later slots read it from the file. `out` holds `{"kvs":N,"removed":0|1}`; dropping a KV
/// the overlay does not hold is not an error (removed 0).
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn pora_overlay_drop(
    overlay: u64,
    kv_idx: u64,
    out: *mut PoraBuf,
) -> PoraStatus {
    guard::call(out, || {
        let target = registry::overlay(overlay)?;
        let mut guard = lock(&target);
        let removed =
            guard.kv_indices().any(|k| k == kv_idx) && Arc::make_mut(&mut guard).remove(kv_idx);
        let summary = serde_json::json!({"kvs": guard.len(), "removed": u8::from(removed)});
        Ok(summary.to_string().into_bytes())
    })
}

/// `pora_hash` with the samples inside `overlay`'s KVs taken from memory, exactly as a slot with
/// that overlay reads them (overlay 0: the files only): checks a nonce found with a blob cache.
///
/// # Safety
/// Pointers must be null or valid; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn pora_hash_overlay(
    handle: u64,
    shard: u64,
    randao: PoraBytes,
    nonce: u64,
    difficulty: *const PoraDifficulty,
    overlay: u64,
    out: *mut PoraBuf,
) -> PoraStatus {
    guard::call(out, || {
        crate::exports::hash_json(handle, shard, &randao, nonce, difficulty, overlay)
    })
}

/// Frees an overlay. A slot running with it keeps its snapshot. Freeing twice returns
/// PORA_STATUS_CLOSED.
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn pora_overlay_free(overlay: u64, out: *mut PoraBuf) -> PoraStatus {
    guard::call(out, || {
        registry::remove_overlay(overlay)?;
        Ok(Vec::new())
    })
}
