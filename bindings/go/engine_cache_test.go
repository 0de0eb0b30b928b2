// The engine's blob cache by KV index (PutKV with a commit and a size check, DropKV, CachedKVs), Hash through the
// cache checked against es-node's loop in Go, the LowestInRange find policy equal to es-node's
// single-thread loop, and the per-task cost of a cache that did not change (benchmarks).
package porago

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/big"
	"math/rand"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// touchingNonce is the first nonce from start whose samples (read through g, cache first) touch
// KV kv, with its hash1 and samples.
func touchingNonce(t *testing.T, g *goSampler, randao []byte, kv uint64) (uint64, [32]byte, []uint64, [][32]byte) {
	for nonce := uint64(0); nonce < 1<<16; nonce++ {
		h, idxs, samples, err := g.hash1Samples(randao, nonce)
		if err != nil {
			t.Fatal(err)
		}
		for _, idx := range idxs {
			if idx>>(g.kvBits-5) == kv {
				return nonce, h, idxs, samples
			}
		}
	}
	t.Fatalf("no nonce below 65536 samples KV %d", kv)
	return 0, [32]byte{}, nil, nil
}

func checkHash(t *testing.T, what string, e *Engine, randao []byte, nonce uint64, h [32]byte, idxs []uint64, samples [][32]byte) {
	t.Helper()
	rec, err := e.HashWithDifficulty(randao, nonce, new(big.Int).SetBytes(h[:]))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Hash1 != "0x"+hex.EncodeToString(h[:]) || !reflect.DeepEqual(rec.SampleIdxs, idxs) || rec.Valid == nil || !*rec.Valid {
		t.Fatalf("%s: nonce %d: Engine.Hash hash1 %s idxs %v valid %v; es-node's loop %x %v", what, nonce, rec.Hash1, rec.SampleIdxs, rec.Valid, h, idxs)
	}
	for i, s := range samples {
		if rec.EncodedSamples[i] != "0x"+hex.EncodeToString(s[:]) {
			t.Fatalf("%s: nonce %d sample %d: %s, es-node's loop %x", what, nonce, i, rec.EncodedSamples[i], s)
		}
	}
}

