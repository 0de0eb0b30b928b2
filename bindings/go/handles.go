// The handles a caller holds, Shards and Overlay, and what Open says about a shard set: shared
// by every build. Each handle's library state is its unexported live field, a liveID: the
// registry id of pora.go where libpora links, an empty struct in a build without it
// (nolibrary_stub.go), so the exported fields and docs are the same everywhere.

package porago

import "encoding/json"

// Choice says which method and knobs a shard set runs with, and why.
type Choice struct {
	Method  string  `json:"method"`
	Threads int     `json:"threads"`
	Depth   int     `json:"depth"`
	Profile *string `json:"profile"`
	Why     string  `json:"why"`
	// Device is the disk the shards sit on ("vda", or "major:minor" for tmpfs), when known.
	Device *string `json:"device"`
	// Shards are the shard indexes mined with this choice.
	Shards []uint64 `json:"shards"`
	// IO describes the opened backend (method, alignment, ring features).
	IO string `json:"io"`
	// Steering is how `auto` chose; nil when the method was given.
	Steering *Steering `json:"steering"`
}

// ShardInfo is one opened shard: its index, data files, miner and size.
type ShardInfo struct {
	Shard         uint64   `json:"shard"`
	Files         []string `json:"files"`
	Miner         string   `json:"miner"`
	KVEntriesBits uint32   `json:"kvEntriesBits"`
	KVSizeBits    uint32   `json:"kvSizeBits"`
}

// Shards is an opened shard set. Safe for concurrent use; one slot runs at a time (a second
// MineSlot while one runs returns ErrBusy).
type Shards struct {
	live liveID
	// Choice is the first device's choice (the only one when all shards share a device).
	Choice Choice
	// Choices has one choice per device: each device's shards have their own method, threads,
	// depth and profile.
	Choices []Choice
	// ShardIdxs is the shard index of each group given to Open, in the order slots report
	// them: device by device, in the given order within a device.
	ShardIdxs []uint64
	// Info describes each shard, in the order of ShardIdxs.
	Info []ShardInfo
	// RandomChecks is the samples per nonce the set mines with.
	RandomChecks int
	// Notes are things the user should know about how the set was opened (a stale profile...).
	Notes []string
	// Raw is pora_open's answer as pora produced it.
	Raw json.RawMessage
}

// Overlay holds encoded KVs by global KV index (sampleIdx >> (kvSizeBits - 5)). Make one, keep
// it in step with the blob cache by KV index (Put when a blob arrives or changes, Drop when it
// leaves; or Retain the cache's KV set), and pass it in SlotRequest.Overlay: samples inside
// those KVs then come from memory. Each KV is copied once when put; a slot takes a snapshot, so changing the
// overlay while a slot runs is safe and affects the next slot. Safe for concurrent use.
type Overlay struct {
	live liveID
}
