// No silent mismatch: a configuration that disagrees with the data files, or leaves a contract
// value to pora's default, is refused before any task runs, with an error naming the field; a
// task from a worker configured otherwise is refused naming the field; threads other than 0 are
// answered at once; a stopped worker's task returns promptly; Close ends the engines. These check
// the adapter alone, so they need no es-node shape; a cached KV of the wrong size, which needs
// es-node's disk cache, is refused in the es-node-shaped tree (TestWrongSizeKVRefusedAtPutKV in
// hook/testdata/es-node/ethstorage/node).
package esnode_test

import (
	"math/big"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pora-miner/pora/bindings/go/esnode"
)

// goodConfig is a configuration the test file agrees with.
func goodConfig(t *testing.T) esnode.Config {
	path := writeDataFile(t, t.TempDir(), testShard, testKvEntriesBits, testKvSizeBits, testMiner, 11)
	return esnode.Config{Files: []string{path}, Miner: testMiner, KvEntriesBits: testKvEntriesBits,
		RandomChecks: 2, NonceLimit: 1 << 12, SlotSec: 60, Running: func() bool { return true }}
}

func wantErr(t *testing.T, what string, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if !strings.Contains(err.Error(), field) {
		t.Fatalf("%s: the error does not name %s: %v", what, field, err)
	}
	t.Logf("%s: %v", what, err)
}

func TestConfigRefusedBeforeAnyTask(t *testing.T) {
	otherMiner := testMiner
	otherMiner[0] ^= 1
	cases := []struct {
		what, field string
		change      func(c *esnode.Config)
	}{
		{"RandomChecks left 0 (pora's default would be used)", "RandomChecks", func(c *esnode.Config) { c.RandomChecks = 0 }},
		{"RandomChecks 65", "RandomChecks", func(c *esnode.Config) { c.RandomChecks = 65 }},
		{"NonceLimit left 0", "NonceLimit", func(c *esnode.Config) { c.NonceLimit = 0 }},
		{"KvEntriesBits smaller than the file's shard", "KvEntriesBits", func(c *esnode.Config) { c.KvEntriesBits = testKvEntriesBits - 1 }},
		{"KvEntriesBits larger than the file's shard", "KvEntriesBits", func(c *esnode.Config) { c.KvEntriesBits = testKvEntriesBits + 1 }},
		{"Miner other than the files'", "Miner", func(c *esnode.Config) { c.Miner = otherMiner }},
		{"no files", "Files", func(c *esnode.Config) { c.Files = nil }},
		{"a file that is not a data file", "Files", func(c *esnode.Config) { c.Files = []string{"esnode.go"} }},
		{"SlotSec left 0", "SlotSec", func(c *esnode.Config) { c.SlotSec = 0 }},
	}
	for _, tc := range cases {
		cfg := goodConfig(t)
		tc.change(&cfg)
		_, err := esnode.New[Hash](cfg, nil)
		wantErr(t, tc.what, err, tc.field)
	}
	if _, err := esnode.New[Hash](goodConfig(t), nil); err != nil {
		t.Fatalf("the good configuration: %v", err)
	}
}

func TestTaskRefusedWhenTheWorkerDisagrees(t *testing.T) {
	m, err := esnode.New[Hash](goodConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	otherMiner := testMiner
	otherMiner[19] ^= 1
	base := esnode.Task{Miner: testMiner, ShardIdx: testShard, RequiredDiff: big.NewInt(0), BlockNumber: big.NewInt(1), NonceEnd: 1 << 10}
	cases := []struct {
		what, field string
		change      func(t *esnode.Task)
	}{
		{"the worker's NonceLimit is larger than the adapter's", "NonceLimit", func(t *esnode.Task) { t.NonceEnd = 1 << 13 }},
		{"a task for another miner", "Task.Miner", func(t *esnode.Task) { t.Miner = otherMiner }},
		{"a shard no file holds", "ShardIdx", func(t *esnode.Task) { t.ShardIdx = 7 }},
		{"no required difficulty", "RequiredDiff", func(t *esnode.Task) { t.RequiredDiff = nil }},
	}
	for _, tc := range cases {
		task := base
		tc.change(&task)
		_, err := m.MineTask(task)
		wantErr(t, tc.what, err, tc.field)
	}
	if esnode.EngineOf(m, testShard) != nil {
		t.Fatal("a refused task opened the shard's engine")
	}
}

// The other threads' tasks are answered with nothing and open nothing; thread 0's task opens the
// engine once and keeps it; the mining state is counted.
func TestThreadsAndEngineLifetime(t *testing.T) {
	cfg := goodConfig(t)
	m, err := esnode.New[Hash](cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	task := esnode.Task{Miner: testMiner, ShardIdx: testShard, RequiredDiff: big.NewInt(0), BlockNumber: big.NewInt(9), NonceEnd: 1 << 10}
	other := task
	other.Thread, other.NonceStart, other.NonceEnd = 3, 3<<10, 4<<10
	res, err := m.MineTask(other)
	if err != nil || res.Found || res.State != nil || res.Record != nil {
		t.Fatalf("thread 3: %+v, %v; want nothing", res, err)
	}
	if esnode.EngineOf(m, testShard) != nil {
		t.Fatal("thread 3's task opened an engine")
	}
	for i := 0; i < 2; i++ {
		res, err = m.MineTask(task) // RequiredDiff 0: no nonce is valid, the whole range is tried
		if err != nil {
			t.Fatal(err)
		}
		if res.Found || res.State == nil || res.State.MiningPower != 10000 || res.Record.NoncesTried != cfg.NonceLimit {
			t.Fatalf("task %d: %+v (record %+v); want the whole NonceLimit tried, power 10000", i, res, res.Record)
		}
	}
	first := esnode.EngineOf(m, testShard)
	if first == nil {
		t.Fatal("no engine after thread 0's task")
	}
	if _, err := m.MineTask(task); err != nil || esnode.EngineOf(m, testShard) != first {
		t.Fatal("the engine was not kept across tasks")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := first.CachedKVs(), first.Close(); err == nil {
		t.Fatal("Close left the engine open")
	}
	if _, err := m.MineTask(task); err != esnode.ErrClosed {
		t.Fatalf("a task after Close: %v, want ErrClosed", err)
	}
	var none *esnode.Miner[Hash] // the hook's worker without pora closes it too
	if err := none.Close(); err != nil {
		t.Fatalf("Close of a nil adapter: %v", err)
	}
}

// Once the worker stops, a task with no valid nonce and a long slot returns at once.
func TestStoppedWorkerReturnsPromptly(t *testing.T) {
	cfg := goodConfig(t)
	cfg.NonceLimit = 1 << 40 // more than a slot can try
	cfg.SlotSec = 120
	var polls int32
	cfg.Running = func() bool { return atomic.AddInt32(&polls, 1) < 5 } // stops on the fifth poll
	m, err := esnode.New[Hash](cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	start := time.Now()
	res, err := m.MineTask(esnode.Task{Miner: testMiner, ShardIdx: testShard, RequiredDiff: big.NewInt(0), BlockNumber: big.NewInt(1), NonceEnd: 1 << 20})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Record.Interrupted || took > 10*time.Second {
		t.Fatalf("after the worker stopped: interrupted %v after %v (slot 120 s)", res.Record.Interrupted, took)
	}
	t.Logf("returned %v after the worker stopped (5 polls, 10 ms apart)", took)
}
