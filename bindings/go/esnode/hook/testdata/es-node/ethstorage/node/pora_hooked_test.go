//go:build pora_hooked

// Tests of the es-node-shaped tree once pora-esnode applied the hook (build tag pora_hooked;
// integrations/es-node/build.sh runs them, under -race). They drive the tree's own node, miner
// and disk cache, with --miner.pora on and off, and capture the worker's log lines.
package node_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/big"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/log"
	"github.com/ethstorage/go-ethstorage/ethstorage"
	"github.com/ethstorage/go-ethstorage/ethstorage/downloader"
	"github.com/ethstorage/go-ethstorage/ethstorage/miner"
	"github.com/ethstorage/go-ethstorage/ethstorage/node"
	"github.com/pora-miner/pora/bindings/go/esnode/esnodetest"
	"github.com/urfave/cli"
)

const (
	kvEntriesBits = 6  // 64 KVs per shard
	kvSizeBits    = 12 // 4 KiB KVs keep the files small
)

var testMiner = common.Address{0xe5, 0x0d, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}

// line is one captured log line: level, message, and its key-value pairs.
type line struct {
	level, msg string
	kv         map[string]string
}

// recorder is a logger (the tree's log.Logger) that keeps every line.
type recorder struct {
	mu    sync.Mutex
	lines []line
}

func (r *recorder) add(level, msg string, ctx []interface{}) {
	kv := map[string]string{}
	for i := 0; i+1 < len(ctx); i += 2 {
		kv[fmt.Sprint(ctx[i])] = fmt.Sprint(ctx[i+1])
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line{level, msg, kv})
}

func (r *recorder) Debug(msg string, ctx ...interface{}) { r.add("debug", msg, ctx) }
func (r *recorder) Info(msg string, ctx ...interface{})  { r.add("info", msg, ctx) }
func (r *recorder) Warn(msg string, ctx ...interface{})  { r.add("warn", msg, ctx) }
func (r *recorder) Error(msg string, ctx ...interface{}) { r.add("error", msg, ctx) }
func (r *recorder) Crit(msg string, ctx ...interface{})  { r.add("crit", msg, ctx) }

// take returns the lines so far and forgets them.
func (r *recorder) take() []line {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lines
	r.lines = nil
	return out
}

// find is the lines with the message at the level.
func find(lines []line, level, msg string) []line {
	var out []line
	for _, l := range lines {
		if l.level == level && l.msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// writeDataFile writes a shard's data file in es-node's layout, encoded for miner, random data:
// pora's esnodetest writer (docs/spec/algorithm.md's header), which the adapter's own tests use.
func writeDataFile(t *testing.T, dir string, shard uint64, miner common.Address, seed int64) string {
	path := filepath.Join(dir, fmt.Sprintf("shard-%d.dat", shard))
	if err := esnodetest.WriteDataFile(path, shard, kvEntriesBits, kvSizeBits, miner, seed); err != nil {
		t.Fatal(err)
	}
	return path
}

// testNode is a node over freshly written shard files, with the flag as given.
type testNode struct {
	node *node.EsNode
	log  *recorder
}

func newNode(t *testing.T, shards []uint64, cfg miner.Config, cache downloader.BlobCache) (*testNode, error) {
	dir := t.TempDir()
	paths := map[uint64]string{}
	for _, shard := range shards {
		paths[shard] = writeDataFile(t, dir, shard, testMiner, int64(40+shard))
	}
	return newNodeOver(t, paths, cfg, cache)
}

// newNodeOver is a node over the given data files (by shard), opened as es-node's storage
// manager opens them, its miner started and closed when the test ends.
func newNodeOver(t *testing.T, paths map[uint64]string, cfg miner.Config,
	cache downloader.BlobCache) (*testNode, error) {
	return newNodeOverWithLog(t, paths, cfg, cache, &recorder{})
}

// recording is a logger that keeps its lines in a recorder.
type recording interface {
	log.Logger
	records() *recorder
}

func (r *recorder) records() *recorder { return r }

// newNodeOverWithLog is newNodeOver with the node's logger given.
func newNodeOverWithLog(t *testing.T, paths map[uint64]string, cfg miner.Config,
	cache downloader.BlobCache, lg recording) (*testNode, error) {
	files := map[uint64]*os.File{}
	var names []string
	for shard, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		files[shard], names = f, append(names, path)
	}
	sm := ethstorage.NewStorageManager(files, kvEntriesBits, kvSizeBits, testMiner)
	n, err := node.New(context.Background(), &node.Config{
		Storage: node.StorageConfig{Filenames: names, Miner: testMiner},
		Mining:  &cfg,
	}, sm, cache, lg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { n.Miner().Close() })
	n.Miner().Start()
	return &testNode{node: n, log: lg.records()}, nil
}

// cacheWithBlobs is a disk cache holding 8 KVs of each shard in block 30.
func cacheWithBlobs(t *testing.T, shards []uint64) *downloader.BlobDiskCache {
	cache := downloader.NewBlobDiskCache(&recorder{})
	rng := rand.New(rand.NewSource(42))
	block := downloader.NewBlock(30)
	for _, shard := range shards {
		for kv := shard << kvEntriesBits; kv < shard<<kvEntriesBits+8; kv++ {
			data := make([]byte, 1<<kvSizeBits)
			rng.Read(data)
			downloader.AddBlob(block, kv, sha256.Sum256(data), data)
		}
	}
	if err := cache.SetBlockBlobs(block); err != nil {
		t.Fatal(err)
	}
	return cache
}

func config(nonceLimit, slot uint64, pora bool) miner.Config {
	cfg := miner.DefaultConfig
	cfg.NonceLimit, cfg.Slot, cfg.ThreadsPerShard, cfg.Pora = nonceLimit, slot, 4, pora
	return cfg
}

// diffOneIn is a required difficulty that about one hash in n meets.
func diffOneIn(n int64) *big.Int {
	return new(big.Int).Div(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(n))
}

var noValidNonce = big.NewInt(0)

// wantKeys fails unless the line carries every key.
func wantKeys(t *testing.T, l line, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := l.kv[k]; !ok {
			t.Errorf("%s %q has no key %q: %v", l.level, l.msg, k, l.kv)
		}
	}
}

