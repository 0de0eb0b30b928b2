/*
 * pora.h: the stable C ABI of pora, the EthStorage proof-of-random-access miner.
 *
 * Conventions (see crates/pora-ffi/src/lib.rs):
 *  - Every call returns a PoraStatus. Calls that produce something write it to the PoraBuf *out
 *    (JSON, UTF-8); on any status other than PORA_STATUS_OK, *out holds the error message instead.
 *    Whatever pora puts in a PoraBuf is freed with pora_buf_free, exactly once.
 *  - Binary results (pora_encode_key, pora_mask, pora_encode_kv, pora_decode_kv) go into bytes
 *    the caller owns, pointer + length; a wrong length is PORA_STATUS_INVALID_ARGUMENT naming the
 *    argument and the expected length, and nothing is written. *out then carries only messages.
 *  - Inputs are borrowed for the duration of the call: byte strings as pointer + length, never
 *    NUL-terminated. Nothing the caller passes is kept.
 *  - Shard handles and cancel tokens are 64-bit ids, never reused; a closed, freed, unknown or
 *    wrong-kind id is reported (PORA_STATUS_CLOSED / PORA_STATUS_INVALID_ARGUMENT), not undefined.
 *  - Panics inside pora become PORA_STATUS_PANIC with the panic message; nothing unwinds into
 *    the caller and nothing aborts the process.
 */

#ifndef PORA_H
#define PORA_H

/* Generated from crates/pora-ffi/src by cbindgen (crates/pora-ffi/tests/header.rs). Do not edit: run `PORA_BLESS=1 cargo test -p pora-ffi --test header`. */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

// Version of this ABI; bumped on any incompatible change to a signature, struct or status.
// Callers compare [`pora_abi_version`] with the header's value before anything else.
#define PORA_ABI_VERSION 4

// Length in bytes of a randao (a 32-byte hash).
#define PORA_RANDAO_LEN 32

// Length in bytes of a miner address.
#define PORA_ADDRESS_LEN 20

// Length in bytes of one KV of an encodeType-3 shard (a blob, 4096 words of 32 bytes), and so of
// its mask: what `pora_mask` writes and `pora_encode_kv` takes.
#define PORA_KV_LEN 131072

// Length in bytes of an encode key (`pora_encode_key`'s result, the key of `pora_mask`).
#define PORA_ENCODE_KEY_LEN 32

// Length in bytes of the commit `pora_encode_key` takes (es-node's `common.Hash`; only the first
// 24 bytes enter the key).
#define PORA_COMMIT_LEN 32

// es-node's nonces per shard and slot: `nonce_end` when a caller has no other range.
#define PORA_DEFAULT_NONCES_PER_SLOT 1048576

// es-node's slot length, milliseconds: a whole slot's `PoraSlotParams.deadline_remaining_ns`
// is this x 1,000,000.
#define PORA_DEFAULT_SLOT_LENGTH_MS 12000

// Longest slot one call mines, milliseconds (one day).
#define PORA_MAX_SLOT_LENGTH_MS 86400000

// Samples per nonce when `PoraOpenOptions.random_checks` is 0.
#define PORA_DEFAULT_RANDOM_CHECKS 2

// Most samples per nonce.
#define PORA_MAX_RANDOM_CHECKS 64

// Most worker threads.
#define PORA_MAX_THREADS 1024

// Most reads in flight per thread.
#define PORA_MAX_DEPTH 65536

// es-node's cutoff, seconds: `PoraDifficulty.cutoff` when 0.
#define PORA_DEFAULT_CUTOFF 7200

// es-node's diffAdjDivisor: `PoraDifficulty.diff_adj_divisor` when 0.
#define PORA_DEFAULT_DIFF_ADJ_DIVISOR 32

// es-node's minimumDiff: `PoraDifficulty.minimum_diff` when all zero.
#define PORA_DEFAULT_MINIMUM_DIFF 10485760

