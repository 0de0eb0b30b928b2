//go:build cgo && ((linux && (amd64 || arm64)) || (darwin && (amd64 || arm64)) || (windows && amd64))

// Package porago mines EthStorage shards in-process through libpora (the Rust miner) over cgo.
// Its name keeps it apart from es-node's own package pora (ethstorage/pora) in files that use
// both; its module path is the one line of go.mod. The static library it links is found per
// GOOS/GOARCH inside the module (link.go): tools/go-lib.sh puts it there from a checkout, the
// release's Go module archive carries it prebuilt.
//
// Open a shard set once, then call MineSlot for each slot: the context's deadline is the slot
// deadline and cancelling the context stops the slot within ~50 ms with partial counts. Hash
// computes one nonce through the plain single-nonce path (what a proof needs). Results are copied
// into Go memory before pora's buffers are freed; a *Shards must be closed with Close (a finalizer
// closes a forgotten one, as a safety net only).
//
// The records are the JSON shapes `pora mine --json` and `pora hash --json` print; each parsed
// record keeps its raw JSON in Raw so callers can forward it unchanged.
package porago

/*
#include <stdlib.h>
#include <string.h>
#include "pora.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// ABIVersion is the C ABI version these bindings were written for.
const ABIVersion = uint32(C.PORA_ABI_VERSION)

// The status codes of pora.h.
const (
	StatusOK              Status = C.PORA_STATUS_OK
	StatusInvalidArgument Status = C.PORA_STATUS_INVALID_ARGUMENT
	StatusIO              Status = C.PORA_STATUS_IO
	StatusShard           Status = C.PORA_STATUS_SHARD
	StatusBusy            Status = C.PORA_STATUS_BUSY
	StatusClosed          Status = C.PORA_STATUS_CLOSED
	StatusPanic           Status = C.PORA_STATUS_PANIC
)

// pora's messages name the Go fields a caller set (Threads, SlotLength), not the C structs'.
func init() {
	var out C.PoraBuf
	if _, err := result("name_inputs", C.pora_name_inputs(C.PORA_INPUT_NAMES_GO, &out), &out); err != nil {
		panic(err) // a known constant: only a library from another ABI refuses it
	}
}

// LibraryABIVersion is the ABI version of the linked libpora; it must equal ABIVersion.
func LibraryABIVersion() uint32 {
	return uint32(C.pora_abi_version())
}

// result turns a status and the out buffer into the copied bytes or an *Error, freeing the buffer.
func result(op string, status uint32, out *C.PoraBuf) ([]byte, error) {
	var data []byte
	if out.ptr != nil {
		data = C.GoBytes(unsafe.Pointer(out.ptr), C.int(out.len))
		C.pora_buf_free(out)
	}
	if Status(status) != StatusOK {
		return nil, &Error{Status: Status(status), Op: op, Message: string(data)}
	}
	return data, nil
}

// cBytes is C memory holding a copy of Go bytes, so no Go pointer is handed to C.
type cBytes struct{ ptr unsafe.Pointer }

func newCBytes(b []byte) (C.PoraBytes, cBytes) {
	if len(b) == 0 {
		return C.PoraBytes{}, cBytes{}
	}
	p := C.CBytes(b)
	return C.PoraBytes{ptr: (*C.uint8_t)(p), len: C.size_t(len(b))}, cBytes{p}
}

func (c cBytes) free() {
	if c.ptr != nil {
		C.free(c.ptr)
	}
}

// openRecord is pora_open's answer: what was opened and how (the library's SessionRecord, also
// the body of the service's pora_status).
type openRecord struct {
	Shards       []ShardInfo `json:"shards"`
	Choice       Choice      `json:"choice"`
	Choices      []Choice    `json:"choices"`
	RandomChecks int         `json:"randomChecks"`
	Notes        []string    `json:"notes"`
}

// Open opens shard files read-only: each group is the data files of one shard (one `--file` of
// `pora mine`).
func Open(groups [][]string, opts Options) (*Shards, error) {
	var nFiles int
	for _, g := range groups {
		nFiles += len(g)
	}
	if len(groups) == 0 || nFiles == 0 {
		return nil, &Error{Status: StatusInvalidArgument, Op: "open", Message: "no shard files given"}
	}
	files := (*[1 << 28]C.PoraBytes)(C.malloc(C.size_t(nFiles) * C.size_t(unsafe.Sizeof(C.PoraBytes{}))))[:nFiles:nFiles]
	sizes := (*[1 << 28]C.size_t)(C.malloc(C.size_t(len(groups)) * C.size_t(unsafe.Sizeof(C.size_t(0)))))[:len(groups):len(groups)]
	var owned []cBytes
	defer func() {
		for _, o := range owned {
			o.free()
		}
		C.free(unsafe.Pointer(&files[0]))
		C.free(unsafe.Pointer(&sizes[0]))
	}()
	i := 0
	for g, group := range groups {
		sizes[g] = C.size_t(len(group))
		for _, path := range group {
			b, o := newCBytes([]byte(path))
			files[i], owned = b, append(owned, o)
			i++
		}
	}
	copts, optOwned, err := opts.toC()
	owned = append(owned, optOwned...)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(copts))
	var id C.uint64_t
	var out C.PoraBuf
	status := C.pora_open(&files[0], C.size_t(nFiles), &sizes[0], C.size_t(len(groups)), copts, &id, &out)
	data, err := result("open", status, &out)
	if err != nil {
		return nil, err
	}
	s := &Shards{live: liveID{id: id, what: "shard set"}, Raw: data}
	var info openRecord
	if err := json.Unmarshal(data, &info); err != nil {
		s.Close()
		return nil, fmt.Errorf("pora open: reading the result: %w", err)
	}
	s.Choice, s.Choices, s.Info, s.RandomChecks, s.Notes = info.Choice, info.Choices, info.Shards, info.RandomChecks, info.Notes
	for _, shard := range info.Shards {
		s.ShardIdxs = append(s.ShardIdxs, shard.Shard)
	}
	runtime.SetFinalizer(s, (*Shards).Close)
	return s, nil
}

// Close releases the shard set. A slot running on it stops and its MineSlot returns ErrClosed.
// Closing twice returns ErrClosed.
func (s *Shards) Close() error {
	id, err := s.live.take("close")
	if err != nil {
		return err
	}
	runtime.SetFinalizer(s, nil)
	var out C.PoraBuf
	_, err = result("close", C.pora_close(id, &out), &out)
	return err
}

// handle returns the live id, or ErrClosed.
func (s *Shards) handle(op string) (C.uint64_t, error) {
	return s.live.get(op)
}

// liveID is a registry id (shard set, overlay) that Close clears exactly once; the lock keeps a
// call that is starting from seeing an id being closed.
type liveID struct {
	mu   sync.RWMutex
	id   C.uint64_t
	what string
}

// get returns the id, or ErrClosed once it is closed.
func (l *liveID) get(op string) (C.uint64_t, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.id == 0 {
		return 0, &Error{Status: StatusClosed, Op: op, Message: l.what + " is closed"}
	}
	return l.id, nil
}

// take clears the id and returns it, or ErrClosed when it was closed already.
func (l *liveID) take(op string) (C.uint64_t, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := l.id
	l.id = 0
	if id == 0 {
		return 0, &Error{Status: StatusClosed, Op: op, Message: l.what + " already closed"}
	}
	return id, nil
}
