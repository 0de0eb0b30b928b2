// The pure-Go es-node-style sampler checked against the es-node vectors and against pora, and
// the benchmark of MineSlot against it: es-node's miner reads through one shared *os.File with a
// goroutine per thread, one 32-byte ReadAt and one Keccak at a time.
package porago

import (
	"bytes"
	"context"
	"encoding/hex"
	"flag"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchShard, when set, benchmarks on an existing shard file instead of a small generated one.
var benchShard = flag.String("bench-shard", "", "shard file for the MineSlot / Go sampler benchmarks")

// benchNonces is the nonces per benchmark iteration.
var benchNonces = flag.Uint64("bench-nonces", 1<<16, "nonces per iteration of the MineSlot / Go sampler benchmarks")

func TestGoSamplerReproducesEsNodeVectorsAndPora(t *testing.T) {
	dir := t.TempDir()
	for _, v := range vectors(t) {
		path := buildVectorShard(t, dir, v)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		g := &goSampler{file: f, shard: v.Shard, kvEntriesBits: v.KVEntriesBits, kvBits: v.KVSizeBits, checks: v.RandomChecks}
		copy(g.miner[:], mustHex(t, v.Miner))
		h, idxs, err := g.hash1(mustHex(t, v.Randao), v.Nonce)
		f.Close()
		os.Remove(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := "0x" + hex.EncodeToString(h[:]); !strings.EqualFold(got, v.Hash1) || join(idxs) != join(v.SampleIdxs) {
			t.Errorf("nonce %d: Go sampler hash1 %s idxs %v, es-node %s %v", v.Nonce, got, idxs, v.Hash1, v.SampleIdxs)
		}
	}
	// And on a random shard it agrees with pora's hash for a few nonces.
	path := smallShards(t)[0]
	s, err := Open([][]string{{path}}, Options{Method: "pread", Threads: 1, Depth: 1, IgnoreProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, _ := os.Open(path)
	defer f.Close()
	g := &goSampler{file: f, shard: 0, kvEntriesBits: 6, kvBits: 12, miner: testMiner, checks: 2}
	randao := bytes.Repeat([]byte{9}, 32)
	for nonce := uint64(0); nonce < 20; nonce++ {
		h, _, err := g.hash1(randao, nonce)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := s.Hash(0, randao, nonce)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Hash1 != "0x"+hex.EncodeToString(h[:]) {
			t.Fatalf("nonce %d: Go sampler %x, pora %s", nonce, h, rec.Hash1)
		}
	}
}

// benchTarget is the shard both benchmarks read: -bench-shard, or a generated 16 MiB shard.
func benchTarget(b *testing.B) (string, shardSpec) {
	if *benchShard != "" {
		spec, err := readSpec(*benchShard)
		if err != nil {
			b.Fatal(err)
		}
		return *benchShard, spec
	}
	spec := shardSpec{shard: 0, kvEntriesBits: 12, kvBits: 12, miner: testMiner}
	return writeShard(b, b.TempDir(), spec, 5), spec
}

// readSpec reads the geometry and miner from a shard file's header.
func readSpec(path string) (shardSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return shardSpec{}, err
	}
	defer f.Close()
	h := make([]byte, headerSize)
	if _, err := f.ReadAt(h, 0); err != nil {
		return shardSpec{}, err
	}
	be := func(i int) uint64 {
		var v uint64
		for _, c := range h[8*i : 8*i+8] {
			v = v<<8 | uint64(c)
		}
		return v
	}
	spec := shardSpec{kvEntriesBits: uint(log2(be(3))), kvBits: uint(log2(be(5)))}
	spec.shard = be(2) / be(3)
	copy(spec.miner[:], h[64:84])
	return spec, nil
}

func log2(v uint64) int {
	n := 0
	for v > 1 {
		v >>= 1
		n++
	}
	return n
}

// benchOverlayKVs, when set, gives BenchmarkMineSlot an overlay of that many of the shard's KVs
// (spread evenly), to measure what the lookup costs the reads outside them.
var benchOverlayKVs = flag.Int("bench-overlay-kvs", 0, "KVs in the overlay of the MineSlot benchmark (0 = no overlay)")

// benchOverlay is an overlay of n KVs spread over the shard of spec, or nil for n = 0.
func benchOverlay(b *testing.B, spec shardSpec, n int) *Overlay {
	if n == 0 {
		return nil
	}
	o, err := NewOverlay()
	if err != nil {
		b.Fatal(err)
	}
	kvs := uint64(1) << spec.kvEntriesBits
	data := make([]byte, 1<<spec.kvBits)
	for i := 0; i < n; i++ {
		if err := o.Put(spec.shard*kvs+uint64(i)*kvs/uint64(n), data); err != nil {
			b.Fatal(err)
		}
	}
	return o
}

// BenchmarkMineSlot mines -bench-nonces (65,536) per iteration through pora (method auto, pora's choice
// of threads and depth) and reports samples/s; -bench-overlay-kvs adds an overlay.
func BenchmarkMineSlot(b *testing.B) {
	path, spec := benchTarget(b)
	s, err := Open([][]string{{path}}, Options{IgnoreProfile: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	overlay := benchOverlay(b, spec, *benchOverlayKVs)
	b.ResetTimer()
	start := time.Now()
	var samples uint64
	for i := 0; i < b.N; i++ {
		r, err := s.MineSlot(context.Background(), SlotRequest{Randao: bytes.Repeat([]byte{byte(i)}, 32), NonceStart: 0, NonceEnd: *benchNonces, SlotLength: time.Hour, Overlay: overlay})
		if err != nil {
			b.Fatal(err)
		}
		samples += r.Shards[0].SamplesRead
	}
	b.ReportMetric(float64(samples)/time.Since(start).Seconds(), "samples/s")
}

// BenchmarkGoSampler mines the same -bench-nonces nonces the way es-node does: a goroutine per CPU
// taking nonces from a shared counter, one shared *os.File.
func BenchmarkGoSampler(b *testing.B) {
	path, spec := benchTarget(b)
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	g := &goSampler{file: f, shard: spec.shard, kvEntriesBits: spec.kvEntriesBits, kvBits: spec.kvBits, miner: spec.miner, checks: 2}
	threads := runtime.NumCPU()
	b.ResetTimer()
	start := time.Now()
	var samples uint64
	for i := 0; i < b.N; i++ {
		randao := bytes.Repeat([]byte{byte(i)}, 32)
		var next uint64
		var wg sync.WaitGroup
		for w := 0; w < threads; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					n := atomic.AddUint64(&next, 1) - 1
					if n >= *benchNonces {
						return
					}
					if _, _, err := g.hash1(randao, n); err != nil {
						b.Error(err)
						return
					}
					atomic.AddUint64(&samples, 2)
				}
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(samples)/time.Since(start).Seconds(), "samples/s")
}

// BenchmarkMineSlotCrossing is the fixed cost of one MineSlot call: a 4-nonce slot on a cached
// shard. Reports the median whole call as Go sees it and the median elapsedSec pora measures
// inside the slot; the difference is the crossing (cgo, JSON, copies, the cancel token).
func BenchmarkMineSlotCrossing(b *testing.B) {
	path := smallShards(b)[0]
	s, err := Open([][]string{{path}}, Options{Method: "mmap", Threads: 1, Depth: 4, IgnoreProfile: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	req := SlotRequest{Randao: make([]byte, 32), NonceStart: 0, NonceEnd: 4, SlotLength: time.Minute}
	calls := make([]float64, 0, b.N)
	inside := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r, err := s.MineSlot(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		calls = append(calls, time.Since(start).Seconds())
		inside = append(inside, r.Shards[0].ElapsedSec)
	}
	b.ReportMetric(median(calls)*1e6, "us-call-median")
	b.ReportMetric(median(inside)*1e6, "us-inside-pora-median")
}

func median(v []float64) float64 {
	sorted := append([]float64(nil), v...)
	sort.Float64s(sorted)
	return sorted[len(sorted)/2]
}