// What a call did. Every status but `Ok` comes with a message in the call's `out` buffer.
typedef enum PoraStatus {
  // Success; `out` holds the result (or nothing, for calls without one).
  PORA_STATUS_OK = 0,
  // A null pointer, a wrong length, an unknown enum value, a bad option, a shard not in the
  // set, an id of the wrong kind or never issued, a buffer pora did not hand out.
  PORA_STATUS_INVALID_ARGUMENT = 1,
  // Opening or reading the shard files failed (a missing file, a sample read under
  // `on_io_error` stop).
  PORA_STATUS_IO = 2,
  // The files are not a usable shard (bad header, wrong size, duplicate shard).
  PORA_STATUS_SHARD = 3,
  // A slot is already running on this shard set: one slot at a time per handle.
  PORA_STATUS_BUSY = 4,
  // The handle or cancel token was closed or freed (also: closed while the slot ran; the
  // slot's results are then discarded).
  PORA_STATUS_CLOSED = 5,
  // pora panicked; the message says where. Nothing unwound into the caller; close the handle
  // and open the shards again before mining on.
  PORA_STATUS_PANIC = 6,
} PoraStatus;

// Values of `PoraSlotParams.find`.
typedef enum PoraFind {
  // Stop each shard's slot at its first valid nonce (es-node's behaviour).
  PORA_FIND_FIRST = 0,
  // Try every nonce, report the lowest hash1.
  PORA_FIND_BEST = 1,
  // Try every nonce, report every valid one.
  PORA_FIND_ALL = 2,
} PoraFind;

// Values of `PoraDifficulty.kind`.
typedef enum PoraDiffKind {
  // No difficulty: no nonce is valid (throughput runs).
  PORA_DIFF_KIND_NONE = 0,
  // `required_diff` is the threshold hash1 must not exceed.
  PORA_DIFF_KIND_REQUIRED = 1,
  // Compute requiredDiff from the contract's inputs (difficulty, interval, cutoff, ...).
  PORA_DIFF_KIND_INPUTS = 2,
} PoraDiffKind;

// Values of `PoraOpenOptions.on_io_error`.
typedef enum PoraOnIoError {
  // Re-issue a failed read a few times, then drop the nonce.
  PORA_ON_IO_ERROR_RETRY = 0,
  // Drop the nonce at once.
  PORA_ON_IO_ERROR_SKIP = 1,
  // End the slot with PORA_STATUS_IO.
  PORA_ON_IO_ERROR_STOP = 2,
} PoraOnIoError;

// Values of `PoraOpenOptions.profile`.
typedef enum PoraProfileSource {
  // `<first file>.pora-profile.toml` when it exists (what `pora tune` writes).
  PORA_PROFILE_SOURCE_BESIDE_FIRST_FILE = 0,
  // The file at `profile_path`, which must exist.
  PORA_PROFILE_SOURCE_AT = 1,
  // No profile.
  PORA_PROFILE_SOURCE_IGNORE = 2,
} PoraProfileSource;

// Values of `pora_name_inputs`'s `names`.
typedef enum PoraInputNames {
  // The C structs' field names (the default).
  PORA_INPUT_NAMES_C = 0,
  // The Go package's field names.
  PORA_INPUT_NAMES_GO = 1,
} PoraInputNames;

// Bytes allocated by pora (a JSON result or an error message, UTF-8, not NUL-terminated).
// Empty is `{NULL, 0}`. Free with `pora_buf_free` once.
typedef struct PoraBuf {
  uint8_t *ptr;
  size_t len;
} PoraBuf;

// A borrowed byte string: `len` bytes at `ptr`. `ptr` may be null only when `len` is 0.
typedef struct PoraBytes {
  const uint8_t *ptr;
  size_t len;
} PoraBytes;

