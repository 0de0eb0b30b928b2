//go:build pora_hooked

// A nonce pora finds in the slot's last 50 ms is submitted by es-node's own code whether pora
// returns it just before the slot's end or just after it (within pora's bound past the deadline),
// and the shard's mining state stays at most 100%. es-node's loop tests its time-out first, on a
// clock started before pora mined: without the hook's new clock, a find returned after the slot's
// end was dropped as "Mining tasks timed out", with noncesTried and MiningPower as the found
// nonce times the threads (over 100%).
//
// The timing is placed through es-node's own seams, no test hook in pora: the blob cache's
// VisitKVs (the adapter lists the cache before mining) holds the task until 45 ms before the
// slot's end, so pora mines only then; the logger holds pora's "Mined with pora" line, written
// just before the adapter returns, until 25 ms after the slot's end for the late case.
package node_test

import (
	"fmt"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethstorage/go-ethstorage/ethstorage/downloader"
)

const (
	slotEndShard = 1
	// lateNonceLimit is small so pora tries every nonce up to the find within the window; a
	// found nonce of at least lateNonceLimit/2 times 4 threads is the 200% es-node's time-out
	// would have recorded.
	lateNonceLimit = 256
	findWindow     = 45 * time.Millisecond // pora starts mining this long before the slot's end
	returnLate     = 25 * time.Millisecond // the late case returns this long after it
)

// slotClock is thread 0's task start as es-node's log shows it ("Mining task started", written
// just after mineTask took its startTime) and when the lines the test watches were written.
type slotClock struct {
	mu        sync.Mutex
	late      bool // VisitKVs holds the task until findWindow before the slot's end
	start     time.Time
	holdUntil time.Duration // after the slot's end: when pora's line may return (0: at once)
	written   map[string]time.Time
}

func (c *slotClock) slotEnd() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start.Add(time.Second) // the node's Slot is 1 s
}

// sleepUntil places the task at a point of the slot's clock: the scenario, not a wait for a
// condition.
func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// clockLog is the worker's logger: a recorder that also stamps the lines of thread 0's task.
type clockLog struct {
	*recorder
	clock *slotClock
}

func (l clockLog) Debug(msg string, ctx ...interface{}) {
	if msg == "Mining task started" && fmt.Sprint(ctx[3]) == "0" { // "thread", 0
		l.clock.mu.Lock()
		l.clock.start = time.Now()
		l.clock.mu.Unlock()
	}
	l.recorder.Debug(msg, ctx...)
}

func (l clockLog) Info(msg string, ctx ...interface{}) {
	now := time.Now()
	l.clock.mu.Lock()
	l.clock.written[msg] = now
	hold := l.clock.holdUntil
	l.clock.mu.Unlock()
	if msg == "Mined with pora" && hold > 0 {
		sleepUntil(l.clock.slotEnd().Add(hold))
	}
	l.recorder.Info(msg, ctx...)
}

// lateCache is the disk cache whose VisitKVs, the adapter's first call of a task, returns
// findWindow before the slot's end.
type lateCache struct {
	*downloader.BlobDiskCache
	clock *slotClock
}

func (c lateCache) VisitKVs(visit func(kvIdx uint64, hash common.Hash, block uint64)) {
	c.clock.mu.Lock()
	late := c.clock.late
	c.clock.mu.Unlock()
	if late {
		sleepUntil(c.clock.slotEnd().Add(-findWindow))
	}
	c.BlobDiskCache.VisitKVs(visit)
}

