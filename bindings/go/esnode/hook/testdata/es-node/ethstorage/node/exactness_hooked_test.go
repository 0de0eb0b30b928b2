//go:build pora_hooked

// Exactness through the hook, in this tree's own worker: a node with --miner.pora and one
// without mine the same heads over one shard file and one blob cache (the memory cache and the
// disk cache), with a finalization and a new version of a KV between rounds, and each side's
// nonce is judged by the other's hashing. pora's nonce must be accepted by es-node's computeHash
// (its own loop also re-checked it before storing the result), and es-node's nonce by pora's
// engine holding exactly what es-node's ReadSample answers, with the same sample indices and
// bytes. RandomChecks (3) and NonceLimit (2^13) are not pora's defaults, so a value that did not
// reach the engine shows.
package node_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/big"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethstorage/go-ethstorage/ethstorage/downloader"
	porago "github.com/pora-miner/pora/bindings/go"
)

const exactShard = 1

// cachedKV is one blob a test sets in a cache: its KV, its version's hash and bytes (nil for a
// KV of a shard this node does not hold, as es-node caches it).
type cachedKV struct {
	kv   uint64
	hash common.Hash
	data []byte
}

func newKV(rng *rand.Rand, kv uint64) cachedKV {
	data := make([]byte, 1<<kvSizeBits)
	rng.Read(data)
	return cachedKV{kv: kv, hash: sha256.Sum256(data), data: data}
}

// listedMemCache is es-node's memory cache, unchanged, with the VisitKVs listing pora needs:
// es-node v0.2.10's memory cache has none and the hook adds none (a node mines over its disk
// cache; es-node uses the memory cache in tests), so the test lists what it set, by block, and
// drops what Cleanup drops. Lookups stay the memory cache's own, in map order.
type listedMemCache struct {
	*downloader.BlobMemCache
	mu     sync.Mutex
	blocks map[uint64][]cachedKV
}

func newListedMemCache() *listedMemCache {
	return &listedMemCache{BlobMemCache: downloader.NewBlobMemCache(), blocks: map[uint64][]cachedKV{}}
}

func (c *listedMemCache) Cleanup(finalized uint64) {
	c.BlobMemCache.Cleanup(finalized)
	c.mu.Lock()
	defer c.mu.Unlock()
	for number := range c.blocks {
		if number <= finalized {
			delete(c.blocks, number)
		}
	}
}

func (c *listedMemCache) VisitKVs(visit func(kvIdx uint64, hash common.Hash, block uint64)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for number, kvs := range c.blocks {
		for _, b := range kvs { // another shard's KV too: pora skips it
			visit(b.kv, b.hash, number)
		}
	}
}

// setBlock sets block number's blobs in the cache (and in a memory cache's listing).
func setBlock(t *testing.T, cache downloader.BlobCache, number uint64, kvs []cachedKV) {
	t.Helper()
	block := downloader.NewBlock(number)
	for _, b := range kvs {
		downloader.AddBlob(block, b.kv, b.hash, b.data)
	}
	if err := cache.SetBlockBlobs(block); err != nil {
		t.Fatal(err)
	}
	if l, ok := cache.(*listedMemCache); ok {
		l.mu.Lock()
		l.blocks[number] = kvs
		l.mu.Unlock()
	}
}

// writeFinalized writes a finalized block's KVs of exactShard into the data file, as es-node's
// storage manager does when the downloader finishes a block.
func writeFinalized(t *testing.T, path string, kvs []cachedKV) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first := uint64(exactShard << kvEntriesBits)
	for _, b := range kvs {
		if b.data == nil || b.kv>>kvEntriesBits != exactShard {
			continue
		}
		if _, err := f.WriteAt(b.data, int64(4096+(b.kv-first)<<kvSizeBits)); err != nil {
			t.Fatal(err)
		}
	}
}

// exactNodes are two nodes over the file and the cache: es-node's own loop, and pora through
// the hook.
func exactNodes(t *testing.T, path string, cache downloader.BlobCache) (plain, withPora *testNode) {
	paths := map[uint64]string{exactShard: path}
	for _, pora := range []bool{false, true} {
		cfg := config(1<<13, 60, pora)
		cfg.RandomChecks = 3
		tn, err := newNodeOver(t, paths, cfg, cache)
		if err != nil {
			t.Fatal(err)
		}
		if pora {
			withPora = tn
		} else {
			plain = tn
		}
	}
	return plain, withPora
}