// How to open a shard set. All zero (and empty byte strings) = pora's defaults.
typedef struct PoraOpenOptions {
  // Access method name as `pora mine --method` takes it ("auto", "pread", "uring-direct",
  // "mmap", "sim", ...); empty = "auto".
  struct PoraBytes method;
  // Worker threads; 0 = the profile's, else the method's default.
  uint32_t threads;
  // Reads in flight per thread; 0 = the profile's, else the method's default.
  uint32_t depth;
  // Samples per nonce; 0 = `PORA_DEFAULT_RANDOM_CHECKS` (es-node's).
  uint32_t random_checks;
  // A `PoraOnIoError` value.
  uint32_t on_io_error;
  // Shard size as log2(KVs); 0 = inferred from the files.
  uint32_t kv_entries_bits;
  // A `PoraProfileSource` value.
  uint32_t profile;
  // The profile file for `PORA_PROFILE_SOURCE_AT`.
  struct PoraBytes profile_path;
  // Miner address for hash0 (20 bytes); empty = the files' miner.
  struct PoraBytes miner;
  // Simulated disk (`method` "sim", only in libraries built with the `sim` cargo feature)
  // only: latency range of every read, microseconds.
  uint32_t sim_latency_us_min;
  uint32_t sim_latency_us_max;
  // Simulated disk only: seed of its random choices.
  uint64_t sim_seed;
} PoraOpenOptions;

// The difficulty of a slot (or of one hashed nonce). 256-bit values are big-endian.
typedef struct PoraDifficulty {
  // A `PoraDiffKind` value.
  uint32_t kind;
  // For `PORA_DIFF_KIND_REQUIRED`.
  uint8_t required_diff[32];
  // For `PORA_DIFF_KIND_INPUTS`: the contract's difficulty.
  uint8_t difficulty[32];
  // For `PORA_DIFF_KIND_INPUTS`: blockTime - lastMineTime, seconds.
  uint64_t interval;
  // For `PORA_DIFF_KIND_INPUTS`: 0 = `PORA_DEFAULT_CUTOFF`.
  uint64_t cutoff;
  // For `PORA_DIFF_KIND_INPUTS`: 0 = `PORA_DEFAULT_DIFF_ADJ_DIVISOR`.
  uint64_t diff_adj_divisor;
  // For `PORA_DIFF_KIND_INPUTS`: all zero = `PORA_DEFAULT_MINIMUM_DIFF`.
  uint8_t minimum_diff[32];
} PoraDifficulty;

// One slot to mine on every shard of a handle.
typedef struct PoraSlotParams {
  // The randao mix digest, exactly `PORA_RANDAO_LEN` bytes.
  struct PoraBytes randao;
  // Nonces `nonce_start .. nonce_end` (end exclusive, start < end).
  uint64_t nonce_start;
  uint64_t nonce_end;
  // The time from this call's entry to the caller's deadline, nanoseconds, as the caller
  // measured it immediately before calling (1 ..= `PORA_MAX_SLOT_LENGTH_MS` x 1,000,000; a
  // whole es-node slot is `PORA_DEFAULT_SLOT_LENGTH_MS` x 1,000,000). The call takes its clock
  // first, before anything else: deciding the method, switching it and taking the backends
  // spend the slot's own time, no read is issued after the deadline, and the call returns by
  // it plus the bounded straggler and verification waits (1 s in all).
  uint64_t deadline_remaining_ns;
  // A `PoraFind` value.
  uint32_t find;
  // The slot's number, written into each record's `slot` field.
  uint64_t slot_number;
  struct PoraDifficulty difficulty;
  // An overlay from `pora_overlay_new` whose KVs this slot samples from memory; 0 = none.
  uint64_t overlay;
} PoraSlotParams;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// The encoder's multiply kernel for this process, chosen once (the fastest this CPU runs, or
// `PORA_ENCODE_ARITH`) and checked: `out` holds `{"kernel":"ifma","supported":["portable",...]}`.
// A bad `PORA_ENCODE_ARITH` (an unknown name, or a kernel this CPU lacks) is
// PORA_STATUS_INVALID_ARGUMENT naming the variable. A caller that writes KVs calls this once
// before the first one: every later mask call would fail the same way, and a caller that drops
// their errors (es-node v0.2.10 drops `Encode`'s) would write zeros.
//
// # Safety
// `out` must be writable.
enum PoraStatus pora_encode_kernel(struct PoraBuf *out);

