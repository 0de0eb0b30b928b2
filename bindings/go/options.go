//go:build cgo && ((linux && (amd64 || arm64)) || (darwin && (amd64 || arm64)) || (windows && amd64))

// Options, difficulty and find mode, and their conversion to pora.h's C structs (allocated in C
// memory so that no Go pointer is ever handed to C).
package porago

/*
#include <stdlib.h>
#include "pora.h"
*/
import "C"

import (
	"fmt"
	"math/big"
	"time"
	"unsafe"
)

func (o Options) toC() (*C.PoraOpenOptions, []cBytes, error) {
	bad := func(format string, a ...interface{}) error {
		return &Error{Status: StatusInvalidArgument, Op: "open", Message: fmt.Sprintf(format, a...)}
	}
	var onErr C.uint32_t
	switch o.OnIOError {
	case "", "retry":
		onErr = C.PORA_ON_IO_ERROR_RETRY
	case "skip":
		onErr = C.PORA_ON_IO_ERROR_SKIP
	case "stop":
		onErr = C.PORA_ON_IO_ERROR_STOP
	default:
		return nil, nil, bad("OnIOError %q: one of retry, skip, stop", o.OnIOError)
	}
	for name, v := range map[string]int{"Threads": o.Threads, "Depth": o.Depth, "RandomChecks": o.RandomChecks, "KVEntriesBits": o.KVEntriesBits} {
		if v < 0 || v > 1<<31 {
			return nil, nil, bad("%s %d: out of range", name, v)
		}
	}
	if o.Miner != nil && len(o.Miner) != int(C.PORA_ADDRESS_LEN) {
		return nil, nil, bad("Miner: %d bytes, expected %d", len(o.Miner), int(C.PORA_ADDRESS_LEN))
	}
	c := (*C.PoraOpenOptions)(C.calloc(1, C.size_t(unsafe.Sizeof(C.PoraOpenOptions{}))))
	var owned []cBytes
	var b C.PoraBytes
	var own cBytes
	b, own = newCBytes([]byte(o.Method))
	c.method, owned = b, append(owned, own)
	b, own = newCBytes([]byte(o.Profile))
	c.profile_path, owned = b, append(owned, own)
	b, own = newCBytes(o.Miner)
	c.miner, owned = b, append(owned, own)
	c.threads = C.uint32_t(o.Threads)
	c.depth = C.uint32_t(o.Depth)
	c.random_checks = C.uint32_t(o.RandomChecks)
	c.on_io_error = onErr
	c.kv_entries_bits = C.uint32_t(o.KVEntriesBits)
	switch {
	case o.IgnoreProfile:
		c.profile = C.PORA_PROFILE_SOURCE_IGNORE
	case o.Profile != "":
		c.profile = C.PORA_PROFILE_SOURCE_AT
	default:
		c.profile = C.PORA_PROFILE_SOURCE_BESIDE_FIRST_FILE
	}
	c.sim_latency_us_min = C.uint32_t(o.SimLatencyMin / time.Microsecond)
	c.sim_latency_us_max = C.uint32_t(o.SimLatencyMax / time.Microsecond)
	c.sim_seed = C.uint64_t(o.SimSeed)
	return c, owned, nil
}

// The find modes.
const (
	// FindFirst stops each shard's slot at its first valid nonce (es-node's behaviour).
	FindFirst Find = C.PORA_FIND_FIRST
	// FindBest tries every nonce and reports the lowest hash1.
	FindBest Find = C.PORA_FIND_BEST
	// FindAll tries every nonce and reports every valid one.
	FindAll Find = C.PORA_FIND_ALL
)

func u256(what string, v *big.Int) ([32]C.uint8_t, error) {
	var out [32]C.uint8_t
	if v == nil {
		return out, nil
	}
	if v.Sign() < 0 || v.BitLen() > 256 {
		return out, &Error{Status: StatusInvalidArgument, Op: "difficulty", Message: what + ": not a 256-bit unsigned value"}
	}
	var b [32]byte
	v.FillBytes(b[:])
	for i := range b {
		out[i] = C.uint8_t(b[i])
	}
	return out, nil
}

func (d *Difficulty) toC() (C.PoraDifficulty, error) {
	var c C.PoraDifficulty
	var err error
	switch {
	case d == nil || (d.RequiredDiff == nil && d.Difficulty == nil):
		c.kind = C.PORA_DIFF_KIND_NONE
	case d.RequiredDiff != nil && d.Difficulty != nil:
		return c, &Error{Status: StatusInvalidArgument, Op: "difficulty", Message: "give RequiredDiff or Difficulty, not both"}
	case d.RequiredDiff != nil:
		c.kind = C.PORA_DIFF_KIND_REQUIRED
		c.required_diff, err = u256("RequiredDiff", d.RequiredDiff)
	default:
		c.kind = C.PORA_DIFF_KIND_INPUTS
		if c.difficulty, err = u256("Difficulty", d.Difficulty); err != nil {
			return c, err
		}
		if c.minimum_diff, err = u256("MinimumDiff", d.MinimumDiff); err != nil {
			return c, err
		}
		c.interval = C.uint64_t(d.Interval)
		c.cutoff = C.uint64_t(d.Cutoff)
		c.diff_adj_divisor = C.uint64_t(d.DiffAdjDivisor)
	}
	return c, err
}
