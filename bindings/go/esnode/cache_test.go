// The cache contract measured and counted on a shard of production geometry (128 KiB KVs, 1024
// per shard) with 512 cached KVs: which KVs the sync reads (only new or changed ones, newest
// block first, none of an unchanged KV from a disk-backed cache), what it drops, and what a task
// pays for it (the bounds: 0.05 ms with nothing changed, 0.5 ms with one KV changed).
package esnode

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	porago "github.com/pora-miner/pora/bindings/go"
)

const (
	costKvEntriesBits = 10
	costKvSizeBits    = 17
	costShard         = 2
	costCachedKVs     = 512
)

// hash is a named 32-byte type, as es-node's common.Hash is: the adapter must take it as it is.
type hash [32]byte

// cachedBlob is one blob of testCache: a KV's version brought by a block.
type cachedBlob struct {
	kv    uint64
	hash  hash
	block uint64
	data  []byte // in memory; nil when the cache is disk-backed
	path  string // the file holding it when disk-backed
}

// testCache is a blob cache of the contract's shape, in memory or disk-backed (an index in
// memory, the bytes in files, as es-node's disk cache keeps them), counting every read of bytes.
type testCache struct {
	dir       string // "" = in memory
	blobs     []*cachedBlob
	reads     int
	readsByKV map[uint64]int
	rng       *rand.Rand
}

func newTestCache(dir string) *testCache {
	return &testCache{dir: dir, readsByKV: map[uint64]int{}, rng: rand.New(rand.NewSource(1))}
}