// es-node's `CalcEncodeKey(commit, kvIdx, miner)`: writes the 32-byte encode key of KV `kv_idx`
// (a global KV index) for `miner` into `key` (`key_len` must be `PORA_ENCODE_KEY_LEN`).
// `commit` is exactly `PORA_COMMIT_LEN` (32) bytes, es-node's `common.Hash`: like es-node, only
// its first 24 bytes (the data hash the contract keeps) enter the key and the rest is ignored,
// so a KV's meta entry can be passed as it is. An empty KV has an all-zero commit. The key is
// raw (not reduced mod the field prime), as es-node returns it. `out` stays empty on success.
//
// # Safety
// `commit` and `miner` must be valid borrowed byte strings; `key` null or `key_len` writable
// bytes; `out` writable.
enum PoraStatus pora_encode_key(struct PoraBytes commit,
                                uint64_t kv_idx,
                                struct PoraBytes miner,
                                uint8_t *key,
                                size_t key_len,
                                struct PoraBuf *out);

// Writes the BLOB_POSEIDON mask of encode key `key` (32 bytes, raw as `pora_encode_key` gives
// it) into the caller's `mask`: `mask_len` must be `PORA_KV_LEN` (131072, one KV). These are
// the bytes an empty KV holds on disk (es-node's `encoder.Encode(key, 131072)`). About 5 ms of
// one core with AVX-512 IFMA, about 27 ms without (docs/BENCHMARKS.md 20); safe to call from many threads at once. `out` stays empty on success.
//
// # Safety
// `key` must be a valid borrowed byte string; `mask` null or `mask_len` writable bytes; `out`
// writable.
enum PoraStatus pora_mask(struct PoraBytes key,
                          uint8_t *mask,
                          size_t mask_len,
                          struct PoraBuf *out);

// es-node's `EncodeChunk(131072, data, 3, key)` in place: `data` (`data_len` must be
// `PORA_KV_LEN`, one whole KV) becomes the bytes stored on disk for it, the blob XOR the mask
// of `key`. es-node zero-pads a blob shorter than a KV to the KV size before it encodes (and
// its encoded chunk is always the KV size), so pass such a blob padded with zeros to 131072
// bytes: a shorter `data` is refused rather than half encoded. `out` stays empty on success; on
// failure `data` is unchanged.
//
// # Safety
// `key` must be a valid borrowed byte string; `data` null or `data_len` readable and writable
// bytes; `out` writable.
enum PoraStatus pora_encode_kv(struct PoraBytes key,
                               uint8_t *data,
                               size_t data_len,
                               struct PoraBuf *out);

// es-node's `DecodeChunk(131072, data, 3, key)` in place: the first `data_len` stored bytes of
// a KV (at most `PORA_KV_LEN`) become the blob's first `data_len` bytes, each XOR the mask of
// `key` at the same offset. Like es-node, a prefix may be decoded (reading a blob of `size`
// bytes reads and decodes only those); `data_len` 0 does nothing (`data` may then be null).
// `out` stays empty on success; on failure `data` is unchanged.
//
// # Safety
// `key` must be a valid borrowed byte string; `data` null or `data_len` readable and writable
// bytes; `out` writable.
enum PoraStatus pora_decode_kv(struct PoraBytes key,
                               uint8_t *data,
                               size_t data_len,
                               struct PoraBuf *out);

// Fills KVs `kv_start .. kv_end` (global KV indices, end exclusive) of the existing
// encodeType-3 data file `path` with their empty masks for the miner in the file's header, and
// marks each "filled, commit 0" in its meta entry (`0^24 ‖ 0x80 ‖ 0^7`) once its data is synced:
// what `pora create FILE --fill empty --resume --kv-range A..B` does with flags matching the
// file's header (the same `pora_prepare` code). Resumable: KVs already holding their mask are
// skipped (the last few re-checked), KVs holding a blob are never touched, and an interrupted
// call leaves the header "incomplete" until a later call finishes. `threads` mask workers
// (1..=256; 0 = every CPU). Blocks until done (about 5 ms of one core per KV with AVX-512 IFMA, 27 ms without).
//
// Refused before anything is written, with a message naming the file and field: a file that is
// not an es-node data file or not encodeType 3 with 128 KiB KVs (PORA_STATUS_SHARD), a range
// that is empty or outside the file's KVs (PORA_STATUS_INVALID_ARGUMENT), a missing or
// unreadable file (PORA_STATUS_IO). On success `out` holds `{"file","kvStart","kvEnd","kvs",
// "skipped","refilled","kernel","seconds","threads","msPerKvPerCore","cpuSeconds","cpuMsPerKv"}`
// (`kvs` = KVs written, `kernel` the encoder's multiply kernel).
//
// # Safety
// `path` must be a valid borrowed byte string; `out` writable.
enum PoraStatus pora_fill_empty(struct PoraBytes path,
                                uint64_t kv_start,
                                uint64_t kv_end,
                                uint32_t threads,
                                struct PoraBuf *out);