func TestFindAtTheSlotsEndIsSubmitted(t *testing.T) {
	shards := []uint64{slotEndShard}
	paths := map[uint64]string{slotEndShard: writeDataFile(t, t.TempDir(), slotEndShard, testMiner, 77)}
	cache := cacheWithBlobs(t, shards)
	plain, err := newNodeOver(t, paths, config(lateNonceLimit, 1, false), cache)
	if err != nil {
		t.Fatal(err)
	}
	// A head whose one valid nonce (the lowest hash1 of the range, as es-node hashes it) lies
	// in the range's upper half.
	var mix common.Hash
	var want uint64
	var reqDiff *big.Int
	for m := 0; reqDiff == nil && m < 64; m++ {
		mix = common.Hash{0x5e, byte(m)}
		var best *big.Int
		for nonce := uint64(0); nonce < lateNonceLimit; nonce++ {
			hash1, _, err := plain.node.Miner().Hash(slotEndShard, mix, nonce)
			if err != nil {
				t.Fatal(err)
			}
			if h := new(big.Int).SetBytes(hash1[:]); best == nil || h.Cmp(best) < 0 {
				best, want = h, nonce
			}
		}
		if want >= lateNonceLimit/2 {
			reqDiff = best
		}
	}
	if reqDiff == nil {
		t.Fatal("no head of 64 has its lowest hash in the upper half of the range")
	}

	clock := &slotClock{written: map[string]time.Time{}}
	tn, err := newNodeOverWithLog(t, paths, config(lateNonceLimit, 1, true),
		lateCache{BlobDiskCache: cache, clock: clock}, clockLog{recorder: &recorder{}, clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	// A first head in its own time opens the shard's engine and copies the cache, so the late
	// heads' window is pora's mining alone.
	if _, err := tn.node.Miner().RunHead(shards, 900, mix, noValidNonce); err != nil {
		t.Fatal(err)
	}
	tn.log.take()
	clock.mu.Lock()
	clock.late = true
	clock.mu.Unlock()
	for _, c := range []struct {
		name string
		hold time.Duration
	}{{"returned before the slot's end", 0}, {"returned after the slot's end", returnLate}} {
		placed := false
		for attempt := 1; attempt <= 5 && !placed; attempt++ {
			clock.mu.Lock()
			clock.holdUntil, clock.written = c.hold, map[string]time.Time{}
			clock.mu.Unlock()
			block := uint64(900 + attempt)
			if c.hold > 0 {
				block += 10
			}
			if _, err := tn.node.Miner().RunHead(shards, block, mix, reqDiff); err != nil {
				t.Fatal(err)
			}
			lines := tn.log.take()
			if s := tn.node.Miner().MiningStates()[slotEndShard]; s.MiningPower > 10000 {
				t.Errorf("%s: MiningPower %d, over 100%%", c.name, s.MiningPower)
			}
			if l := find(lines, "info", "Mined with pora"); len(l) != 1 || l[0].kv["found"] != "true" {
				// pora did not reach the nonce in the window: the machine was too slow for the
				// scenario (seen under -race on 2 busy cores); nothing to judge, try again.
				t.Logf("%s (attempt %d): pora found nothing in the slot's last %v: %v", c.name,
					attempt, findWindow, l)
				continue
			}
			// pora found it in the slot: es-node's own code submitted it, and no time-out line
			// or state says more than 100%.
			if got, _, ok := tn.node.Miner().Result(slotEndShard); !ok || got != want {
				t.Errorf("%s: stored result %d (%v), want es-node's loop to submit nonce %d:\n%v",
					c.name, got, ok, want, lines)
			}
			for _, l := range find(lines, "warn", "Mining tasks timed out") {
				t.Errorf("%s: es-node's loop timed out on pora's find: %v", c.name, l.kv)
			}
			for _, msg := range []string{"Calculated a valid hash", "Got sample data",
				"Got storage proof", "Set mining result"} {
				if len(find(lines, "info", msg)) != 1 {
					t.Errorf("%s: want one %q line from es-node's loop:\n%v", c.name, msg, lines)
				}
			}
			// Was the case the one meant? pora's line in the slot's last 50 ms, and es-node's
			// re-check before or after the slot's end as the case says.
			clock.mu.Lock()
			end := clock.start.Add(time.Second)
			mined, checked := clock.written["Mined with pora"], clock.written["Calculated a valid hash"]
			clock.mu.Unlock()
			inWindow := mined.After(end.Add(-50*time.Millisecond)) && mined.Before(end)
			placed = inWindow && checked.After(end) == (c.hold > 0)
			if t.Failed() {
				t.FailNow()
			}
			t.Logf("%s (attempt %d): pora's line %v before the slot's end, es-node's re-check %v "+
				"after it; nonce %d submitted", c.name, attempt, end.Sub(mined), checked.Sub(end), want)
		}
		if !placed {
			t.Fatalf("%s: five attempts missed the timing (the machine stalled longer than %v)",
				c.name, findWindow)
		}
	}
}
