// Exactness through the hook: the es-node stand-in's worker mines the same heads without pora
// and with it (the hook as docs/es-node.md shows it), through the memory cache and the
// disk-backed cache, with a finalization and a new version of a KV between rounds. Each worker's
// nonce must be accepted by the other's hashing: pora's engine accepts es-node's nonce with the
// same hash1 and samples, and es-node's own loop re-checks pora's nonce before its result is
// stored. The contract's RandomChecks (3) and NonceLimit (2^13) differ from pora's defaults, so
// a value that did not reach the engine would show.
package esnode_test

import (
	"crypto/sha256"
	"encoding/hex"
	"math/big"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pora-miner/pora/bindings/go/esnode"
	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"
)

const (
	testShard         = 1
	testKvEntriesBits = 6  // 64 KVs per shard
	testKvSizeBits    = 12 // 4 KiB KVs keep the files small; the geometry is the production one's
)

var testMiner = common.Address{0xe5, 0x0d, 0xe0, 0x0d, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// writeDataFile writes an es-node data file (docs/spec/algorithm.md's header, random KVs, zero metas) holding
// shard shard, encoded for miner, and returns its path.
func writeDataFile(t testing.TB, dir string, shard, kvEntriesBits, kvSizeBits uint64, miner common.Address, seed int64) string {
	kvs, kvSize := uint64(1)<<kvEntriesBits, uint64(1)<<kvSizeBits
	header := make([]byte, 4096)
	for i, v := range []uint64{0xcf20bd770c22b2e1, 1, shard * kvs, kvs, 3, kvSize, kvSize, 32} {
		for b := 0; b < 8; b++ {
			header[8*i+b] = byte(v >> (56 - 8*b))
		}
	}
	copy(header[64:84], miner[:])
	data := make([]byte, kvs*(kvSize+32))
	rand.New(rand.NewSource(seed)).Read(data[:kvs*kvSize])
	path := filepath.Join(dir, "shard-"+hex.EncodeToString([]byte{byte(shard), byte(seed)})+".dat")
	if err := os.WriteFile(path, append(header, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// newBlob makes a blob of KV kv with random encoded bytes and its hash (the bytes' SHA-256 here:
// an identity that changes with the bytes, as the versioned hash does).
func newBlob(rng *rand.Rand, kv uint64) *blob {
	data := make([]byte, 1<<testKvSizeBits)
	rng.Read(data)
	return &blob{kvIndex: new(big.Int).SetUint64(kv), kvSize: big.NewInt(1 << testKvSizeBits), hash: sha256.Sum256(data), data: data}
}

// newNodes makes two es-node stand-ins over the same file (shard testShard) and cache: plain
// (es-node's own loop) and with pora through the hook.
func newNodes(t *testing.T, path string, cache BlobCache) (plain, withPora *EsNode) {
	return newShardNodes(t, map[uint64]string{testShard: path}, cache)
}

// newShardNodes makes the two stand-ins over data files by shard (one file per shard).
func newShardNodes(t *testing.T, paths map[uint64]string, cache BlobCache) (plain, withPora *EsNode) {
	sm := &StorageManager{kvEntriesBits: testKvEntriesBits, maxKvSizeBits: testKvSizeBits, files: map[uint64]*os.File{}, miner: testMiner}
	storage := StorageConfig{Miner: testMiner}
	for shard, path := range paths {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		sm.files[shard] = f
		storage.Filenames = append(storage.Filenames, path)
	}
	mining := Config{RandomChecks: 3, NonceLimit: 1 << 13, Slot: 60, ThreadsPerShard: 4}
	plain = &EsNode{storageManager: sm, blobCache: cache}
	if err := plain.initMiner(&NodeConfig{Storage: storage, Mining: &mining}); err != nil {
		t.Fatal(err)
	}
	withPoraCfg := mining
	withPoraCfg.Pora = true
	withPora = &EsNode{storageManager: sm, blobCache: cache}
	if err := withPora.initMiner(&NodeConfig{Storage: storage, Mining: &withPoraCfg}); err != nil {
		t.Fatal(err)
	}
	if plain.miner.worker.pora != nil || withPora.miner.worker.pora == nil {
		t.Fatal("the hook's switch: pora must be used exactly when Config.Pora is set")
	}
	plain.miner.worker.start()
	withPora.miner.worker.start()
	t.Cleanup(func() { plain.miner.Close(); withPora.miner.Close() })
	return plain, withPora
}

// requiredDiff makes about one nonce in 512 valid.
var requiredDiff = new(big.Int).Rsh(new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)), 9)

// mineRound mines heads with both workers and checks each nonce with the other's hashing; it
// returns how many found nonces sampled a cached KV.
func mineRound(t *testing.T, what string, plain, withPora *EsNode, cached map[uint64]bool, firstHead byte) int {
	touched := 0
	pw, ew := withPora.miner.worker, plain.miner.worker
	for head := firstHead; head < firstHead+6; head++ {
		mix := common.Hash(sha256.Sum256([]byte{head}))
		// pora first: its task syncs the engine with the cache, so the engine's Hash below sees
		// the cache as es-node's loop does.
		found, err := pw.runHead(testShard, uint64(head), mix, requiredDiff)
		if err != nil {
			t.Fatalf("%s head %d: with pora: %v", what, head, err)
		}
		state := pw.miningStates[testShard]
		if state == nil || state.MiningPower == 0 || state.MiningPower > 10000 {
			t.Fatalf("%s head %d: with pora, mining state %+v", what, head, state)
		}
		if found {
			r := pw.resultMap[testShard]
			// es-node's hashing accepted pora's nonce (the hook's one-nonce re-check stored it);
			// check it once more here, straight through es-node's computeHash.
			hash1, idxs, err := ew.computeHash(testShard, initHash(testMiner, mix, r.nonce))
			if err != nil || requiredDiff.Cmp(new(big.Int).SetBytes(hash1[:])) < 0 || !reflect.DeepEqual(idxs, r.sampleIdxs) {
				t.Fatalf("%s head %d: pora's nonce %d: es-node's hashing says hash1 %x idxs %v (%v)", what, head, r.nonce, hash1, idxs, err)
			}
			touched += touches(r.sampleIdxs, cached)
		}
		foundPlain, err := ew.runHead(testShard, uint64(head), mix, requiredDiff)
		if err != nil {
			t.Fatalf("%s head %d: es-node's loop: %v", what, head, err)
		}
		if foundPlain != found {
			t.Fatalf("%s head %d: es-node's loop found=%v, with pora found=%v (a valid nonce exists in the range for both or neither)", what, head, foundPlain, found)
		}
		if !foundPlain {
			continue
		}
		r := ew.resultMap[testShard]
		engine := esnode.EngineOf(withPora.miner.worker.pora, testShard)
		rec, err := engine.HashWithDifficulty(mix[:], r.nonce, requiredDiff)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Valid == nil || !*rec.Valid || !reflect.DeepEqual(rec.SampleIdxs, r.sampleIdxs) {
			t.Fatalf("%s head %d: es-node's nonce %d: pora says valid %v idxs %v; es-node's idxs %v", what, head, r.nonce, rec.Valid, rec.SampleIdxs, r.sampleIdxs)
		}
		for i, s := range r.encodedData {
			if rec.EncodedSamples[i] != "0x"+hex.EncodeToString(s[:]) {
				t.Fatalf("%s head %d: es-node's nonce %d sample %d: pora %s, es-node %x", what, head, r.nonce, i, rec.EncodedSamples[i], s)
			}
		}
		touched += touches(r.sampleIdxs, cached)
	}
	return touched
}

func touches(sampleIdxs []uint64, cached map[uint64]bool) int {
	n := 0
	for _, idx := range sampleIdxs {
		if cached[idx>>(testKvSizeBits-5)] {
			n++
		}
	}
	return n
}

func TestHookExactnessThroughBothCaches(t *testing.T) {
	for _, shape := range []string{"memory cache", "disk cache"} {
		t.Run(shape, func(t *testing.T) {
			var cache BlobCache = NewBlobMemCache()
			if shape == "disk cache" {
				cache = NewBlobDiskCache()
			}
			path := writeDataFile(t, t.TempDir(), testShard, testKvEntriesBits, testKvSizeBits, testMiner, 7)
			plain, withPora := newNodes(t, path, cache)
			rng := rand.New(rand.NewSource(34))
			first := uint64(testShard << testKvEntriesBits)
			// Block 10: a third of the shard's KVs, and a blob of a shard this node does not hold
			// (no data, as es-node caches it). Block 11: more KVs; on disk also a second copy of
			// one of block 10's (two blocks holding one KV; the memory cache answers such a KV in
			// map order, so its rounds keep one copy per KV).
			block10 := &blockBlobs{number: 10, blobs: []*blob{{kvIndex: big.NewInt(3), kvSize: big.NewInt(1 << testKvSizeBits)}}}
			cached := map[uint64]bool{}
			for kv := first; kv < first+20; kv++ {
				block10.blobs = append(block10.blobs, newBlob(rng, kv))
				cached[kv] = true
			}
			block11 := &blockBlobs{number: 11, blobs: []*blob{newBlob(rng, first+30), newBlob(rng, first+31)}}
			cached[first+30], cached[first+31] = true, true
			if shape == "disk cache" {
				block11.blobs = append(block11.blobs, newBlob(rng, first+5))
			}
			for _, b := range []*blockBlobs{block10, block11} {
				if err := cache.SetBlockBlobs(b); err != nil {
					t.Fatal(err)
				}
			}
			touched := mineRound(t, "round 1", plain, withPora, cached, 1)
			fetchedRound1 := esnode.FetchedOf(withPora.miner.worker.pora, testShard)

			// Finalization: block 10 written to the file and cleaned from the cache (on disk,
			// KV first+5 stays cached through block 11's newer copy), then a new version of a
			// cached KV arrives in block 12.
			finalized := uint64(10)
			if shape == "memory cache" {
				finalized = 11 // the new version below must not sit beside an older copy
			}
			for n := uint64(10); n <= finalized; n++ {
				if err := withPora.storageManager.DownloadFinished(cache.Blobs(n)); err != nil {
					t.Fatal(err)
				}
			}
			cache.Cleanup(finalized)
			block12 := &blockBlobs{number: 12, blobs: []*blob{newBlob(rng, first+31), newBlob(rng, first+40)}}
			if err := cache.SetBlockBlobs(block12); err != nil {
				t.Fatal(err)
			}
			cached = map[uint64]bool{first + 31: true, first + 40: true}
			if shape == "disk cache" {
				cached[first+5], cached[first+30] = true, true
			}
			touched += mineRound(t, "round 2", plain, withPora, cached, 20)
			fetchedRound2 := esnode.FetchedOf(withPora.miner.worker.pora, testShard) - fetchedRound1
			// Round 1 fetched every cached KV once (the first task) and nothing after; round 2
			// fetched only the new and changed KVs: first+31 (new commit), first+40 (new).
			// Both shapes cache 22 distinct KVs of the shard in round 1 (on disk, first+5 twice:
			// only block 11's copy is fetched).
			if fetchedRound1 != 22 {
				t.Errorf("round 1: the cache sync fetched %d KVs, want 22 (each cached KV once, the newest copy)", fetchedRound1)
			}
			if fetchedRound2 != 2 {
				t.Errorf("round 2: the cache sync fetched %d KVs, want 2 (the changed and the new one)", fetchedRound2)
			}
			if touched == 0 {
				t.Fatal("no found nonce sampled a cached KV: the test shows nothing about the cache")
			}
			t.Logf("%s: %d samples of found nonces came from cached KVs; KVs fetched: %d in round 1, %d in round 2", shape, touched, fetchedRound1, fetchedRound2)
			if got := esnode.EngineOf(withPora.miner.worker.pora, testShard).CachedKVs(); len(got) != len(cached) {
				t.Errorf("the engine holds %d cached KVs %v, the cache %d", len(got), got, len(cached))
			}
		})
	}
}