// Fills exactly the KVs named in `kv_idxs` (`len` global KV indices, any order, none twice) of
// the existing encodeType-3 data file `path` with their empty masks and marks each "filled,
// commit 0", whatever the file holds there: es-node's `CommitEmptyBlobs` view, where the
// contract says which KVs are empty (es-node v0.2.10 overwrites such a KV even when the file
// holds a blob there; `pora_fill_empty` would skip it by its meta entry). Checked before
// anything is written, as `pora_fill_empty` checks (plus: at least one KV, none named twice,
// every one inside the file). `out` holds the same record as `pora_fill_empty`'s, with
// `kvStart`/`kvEnd` the span of the named KVs and `skipped` 0.
//
// # Safety
// `path` must be a valid borrowed byte string; `kv_idxs` null or valid for `len` values; `out`
// writable.
enum PoraStatus pora_fill_empty_kvs(struct PoraBytes path,
                                    const uint64_t *kv_idxs,
                                    size_t len,
                                    uint32_t threads,
                                    struct PoraBuf *out);

// The ABI version of the loaded library (compare with `PORA_ABI_VERSION` from the header).
uint32_t pora_abi_version(void);

// Frees a buffer pora wrote into `*buf` and resets it to `{NULL, 0}`. Freeing an empty buffer
// is a no-op; freeing one twice, or bytes pora did not allocate, returns
// `PORA_STATUS_INVALID_ARGUMENT` and touches nothing.
//
// # Safety
// `buf` must be null or point to a writable `PoraBuf`.
enum PoraStatus pora_buf_free(struct PoraBuf *buf);

// Opens a shard set read-only: `files_len` paths, split into `groups_len` shards of
// `group_sizes[i]` consecutive files each (one group per `--file` of `pora mine`). `options`
// may be null for the defaults. On success `*handle` is the set's id and `out` holds
// `{"shards":[{shard,files,miner,kvEntriesBits,kvSizeBits} per group],"choice":{method,threads,
// depth,profile,why,device,shards,io},"choices":[one such per device],"randomChecks":N,
// "notes":[...]}`: `pora_mine::records::SessionRecord`, as `pora_status` of the service.
//
// # Safety
// Pointers must be null or valid for their lengths; `handle` and `out` writable.
enum PoraStatus pora_open(const struct PoraBytes *files,
                          size_t files_len,
                          const size_t *group_sizes,
                          size_t groups_len,
                          const struct PoraOpenOptions *options,
                          uint64_t *handle,
                          struct PoraBuf *out);

// Closes a shard set. A slot running on it is stopped and returns PORA_STATUS_CLOSED; the files
// are released when that slot returns. Closing twice returns PORA_STATUS_CLOSED.
//
// # Safety
// `out` must be writable.
enum PoraStatus pora_close(uint64_t handle, struct PoraBuf *out);

// One nonce of shard `shard` (the shard index, e.g. 0 for the first 2^kvEntriesBits KVs)
// through the plain single-nonce path: `out` holds what `pora hash --json` prints (hash0,
// sample and KV indices, encoded samples, hash1, and with a difficulty requiredDiff and
// valid). `difficulty` may be null.
//
// # Safety
// Pointers must be null or valid; `out` writable.
enum PoraStatus pora_hash(uint64_t handle,
                          uint64_t shard,
                          struct PoraBytes randao,
                          uint64_t nonce,
                          const struct PoraDifficulty *difficulty,
                          struct PoraBuf *out);

