//! pora-ffi: the stable C ABI over the pora miner, so es-node (Go, over cgo) and any C caller
//! mine in-process through the same library path as the `pora` CLI. The header
//! `include/pora.h` is generated from this crate by cbindgen and checked by `tests/header.rs`.
//!
//! Conventions, the same for every call:
//! - One result convention: every call returns a [`PoraStatus`]; a call that produces something
//!   writes it into the caller's [`PoraBuf`] (`out`, UTF-8 JSON), and on any other status `out`
//!   holds the error message instead. Buffers are allocated by pora and freed by
//!   [`pora_buf_free`]; pora remembers the buffers it handed out, so freeing one twice, or a
//!   pointer pora never made, is reported rather than undefined.
//! - Binary results (an encode key, a 128 KiB mask, an encoded KV: [`encode`]) are written into
//!   bytes the caller owns, pointer + length, checked against the one right length before
//!   anything is written; `out` then carries only the error message.
//! - Inputs are borrowed as pointer + length for the duration of the call (paths are bytes,
//!   never NUL-terminated) and nothing is kept.
//! - Shard sets and cancel tokens are 64-bit ids in a registry ([`registry`]), with the kind in
//!   the top byte and never reused: use after close, double close and wrong-kind ids are
//!   detected.
//! - Defaults and limits are the library's, exported as `PORA_DEFAULT_*` / `PORA_MAX_*`
//!   ([`defaults`]); messages name the C fields (or the Go package's, [`names`]).
//! - Every entry point runs inside [`guard::call`]: a panic becomes [`PoraStatus::Panic`] with
//!   its formatted message, never unwinds into C and never aborts.

mod buf;
mod defaults;
mod encode;
mod exports;
mod failure;
mod guard;
mod names;
mod overlay;
mod params;
mod registry;

pub use buf::{PoraBuf, PoraBytes};
pub use defaults::*;
pub use encode::{
    pora_decode_kv, pora_encode_kernel, pora_encode_key, pora_encode_kv, pora_fill_empty,
    pora_fill_empty_kvs, pora_mask,
};
pub use exports::{
    pora_abi_version, pora_buf_free, pora_cancel, pora_cancel_free, pora_cancel_new, pora_close,
    pora_hash, pora_mine_slot, pora_open,
};
pub use names::{pora_name_inputs, PoraInputNames};
pub use overlay::{
    pora_hash_overlay, pora_overlay_drop, pora_overlay_free, pora_overlay_new, pora_overlay_put,
    pora_overlay_retain,
};
pub use params::{
    PoraDiffKind, PoraDifficulty, PoraFind, PoraOnIoError, PoraOpenOptions, PoraProfileSource,
    PoraSlotParams,
};

/// Version of this ABI; bumped on any incompatible change to a signature, struct or status.
/// Callers compare [`pora_abi_version`] with the header's value before anything else.
pub const PORA_ABI_VERSION: u32 = 4;

/// Length in bytes of a randao (a 32-byte hash).
pub const PORA_RANDAO_LEN: usize = 32;

/// Length in bytes of a miner address.
pub const PORA_ADDRESS_LEN: usize = 20;

/// Length in bytes of one KV of an encodeType-3 shard (a blob, 4096 words of 32 bytes), and so of
/// its mask: what `pora_mask` writes and `pora_encode_kv` takes.
pub const PORA_KV_LEN: usize = 131072;

/// Length in bytes of an encode key (`pora_encode_key`'s result, the key of `pora_mask`).
pub const PORA_ENCODE_KEY_LEN: usize = 32;

/// Length in bytes of the commit `pora_encode_key` takes (es-node's `common.Hash`; only the first
/// 24 bytes enter the key).
pub const PORA_COMMIT_LEN: usize = 32;

/// What a call did. Every status but `Ok` comes with a message in the call's `out` buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoraStatus {
    /// Success; `out` holds the result (or nothing, for calls without one).
    Ok = 0,
    /// A null pointer, a wrong length, an unknown enum value, a bad option, a shard not in the
    /// set, an id of the wrong kind or never issued, a buffer pora did not hand out.
    InvalidArgument = 1,
    /// Opening or reading the shard files failed (a missing file, a sample read under
    /// `on_io_error` stop).
    Io = 2,
    /// The files are not a usable shard (bad header, wrong size, duplicate shard).
    Shard = 3,
    /// A slot is already running on this shard set: one slot at a time per handle.
    Busy = 4,
    /// The handle or cancel token was closed or freed (also: closed while the slot ran; the
    /// slot's results are then discarded).
    Closed = 5,
    /// pora panicked; the message says where. Nothing unwound into the caller; close the handle
    /// and open the shards again before mining on.
    Panic = 6,
}
