// Test fixtures: shard files written the way es-node lays them out (a 4 KiB header, then the
// KVs), sparse shards holding the es-node vectors' samples, the real `pora` binary, and an
// es-node-style hashimoto in pure Go (one shared *os.File, ReadAt of 32 bytes, Keccak).
package porago

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pora-miner/pora/bindings/go/internal/keccak"
)

const (
	headerSize = 4096
	metaSize   = 32
	magic      = 0xcf20bd770c22b2e1
)

// repoRoot is the workspace root (bindings/go is two levels down).
func repoRoot(t testing.TB) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// shardSpec describes a v1 shard file.
type shardSpec struct {
	shard                 uint64
	kvEntriesBits, kvBits uint
	encodeType            uint64
	miner                 [20]byte
}

func (s shardSpec) header() []byte {
	h := make([]byte, headerSize)
	chunks := uint64(1) << s.kvEntriesBits
	kv := uint64(1) << s.kvBits
	for i, v := range []uint64{magic, 1, s.shard * chunks, chunks, s.encodeType, kv, kv, metaSize} {
		binary.BigEndian.PutUint64(h[8*i:], v)
	}
	copy(h[64:84], s.miner[:])
	return h
}

func (s shardSpec) allocatedLen() int64 {
	return int64(uint64(1)<<s.kvEntriesBits*(uint64(1)<<s.kvBits+metaSize)) + headerSize
}

