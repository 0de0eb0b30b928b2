//go:build cgo && ((linux && (amd64 || arm64)) || (darwin && (amd64 || arm64)) || (windows && amd64))

// MineSlot and Hash, the records they return, and the cancel token that ties a context to a
// running slot.
package porago

/*
#include <stdlib.h>
#include "pora.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// es-node's slot and pora's limits, as the library states them (pora.h's PORA_DEFAULT_* and
// PORA_MAX_*).
const (
	// DefaultNonces is es-node's nonces per shard and slot.
	DefaultNonces = C.PORA_DEFAULT_NONCES_PER_SLOT
	// DefaultSlotLength is es-node's slot length.
	DefaultSlotLength = C.PORA_DEFAULT_SLOT_LENGTH_MS * time.Millisecond
	// MaxSlotLength is the longest slot one call mines.
	MaxSlotLength = C.PORA_MAX_SLOT_LENGTH_MS * time.Millisecond
	// DefaultRandomChecks is es-node's samples per nonce (Options.RandomChecks 0).
	DefaultRandomChecks = C.PORA_DEFAULT_RANDOM_CHECKS
	// DefaultCutoff, DefaultDiffAdjDivisor and DefaultMinimumDiff are es-node's difficulty
	// inputs (Difficulty's zero values).
	DefaultCutoff         = C.PORA_DEFAULT_CUTOFF
	DefaultDiffAdjDivisor = C.PORA_DEFAULT_DIFF_ADJ_DIVISOR
	DefaultMinimumDiff    = C.PORA_DEFAULT_MINIMUM_DIFF
)

// MineSlot mines one slot on every shard. The context's deadline is the slot deadline (no read
// is issued after it); cancelling the context stops the slot within about 50 ms and returns the
// partial report (Interrupted set) together with ctx.Err(). A slot already running on this set
// makes it return ErrBusy at once; Close during the slot makes it return ErrClosed.
func (s *Shards) MineSlot(ctx context.Context, req SlotRequest) (*SlotReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id, err := s.handle("mine")
	if err != nil {
		return nil, err
	}
	token, err := newCancelToken()
	if err != nil {
		return nil, err
	}
	defer token.free()
	// The parameters last: their deadline_remaining_ns is measured just before the call.
	params, owned, err := req.toC(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		owned.free()
		C.free(unsafe.Pointer(params))
	}()
	stopWatch := watch(ctx, token)
	var out C.PoraBuf
	status := C.pora_mine_slot(id, params, token.id, &out)
	stopWatch()
	runtime.KeepAlive(s)
	runtime.KeepAlive(req.Overlay)
	data, err := result("mine", status, &out)
	if err != nil {
		return nil, err
	}
	report, err := parseSlot(data)
	if err != nil {
		return nil, err
	}
	if ctx.Err() == context.Canceled && interrupted(report) {
		return report, ctx.Err()
	}
	return report, nil
}

func interrupted(r *SlotReport) bool {
	for _, s := range r.Shards {
		if s.Interrupted {
			return true
		}
	}
	return false
}

// watch fires the token when ctx is cancelled (not at its deadline: pora ends the slot at the
// deadline itself) and returns the function that stops watching.
func watch(ctx context.Context, token cancelToken) func() {
	if ctx.Done() == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-ctx.Done():
			if ctx.Err() == context.Canceled {
				token.cancel()
			}
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func (r SlotRequest) toC(ctx context.Context) (*C.PoraSlotParams, cBytes, error) {
	bad := func(format string, a ...interface{}) error {
		return &Error{Status: StatusInvalidArgument, Op: "mine", Message: fmt.Sprintf(format, a...)}
	}
	if len(r.Randao) != int(C.PORA_RANDAO_LEN) {
		return nil, cBytes{}, bad("randao: %d bytes, expected %d", len(r.Randao), int(C.PORA_RANDAO_LEN))
	}
	start, end := r.NonceStart, r.NonceEnd
	if start == 0 && end == 0 {
		end = DefaultNonces
	}
	// The caller's deadline, absolute: the context's, else SlotLength from MineSlot's entry.
	slot := r.SlotLength
	if slot == 0 {
		slot = DefaultSlotLength
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(slot)
	}
	diff, err := r.Difficulty.toC()
	if err != nil {
		return nil, cBytes{}, err
	}
	overlay, err := r.Overlay.handle("mine")
	if err != nil {
		return nil, cBytes{}, err
	}
	p := (*C.PoraSlotParams)(C.calloc(1, C.size_t(unsafe.Sizeof(C.PoraSlotParams{}))))
	randao, owned := newCBytes(r.Randao)
	p.randao = randao
	p.nonce_start = C.uint64_t(start)
	p.nonce_end = C.uint64_t(end)
	p.find = C.uint32_t(r.Find)
	p.slot_number = C.uint64_t(r.SlotNumber)
	p.difficulty = diff
	p.overlay = overlay
	// Measured last, right before MineSlot's call: pora counts the slot's time (its steering
	// included) from its entry to this deadline, on one clock.
	remaining := time.Until(deadline)
	if remaining < time.Millisecond {
		owned.free()
		C.free(unsafe.Pointer(p))
		return nil, cBytes{}, context.DeadlineExceeded
	}
	p.deadline_remaining_ns = C.uint64_t(remaining)
	return p, owned, nil
}

func parseSlot(data []byte) (*SlotReport, error) {
	var raw struct {
		Shards          []json.RawMessage `json:"shards"`
		IOErrorMessages []string          `json:"ioErrorMessages"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("pora mine: reading the result: %w", err)
	}
	report := &SlotReport{Shards: make([]ShardSlot, len(raw.Shards)), IOErrorMessages: raw.IOErrorMessages}
	for i, r := range raw.Shards {
		if err := json.Unmarshal(r, &report.Shards[i]); err != nil {
			return nil, fmt.Errorf("pora mine: reading shard record %d: %w", i, err)
		}
		report.Shards[i].Raw = r
	}
	return report, nil
}

// HashWithOverlay is HashWithDifficulty (d may be nil) with the samples inside overlay's KVs
// taken from memory, exactly as a slot with that overlay reads them: it checks a nonce found
// while es-node's blob cache held blobs the file does not have yet. A nil overlay reads the
// files only.
func (s *Shards) HashWithOverlay(shard uint64, randao []byte, nonce uint64, d *Difficulty, overlay *Overlay) (*HashRecord, error) {
	if len(randao) != int(C.PORA_RANDAO_LEN) {
		return nil, &Error{Status: StatusInvalidArgument, Op: "hash", Message: fmt.Sprintf("randao: %d bytes, expected %d", len(randao), int(C.PORA_RANDAO_LEN))}
	}
	diff, err := d.toC()
	if err != nil {
		return nil, err
	}
	cdiff := (*C.PoraDifficulty)(C.malloc(C.size_t(unsafe.Sizeof(diff))))
	*cdiff = diff
	defer C.free(unsafe.Pointer(cdiff))
	cr, owned := newCBytes(randao)
	defer owned.free()
	id, err := s.handle("hash")
	if err != nil {
		return nil, err
	}
	var out C.PoraBuf
	var status uint32
	if overlay == nil {
		status = C.pora_hash(id, C.uint64_t(shard), cr, C.uint64_t(nonce), cdiff, &out)
	} else {
		oid, err := overlay.handle("hash")
		if err != nil {
			return nil, err
		}
		status = C.pora_hash_overlay(id, C.uint64_t(shard), cr, C.uint64_t(nonce), cdiff, oid, &out)
	}
	runtime.KeepAlive(s)
	runtime.KeepAlive(overlay)
	data, err := result("hash", status, &out)
	if err != nil {
		return nil, err
	}
	rec := &HashRecord{Raw: data}
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fmt.Errorf("pora hash: reading the result: %w", err)
	}
	return rec, nil
}

// cancelToken is a pora cancel token (one per slot).
type cancelToken struct{ id C.uint64_t }

func newCancelToken() (cancelToken, error) {
	var id C.uint64_t
	var out C.PoraBuf
	_, err := result("cancel_new", C.pora_cancel_new(&id, &out), &out)
	return cancelToken{id}, err
}

func (t cancelToken) cancel() {
	var out C.PoraBuf
	_, _ = result("cancel", C.pora_cancel(t.id, &out), &out) // a token alive for the slot cannot fail
}

func (t cancelToken) free() {
	var out C.PoraBuf
	_, _ = result("cancel_free", C.pora_cancel_free(t.id, &out), &out) // freed once, by its owner
}
