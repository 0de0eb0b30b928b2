// The encoder es-node stores blobs with (BLOB_POSEIDON, encodeType 3) through libpora: the
// encode key (es-node's CalcEncodeKey), one KV's mask, EncodeChunk/DecodeChunk of one KV in
// place, and the empty fill of a KV range of a data file (`pora create --fill empty`).
//
// Unlike the mining calls, which copy their inputs into C memory, these pass Go memory to C:
// the 128 KiB buffers are written by pora where the caller wants them, with no copy and no
// allocation. cgo allows it: a Go pointer may be passed to C for the duration of a call when
// the memory it points to holds no Go pointers (a []byte or [N]byte never does). pora keeps
// nothing after the call returns, so nothing needs pinning beyond the call, and the caller may
// reuse the slice at once.
package pora

/*
#include <stdlib.h>
#include "pora.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"math"
	"unsafe"
)

// KVSize is the bytes of one KV of an encodeType-3 shard (one blob) and of its mask.
const KVSize = int(C.PORA_KV_LEN)

// goBytes borrows b for one call as a PoraBytes (nil pointer when empty, which pora reads as
// no bytes).
func goBytes(b []byte) C.PoraBytes {
	if len(b) == 0 {
		return C.PoraBytes{}
	}
	return C.PoraBytes{ptr: (*C.uint8_t)(unsafe.Pointer(&b[0])), len: C.size_t(len(b))}
}

// goOut is b's first byte for C to write (nil when empty: pora then reports the wrong length).
func goOut(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// EncodeKey is es-node's CalcEncodeKey(commit, kvIdx, miner): the raw 32-byte key of global KV
// kvIdx for miner. Like es-node, only the first 24 bytes of commit (the data hash the contract
// keeps) enter the key, so a KV's 32-byte meta entry may be passed as it is; an empty KV has
// the zero commit.
//
// It cannot fail on any input: every length is fixed by its type. A failure reported by
// libpora here would be a bug in the library, and EncodeKey panics with its *Error rather than
// return a key that would mis-encode data.
func EncodeKey(commit [32]byte, kvIdx uint64, miner [20]byte) [32]byte {
	var key [32]byte
	var out C.PoraBuf
	status := C.pora_encode_key(goBytes(commit[:]), C.uint64_t(kvIdx), goBytes(miner[:]),
		goOut(key[:]), C.size_t(len(key)), &out)
	if _, err := result("encode key", status, &out); err != nil {
		panic(err)
	}
	return key
}

// Mask writes the BLOB_POSEIDON mask of key (raw, as EncodeKey returns it) into out, which must
// be exactly KVSize bytes: the bytes an empty KV holds on disk. About 35-40 ms of one core;
// safe to call from many goroutines at once. A wrong length is ErrInvalidArgument and out is
// left as it was.
func Mask(key [32]byte, out []byte) error {
	var msg C.PoraBuf
	status := C.pora_mask(goBytes(key[:]), goOut(out), C.size_t(len(out)), &msg)
	_, err := result("mask", status, &msg)
	return err
}

// EncodeKV is es-node's EncodeChunk(KVSize, data, 3, key) in place: data, exactly KVSize bytes,
// becomes the bytes stored on disk for it (the blob XOR the mask of key). es-node zero-pads a
// blob shorter than a KV before encoding it, and so must the caller: a shorter data is
// ErrInvalidArgument and left as it was.
func EncodeKV(key [32]byte, data []byte) error {
	var msg C.PoraBuf
	status := C.pora_encode_kv(goBytes(key[:]), goOut(data), C.size_t(len(data)), &msg)
	_, err := result("encode kv", status, &msg)
	return err
}

// DecodeKV is es-node's DecodeChunk(KVSize, data, 3, key) in place: the first len(data) stored
// bytes of a KV (at most KVSize) become the blob's first len(data) bytes. Like es-node, a prefix
// may be decoded (a blob of size bytes: data[:size]); empty data does nothing.
func DecodeKV(key [32]byte, data []byte) error {
	var msg C.PoraBuf
	status := C.pora_decode_kv(goBytes(key[:]), goOut(data), C.size_t(len(data)), &msg)
	_, err := result("decode kv", status, &msg)
	return err
}

// FillReport is what FillEmpty did: `pora create --fill empty --json`'s record plus the request.
type FillReport struct {
	File    string `json:"file"`
	KVStart uint64 `json:"kvStart"`
	KVEnd   uint64 `json:"kvEnd"`
	// KVs is how many KVs were written; Skipped those of the range left alone (they already
	// held their mask, or a blob). Refilled counts KVs marked filled that did not hold their
	// mask and were written again (part of KVs).
	KVs      uint64  `json:"kvs"`
	Skipped  uint64  `json:"skipped"`
	Refilled uint64  `json:"refilled"`
	Seconds  float64 `json:"seconds"`
	Threads  int     `json:"threads"`
	// MsPerKVPerCore is wall time per KV times threads.
	MsPerKVPerCore float64 `json:"msPerKvPerCore"`
	// CPUSeconds and CPUMsPerKV are the process's CPU time, where the OS reports it.
	CPUSeconds *float64 `json:"cpuSeconds"`
	CPUMsPerKV *float64 `json:"cpuMsPerKv"`
	// Raw is the record as pora produced it.
	Raw json.RawMessage `json:"-"`
}

// FillEmpty fills KVs kvStart..kvEnd (global KV indices, end exclusive) of the existing
// encodeType-3 data file at path with their empty masks for the miner in its header, and marks
// each "filled, commit 0" in its meta entry once its data is synced: what `pora create FILE
// --fill empty --resume --kv-range A..B` does with flags matching the file's header. KVs
// already holding their mask are skipped and KVs holding a blob are never touched, so a call
// may be repeated or resumed after an interruption. threads mask workers, 1 to 256 or 0 for
// every CPU. It blocks until done (about 35-40 ms of one core per KV): run it on its own goroutine.
//
// Refused before anything is written, with a message naming the file and field: a file that is
// not an encodeType-3 data file with 128 KiB KVs (ErrShard), a range empty or outside the
// file's KVs (ErrInvalidArgument), a missing or unreadable file (ErrIO).
func FillEmpty(path string, kvStart, kvEnd uint64, threads int) (FillReport, error) {
	// pora checks the upper bound; here only what would not survive the conversion to uint32.
	if threads < 0 || uint64(threads) > math.MaxUint32 {
		return FillReport{}, &Error{Status: StatusInvalidArgument, Op: "fill empty",
			Message: fmt.Sprintf("threads %d: 0 (every CPU) up to 256", threads)}
	}
	p, owned := newCBytes([]byte(path))
	defer owned.free()
	var out C.PoraBuf
	status := C.pora_fill_empty(p, C.uint64_t(kvStart), C.uint64_t(kvEnd), C.uint32_t(threads), &out)
	data, err := result("fill empty", status, &out)
	if err != nil {
		return FillReport{}, err
	}
	var report FillReport
	if err := json.Unmarshal(data, &report); err != nil {
		return FillReport{}, fmt.Errorf("pora fill empty: reading the result: %w", err)
	}
	report.Raw = data
	return report, nil
}