func TestEngineCacheByKVIndexAndHash(t *testing.T) {
	path := smallShards(t)[1] // shard 1: KVs 64..127 of 4 KiB
	e, err := OpenEngine([]string{path}, Options{Method: "pread", Threads: 2, Depth: 8, IgnoreProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewSource(29))
	blob := func() []byte { b := make([]byte, 4096); rng.Read(b); return b }
	first, second := blob(), blob()
	const kv = 70
	randao := bytes.Repeat([]byte{29}, 32)
	cached := &goSampler{file: f, shard: 1, kvEntriesBits: 6, kvBits: 12, miner: testMiner, checks: 2, cache: map[uint64][]byte{kv: first}}
	plain := &goSampler{file: f, shard: 1, kvEntriesBits: 6, kvBits: 12, miner: testMiner, checks: 2}

	if changed, err := e.PutKV(kv, [32]byte{1}, first); err != nil || !changed {
		t.Fatalf("first put: changed %v, %v", changed, err)
	}
	nonce, h, idxs, samples := touchingNonce(t, cached, randao, kv)
	checkHash(t, "KV 70 cached", e, randao, nonce, h, idxs, samples)
	if fileH, _, _ := plain.hash1(randao, nonce); fileH == h {
		t.Fatalf("nonce %d: the cached blob gives the file's hash1: the test shows nothing", nonce)
	}
	// The same commit: nothing is read, so other bytes under it change nothing.
	if changed, err := e.PutKV(kv, [32]byte{1}, second); err != nil || changed {
		t.Fatalf("put with the same commit: changed %v, %v", changed, err)
	}
	checkHash(t, "same commit, other bytes", e, randao, nonce, h, idxs, samples)
	// A new commit: the new bytes are sampled.
	if changed, err := e.PutKV(kv, [32]byte{2}, second); err != nil || !changed {
		t.Fatalf("put with a new commit: changed %v, %v", changed, err)
	}
	cached.cache[kv] = second
	nonce2, h2, idxs2, samples2 := touchingNonce(t, cached, randao, kv)
	checkHash(t, "new commit", e, randao, nonce2, h2, idxs2, samples2)
	if got := e.CachedKVs(); !reflect.DeepEqual(got, []uint64{kv}) {
		t.Fatalf("CachedKVs %v, want [70]", got)
	}
	// Dropped: the file again.
	if dropped, err := e.DropKV(kv); err != nil || !dropped {
		t.Fatalf("drop: %v, %v", dropped, err)
	}
	if dropped, err := e.DropKV(kv); err != nil || dropped {
		t.Fatalf("second drop: %v, %v", dropped, err)
	}
	fh, fidxs, fsamples, err := plain.hash1Samples(randao, nonce2)
	if err != nil {
		t.Fatal(err)
	}
	checkHash(t, "dropped", e, randao, nonce2, fh, fidxs, fsamples)
	if got := e.CachedKVs(); len(got) != 0 {
		t.Fatalf("CachedKVs after the drop: %v", got)
	}
	// SyncCache by commits: a listed KV with its commit unchanged is not re-put; one not listed
	// is dropped.
	if err := e.SyncCache([]CachedKV{{KvIdx: 64, Commit: [32]byte{7}, Data: first}, {KvIdx: 65, Commit: [32]byte{8}, Data: second}}); err != nil {
		t.Fatal(err)
	}
	if changed, err := e.PutKV(64, [32]byte{7}, second); err != nil || changed {
		t.Fatalf("after SyncCache, the same commit: changed %v, %v", changed, err)
	}
	if err := e.SyncCache([]CachedKV{{KvIdx: 65, Commit: [32]byte{8}}}); err != nil { // Data not read
		t.Fatal(err)
	}
	if got := e.CachedKVs(); !reflect.DeepEqual(got, []uint64{65}) {
		t.Fatalf("CachedKVs after SyncCache dropped 64: %v", got)
	}
	// The same list again is the fast path; a changed commit in it is still seen.
	for _, commit := range [][32]byte{{8}, {8}, {9}} {
		if err := e.SyncCache([]CachedKV{{KvIdx: 65, Commit: commit, Data: first}}); err != nil {
			t.Fatal(err)
		}
	}
	if changed, err := e.PutKV(65, [32]byte{9}, second); err != nil || changed {
		t.Fatalf("after SyncCache listed commit 9: a put of commit 9 changed %v, %v", changed, err)
	}
	cached.cache = map[uint64][]byte{65: first}
	nonce3, h3, idxs3, samples3 := touchingNonce(t, cached, randao, 65)
	checkHash(t, "SyncCache's changed commit", e, randao, nonce3, h3, idxs3, samples3)
}

// TestEngineLowestInRangeIsEsNodesLoop: LowestInRange tries the whole range and answers the
// lowest valid nonce: exactly what es-node's loop finds walking the range on one thread (with
// its blob cache), every round.
func TestEngineLowestInRangeIsEsNodesLoop(t *testing.T) {
	path := smallShards(t)[1]
	e, err := OpenEngine([]string{path}, Options{Method: "pread", Threads: 2, Depth: 8, IgnoreProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	f, _ := os.Open(path)
	defer f.Close()
	cacheList, cache := randomCache(5, 64, 77, 99, 127)
	if err := e.SyncCache(cacheList); err != nil {
		t.Fatal(err)
	}
	required := new(big.Int).Rsh(maxUint256(), 9) // about one nonce in 512
	const end = 1 << 13
	found := 0
	for round := byte(0); round < 12; round++ {
		randao := bytes.Repeat([]byte{round + 90}, 32)
		g := &goSampler{file: f, shard: 1, kvEntriesBits: 6, kvBits: 12, miner: testMiner, checks: 2, cache: cache}
		want, _, _, ok := esNodeFirstValid(t, g, randao, 0, end, required)
		res, err := e.MineTask(Task{MixHash: randao, RequiredDiff: required, NonceEnd: end, Deadline: time.Now().Add(time.Minute), Find: LowestInRange}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.NoncesTried != end {
			t.Fatalf("round %d: LowestInRange tried %d nonces of %d", round, res.NoncesTried, end)
		}
		if res.Found != ok || (ok && res.Nonce != want) {
			t.Fatalf("round %d: LowestInRange found %v nonce %d; es-node's loop %v nonce %d", round, res.Found, res.Nonce, ok, want)
		}
		if ok {
			found++
		}
	}
	if found == 0 {
		t.Fatal("no round had a valid nonce: the test shows nothing")
	}
	if _, err := e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: required, NonceEnd: 64, Deadline: time.Now().Add(time.Minute), Find: FindPolicy(7)}, nil); err == nil {
		t.Fatal("an unknown find policy was accepted")
	}
}

// cache512 is a 512-KV cache of 128 KiB blobs for a shard of 2^10 KVs of 128 KiB.
func cache512(b *testing.B) (*Engine, []CachedKV) {
	dir := b.TempDir()
	spec := shardSpec{shard: 0, kvEntriesBits: 10, kvBits: 17, encodeType: 3, miner: testMiner}
	f := createSparse(b, dir+"/cache512.dat", spec)
	f.Close()
	e, err := OpenEngine([]string{dir + "/cache512.dat"}, Options{Method: "pread", Threads: 1, Depth: 4, IgnoreProfile: true})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	kvs := make([]CachedKV, 512)
	for i := range kvs {
		data := make([]byte, 1<<17)
		rng.Read(data)
		kvs[i] = CachedKV{KvIdx: uint64(i), Commit: sha256.Sum256(data), Data: data}
	}
	if err := e.SyncCache(kvs); err != nil {
		b.Fatal(err)
	}
	return e, kvs
}

// BenchmarkEngineSyncCache512Unchanged: the work a task adds when es-node lists its 512 cached
// KVs before it and none changed since the last task (PutKV/DropKV callers add nothing).
func BenchmarkEngineSyncCache512Unchanged(b *testing.B) {
	e, kvs := cache512(b)
	defer e.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := e.SyncCache(kvs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngineSyncCache512OneChanged: the same with one KV's bytes (and commit) changed
// before each task: one 128 KiB copy into the overlay.
func BenchmarkEngineSyncCache512OneChanged(b *testing.B) {
	e, kvs := cache512(b)
	defer e.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		kvs[i%512].Commit[0]++
		if err := e.SyncCache(kvs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngineTaskCached: one short task (64 nonces, nothing valid) with 0 or 512 cached KVs
// unchanged since the last task, through SyncCache: the difference is what the cache costs a
// task (the slot's overlay snapshot and the sync).
func BenchmarkEngineTaskCached(b *testing.B) {
	for _, n := range []int{0, 512} {
		b.Run(map[int]string{0: "kvs=0", 512: "kvs=512"}[n], func(b *testing.B) {
			e, kvs := cache512(b)
			defer e.Close()
			kvs = kvs[:n]
			if err := e.SyncCache(kvs); err != nil {
				b.Fatal(err)
			}
			task := Task{MixHash: make([]byte, 32), RequiredDiff: big.NewInt(0), NonceEnd: 64}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := e.SyncCache(kvs); err != nil {
					b.Fatal(err)
				}
				task.Deadline = time.Now().Add(time.Minute)
				if _, err := e.MineTask(task, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEngineFindPolicy: the cost of LowestInRange over FirstInTime on the same task (2^14
// nonces, about one valid in 1024, a 256 KiB shard in the page cache, pread): LowestInRange
// mines the whole range, FirstInTime stops at its first find.
func BenchmarkEngineFindPolicy(b *testing.B) {
	path := smallShards(b)[1]
	for _, find := range []FindPolicy{FirstInTime, LowestInRange} {
		b.Run(find.String(), func(b *testing.B) {
			e, err := OpenEngine([]string{path}, Options{Method: "pread", Threads: 2, Depth: 8, IgnoreProfile: true})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			required := new(big.Int).Rsh(maxUint256(), 10)
			var tried uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				randao := bytes.Repeat([]byte{byte(i)}, 32)
				res, err := e.MineTask(Task{MixHash: randao, RequiredDiff: required, NonceEnd: 1 << 14, Deadline: time.Now().Add(time.Minute), Find: find}, nil)
				if err != nil {
					b.Fatal(err)
				}
				tried += res.NoncesTried
			}
			b.ReportMetric(float64(tried)/float64(b.N), "nonces/task")
		})
	}
}

// A KV of another size than the shard's is refused at PutKV (and SyncCache), naming the KV and
// both sizes, and leaves the engine as it was: tasks and Hash go on working.
func TestEnginePutKVRefusesTheWrongSize(t *testing.T) {
	path := smallShards(t)[1] // 4 KiB KVs
	e, err := OpenEngine([]string{path}, Options{Method: "pread", Threads: 1, Depth: 1, IgnoreProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, size := range []int{0, 2048, 4095, 4097, 8192} {
		changed, err := e.PutKV(70, [32]byte{byte(size)}, make([]byte, size))
		if err == nil || changed || !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "KV 70: "+strconv.Itoa(size)+" bytes") || !strings.Contains(err.Error(), "4096 bytes") {
			t.Fatalf("PutKV of %d bytes: changed %v, %v", size, changed, err)
		}
	}
	if err := e.SyncCache([]CachedKV{{KvIdx: 71, Commit: [32]byte{1}, Data: make([]byte, 64)}}); err == nil || !strings.Contains(err.Error(), "KV 71: 64 bytes") {
		t.Fatalf("SyncCache of a 64-byte KV: %v", err)
	}
	if got := e.CachedKVs(); len(got) != 0 {
		t.Fatalf("the engine holds %v after refused puts", got)
	}
	if _, err := e.Hash(bytes.Repeat([]byte{1}, 32), 5); err != nil {
		t.Fatalf("Hash after refused puts: %v", err)
	}
}
