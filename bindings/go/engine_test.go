// The es-node engine checked against es-node's own loop, written here in Go (one nonce after
// another from nonceStart, samples from the blob cache first, then the file): a valid nonce
// exactly when the loop finds one, with the loop's sample indices and encoded samples for it,
// with cached blobs that differ from disk; the
// deadline held; a stopped miner ending the slot within 100 ms; a truncated file failing the
// task with an error.
package porago

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// esNodeFirstValid is es-node's mineTask over nonces [start, end) on one thread: the first nonce
// whose hash1 meets required, with its sample indices and samples.
func esNodeFirstValid(t *testing.T, g *goSampler, randao []byte, start, end uint64, required *big.Int) (uint64, []uint64, [][32]byte, bool) {
	for nonce := start; nonce < end; nonce++ {
		h, idxs, samples, err := g.hash1Samples(randao, nonce)
		if err != nil {
			t.Fatal(err)
		}
		if required.Cmp(new(big.Int).SetBytes(h[:])) >= 0 {
			return nonce, idxs, samples, true
		}
	}
	return 0, nil, nil, false
}

// randomCache makes cached blobs for some of shard 1's KVs (64..128), differing from disk.
func randomCache(seed int64, kvs ...uint64) ([]CachedKV, map[uint64][]byte) {
	rng := rand.New(rand.NewSource(seed))
	var list []CachedKV
	byIdx := map[uint64][]byte{}
	for _, kv := range kvs {
		data := make([]byte, 4096)
		rng.Read(data)
		list = append(list, CachedKV{KvIdx: kv, Commit: sha256.Sum256(data), Data: data})
		byIdx[kv] = data
	}
	return list, byIdx
}

func TestEngineFindsEsNodesNonceWithTheBlobCache(t *testing.T) {
	path := smallShards(t)[1] // shard 1: 64 KVs of 4 KiB
	for _, method := range []string{"pread", "mmap"} {
		e, err := OpenEngine([]string{path}, Options{Method: method, Threads: 2, Depth: 8, IgnoreProfile: true})
		if err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(path)
		// 8 of 64 KVs cached: a quarter of the nonces touch one.
		cacheList, cache := randomCache(3, 64, 70, 71, 90, 100, 101, 120, 127)
		if err := e.SyncCache(cacheList); err != nil {
			t.Fatal(err)
		}
		required := new(big.Int).Rsh(maxUint256(), 10) // about one nonce in 1024
		differed := 0
		for round := byte(0); round < 24; round++ {
			randao := bytes.Repeat([]byte{round + 40}, 32)
			g := &goSampler{file: f, shard: 1, kvEntriesBits: 6, kvBits: 12, miner: testMiner, checks: 2, cache: cache}
			_, _, _, esNodeFinds := esNodeFirstValid(t, g, randao, 0, 1<<14, required)
			res, err := e.MineTask(Task{MixHash: randao, RequiredDiff: required, NonceEnd: 1 << 14, Deadline: time.Now().Add(time.Minute)}, func() bool { return true })
			if err != nil {
				t.Fatal(err)
			}
			if res.Found != esNodeFinds {
				t.Fatalf("%s round %d: pora found=%v, es-node's loop found=%v", method, round, res.Found, esNodeFinds)
			}
			if !res.Found {
				continue
			}
			// pora's threads report the first nonce found in time (es-node's threads do too): it
			// must be valid and carry exactly the samples es-node's loop reads for it.
			h, idxs, samples, err := g.hash1Samples(randao, res.Nonce)
			if err != nil {
				t.Fatal(err)
			}
			if required.Cmp(new(big.Int).SetBytes(h[:])) < 0 || join(res.SampleIdxs) != join(idxs) {
				t.Fatalf("%s round %d: pora's nonce %d (idxs %v) is not valid for es-node's loop (hash1 %x, idxs %v)", method, round, res.Nonce, res.SampleIdxs, h, idxs)
			}
			for i, s := range samples {
				if res.EncodedSamples[i] != "0x"+hex.EncodeToString(s[:]) {
					t.Fatalf("%s round %d sample %d: pora %s, es-node loop %x", method, round, i, res.EncodedSamples[i], s)
				}
			}
			plain := &goSampler{file: f, shard: 1, kvEntriesBits: 6, kvBits: 12, miner: testMiner, checks: 2}
			if fileOnly, _, _ := plain.hash1(randao, res.Nonce); fileOnly != h {
				differed++
			}
			if res.Record.SamplesFromOverlay == 0 {
				t.Errorf("%s round %d: no sample came from the cache", method, round)
			}
		}
		if differed == 0 {
			t.Errorf("%s: the cache changed no round's nonce: the test shows nothing", method)
		}
		// Blobs leaving the cache (finalized) are mined from the file again.
		if err := e.SyncCache(nil); err != nil {
			t.Fatal(err)
		}
		randao := bytes.Repeat([]byte{40}, 32)
		res, err := e.MineTask(Task{MixHash: randao, RequiredDiff: required, NonceEnd: 1 << 14, Deadline: time.Now().Add(time.Minute)}, nil)
		if err != nil || res.Record.SamplesFromOverlay != 0 {
			t.Fatalf("after the cache emptied: %v, %d samples from the overlay", err, res.Record.SamplesFromOverlay)
		}
		f.Close()
		e.Close()
	}
}

