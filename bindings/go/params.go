// Options, difficulty and find mode as a caller writes them, and the parsers of the last two:
// shared by every build (options.go converts them to pora.h's C structs where libpora links;
// the find modes' values are pora.h's, so they stay there and in the stub).

package porago

import (
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Options say how to open a shard set. The zero value means pora's defaults: method auto, the
// tune profile beside the first file when present, threads and depth from the profile or the
// method, DefaultRandomChecks samples per nonce, retry failed reads.
type Options struct {
	// Method is an access method as `pora mine --method` takes it ("" = "auto").
	Method string
	// Threads and Depth: 0 = the profile's, else the method's default.
	Threads, Depth int
	// RandomChecks is the samples per nonce (0 = DefaultRandomChecks).
	RandomChecks int
	// OnIOError is "retry" (default), "skip" or "stop".
	OnIOError string
	// KVEntriesBits is the shard size as log2(KVs) (0 = inferred from the files).
	KVEntriesBits int
	// Profile is a tune profile path ("" = `<first file>.pora-profile.toml` when present).
	Profile string
	// IgnoreProfile opens without any profile.
	IgnoreProfile bool
	// Miner overrides the files' miner address in hash0 (20 bytes; nil = the files').
	Miner []byte
	// SimLatencyMin/Max and SimSeed configure the simulated disk (Method "sim") for tests; it
	// is only in libraries built with the `sim` cargo feature (see README.md, Tests).
	SimLatencyMin, SimLatencyMax time.Duration
	SimSeed                      uint64
}

// Find says which valid nonces a slot reports.
type Find int

// ParseFind parses "first", "best" or "all".
func ParseFind(s string) (Find, error) {
	switch s {
	case "first":
		return FindFirst, nil
	case "best":
		return FindBest, nil
	case "all":
		return FindAll, nil
	}
	return 0, fmt.Errorf("find %q: one of first, best, all", s)
}

// Difficulty is a slot's difficulty: nothing (no nonce is valid), a required difficulty, or the
// storage contract's inputs from which pora computes it the way es-node does.
type Difficulty struct {
	// RequiredDiff, when set, is the threshold hash1 must not exceed.
	RequiredDiff *big.Int
	// Difficulty and Interval (blockTime - lastMineTime, s), when Difficulty is set.
	Difficulty *big.Int
	Interval   uint64
	// Cutoff (0 = DefaultCutoff), DiffAdjDivisor (0 = DefaultDiffAdjDivisor), MinimumDiff
	// (nil = DefaultMinimumDiff).
	Cutoff, DiffAdjDivisor uint64
	MinimumDiff            *big.Int
}

// ParseU256 parses a 256-bit value given as decimal or 0x-hex, as pora's flags take it.
func ParseU256(what, s string) (*big.Int, error) {
	v, ok := new(big.Int), false
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		v, ok = v.SetString(s[2:], 16)
	} else {
		v, ok = v.SetString(s, 10)
	}
	if !ok || strings.ContainsAny(s, "_+-") || v.BitLen() > 256 {
		return nil, fmt.Errorf("%s %q: not a 256-bit decimal or 0x-hex number", what, s)
	}
	return v, nil
}
