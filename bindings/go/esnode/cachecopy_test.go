// A KV cached by two blocks: the adapter samples the copy es-node's own ReadSample would. The disk
// cache answers GetSampleData from kvIndexLookup, the most recently set copy, which after a reorg
// can be a lower block's than another copy it holds: the hook's VisitKVs lists only that copy, and
// every sample of the shard (all its KVs cached twice) must hash alike through pora and es-node.
// The memory cache answers such a KV in map order (not defined): the adapter keeps the copy of
// the higher block whatever the listing's order (docs/es-node.md, "A KV cached by two blocks").
package esnode_test

import (
	"math/rand"
	"testing"

	"github.com/pora-miner/pora/bindings/go/esnode"
)

func TestDiskCacheSampledCopyIsTheMostRecentlySet(t *testing.T) {
	path := writeDataFile(t, t.TempDir(), testShard, testKvEntriesBits, testKvSizeBits, testMiner, 8)
	cache := NewBlobDiskCache()
	plain, withPora := newNodes(t, path, cache)
	rng := rand.New(rand.NewSource(61))
	first := uint64(testShard << testKvEntriesBits)
	higher := &blockBlobs{number: 12}
	lower := &blockBlobs{number: 11} // the reorg's block, set after block 12
	for kv := first; kv < first+1<<testKvEntriesBits; kv++ {
		higher.blobs = append(higher.blobs, newBlob(rng, kv))
		lower.blobs = append(lower.blobs, newBlob(rng, kv))
	}
	for _, b := range []*blockBlobs{higher, lower} {
		if err := cache.SetBlockBlobs(b); err != nil {
			t.Fatal(err)
		}
	}
	// es-node's own answer, through its ReadSample: block 11's bytes.
	reader := &BlobReader{cr: cache, sm: plain.storageManager}
	got, err := reader.ReadSample(testShard, first<<(testKvSizeBits-5))
	if err != nil || string(got[:]) != string(lower.blobs[0].data[:32]) {
		t.Fatalf("the stand-in's ReadSample does not read the most recently set copy: %x (%v)", got, err)
	}
	cached := map[uint64]bool{}
	for kv := first; kv < first+1<<testKvEntriesBits; kv++ {
		cached[kv] = true
	}
	if touched := mineRound(t, "reorged cache", plain, withPora, cached, 40); touched == 0 {
		t.Fatal("no found nonce: the test compared nothing")
	}
	for i, kv := 0, first; kv < first+1<<testKvEntriesBits; i, kv = i+1, kv+1 {
		held, ok := esnode.HeldCommitOf(withPora.miner.worker.pora, testShard, kv)
		if !ok || held != lower.blobs[i].hash {
			t.Fatalf("KV %d: pora holds %x (held %v); es-node samples block 11's copy %x", kv, held[:4], ok, lower.blobs[i].hash[:4])
		}
	}
}

func TestMemoryCacheKeepsTheHigherBlocksCopy(t *testing.T) {
	for _, higherFirst := range []bool{true, false} {
		path := writeDataFile(t, t.TempDir(), testShard, testKvEntriesBits, testKvSizeBits, testMiner, 9)
		cache := NewBlobMemCache()
		_, withPora := newNodes(t, path, cache)
		rng := rand.New(rand.NewSource(62))
		kv := uint64(testShard<<testKvEntriesBits + 9)
		higher, lower := &blockBlobs{number: 21, blobs: []*blob{newBlob(rng, kv)}}, &blockBlobs{number: 20, blobs: []*blob{newBlob(rng, kv)}}
		order := []*blockBlobs{lower, higher}
		if higherFirst {
			order = []*blockBlobs{higher, lower}
		}
		for _, b := range order {
			if err := cache.SetBlockBlobs(b); err != nil {
				t.Fatal(err)
			}
		}
		// Several tasks: the memory cache's map order changes between listings; the choice must not.
		for head := byte(0); head < 4; head++ {
			if _, err := withPora.miner.worker.runHead(testShard, uint64(head), [32]byte{head}, requiredDiff); err != nil {
				t.Fatal(err)
			}
			held, ok := esnode.HeldCommitOf(withPora.miner.worker.pora, testShard, kv)
			if !ok || held != higher.blobs[0].hash {
				t.Fatalf("set higher first=%v, task %d: pora holds %x (held %v), want block 21's copy %x", higherFirst, head, held[:4], ok, higher.blobs[0].hash[:4])
			}
		}
	}
}