// With pora on, the worker's log holds es-node's own lines for a slot sampled in time, one timed
// out and a found nonce, with es-node's keys, and pora's one line per task.
func TestPoraKeepsEsNodesLogLines(t *testing.T) {
	shards := []uint64{1, 2}

	// Every nonce tried in time, none valid.
	tn, err := newNode(t, shards, config(1024, 12, true), cacheWithBlobs(t, shards))
	if err != nil {
		t.Fatal(err)
	}
	start := tn.log.take()
	if l := find(start, "info", "Mining with pora: --miner.threads-per-shard is not used"); len(l) != 1 ||
		l[0].kv["threadsPerShard"] != "4" {
		t.Fatalf("want one start line saying --miner.threads-per-shard (4) is not used: %v", start)
	}
	if _, err := tn.node.Miner().RunHead(shards, 100, common.Hash{1}, noValidNonce); err != nil {
		t.Fatal(err)
	}
	lines := tn.log.take()
	for _, shard := range shards {
		done := 0
		for _, l := range find(lines, "info", "Sampling done with all nonces") {
			wantKeys(t, l, "samplingTime", "shard", "block")
			if l.kv["shard"] == fmt.Sprint(shard) && l.kv["block"] == "100" {
				done++
			}
		}
		if done != 1 {
			t.Errorf("shard %d: %d info lines \"Sampling done with all nonces\", want 1:\n%v", shard, done, lines)
		}
	}
	if got := len(find(lines, "debug", "Mining task started")); got != 2*4 {
		t.Errorf("%d debug lines \"Mining task started\", want one per thread (8)", got)
	}
	pora := find(lines, "info", "Mined with pora")
	if len(pora) != 2 {
		t.Fatalf("%d lines \"Mined with pora\", want one per shard's task: %v", len(pora), lines)
	}
	for _, l := range pora {
		wantKeys(t, l, "shard", "block", "method", "miningPower")
		if l.kv["method"] == "" || !strings.HasPrefix(l.kv["miningPower"], "10000(") {
			t.Errorf("pora's line %v: want the method and mining power 10000 (every nonce tried)", l.kv)
		}
	}
	for shard, state := range tn.node.Miner().MiningStates() {
		if state.MiningPower != 10000 {
			t.Errorf("shard %d: MiningPower %d, want 10000", shard, state.MiningPower)
		}
	}

	// A slot too short for the range: timed out, with noncesTried.
	tn, err = newNode(t, shards, config(1<<40, 1, true), cacheWithBlobs(t, shards))
	if err != nil {
		t.Fatal(err)
	}
	tn.log.take()
	if _, err := tn.node.Miner().RunHead(shards, 101, common.Hash{2}, noValidNonce); err != nil {
		t.Fatal(err)
	}
	lines = tn.log.take()
	timedOut := find(lines, "warn", "Mining tasks timed out")
	if len(timedOut) != 2 {
		t.Fatalf("%d warn lines \"Mining tasks timed out\", want one per shard:\n%v", len(timedOut), lines)
	}
	for _, l := range timedOut {
		wantKeys(t, l, "shard", "block", "noncesTried")
		var tried uint64
		var pct float64
		if _, err := fmt.Sscanf(l.kv["noncesTried"], "%d(%f%%)", &tried, &pct); err != nil || tried == 0 {
			t.Errorf("noncesTried %q: want N(P%%) with N > 0 (%v)", l.kv["noncesTried"], err)
		}
	}

	// A valid nonce: es-node's own loop re-checks it and logs the find.
	tn, err = newNode(t, shards, config(4096, 12, true), cacheWithBlobs(t, shards))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for head := uint64(0); head < 20 && found == 0; head++ {
		got, err := tn.node.Miner().RunHead(shards, 200+head, common.Hash{3, byte(head)}, diffOneIn(512))
		if err != nil {
			t.Fatal(err)
		}
		for _, ok := range got {
			if ok {
				found++
			}
		}
	}
	lines = tn.log.take()
	valid := find(lines, "info", "Calculated a valid hash")
	if found == 0 || len(valid) != found {
		t.Fatalf("%d shards found a nonce, %d lines \"Calculated a valid hash\":\n%v", found, len(valid), lines)
	}
	for _, l := range valid {
		wantKeys(t, l, "shard", "block", "timestamp", "randao", "nonce", "hash0", "hash1", "sampleIdxs")
	}
	for msg, keys := range map[string][]string{
		"Got sample data":   {"shard", "block", "encodedSamples"},
		"Got storage proof": {"shard", "block", "kvIdx", "sampleIdxsInKv"},
		"Set mining result": {"shard", "block", "nonce"},
	} {
		got := find(lines, "info", msg)
		if len(got) != found {
			t.Errorf("%d lines %q for %d finds:\n%v", len(got), msg, found, lines)
		}
		for _, l := range got {
			wantKeys(t, l, keys...)
		}
	}
}