// add caches a new version of kv under block.
func (c *testCache) add(t testing.TB, kv, block uint64) *cachedBlob {
	data := make([]byte, 1<<costKvSizeBits)
	c.rng.Read(data)
	b := &cachedBlob{kv: kv, block: block}
	c.rng.Read(b.hash[:])
	if c.dir == "" {
		b.data = data
	} else {
		b.path = filepath.Join(c.dir, fmt.Sprintf("%d-%d-%x", kv, block, b.hash[:4]))
		if err := os.WriteFile(b.path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.blobs = append(c.blobs, b)
	return b
}

// cleanup drops the blobs of blocks at or below finalized.
func (c *testCache) cleanup(finalized uint64) {
	kept := c.blobs[:0]
	for _, b := range c.blobs {
		if b.block > finalized {
			kept = append(kept, b)
		}
	}
	c.blobs = kept
}

func (c *testCache) VisitKVs(visit func(kvIdx uint64, hash hash, blockNumber uint64)) {
	for _, b := range c.blobs {
		visit(b.kv, b.hash, b.block)
	}
}

func (c *testCache) GetKeyValueByIndex(index uint64, h hash) []byte {
	for _, b := range c.blobs {
		if b.kv == index && b.hash == h {
			c.reads++
			c.readsByKV[index]++
			if c.dir == "" {
				return b.data
			}
			data, err := os.ReadFile(b.path)
			if err != nil {
				return nil
			}
			return data
		}
	}
	return nil
}

// takeReads returns the reads since the last call and resets the counts.
func (c *testCache) takeReads() (int, map[uint64]int) {
	n, by := c.reads, c.readsByKV
	c.reads, c.readsByKV = 0, map[uint64]int{}
	return n, by
}

// costEngine opens an engine over a sparse data file of shard costShard.
func costEngine(t testing.TB) *porago.Engine {
	kvs, kvSize := uint64(1)<<costKvEntriesBits, uint64(1)<<costKvSizeBits
	header := make([]byte, 4096)
	for i, v := range []uint64{headerMagic, 1, costShard * kvs, kvs, 3, kvSize, kvSize, 32} {
		binary.BigEndian.PutUint64(header[8*i:], v)
	}
	copy(header[64:84], "cost-test-miner-addr")
	path := filepath.Join(t.TempDir(), "shard.dat")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(header); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(4096 + kvs*(kvSize+32))); err != nil {
		t.Fatal(err)
	}
	e, err := porago.OpenEngine([]string{path}, porago.Options{Method: "pread", Threads: 1, Depth: 1, IgnoreProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestCacheSyncReadsOnlyNewOrChangedKVs(t *testing.T) {
	for _, disk := range []bool{false, true} {
		name := "memory"
		cache := newTestCache("")
		if disk {
			name, cache = "disk-backed", newTestCache(t.TempDir())
		}
		t.Run(name, func(t *testing.T) {
			engine := costEngine(t)
			var s cacheSync[hash]
			first := uint64(costShard << costKvEntriesBits)
			for i := uint64(0); i < costCachedKVs; i++ {
				cache.add(t, first+2*i, 100+i%8) // blocks 100..107
			}
			cache.add(t, 5, 100) // another shard's KV: never read
			sync := func(what string) (int, map[uint64]int) {
				t.Helper()
				if err := s.run(cache, engine, costShard, costKvEntriesBits); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				return cache.takeReads()
			}
			if n, by := sync("first task"); n != costCachedKVs || len(by) != costCachedKVs || by[5] != 0 {
				t.Fatalf("first task: %d reads of %d KVs (KV 5: %d); want each of the %d cached KVs once", n, len(by), by[5], costCachedKVs)
			}
			if got := len(engine.CachedKVs()); got != costCachedKVs {
				t.Fatalf("the engine holds %d KVs, want %d", got, costCachedKVs)
			}
			if n, _ := sync("unchanged"); n != 0 {
				t.Fatalf("nothing changed: %d reads, want 0", n)
			}
			// A new version of one KV in a newer block: only that KV is read, with its newest hash.
			changed := cache.add(t, first+10, 108)
			if n, by := sync("one changed"); n != 1 || by[first+10] != 1 || s.held[first+10].put != changed.hash {
				t.Fatalf("one KV changed: %d reads %v; want KV %d once, block 108's copy", n, by, first+10)
			}
			// Two blocks holding one KV, the newer listed before the older: the newer is read.
			newer := cache.add(t, first+1, 110)
			cache.add(t, first+1, 109)
			cache.blobs[len(cache.blobs)-1], cache.blobs[len(cache.blobs)-2] = cache.blobs[len(cache.blobs)-2], cache.blobs[len(cache.blobs)-1]
			if n, by := sync("two blocks"); n != 1 || s.held[first+1].put != newer.hash {
				t.Fatalf("a KV in blocks 109 and 110: %d reads %v, held %x; want block 110's copy once", n, by, s.held[first+1].put[:4])
			}
			// The older block finalized: the KV stays cached with the newer copy, nothing read.
			cache.cleanup(100)
			n, _ := sync("cleanup 100")
			if n != 0 {
				t.Fatalf("cleanup of block 100: %d reads, want 0", n)
			}
			wantHeld := costCachedKVs - costCachedKVs/8 + 1
			if got := len(engine.CachedKVs()); got != wantHeld {
				t.Fatalf("after cleanup of block 100 the engine holds %d KVs, want %d", got, wantHeld)
			}
			// Every block up to 109 finalized: only block 110's KV is left.
			cache.cleanup(109)
			if n, _ := sync("cleanup 109"); n != 0 || s.held[first+1] == nil || len(engine.CachedKVs()) != 1 {
				t.Fatalf("cleanup of block 109: %d reads, engine holds %v", n, engine.CachedKVs())
			}
			// A KV gone between the listing and the fetch is dropped, not an error.
			gone := cache.add(t, first+20, 111)
			if disk {
				os.Remove(gone.path)
			} else {
				gone.hash[0] ^= 1 // the lookup by hash misses
				cache.blobs[len(cache.blobs)-1] = &cachedBlob{kv: gone.kv, hash: gone.hash, block: gone.block}
			}
			sync("a KV vanishing")
			if s.held[first+20] != nil {
				t.Fatal("a KV the cache could not return is still held")
			}
		})
	}
}

// A KV cached by two blocks in a cache whose answer for it is not defined (es-node's memory
// cache answers in map order, and lists in map order too): the sync keeps the higher block's
// copy whichever is listed first, task after task.
func TestCacheSyncKeepsTheHigherBlocksCopy(t *testing.T) {
	for _, higherFirst := range []bool{true, false} {
		cache := newTestCache("")
		engine := costEngine(t)
		var s cacheSync[hash]
		kv := uint64(costShard<<costKvEntriesBits + 9)
		var higher *cachedBlob
		if higherFirst {
			higher = cache.add(t, kv, 21)
			cache.add(t, kv, 20)
		} else {
			cache.add(t, kv, 20)
			higher = cache.add(t, kv, 21)
		}
		for task := 0; task < 4; task++ {
			if err := s.run(cache, engine, costShard, costKvEntriesBits); err != nil {
				t.Fatal(err)
			}
			if e := s.held[kv]; e == nil || e.put != higher.hash {
				t.Fatalf("higher listed first=%v, task %d: the sync holds %v, want block 21's copy %x", higherFirst, task, e, higher.hash[:4])
			}
			// The listing's order flips between tasks, as a map's may.
			cache.blobs[0], cache.blobs[1] = cache.blobs[1], cache.blobs[0]
		}
		if reads, _ := cache.takeReads(); reads != 1 {
			t.Fatalf("higher listed first=%v: %d reads over 4 tasks, want 1 (the higher copy, once)", higherFirst, reads)
		}
	}
}

// syncBench sets up 512 cached KVs synced once and returns one task's sync (changing one KV
// before it when changeOne is set) and a check of the reads made by the steps so far.
func syncBench(t testing.TB, disk, changeOne bool) (step func(i int), checkReads func(steps int)) {
	cache := newTestCache("")
	if disk {
		cache = newTestCache(t.TempDir())
	}
	engine := costEngine(t)
	var s cacheSync[hash]
	first := uint64(costShard << costKvEntriesBits)
	for i := uint64(0); i < costCachedKVs; i++ {
		cache.add(t, first+i, 100)
	}
	if err := s.run(cache, engine, costShard, costKvEntriesBits); err != nil {
		t.Fatal(err)
	}
	cache.takeReads()
	// Two versions of KV first+7 to alternate between (prepared outside the timing).
	v1, v2 := cache.blobs[7], cache.add(t, first+7, 99)
	cache.blobs = cache.blobs[:len(cache.blobs)-1]
	step = func(i int) {
		if changeOne {
			if i%2 == 0 {
				cache.blobs[7] = v2
			} else {
				cache.blobs[7] = v1
			}
		}
		if err := s.run(cache, engine, costShard, costKvEntriesBits); err != nil {
			t.Fatal(err)
		}
	}
	checkReads = func(steps int) {
		reads, by := cache.takeReads()
		if want := map[bool]int{false: 0, true: steps}[changeOne]; reads != want || (changeOne && by[first+7] != steps) {
			t.Fatalf("%d syncs: %d reads %v, want %d (of the changed KV only)", steps, reads, by, want)
		}
	}
	return step, checkReads
}

// syncCosts times n syncs and returns the median and the slowest.
func syncCosts(t testing.TB, disk, changeOne bool, n int) (median, worst time.Duration) {
	step, checkReads := syncBench(t, disk, changeOne)
	times := make([]time.Duration, n)
	for i := range times {
		start := time.Now()
		step(i)
		times[i] = time.Since(start)
	}
	checkReads(n)
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times[n/2], times[n-1]
}

// TestCacheSyncCost holds the per-task cost to the bounds (medians of 301 tasks).
func TestCacheSyncCost(t *testing.T) {
	for _, c := range []struct {
		name            string
		disk, changeOne bool
		bound           time.Duration
	}{
		{"512 cached KVs unchanged, memory", false, false, 50 * time.Microsecond},
		{"512 cached KVs unchanged, disk-backed", true, false, 50 * time.Microsecond},
		{"512 cached KVs, one changed, memory", false, true, 500 * time.Microsecond},
		{"512 cached KVs, one changed, disk-backed", true, true, 500 * time.Microsecond},
	} {
		median, worst := syncCosts(t, c.disk, c.changeOne, 301)
		t.Logf("%s: %.4f ms per task (median of 301; slowest %.3f ms)", c.name, ms(median), ms(worst))
		if median > c.bound {
			t.Errorf("%s: %.4f ms per task, over %.2f ms", c.name, ms(median), ms(c.bound))
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkCacheSync: ns/op is one task's sync (go test -tags pora_sim -run '^$' -bench CacheSync ./esnode/).
func BenchmarkCacheSync(b *testing.B) {
	for _, disk := range []bool{false, true} {
		for _, changeOne := range []bool{false, true} {
			name := "unchanged-" + strconv.Itoa(costCachedKVs)
			if changeOne {
				name = "one-changed-" + strconv.Itoa(costCachedKVs)
			}
			if disk {
				name += "-disk"
			}
			b.Run(name, func(b *testing.B) {
				step, checkReads := syncBench(b, disk, changeOne)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					step(i)
				}
				b.StopTimer()
				checkReads(b.N)
			})
		}
	}
}