func maxUint256() *big.Int {
	return new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
}

func simEngine(t *testing.T, latency time.Duration) *Engine {
	e, err := OpenEngine([]string{smallShards(t)[0]}, Options{Method: "sim", Threads: 2, Depth: 8, IgnoreProfile: true, SimLatencyMin: latency, SimLatencyMax: latency})
	if err != nil {
		t.Fatalf("%v (needs a library built with the simulated disk: --features sim)", err)
	}
	return e
}

func TestEngineHoldsTheDeadlineAndCountsMiningPower(t *testing.T) {
	e := simEngine(t, 2*time.Millisecond)
	defer e.Close()
	start := time.Now()
	res, err := e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: big.NewInt(0), NonceEnd: 1 << 20, NonceLimit: 1 << 20, Deadline: start.Add(300 * time.Millisecond)}, func() bool { return true })
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > 450*time.Millisecond || took < 290*time.Millisecond {
		t.Errorf("a 300 ms task took %v", took)
	}
	want := res.NoncesTried * 10000 / (1 << 20)
	if res.Found || res.MiningPowerBps != want || res.NoncesTried == 0 || res.MiningPowerBps >= 10000 {
		t.Errorf("found=%v power %d bps for %d nonces (want %d)", res.Found, res.MiningPowerBps, res.NoncesTried, want)
	}
	if res.SamplingTimeMs < 290 || res.SamplingTimeMs > 450 {
		t.Errorf("sampling time %d ms", res.SamplingTimeMs)
	}
	// All nonces tried: 10000 bps, as es-node reports.
	res, err = e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: big.NewInt(0), NonceEnd: 64, NonceLimit: 64, Deadline: time.Now().Add(time.Minute)}, nil)
	if err != nil || res.MiningPowerBps != 10000 {
		t.Errorf("64 of 64 nonces: %d bps, %v", res.MiningPowerBps, err)
	}
	// A deadline already past: es-node's loop times out at once, with no error.
	res, err = e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: big.NewInt(0), NonceEnd: 64, Deadline: time.Now().Add(-time.Second)}, nil)
	if err != nil || res.NoncesTried != 0 {
		t.Errorf("past deadline: %+v, %v", res, err)
	}
}

func TestEngineStopsWithin100msWhenTheMinerStops(t *testing.T) {
	e := simEngine(t, 5*time.Millisecond)
	defer e.Close()
	var running atomic.Bool
	running.Store(true)
	var stoppedAt atomic.Int64
	before, _ := readCalls()
	go func() {
		// Stop once the task reads (64 samples): it has nonces to count.
		waitForReads(t, before, 64, 30*time.Second, 300*time.Millisecond)
		stoppedAt.Store(time.Now().UnixNano())
		running.Store(false)
	}()
	res, err := e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: big.NewInt(0), NonceEnd: 1 << 30, Deadline: time.Now().Add(time.Minute)}, running.Load)
	ended := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	lag := ended.Sub(time.Unix(0, stoppedAt.Load()))
	if !res.Stopped || lag > 100*time.Millisecond {
		t.Errorf("stopped=%v, returned %v after the miner stopped", res.Stopped, lag)
	}
	if res.NoncesTried == 0 {
		t.Error("no nonces counted before the stop")
	}
}

func TestEngineFailsTheTaskOnATruncatedFile(t *testing.T) {
	path := smallShards(t)[0]
	e, err := OpenEngine([]string{path}, Options{Method: "pread", Threads: 1, Depth: 4, IgnoreProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := os.Truncate(path, 4096+64*1024); err != nil {
		if runtime.GOOS == "windows" {
			t.Skipf("SKIP: %s: Windows refuses to truncate a file another handle holds open: %v", t.Name(), err)
		}
		t.Fatal(err)
	}
	_, err = e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: big.NewInt(0), NonceEnd: 4096, Deadline: time.Now().Add(time.Minute)}, nil)
	if !errors.Is(err, ErrIO) {
		t.Fatalf("mining a truncated file: %v, want an I/O error", err)
	}
	// The engine keeps working for the next task once the file is whole again.
	if err := os.Truncate(path, 4096+64*(4096+32)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: big.NewInt(0), NonceEnd: 64, Deadline: time.Now().Add(time.Minute)}, nil); err != nil {
		t.Fatalf("after the file was restored: %v", err)
	}
}