// esNodesView is pora's engine over the shard's file holding, for each KV the cache answers,
// the bytes es-node's ReadSample reads (GetSampleData, sample by sample); the other KVs come from
// the file, as in es-node. It judges es-node's nonce by what es-node samples, apart from the
// adapter's own cache sync.
func esNodesView(t *testing.T, path string, cache downloader.BlobCache) (*porago.Engine, map[uint64]bool) {
	t.Helper()
	e, err := porago.OpenEngine([]string{path}, porago.Options{Method: "pread", Threads: 1, Depth: 1,
		IgnoreProfile: true, RandomChecks: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	cached := map[uint64]bool{}
	first := uint64(exactShard << kvEntriesBits)
	for kv := first; kv < first+1<<kvEntriesBits; kv++ {
		if cache.GetSampleData(kv, 0) == nil {
			continue
		}
		data := make([]byte, 0, 1<<kvSizeBits)
		for i := uint64(0); i < 1<<(kvSizeBits-5); i++ {
			data = append(data, cache.GetSampleData(kv, i)...)
		}
		if _, err := e.PutKV(kv, sha256.Sum256(data), data); err != nil {
			t.Fatal(err)
		}
		cached[kv] = true
	}
	return e, cached
}

// mineRound mines six heads with both nodes; each found nonce is judged by es-node's hashing and
// by pora's engine on es-node's view. It returns how many samples of found nonces came from KVs
// the cache answered.
func mineRound(t *testing.T, what string, plain, withPora *testNode, path string,
	cache downloader.BlobCache, firstHead byte) int {
	t.Helper()
	view, cached := esNodesView(t, path, cache)
	shards := []uint64{exactShard}
	touched := 0
	judge := func(head byte, whose string, mix common.Hash, nonce uint64, samples []common.Hash) {
		t.Helper()
		hash1, idxs, err := plain.node.Miner().Hash(exactShard, mix, nonce)
		if err != nil || diffOneIn(512).Cmp(new(big.Int).SetBytes(hash1[:])) < 0 {
			t.Fatalf("%s head %d: %s nonce %d: es-node's hashing says hash1 %x (%v)", what, head, whose, nonce, hash1, err)
		}
		rec, err := view.HashWithDifficulty(mix[:], nonce, diffOneIn(512))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Valid == nil || !*rec.Valid || !reflect.DeepEqual(rec.SampleIdxs, idxs) {
			t.Fatalf("%s head %d: %s nonce %d: pora says valid %v idxs %v; es-node's idxs %v", what, head, whose, nonce, rec.Valid, rec.SampleIdxs, idxs)
		}
		for i, s := range samples {
			if rec.EncodedSamples[i] != "0x"+hex.EncodeToString(s[:]) {
				t.Fatalf("%s head %d: %s nonce %d sample %d: pora %s, es-node %x", what, head, whose, nonce, i, rec.EncodedSamples[i], s)
			}
		}
		for _, idx := range idxs {
			if cached[idx>>(kvSizeBits-5)] {
				touched++
			}
		}
	}
	for head := firstHead; head < firstHead+6; head++ {
		mix := common.Hash(sha256.Sum256([]byte{head}))
		// pora first: its task syncs the engine with the cache, as es-node's loop then reads it.
		a, err := withPora.node.Miner().RunHead(shards, uint64(head), mix, diffOneIn(512))
		if err != nil {
			t.Fatalf("%s head %d: with pora: %v", what, head, err)
		}
		if s := withPora.node.Miner().MiningStates()[exactShard]; s.MiningPower == 0 || s.MiningPower > 10000 {
			t.Fatalf("%s head %d: with pora, mining state %+v", what, head, *s)
		}
		if a[exactShard] {
			nonce, samples, ok := withPora.node.Miner().Result(exactShard)
			if !ok {
				t.Fatalf("%s head %d: pora found a nonce and es-node's loop stored no result", what, head)
			}
			judge(head, "pora's", mix, nonce, samples)
		}
		b, err := plain.node.Miner().RunHead(shards, uint64(head), mix, diffOneIn(512))
		if err != nil {
			t.Fatalf("%s head %d: es-node's loop: %v", what, head, err)
		}
		if a[exactShard] != b[exactShard] {
			t.Fatalf("%s head %d: found %v with pora, %v with es-node's loop (a valid nonce exists in the range for both or neither)", what, head, a[exactShard], b[exactShard])
		}
		if b[exactShard] {
			nonce, samples, ok := plain.node.Miner().Result(exactShard)
			if !ok {
				t.Fatalf("%s head %d: es-node's loop found and stored no result", what, head)
			}
			judge(head, "es-node's", mix, nonce, samples)
		}
	}
	return touched
}

func TestHookExactnessThroughBothCaches(t *testing.T) {
	for _, shape := range []string{"memory cache", "disk cache"} {
		t.Run(shape, func(t *testing.T) {
			disk := shape == "disk cache"
			var cache downloader.BlobCache = newListedMemCache()
			if disk {
				cache = downloader.NewBlobDiskCache(&recorder{})
			}
			path := writeDataFile(t, t.TempDir(), exactShard, testMiner, 7)
			plain, withPora := exactNodes(t, path, cache)
			rng := rand.New(rand.NewSource(34))
			first := uint64(exactShard << kvEntriesBits)
			// Block 10: a third of the shard's KVs, and a blob of shard 0, which this node does
			// not hold (no data). Block 11: more KVs; on disk also a second copy of one of block
			// 10's (the memory cache answers such a KV in map order, so its rounds keep one copy
			// per KV).
			blocks := map[uint64][]cachedKV{10: {{kv: 3}}}
			for kv := first; kv < first+20; kv++ {
				blocks[10] = append(blocks[10], newKV(rng, kv))
			}
			blocks[11] = []cachedKV{newKV(rng, first+30), newKV(rng, first+31)}
			if disk {
				blocks[11] = append(blocks[11], newKV(rng, first+5))
			}
			setBlock(t, cache, 10, blocks[10])
			setBlock(t, cache, 11, blocks[11])
			touched := mineRound(t, "round 1", plain, withPora, path, cache, 1)

			// Finalization: block 10 (the memory cache: 10 and 11) written to the file and
			// cleaned from the cache, then a new version of a cached KV and a new KV in block 12.
			// On disk, es-node v0.2.10's Cleanup of block 10 also drops KV first+5's lookup
			// though block 11 holds it: es-node then samples the file, and pora must too.
			finalized := uint64(10)
			if !disk {
				finalized = 11
			}
			for n := uint64(10); n <= finalized; n++ {
				writeFinalized(t, path, blocks[n])
			}
			cache.Cleanup(finalized)
			setBlock(t, cache, 12, []cachedKV{newKV(rng, first+31), newKV(rng, first+40)})
			touched += mineRound(t, "round 2", plain, withPora, path, cache, 20)
			if touched == 0 {
				t.Fatal("no found nonce sampled a cached KV: the test shows nothing about the cache")
			}
			t.Logf("%s: %d samples of found nonces came from cached KVs", shape, touched)
		})
	}
}

// A KV cached by two blocks: es-node's disk cache answers GetSampleData from kvIndexLookup, the
// copy set most recently, which after a reorg is a lower block's than the other copy it holds.
// Every KV of the shard is cached twice, block 11's copies set after block 12's: pora must
// sample block 11's, or every found nonce would differ.
func TestDiskCacheSampledCopyIsTheMostRecentlySet(t *testing.T) {
	path := writeDataFile(t, t.TempDir(), exactShard, testMiner, 8)
	cache := downloader.NewBlobDiskCache(&recorder{})
	plain, withPora := exactNodes(t, path, cache)
	rng := rand.New(rand.NewSource(61))
	first := uint64(exactShard << kvEntriesBits)
	var higher, lower []cachedKV
	for kv := first; kv < first+1<<kvEntriesBits; kv++ {
		higher, lower = append(higher, newKV(rng, kv)), append(lower, newKV(rng, kv))
	}
	setBlock(t, cache, 12, higher)
	setBlock(t, cache, 11, lower) // the reorg's block, set after block 12
	if got := cache.GetSampleData(first, 0); !bytes.Equal(got, lower[0].data[:32]) {
		t.Fatalf("the tree's disk cache does not answer the most recently set copy: %x", got)
	}
	if touched := mineRound(t, "reorged cache", plain, withPora, path, cache, 40); touched == 0 {
		t.Fatal("no found nonce: the test compared nothing")
	}
}

// A cached KV of the wrong size fails the task where it enters pora's engine, naming the KV and
// both sizes, instead of mining with a broken cache.
func TestWrongSizeKVRefusedAtPutKV(t *testing.T) {
	cache := downloader.NewBlobDiskCache(&recorder{})
	kv := uint64(exactShard<<kvEntriesBits + 3)
	setBlock(t, cache, 5, []cachedKV{{kv: kv, hash: common.Hash{1}, data: make([]byte, 1<<(kvSizeBits-1))}})
	tn, err := newNode(t, []uint64{exactShard}, config(1<<10, 60, true), cache)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tn.node.Miner().RunHead([]uint64{exactShard}, 1, common.Hash{}, noValidNonce)
	if err == nil || !strings.Contains(err.Error(), "KV 67: 2048 bytes") {
		t.Fatalf("a 2 KiB KV on a 4 KiB shard: %v; want the task's error naming KV 67 and 2048 bytes", err)
	}
	t.Logf("refused: %v", err)
}
