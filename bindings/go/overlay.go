//go:build cgo && ((linux && (amd64 || arm64)) || (darwin && (amd64 || arm64)) || (windows && amd64))

// Overlay: KVs whose current bytes pora samples from memory instead of the shard files, as
// es-node's miner does for blobs that are downloaded but not yet finalized into the data file.
package porago

/*
#include <stdlib.h>
#include "pora.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"runtime"
	"unsafe"
)

// NewOverlay makes an empty overlay; Close frees it.
func NewOverlay() (*Overlay, error) {
	var id C.uint64_t
	var out C.PoraBuf
	if _, err := result("overlay_new", C.pora_overlay_new(&id, &out), &out); err != nil {
		return nil, err
	}
	o := &Overlay{live: liveID{id: id, what: "overlay"}}
	runtime.SetFinalizer(o, (*Overlay).Close)
	return o, nil
}

// Put sets KV kvIdx to a copy of data: its current encoded bytes, exactly one KV (maxKvSize
// bytes, 128 KiB in production; the size is checked against the shard when a slot uses it).
func (o *Overlay) Put(kvIdx uint64, data []byte) error {
	id, err := o.handle("overlay_put")
	if err != nil {
		return err
	}
	cdata, owned := newCBytes(data)
	defer owned.free()
	var out C.PoraBuf
	_, err = result("overlay_put", C.pora_overlay_put(id, C.uint64_t(kvIdx), cdata, &out), &out)
	runtime.KeepAlive(o)
	return err
}

// Retain keeps only the KVs listed (the cache's current set) and drops the rest; it returns how
// many the overlay holds and how many it dropped.
func (o *Overlay) Retain(kvIdxs []uint64) (kept, removed int, err error) {
	id, err := o.handle("overlay_retain")
	if err != nil {
		return 0, 0, err
	}
	var ptr *C.uint64_t
	if len(kvIdxs) > 0 {
		ptr = (*C.uint64_t)(C.malloc(C.size_t(len(kvIdxs)) * 8))
		defer C.free(unsafe.Pointer(ptr))
		copy(unsafe.Slice((*uint64)(unsafe.Pointer(ptr)), len(kvIdxs)), kvIdxs)
	}
	var out C.PoraBuf
	data, err := result("overlay_retain", C.pora_overlay_retain(id, ptr, C.size_t(len(kvIdxs)), &out), &out)
	runtime.KeepAlive(o)
	if err != nil {
		return 0, 0, err
	}
	var summary struct{ Kvs, Removed int }
	if err := json.Unmarshal(data, &summary); err != nil {
		return 0, 0, fmt.Errorf("pora overlay_retain: reading the result: %w", err)
	}
	return summary.Kvs, summary.Removed, nil
}

// Drop removes KV kvIdx (its bytes are in the data file now): later slots read it from the file.
// It says whether the overlay held it; dropping a KV it does not hold is not an error.
func (o *Overlay) Drop(kvIdx uint64) (bool, error) {
	id, err := o.handle("overlay_drop")
	if err != nil {
		return false, err
	}
	var out C.PoraBuf
	data, err := result("overlay_drop", C.pora_overlay_drop(id, C.uint64_t(kvIdx), &out), &out)
	runtime.KeepAlive(o)
	if err != nil {
		return false, err
	}
	var summary struct{ Kvs, Removed int }
	if err := json.Unmarshal(data, &summary); err != nil {
		return false, fmt.Errorf("pora overlay_drop: reading the result: %w", err)
	}
	return summary.Removed == 1, nil
}

// Close frees the overlay; a slot running with it keeps its snapshot. Closing twice returns
// ErrClosed.
func (o *Overlay) Close() error {
	id, err := o.live.take("overlay_free")
	if err != nil {
		return err
	}
	runtime.SetFinalizer(o, nil)
	var out C.PoraBuf
	_, err = result("overlay_free", C.pora_overlay_free(id, &out), &out)
	return err
}

func (o *Overlay) handle(op string) (C.uint64_t, error) {
	if o == nil {
		return 0, nil
	}
	return o.live.get(op)
}
