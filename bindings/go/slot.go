// The records a slot and a hash return (the JSON shapes `pora mine --json` and `pora hash
// --json` print), what a slot is asked, and the Hash calls that only narrow HashWithOverlay:
// shared by every build, since none of them needs the library itself (mine.go holds the calls
// into libpora, unsupported.go their erroring stubs).

package porago

import (
	"encoding/json"
	"time"
)

// NonceProof is everything a proof needs for one nonce.
type NonceProof struct {
	Nonce          uint64   `json:"nonce"`
	Hash0          string   `json:"hash0"`
	SampleIdxs     []uint64 `json:"sampleIdxs"`
	KvIdxs         []uint64 `json:"kvIdxs"`
	SampleIdxsInKv []uint64 `json:"sampleIdxsInKv"`
	EncodedSamples []string `json:"encodedSamples"`
	Hash1          string   `json:"hash1"`
}

// HashRecord is one nonce computed from the files: what `pora hash --json` prints.
type HashRecord struct {
	NonceProof
	Shard        uint64 `json:"shard"`
	Miner        string `json:"miner"`
	Randao       string `json:"randao"`
	RequiredDiff string `json:"requiredDiff,omitempty"`
	Valid        *bool  `json:"valid,omitempty"`
	// Raw is the record as pora produced it.
	Raw json.RawMessage `json:"-"`
}

// ShardSlot is one shard's result for one slot: one line of `pora mine --json`.
type ShardSlot struct {
	Slot        uint64  `json:"slot"`
	Shard       uint64  `json:"shard"`
	Randao      string  `json:"randao"`
	NonceLimit  uint64  `json:"nonceLimit"`
	NoncesTried uint64  `json:"noncesTried"`
	MiningPower float64 `json:"miningPower"`
	ElapsedSec  float64 `json:"elapsedSec"`
	// EndLateMs is when the answer was built against the caller's deadline, milliseconds:
	// negative when the slot ended early, at most about 1000 whatever the disk does.
	EndLateMs   float64 `json:"endLateMs"`
	SamplesRead uint64  `json:"samplesRead"`
	// SamplesFromOverlay are the samples of SamplesRead taken from the slot's Overlay.
	SamplesFromOverlay uint64  `json:"samplesFromOverlay"`
	SamplesPerSec      float64 `json:"samplesPerSec"`
	Method             string  `json:"method"`
	Threads            int     `json:"threads"`
	Depth              int     `json:"depth"`
	// Why says where the method came from (for `auto`, the slot's decision); Steering is
	// that decision in full, nil when the method was given.
	Why               string    `json:"why"`
	Steering          *Steering `json:"steering"`
	Device            *string   `json:"device"` // the shard's device pool; nil when unknown
	IOErrors          uint64    `json:"ioErrors"`
	ChangedDuringSlot uint64    `json:"changedDuringSlot"`
	Bottleneck        string    `json:"bottleneck"`
	IOWaitFraction    float64   `json:"ioWaitFraction"`
	CPUBusyFraction   float64   `json:"cpuBusyFraction"`
	Interrupted       bool      `json:"interrupted"`
	// LeakedBackends are the backends this process gave up on so far (reads stuck in a dead
	// device's kernel queue): 0 on a healthy device.
	LeakedBackends uint64 `json:"leakedBackends"`
	// StuckBackends are the backends out of use when the slot ended (held by reads the device
	// has not answered); each device pool keeps at most its thread count out, and they come
	// back by themselves when the device answers.
	StuckBackends uint64       `json:"stuckBackends"`
	Found         []NonceProof `json:"found"`
	// Raw is the record as pora produced it (byte for byte what `pora mine --json` prints).
	Raw json.RawMessage `json:"-"`
}

// SlotReport is every shard's result for one slot.
type SlotReport struct {
	Shards []ShardSlot
	// IOErrorMessages are the first few read errors, naming file and offset.
	IOErrorMessages []string
}

// SlotRequest is what one slot mines on every shard of the set.
type SlotRequest struct {
	// Randao is the 32-byte randao mix digest.
	Randao []byte
	// Nonces NonceStart..NonceEnd (end exclusive); both zero = es-node's 0..2^20.
	NonceStart, NonceEnd uint64
	// Find mode (FindFirst by default).
	Find Find
	// Difficulty; nil = no nonce is valid (throughput runs).
	Difficulty *Difficulty
	// SlotNumber is written into each record's slot field.
	SlotNumber uint64
	// SlotLength is the slot length when the context has no deadline (0 = DefaultSlotLength).
	SlotLength time.Duration
	// Overlay, when set, holds KVs sampled from memory instead of the files (es-node's cache).
	Overlay *Overlay
}

// Hash computes one nonce of shard `shard` (its index, e.g. 0) through the plain single-nonce
// path: what `pora hash --json` prints. It reads on the calling goroutine's thread and returns
// when the disk answers; a MineSlot running beside it on the same set is not held by its reads.
func (s *Shards) Hash(shard uint64, randao []byte, nonce uint64) (*HashRecord, error) {
	return s.HashWithDifficulty(shard, randao, nonce, nil)
}

// HashWithDifficulty is Hash that also says whether hash1 meets the difficulty.
func (s *Shards) HashWithDifficulty(shard uint64, randao []byte, nonce uint64, d *Difficulty) (*HashRecord, error) {
	return s.HashWithOverlay(shard, randao, nonce, d, nil)
}