// Mines one slot on every shard of the set. `cancel` is a token from `pora_cancel_new` (0 for
// none): cancelling it ends the slot within about 50 ms with partial counts and
// `"interrupted": true`. `out` holds `{"shards":[...],"ioErrorMessages":[...]}` where each
// shard record is one line of `pora mine --json`, with `endLateMs` (when the answer was built
// against the caller's deadline, ms, negative = early). The deadline is
// `params.deadline_remaining_ns` from the call's entry; the call returns by it + 1 s whatever
// steering or the device does. A second call while a slot runs on the same set returns
// PORA_STATUS_BUSY at once.
//
// # Safety
// `params` must be null or valid; `out` writable.
enum PoraStatus pora_mine_slot(uint64_t handle,
                               const struct PoraSlotParams *params,
                               uint64_t cancel,
                               struct PoraBuf *out);

// A new cancel token in `*token` (not cancelled). One token may serve many slots; once
// cancelled it stays cancelled, so use a fresh one per slot.
//
// # Safety
// `token` and `out` must be writable.
enum PoraStatus pora_cancel_new(uint64_t *token, struct PoraBuf *out);

// Cancels: every slot running with this token stops issuing reads and returns its partial
// counts. Safe to call from any thread, any number of times.
//
// # Safety
// `out` must be writable.
enum PoraStatus pora_cancel(uint64_t token, struct PoraBuf *out);

// Frees a cancel token. A slot still running with it keeps its own reference and can still be
// cancelled by closing its handle. Freeing twice returns PORA_STATUS_CLOSED.
//
// # Safety
// `out` must be writable.
enum PoraStatus pora_cancel_free(uint64_t token, struct PoraBuf *out);

// Sets how this process's messages name inputs: a `PoraInputNames` value. Call it once, before
// anything else (the Go package does, at init).
//
// # Safety
// `out` must be writable.
enum PoraStatus pora_name_inputs(uint32_t names, struct PoraBuf *out);

// A new, empty overlay in `*overlay`.
//
// # Safety
// `overlay` and `out` must be writable.
enum PoraStatus pora_overlay_new(uint64_t *overlay, struct PoraBuf *out);

// Sets KV `kv_idx` (global KV index, `sampleIdx >> (kvSizeBits - 5)`) to a copy of `data`: its
// current encoded bytes, exactly one KV (`maxKvSize` bytes; checked against the shard when a
// slot uses the overlay). Replaces earlier bytes of that KV.
//
// # Safety
// `data` must be valid for its length; `out` writable.
enum PoraStatus pora_overlay_put(uint64_t overlay,
                                 uint64_t kv_idx,
                                 struct PoraBytes data,
                                 struct PoraBuf *out);

// Keeps only the KVs listed in `kv_idxs` (`len` of them; null with 0 keeps none): what a caller
// does when entries left its cache (finalized into the file). `out` holds
// `{"kvs":N,"removed":M}`.
//
// # Safety
// `kv_idxs` must be null or valid for `len` values; `out` writable.
enum PoraStatus pora_overlay_retain(uint64_t overlay,
                                    const uint64_t *kv_idxs,
                                    size_t len,
                                    struct PoraBuf *out);

// Drops KV `kv_idx` from the overlay (its bytes are in the data file now, or the cache let it
// go): later slots read it from the file. `out` holds `{"kvs":N,"removed":0|1}`; dropping a KV
// the overlay does not hold is not an error (removed 0).
//
// # Safety
// `out` must be writable.
enum PoraStatus pora_overlay_drop(uint64_t overlay, uint64_t kv_idx, struct PoraBuf *out);

// `pora_hash` with the samples inside `overlay`'s KVs taken from memory, exactly as a slot with
// that overlay reads them (overlay 0: the files only): checks a nonce found with a blob cache.
//
// # Safety
// Pointers must be null or valid; `out` writable.
enum PoraStatus pora_hash_overlay(uint64_t handle,
                                  uint64_t shard,
                                  struct PoraBytes randao,
                                  uint64_t nonce,
                                  const struct PoraDifficulty *difficulty,
                                  uint64_t overlay,
                                  struct PoraBuf *out);

// Frees an overlay. A slot running with it keeps its snapshot. Freeing twice returns
// PORA_STATUS_CLOSED.
//
// # Safety
// `out` must be writable.
enum PoraStatus pora_overlay_free(uint64_t overlay, struct PoraBuf *out);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* PORA_H */