// writeShard writes a complete shard of random bytes (seeded) and returns its path.
func writeShard(t testing.TB, dir string, s shardSpec, seed int64) string {
	path := filepath.Join(dir, "shard"+itoa(s.shard)+"-"+itoa(uint64(seed))+".dat")
	data := make([]byte, s.allocatedLen()-headerSize)
	rand.New(rand.NewSource(seed)).Read(data)
	if err := os.WriteFile(path, append(s.header(), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// testMiner is the miner address of the synthetic shards.
var testMiner = [20]byte{0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0x5c}

// vector is one es-node result from testdata/esnode-sample.json.
type vector struct {
	Shard          uint64   `json:"shard"`
	KVEntriesBits  uint     `json:"kvEntriesBits"`
	KVSizeBits     uint     `json:"kvSizeBits"`
	RandomChecks   int      `json:"randomChecks"`
	Miner          string   `json:"miner"`
	Randao         string   `json:"randao"`
	Nonce          uint64   `json:"nonce"`
	Hash0          string   `json:"hash0"`
	SampleIdxs     []uint64 `json:"sampleIdxs"`
	EncodedSamples []string `json:"encodedSamples"`
	Hash1          string   `json:"hash1"`
	Difficulty     *string  `json:"difficulty"`
	Interval       uint64   `json:"interval"`
	Cutoff         uint64   `json:"cutoff"`
	DiffAdjDivisor uint64   `json:"diffAdjDivisor"`
	MinimumDiff    string   `json:"minimumDiff"`
	RequiredDiff   string   `json:"requiredDiff"`
	Meets          *bool    `json:"hash1MeetsRequiredDiff"`
}

// vectors loads the repository's es-node vectors (docs/spec/algorithm.md, "The vectors that pin it").
func vectors(t testing.TB) []vector {
	files := []string{filepath.Join(repoRoot(t), "testdata/esnode-sample.json")}
	var all []vector
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Vectors []vector `json:"vectors"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, doc.Vectors...)
	}
	return all
}

func mustHex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buildVectorShard writes a sparse es-node v1 file for the vector's shard with its samples in place.
func buildVectorShard(t testing.TB, dir string, v vector) string {
	var spec shardSpec
	spec.shard, spec.kvEntriesBits, spec.kvBits, spec.encodeType = v.Shard, v.KVEntriesBits, v.KVSizeBits, 3
	copy(spec.miner[:], mustHex(t, v.Miner))
	path := filepath.Join(dir, "vec-"+itoa(v.Shard)+"-"+itoa(v.Nonce)+".dat")
	f := createSparse(t, path, spec)
	defer f.Close()
	startByte := v.Shard << (v.KVEntriesBits + v.KVSizeBits)
	for i, idx := range v.SampleIdxs {
		if _, err := f.WriteAt(mustHex(t, v.EncodedSamples[i]), int64(headerSize+idx*32-startByte)); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// createSparse writes spec's header at path and extends the file to its full size with a hole,
// as es-node's Create does; the caller writes what it needs and closes the file.
func createSparse(t testing.TB, path string, spec shardSpec) *os.File {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(spec.header()); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Truncate(spec.allocatedLen()); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return f
}

// poraBinary is $PORA_BINARY (a `pora` built with the sim feature: .ci/bindings.sh names the
// one tools/go-lib.sh --sim --with-cli built, the Windows leg pora.exe), or "" when it is not
// set. The package finds nothing by a path into a Cargo target directory: the library comes
// from lib/ (link.go).
func poraBinary(t testing.TB) string {
	return os.Getenv("PORA_BINARY")
}

// runPora runs the real pora binary and returns its stdout.
func runPora(t testing.TB, args ...string) []byte {
	bin := poraBinary(t)
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("pora %v: %v\n%s", args, err, msg)
	}
	return out
}

// goSampler is es-node's way of mining a shard in Go: one shared *os.File, ReadAt of one
// 32-byte sample at a time, Keccak in Go.
type goSampler struct {
	file                  *os.File
	shard                 uint64
	kvEntriesBits, kvBits uint
	miner                 [20]byte
	checks                int
	// cache holds KVs (by global KV index) read from memory before the file, as es-node's
	// BlobReader.ReadSample asks its blob cache first.
	cache map[uint64][]byte
}

// hash1 is hashimoto for one nonce, with the sample indices read.
func (g *goSampler) hash1(randao []byte, nonce uint64) ([32]byte, []uint64, error) {
	h, idxs, _, err := g.hash1Samples(randao, nonce)
	return h, idxs, err
}

// hash1Samples is hash1 with the encoded samples read.
func (g *goSampler) hash1Samples(randao []byte, nonce uint64) ([32]byte, []uint64, [][32]byte, error) {
	var msg [96]byte
	copy(msg[12:32], g.miner[:])
	copy(msg[32:64], randao)
	binary.BigEndian.PutUint64(msg[88:], nonce)
	h := keccak.Sum256(msg[:])
	rowBits := g.kvEntriesBits + g.kvBits - 5
	startByte := g.shard << (g.kvEntriesBits + g.kvBits)
	var sample [32]byte
	idxs := make([]uint64, 0, g.checks)
	samples := make([][32]byte, 0, g.checks)
	for i := 0; i < g.checks; i++ {
		idx := binary.BigEndian.Uint64(h[24:])&(1<<rowBits-1) + g.shard<<rowBits
		if kv, ok := g.cache[idx>>(g.kvBits-5)]; ok {
			copy(sample[:], kv[(idx&(1<<(g.kvBits-5)-1))*32:])
		} else if _, err := g.file.ReadAt(sample[:], int64(headerSize+idx*32-startByte)); err != nil {
			return h, idxs, samples, err
		}
		idxs = append(idxs, idx)
		samples = append(samples, sample)
		h = keccak.Sum256(h[:], sample[:])
	}
	return h, idxs, samples, nil
}

// readCalls is how many read system calls this process has made, all threads counted (syscr of
// /proc/self/io); false where the OS keeps no such count (not Linux).
func readCalls() (uint64, bool) {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// waitForReads waits until this process has made more read calls than since+more (the simulated
// disk reads the shard's bytes with pread, in this process): the condition a test waits for
// before it stops a running task. It fails the test after limit. Where the OS keeps no count it
// waits fallback instead, the one fixed wait left (Linux, where CI runs, has the count).
func waitForReads(t testing.TB, since, more uint64, limit, fallback time.Duration) {
	if _, ok := readCalls(); !ok {
		t.Logf("no /proc/self/io here: waiting a fixed %v", fallback)
		time.Sleep(fallback)
		return
	}
	giveUp := time.Now().Add(limit)
	for {
		n, _ := readCalls()
		if n >= since+more {
			return
		}
		if time.Now().After(giveUp) {
			t.Errorf("only %d of %d read calls in %v", n-since, more, limit)
			return
		}
		time.Sleep(time.Millisecond)
	}
}