// Two shards mine at once, four threads each, with pora on and with it off, over one disk cache
// holding KVs of both shards; CI runs this under -race. A nonce pora answers that es-node's own
// hashing rejected (other sample bytes) would show as a head found by one and not the other.
// Halfway, es-node's Cleanup finalizes an older block that held a KV a newer block also holds:
// es-node v0.2.10 then drops that KV's lookup and samples the file, and pora must too.
func TestTwoShardsAtOnceAsEsNode(t *testing.T) {
	shards := []uint64{1, 2}
	cache := cacheWithBlobs(t, shards)
	newer := downloader.NewBlock(31)
	rng := rand.New(rand.NewSource(7))
	for _, kv := range []uint64{1<<kvEntriesBits + 3, 2<<kvEntriesBits + 5} {
		data := make([]byte, 1<<kvSizeBits)
		rng.Read(data)
		downloader.AddBlob(newer, kv, sha256.Sum256(data), data)
	}
	if err := cache.SetBlockBlobs(newer); err != nil {
		t.Fatal(err)
	}
	withPora, err := newNode(t, shards, config(256, 12, true), cache)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := newNode(t, shards, config(256, 12, false), cache)
	if err != nil {
		t.Fatal(err)
	}
	states := map[uint64]*miner.MiningState{}
	for shard, s := range withPora.node.Miner().MiningStates() {
		states[shard] = s
	}
	foundAny := 0
	for head := uint64(0); head < 24; head++ {
		if head == 12 {
			cache.Cleanup(30)
		}
		mix := common.Hash(sha256.Sum256([]byte{'m', byte(head)}))
		a, err := withPora.node.Miner().RunHead(shards, head, mix, diffOneIn(512))
		if err != nil {
			t.Fatalf("head %d, pora: %v", head, err)
		}
		b, err := plain.node.Miner().RunHead(shards, head, mix, diffOneIn(512))
		if err != nil {
			t.Fatalf("head %d, es-node's loop: %v", head, err)
		}
		for _, shard := range shards {
			if a[shard] != b[shard] {
				t.Fatalf("head %d shard %d: found %v with pora, %v with es-node's loop", head, shard, a[shard], b[shard])
			}
			if a[shard] {
				foundAny++
				continue
			}
			// Nothing found: pora tried the whole range in the slot, as es-node's loop does.
			if s := withPora.node.Miner().MiningStates()[shard]; s.MiningPower != 10000 {
				t.Fatalf("head %d shard %d: with pora, nothing found and mining state %+v; want 10000", head, shard, *s)
			}
		}
	}
	mined := map[string]int{}
	for _, l := range find(withPora.log.take(), "info", "Mined with pora") {
		mined[l.kv["shard"]]++
	}
	for _, shard := range shards {
		if mined[fmt.Sprint(shard)] == 0 {
			t.Errorf("shard %d: no \"Mined with pora\" line: it was not mined through pora", shard)
		}
	}
	for shard, s := range withPora.node.Miner().MiningStates() {
		if states[shard] != s {
			t.Errorf("shard %d: the mining-state entry was replaced (the map written after newWorker)", shard)
		}
	}
	if foundAny == 0 {
		t.Fatal("no head found a nonce: the comparison saw only misses")
	}
	if len(find(plain.log.take(), "info", "Mined with pora")) != 0 {
		t.Error("the node without --miner.pora logged a pora line")
	}
	t.Logf("24 heads x 2 shards at once: %d finds, the same with pora and es-node's loop", foundAny)
}