func TestEngineRefusesBadCacheAndTasks(t *testing.T) {
	e := simEngine(t, 0)
	defer e.Close()
	if err := e.SyncCache([]CachedKV{{KvIdx: 3, Data: make([]byte, 4096)}, {KvIdx: 3, Data: make([]byte, 4096)}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a KV listed twice: %v", err)
	}
	if err := e.SyncCache([]CachedKV{{KvIdx: 3, Commit: [32]byte{5}, Data: make([]byte, 100)}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a 100-byte KV: %v", err)
	}
	// A KV of the wrong size is refused where it enters, not later at every task.
	if err := e.SyncCache([]CachedKV{{KvIdx: 3, Commit: [32]byte{9}, Data: make([]byte, 8192)}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("an 8 KiB KV in a 4 KiB-KV shard: %v", err)
	}
	if _, err := e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: big.NewInt(0), NonceEnd: 64, Deadline: time.Now().Add(time.Minute)}, nil); err != nil {
		t.Errorf("a task after the refused KV: %v", err)
	}
	if _, err := e.MineTask(Task{MixHash: make([]byte, 31), RequiredDiff: big.NewInt(0), NonceEnd: 64, Deadline: time.Now().Add(time.Minute)}, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a 31-byte randao: %v", err)
	}
	if _, err := e.MineTask(Task{MixHash: make([]byte, 32), NonceEnd: 64, Deadline: time.Now().Add(time.Minute)}, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("no RequiredDiff: %v", err)
	}
}

// porago task (es-node's task through pora.Engine) finds the first valid nonce `pora mine --find
// first` finds on each shard, with the same samples, and reports 10000 bps when every nonce was
// tried.
func TestPoragoTaskEqualsPoraMineFirst(t *testing.T) {
	if poraBinary(t) == "" {
		t.Skip("SKIP: PORA_BINARY names no pora binary")
	}
	// The Windows leg names a cross-built porago.exe (no Go toolchain runs under Wine).
	porago := os.Getenv("PORAGO_BINARY")
	if porago == "" {
		porago = filepath.Join(t.TempDir(), "porago")
		if out, err := exec.Command("go", "build", "-tags", buildTags, "-o", porago, "./cmd/porago").CombinedOutput(); err != nil {
			t.Fatalf("building porago: %v\n%s", err, out)
		}
	}
	paths := smallShards(t)
	randao := "0x" + strings.Repeat("3c", 32)
	required := new(big.Int).Rsh(maxUint256(), 9).String()
	// Find-first reports the first valid nonce in time; with one chain per shard (one thread,
	// one read in flight) that is the lowest, so the two runs must agree exactly. With more
	// threads they may each report another valid nonce (seen under Wine).
	out, err := exec.Command(porago, "task", "--file", paths[0], "--file", paths[1], "--randao", randao,
		"--required-diff", required, "--nonce-limit", "8192", "--method", "pread", "--threads", "1", "--depth", "1", "--json").Output()
	if err != nil {
		t.Fatalf("porago task: %v", err)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	want := bytes.Split(bytes.TrimSpace(runPora(t, "mine", "--file", paths[0], "--file", paths[1], "--randao", randao,
		"--required-diff", required, "--nonces", "0..8192", "--find", "first", "--method", "pread", "--threads", "1", "--depth", "2", "--json")), []byte("\n"))
	if len(lines) != 2 || len(want) != 2 {
		t.Fatalf("porago task printed %d records, pora mine %d", len(lines), len(want))
	}
	for i := range lines {
		var got struct {
			Engine         string
			MiningPowerBps uint64
			Found          []NonceProof
		}
		var mine ShardSlot
		if err := json.Unmarshal(lines[i], &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(want[i], &mine); err != nil {
			t.Fatal(err)
		}
		if got.Engine != "pora" || len(got.Found) != 1 || len(mine.Found) != 1 {
			t.Fatalf("shard %d: %s vs %s", i, lines[i], want[i])
		}
		g, m := got.Found[0], mine.Found[0]
		if g.Nonce != m.Nonce || join(g.SampleIdxs) != join(m.SampleIdxs) || strings.Join(g.EncodedSamples, ",") != strings.Join(m.EncodedSamples, ",") {
			t.Errorf("shard %d: porago task %+v, pora mine %+v", i, g, m)
		}
	}
}
