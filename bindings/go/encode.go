//go:build cgo && ((linux && (amd64 || arm64)) || (darwin && (amd64 || arm64)) || (windows && amd64))

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
package porago

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
// be exactly KVSize bytes: the bytes an empty KV holds on disk. About 5 ms of one core with
// AVX-512 IFMA, 27 ms without (docs/BENCHMARKS.md 20); safe to call from many goroutines at once. A wrong length is ErrInvalidArgument and out is
// left as it was.
func Mask(key [32]byte, out []byte) error {
	var msg C.PoraBuf
	status := C.pora_mask(goBytes(key[:]), goOut(out), C.size_t(len(out)), &msg)
	_, err := result("mask", status, &msg)
	return err
}

// EncodeKernel names the encoder's multiply kernel for this process ("portable", "adx",
// "avx512f" or "ifma"), chosen once (the fastest this CPU runs, or PORA_ENCODE_ARITH) and checked, with every
// kernel this CPU could run. A bad PORA_ENCODE_ARITH (an unknown name, or a kernel this CPU
// lacks) is ErrInvalidArgument naming the variable: call it (or NewEncoder) before writing the
// first KV, so a bad setting stops the program there rather than failing every mask later.
func EncodeKernel() (kernel string, supported []string, err error) {
	var out C.PoraBuf
	data, err := result("encode kernel", C.pora_encode_kernel(&out), &out)
	if err != nil {
		return "", nil, err
	}
	var rec struct {
		Kernel    string   `json:"kernel"`
		Supported []string `json:"supported"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return "", nil, fmt.Errorf("pora encode kernel: reading the result: %w", err)
	}
	return rec.Kernel, rec.Supported, nil
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

// FillEmpty fills KVs kvStart..kvEnd (global KV indices, end exclusive) of the existing
// encodeType-3 data file at path with their empty masks for the miner in its header, and marks
// each "filled, commit 0" in its meta entry once its data is synced: what `pora create FILE
// --fill empty --resume --kv-range A..B` does with flags matching the file's header. KVs
// already holding their mask are skipped and KVs holding a blob are never touched, so a call
// may be repeated or resumed after an interruption. threads mask workers, 1 to 256 or 0 for
// every CPU. It blocks until done (about 5 ms of one core per KV with IFMA, 27 ms without): run it on its own goroutine.
//
// Refused before anything is written, with a message naming the file and field: a file that is
// not an encodeType-3 data file with 128 KiB KVs (ErrShard), a range empty or outside the
// file's KVs (ErrInvalidArgument), a missing or unreadable file (ErrIO).
func FillEmpty(path string, kvStart, kvEnd uint64, threads int) (FillReport, error) {
	if err := checkFillThreads("fill empty", threads); err != nil {
		return FillReport{}, err
	}
	p, owned := newCBytes([]byte(path))
	defer owned.free()
	var out C.PoraBuf
	status := C.pora_fill_empty(p, C.uint64_t(kvStart), C.uint64_t(kvEnd), C.uint32_t(threads), &out)
	return fillReport("fill empty", status, &out)
}

// FillEmptyKVs fills exactly the KVs kvIdxs (global indices, any order, none twice) of the
// existing encodeType-3 data file at path with their empty masks and marks each "filled,
// commit 0", whatever the file holds there: es-node's CommitEmptyBlobs view, where the contract
// says which KVs are empty (es-node v0.2.10 overwrites such a KV; FillEmpty skips one whose meta
// entry says it holds a blob or its mask). Nothing is skipped (Skipped 0); KVStart..KVEnd is the
// span of kvIdxs. Refused before anything is written, as FillEmpty is, and for an empty list, a
// KV named twice or one outside the file (ErrInvalidArgument).
func FillEmptyKVs(path string, kvIdxs []uint64, threads int) (FillReport, error) {
	if err := checkFillThreads("fill empty kvs", threads); err != nil {
		return FillReport{}, err
	}
	if len(kvIdxs) == 0 {
		return FillReport{}, &Error{Status: StatusInvalidArgument, Op: "fill empty kvs", Message: "kvIdxs: no KV named"}
	}
	p, owned := newCBytes([]byte(path))
	defer owned.free()
	kvs := (*C.uint64_t)(C.malloc(C.size_t(len(kvIdxs)) * 8))
	defer C.free(unsafe.Pointer(kvs))
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(kvs)), len(kvIdxs)), kvIdxs)
	var out C.PoraBuf
	status := C.pora_fill_empty_kvs(p, kvs, C.size_t(len(kvIdxs)), C.uint32_t(threads), &out)
	return fillReport("fill empty kvs", status, &out)
}

// checkFillThreads refuses what would not survive the conversion to uint32 (pora checks 256).
func checkFillThreads(op string, threads int) error {
	if threads < 0 || uint64(threads) > math.MaxUint32 {
		return &Error{Status: StatusInvalidArgument, Op: op, Message: fmt.Sprintf("threads %d: 0 (every CPU) up to 256", threads)}
	}
	return nil
}

func fillReport(op string, status uint32, out *C.PoraBuf) (FillReport, error) {
	data, err := result(op, status, out)
	if err != nil {
		return FillReport{}, err
	}
	var report FillReport
	if err := json.Unmarshal(data, &report); err != nil {
		return FillReport{}, fmt.Errorf("pora %s: reading the result: %w", op, err)
	}
	report.Raw = data
	return report, nil
}