// With the flag off, nothing of pora runs: the node's log is es-node's own lines, each of them
// (every thread's start and range end, thread 0's "Sampling done" per shard), and no pora line.
func TestFlagOffLogsOnlyEsNodesLines(t *testing.T) {
	shards := []uint64{1, 2}
	tn, err := newNode(t, shards, config(256, 12, false), cacheWithBlobs(t, shards))
	if err != nil {
		t.Fatal(err)
	}
	if start := tn.log.take(); len(start) != 1 || start[0].msg != "Initialized miner" {
		t.Errorf("flag off: the node's start logged %v, want es-node's \"Initialized miner\" alone", start)
	}
	if _, err := tn.node.Miner().RunHead(shards, 5, common.Hash{5}, noValidNonce); err != nil {
		t.Fatal(err)
	}
	lines := tn.log.take()
	for _, want := range []struct {
		level, msg string
		n          int
	}{
		{"debug", "Mining task started", 2 * 4},
		{"info", "Sampling done with all nonces", 2},
		{"debug", "Sampling done with all nonces", 2 * 4},
	} {
		if got := len(find(lines, want.level, want.msg)); got != want.n {
			t.Errorf("flag off: %d %s lines %q, want %d:\n%v", got, want.level, want.msg, want.n, lines)
		}
	}
	if len(lines) != 2*4+2+2*4 {
		t.Errorf("flag off: %d lines, want es-node's 18 alone:\n%v", len(lines), lines)
	}
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l.msg), "pora") {
			t.Errorf("flag off, and the log has %q", l.msg)
		}
	}
}

// A refusal of the adapter is a start-up error naming --miner.pora and the cause, and no miner is
// left built; a blob cache without VisitKVs is refused naming it.
func TestStartUpErrorNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	other := common.Address{0xbb}
	path := writeDataFile(t, dir, 1, other, 1)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sm := ethstorage.NewStorageManager(map[uint64]*os.File{1: f}, kvEntriesBits, kvSizeBits, testMiner)
	cfg := config(256, 12, true)
	_, err = node.New(context.Background(), &node.Config{
		Storage: node.StorageConfig{Filenames: []string{path}, Miner: testMiner}, Mining: &cfg,
	}, sm, downloader.NewBlobDiskCache(&recorder{}), &recorder{})
	if err == nil || !strings.Contains(err.Error(), "--miner.pora") || !strings.Contains(err.Error(), "Miner") {
		t.Fatalf("files of another miner: %v; want an error naming --miner.pora and the miner", err)
	}
	_, err = node.New(context.Background(), &node.Config{
		Storage: node.StorageConfig{Filenames: []string{path}, Miner: other}, Mining: &cfg,
	}, sm, downloader.NewBlobMemCache(), &recorder{})
	if err == nil || !strings.Contains(err.Error(), "--miner.pora") || !strings.Contains(err.Error(), "VisitKVs") {
		t.Fatalf("a cache without VisitKVs: %v; want an error naming --miner.pora and VisitKVs", err)
	}
	t.Logf("refused: %v", err)
}

// --miner.pora and its environment variable reach miner.Config.Pora; unset, it is off.
func TestPoraFlagReachesMinerConfig(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		args []string
		env  string
		want bool
	}{
		{nil, "", false},
		{[]string{"--miner.pora"}, "", true},
		{[]string{"--miner.pora=false"}, "", false},
		{nil, "true", true},
		{[]string{"--miner.pora=false"}, "true", false},
	} {
		env["ES_NODE_MINER_PORA"] = tc.env
		ctx, err := cli.NewContext(miner.CLIFlags(), tc.args, getenv)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := miner.ReadCLIConfig(ctx).ToMinerConfig()
		if err != nil || cfg.Pora != tc.want {
			t.Fatalf("%v, ES_NODE_MINER_PORA=%q: Pora %v (%v), want %v", tc.args, tc.env, cfg.Pora, err, tc.want)
		}
	}
	if _, err := cli.NewContext(miner.CLIFlags(), []string{"--miner.pora=maybe"}, getenv); err == nil {
		t.Fatal("--miner.pora=maybe was taken")
	}
}
