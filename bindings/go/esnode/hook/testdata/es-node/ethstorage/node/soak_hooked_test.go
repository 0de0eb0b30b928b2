//go:build pora_hooked && linux

// A miner runs es-node for weeks: the hooked node mines PORA_SOAK_TASKS consecutive heads on two
// shards at once (four threads each, through pora), with the disk cache changing under it (every
// 10 heads a new block caches new versions of 4 KVs per shard, and the block 3 heads older is
// finalized), some heads finding a nonce es-node's own code re-checks and stores. After the first
// tenth of the heads (the warm-up: engines opened, the cache's copy grown, the allocators'
// arenas), goroutines, open descriptors and resident memory stay flat:
//   - goroutines between heads: at most the warm-up's + 2;
//   - open descriptors: at most the warm-up's + 2;
//   - resident memory (VmRSS): the lowest sample of the last third within 8 MiB of the first
//     half's peak (a leak raises the floor past any earlier peak; a sawtooth does not).
//
// 2,000 heads take about 3 s (6 s under -race) on this repository's 2-core machine, so it runs
// with the tree's other tests (integrations/es-node/build.sh); PORA_SOAK_TASKS=N runs N heads
// instead (docs/RELIABILITY.md has the figures). It reads /proc, so it builds on Linux only.
package node_test

import (
	"crypto/sha256"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethstorage/go-ethstorage/ethstorage/downloader"
)

// procSample is the process's goroutines, open descriptors and resident memory (KiB).
type procSample struct {
	head, goroutines, fds int
	rssKiB                int64
}

func sampleProc(t *testing.T, head int) procSample {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var rss int64 = -1
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			rss, err = strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", line, err)
			}
		}
	}
	if rss < 0 {
		t.Fatal("/proc/self/status has no VmRSS")
	}
	return procSample{head: head, goroutines: runtime.NumGoroutine(), fds: len(fds), rssKiB: rss}
}

func TestSoakTwoShardsFlat(t *testing.T) {
	heads := 2000
	if v := os.Getenv("PORA_SOAK_TASKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			t.Fatalf("PORA_SOAK_TASKS=%q: give at least 100 heads", v)
		}
		heads = n
	}
	shards := []uint64{1, 2}
	cache := cacheWithBlobs(t, shards)
	tn, err := newNode(t, shards, config(1024, 12, true), cache)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(2000))
	warmup := heads / 10
	var samples []procSample
	var base procSample
	finds, cached := 0, 0
	began := time.Now()
	for head := 1; head <= heads; head++ {
		if head%10 == 0 { // the cache changes: a new block, and an older one finalized
			block := downloader.NewBlock(uint64(100 + head/10))
			for _, shard := range shards {
				for i := 0; i < 4; i++ {
					kv := shard<<kvEntriesBits + uint64(rng.Intn(1<<kvEntriesBits))
					data := make([]byte, 1<<kvSizeBits)
					rng.Read(data)
					downloader.AddBlob(block, kv, sha256.Sum256(data), data)
					cached++
				}
			}
			if err := cache.SetBlockBlobs(block); err != nil {
				t.Fatal(err)
			}
			cache.Cleanup(uint64(100 + head/10 - 3))
		}
		mix := common.Hash(sha256.Sum256([]byte("soak " + strconv.Itoa(head))))
		found, err := tn.node.Miner().RunHead(shards, uint64(head), mix, diffOneIn(4096))
		if err != nil {
			t.Fatalf("head %d: %v", head, err)
		}
		for _, shard := range shards {
			if found[shard] {
				finds++
				if _, _, ok := tn.node.Miner().Result(shard); !ok {
					t.Fatalf("head %d shard %d: found, and es-node's loop stored no result", head, shard)
				}
			}
		}
		tn.log.take() // the log is the node's; the soak keeps no lines
		if head == warmup {
			base = sampleProc(t, head)
		}
		if head == 1 || head%(heads/20) == 0 {
			samples = append(samples, sampleProc(t, head))
		}
	}
	took := time.Since(began)
	var firstHalfPeak, lastThirdFloor int64 = 0, -1
	for _, s := range samples {
		t.Logf("head %5d: %3d goroutines, %3d descriptors, RSS %6.1f MiB", s.head, s.goroutines,
			s.fds, float64(s.rssKiB)/1024)
		if s.head <= heads/2 && s.rssKiB > firstHalfPeak {
			firstHalfPeak = s.rssKiB
		}
		if s.head > heads*2/3 && (lastThirdFloor < 0 || s.rssKiB < lastThirdFloor) {
			lastThirdFloor = s.rssKiB
		}
		if s.head < warmup {
			continue
		}
		if s.goroutines > base.goroutines+2 {
			t.Errorf("head %d: %d goroutines, %d after the warm-up (head %d)", s.head, s.goroutines,
				base.goroutines, base.head)
		}
		if s.fds > base.fds+2 {
			t.Errorf("head %d: %d open descriptors, %d after the warm-up (head %d)", s.head, s.fds,
				base.fds, base.head)
		}
	}
	if lastThirdFloor > firstHalfPeak+8*1024 {
		t.Errorf("RSS: the last third's lowest %.1f MiB is over the first half's peak %.1f MiB + 8",
			float64(lastThirdFloor)/1024, float64(firstHalfPeak)/1024)
	}
	t.Logf("%d heads x 2 shards in %v (%.1f ms a head): %d finds submitted, %d KVs cached in %d "+
		"blocks; RSS first half's peak %.1f MiB, last third's lowest %.1f MiB", heads, took.Round(time.Second),
		float64(took.Milliseconds())/float64(heads), finds, cached, heads/10,
		float64(firstHalfPeak)/1024, float64(lastThirdFloor)/1024)
}
