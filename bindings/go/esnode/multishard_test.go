// Two shards mining at once through the stand-in worker, as es-node's task loops do: each
// shard's threads on their own goroutines, both shards in the same head, with and without pora,
// over one disk-backed cache holding KVs of both shards. CI runs it under -race: the hook must
// write es-node's mining state only through the per-shard pointer newWorker made, never the map.
package esnode_test

import (
	"crypto/sha256"
	"math/rand"
	"testing"

	"github.com/pora-miner/pora/bindings/go/esnode"
	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"
)

func TestTwoShardsMineAtOnce(t *testing.T) {
	shards := []uint64{1, 2}
	dir := t.TempDir()
	paths := map[uint64]string{}
	for _, shard := range shards {
		paths[shard] = writeDataFile(t, dir, shard, testKvEntriesBits, testKvSizeBits, testMiner, int64(40+shard))
	}
	cache := NewBlobDiskCache()
	rng := rand.New(rand.NewSource(42))
	block := &blockBlobs{number: 30}
	for _, shard := range shards {
		for kv := shard << testKvEntriesBits; kv < shard<<testKvEntriesBits+8; kv++ {
			block.blobs = append(block.blobs, newBlob(rng, kv))
		}
	}
	if err := cache.SetBlockBlobs(block); err != nil {
		t.Fatal(err)
	}
	plain, withPora := newShardNodes(t, paths, cache)
	pw, ew := withPora.miner.worker, plain.miner.worker
	states := map[uint64]*MiningState{}
	for shard, state := range pw.miningStates {
		states[shard] = state
	}
	foundAny := 0
	const heads = 20
	for head := byte(0); head < heads; head++ {
		mix := common.Hash(sha256.Sum256([]byte{'m', head}))
		foundPora, err := pw.runHeads(shards, uint64(head), mix, requiredDiff)
		if err != nil {
			t.Fatalf("head %d: with pora: %v", head, err)
		}
		foundPlain, err := ew.runHeads(shards, uint64(head), mix, requiredDiff)
		if err != nil {
			t.Fatalf("head %d: es-node's loop: %v", head, err)
		}
		for _, shard := range shards {
			if foundPora[shard] != foundPlain[shard] {
				t.Fatalf("head %d shard %d: es-node's loop found=%v, with pora found=%v", head, shard, foundPlain[shard], foundPora[shard])
			}
			if foundPora[shard] {
				foundAny++
			}
			state := pw.miningStates[shard]
			if state != states[shard] {
				t.Fatalf("head %d shard %d: the mining-state entry was replaced (the map was written after newWorker)", head, shard)
			}
			if !foundPora[shard] && (state.MiningPower != 10000 || state.SamplingTime > 60_000) {
				t.Fatalf("head %d shard %d: with pora, nothing found and mining state %+v; want the whole range tried (10000)", head, shard, *state)
			}
		}
	}
	if len(pw.miningStates) != len(shards) {
		t.Fatalf("miningStates has %d entries, want one per shard (%d)", len(pw.miningStates), len(shards))
	}
	for _, shard := range shards {
		if esnode.EngineOf(pw.pora, shard) == nil {
			t.Fatalf("shard %d has no engine: it was not mined through pora", shard)
		}
	}
	if foundAny == 0 {
		t.Fatal("no shard found a nonce in any head: the test compared nothing found only")
	}
	t.Logf("%d heads x %d shards at once, %d found with pora and es-node's loop alike", heads, len(shards), foundAny)
}
