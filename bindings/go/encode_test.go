// Tests of the encoder calls through the real libpora: every vector of
// testdata/esnode-encode.json, decode(encode(x)) == x on random data, Mask and EncodeKey equal to
// the `pora mask` binary, FillEmpty byte-identical to `pora create --fill empty --kv-range`, and
// bad input refused without touching the caller's bytes or the file.
package porago

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// encodeVectors is testdata/esnode-encode.json (docs/encoding.md, "Test vectors").
type encodeVectors struct {
	Miner   string `json:"miner"`
	Samples []struct {
		KVIdx  uint64 `json:"kvIdx"`
		Sample int    `json:"sample"`
		Word   string `json:"word"`
	} `json:"samples"`
	FullMask []struct {
		KVIdx     uint64 `json:"kvIdx"`
		EncodeKey string `json:"encodeKey"`
		Mask0     string `json:"mask0"`
		SHA256    string `json:"sha256"`
	} `json:"fullMask"`
	RawKeys []struct {
		Key    string `json:"key"`
		Sample int    `json:"sample"`
		Word   string `json:"word"`
		SHA256 string `json:"sha256"`
	} `json:"rawKeys"`
	CommitKey struct {
		Miner      string `json:"miner"`
		KVIdx      uint64 `json:"kvIdx"`
		Commit     string `json:"commit"`
		EncodeKey  string `json:"encodeKey"`
		MaskSHA256 string `json:"maskSha256"`
	} `json:"commitKey"`
}

func loadEncodeVectors(t testing.TB) encodeVectors {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata/esnode-encode.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v encodeVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Samples) == 0 || len(v.FullMask) == 0 || len(v.RawKeys) == 0 || v.CommitKey.EncodeKey == "" {
		t.Fatalf("esnode-encode.json is missing vectors: %+v", v)
	}
	return v
}

// hexN decodes s, which must be exactly n bytes.
func hexN(t testing.TB, s string, n int) []byte {
	b := mustHex(t, s)
	if len(b) != n {
		t.Fatalf("%s: %d bytes, want %d", s, len(b), n)
	}
	return b
}

func hex32(t testing.TB, s string) (out [32]byte) {
	copy(out[:], hexN(t, s, 32))
	return out
}

func hex20(t testing.TB, s string) (out [20]byte) {
	copy(out[:], hexN(t, s, 20))
	return out
}

func mustMask(t testing.TB, key [32]byte) []byte {
	out := make([]byte, KVSize)
	if err := Mask(key, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func maskWord(m []byte, j int) string { return "0x" + hex.EncodeToString(m[32*j:32*j+32]) }

func sha256Hex(b []byte) string {
	d := sha256.Sum256(b)
	return "0x" + hex.EncodeToString(d[:])
}

func TestEncodeKeyMatchesEsNodeVectors(t *testing.T) {
	v := loadEncodeVectors(t)
	miner := hex20(t, v.Miner)
	full := v.FullMask[0]
	if got := EncodeKey([32]byte{}, full.KVIdx, miner); got != hex32(t, full.EncodeKey) {
		t.Errorf("KV %d: key %x, want %s", full.KVIdx, got, full.EncodeKey)
	}
	c := v.CommitKey
	commit24 := mustHex(t, c.Commit)
	want := hex32(t, c.EncodeKey)
	// es-node's commit is a common.Hash of which only the first 24 bytes count.
	for _, tail := range [][]byte{make([]byte, 8), {0x80, 0, 0, 0, 0, 0, 0, 0}, bytes.Repeat([]byte{0xff}, 8)} {
		var commit [32]byte
		copy(commit[:], commit24)
		copy(commit[24:], tail)
		if got := EncodeKey(commit, c.KVIdx, hex20(t, c.Miner)); got != want {
			t.Errorf("commit %x: key %x, want %x", commit, got, want)
		}
	}
	var commit [32]byte
	copy(commit[:], commit24)
	if EncodeKey(commit, c.KVIdx+1, hex20(t, c.Miner)) == want || EncodeKey(commit, c.KVIdx, miner) == want {
		t.Error("another KV or miner gave the same key")
	}
}

func TestMaskMatchesEsNodeVectors(t *testing.T) {
	v := loadEncodeVectors(t)
	full := v.FullMask[0]
	m := mustMask(t, hex32(t, full.EncodeKey))
	if got := maskWord(m, 0); !strings.EqualFold(got, full.Mask0) {
		t.Errorf("mask0 %s, want %s", got, full.Mask0)
	}
	if got := sha256Hex(m); !strings.EqualFold(got, full.SHA256) {
		t.Errorf("mask sha256 %s, want %s", got, full.SHA256)
	}
	for _, r := range v.RawKeys {
		m := mustMask(t, hex32(t, r.Key))
		if got := maskWord(m, r.Sample); !strings.EqualFold(got, r.Word) {
			t.Errorf("key %s word %d: %s, want %s", r.Key, r.Sample, got, r.Word)
		}
		if r.SHA256 != "" && !strings.EqualFold(sha256Hex(m), r.SHA256) {
			t.Errorf("key %s: sha256 %s, want %s", r.Key, sha256Hex(m), r.SHA256)
		}
	}
	c := v.CommitKey
	var commit [32]byte
	copy(commit[:], mustHex(t, c.Commit))
	if got := sha256Hex(mustMask(t, EncodeKey(commit, c.KVIdx, hex20(t, c.Miner)))); !strings.EqualFold(got, c.MaskSHA256) {
		t.Errorf("commit key mask sha256 %s, want %s", got, c.MaskSHA256)
	}
	// Words es-node wrote into empty-filled KVs of a real shard.
	miner := hex20(t, v.Miner)
	for _, s := range v.Samples {
		m := mustMask(t, EncodeKey([32]byte{}, s.KVIdx, miner))
		if got := maskWord(m, s.Sample); !strings.EqualFold(got, s.Word) {
			t.Errorf("KV %d word %d: %s, want %s", s.KVIdx, s.Sample, got, s.Word)
		}
	}
}

func TestEncodeDecodeRoundTripOnRandomData(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 3; i++ {
		var key [32]byte
		rng.Read(key[:])
		blob := make([]byte, KVSize)
		rng.Read(blob)
		data := append([]byte(nil), blob...)
		if err := EncodeKV(key, data); err != nil {
			t.Fatal(err)
		}
		m := mustMask(t, key)
		for j := range data {
			if data[j] != blob[j]^m[j] {
				t.Fatalf("key %x: encoded byte %d is not blob XOR mask", key, j)
			}
		}
		encoded := append([]byte(nil), data...)
		// A blob of size bytes decodes from data[:size], as es-node reads it; the rest stays.
		size := 1 + rng.Intn(KVSize-1)
		if err := DecodeKV(key, data[:size]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data[:size], blob[:size]) || !bytes.Equal(data[size:], encoded[size:]) {
			t.Fatalf("key %x: prefix decode of %d bytes is wrong", key, size)
		}
		if err := DecodeKV(key, encoded); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(encoded, blob) {
			t.Fatalf("key %x: decode(encode(x)) != x", key)
		}
	}
	if err := DecodeKV([32]byte{1}, nil); err != nil {
		t.Errorf("decoding nothing: %v", err)
	}
}

func TestMaskAndEncodeKeyEqualPoraMask(t *testing.T) {
	if poraBinary(t) == "" {
		t.Fatal("PORA_BINARY names no pora binary (.ci/bindings.sh sets it to the pora that `tools/go-lib.sh --sim --with-cli` builds)")
	}
	dir := t.TempDir()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 2; i++ {
		var key [32]byte
		rng.Read(key[:])
		file := filepath.Join(dir, "mask"+itoa(uint64(i)))
		runPora(t, "mask", "--key", "0x"+hex.EncodeToString(key[:]), "--out", file)
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := mustMask(t, key); !bytes.Equal(got, want) {
			t.Errorf("key %x: Mask differs from pora mask --out", key)
		}
	}
	var commit [32]byte
	rng.Read(commit[:24])
	miner := testMiner
	kv := uint64(rng.Int63())
	var rec struct {
		EncodeKey string `json:"encodeKey"`
	}
	raw := runPora(t, "mask", "--miner", "0x"+hex.EncodeToString(miner[:]), "--kv-idx", itoa(kv),
		"--commit", "0x"+hex.EncodeToString(commit[:24]), "--json")
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatalf("pora mask --json: %v\n%s", err, raw)
	}
	if got := EncodeKey(commit, kv, miner); !strings.EqualFold("0x"+hex.EncodeToString(got[:]), rec.EncodeKey) {
		t.Errorf("EncodeKey %x, pora mask says %s", got, rec.EncodeKey)
	}
}

// createArgs are `pora create` flags for shard 1 of 8 KVs (KVs 8..16), encodeType 3.
func createArgs(file string, fill ...string) []string {
	return append([]string{"create", file, "--shard", "1", "--kv-entries-bits", "3", "--encode-type", "3",
		"--miner", "0x" + hex.EncodeToString(testMiner[:]), "--quiet"}, fill...)
}

func TestFillEmptyEqualsCreateFillEmpty(t *testing.T) {
	if poraBinary(t) == "" {
		t.Fatal("PORA_BINARY names no pora binary (.ci/bindings.sh sets it to the pora that `tools/go-lib.sh --sim --with-cli` builds)")
	}
	dir := t.TempDir()
	ours := filepath.Join(dir, "ours.dat")
	theirs := filepath.Join(dir, "theirs.dat")
	runPora(t, createArgs(ours, "--fill", "sparse")...)
	runPora(t, createArgs(theirs, "--fill", "empty", "--kv-range", "10..13", "--threads", "1")...)
	report, err := FillEmpty(ours, 10, 13, 2)
	if err != nil {
		t.Fatal(err)
	}
	if report.KVs != 3 || report.Skipped != 0 || report.KVStart != 10 || report.KVEnd != 13 || report.Threads != 2 || report.File != ours {
		t.Errorf("report %+v", report)
	}
	if !json.Valid(report.Raw) {
		t.Errorf("Raw is not JSON: %s", report.Raw)
	}
	a, err := os.ReadFile(ours)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("FillEmpty's file (%d bytes) differs from pora create --fill empty's (%d bytes)", len(a), len(b))
	}
	// The filled KVs hold their masks; the others are still zero.
	h := headerSize
	for kv := uint64(8); kv < 16; kv++ {
		data := a[h+int(kv-8)*KVSize : h+int(kv-7)*KVSize]
		if kv >= 10 && kv < 13 {
			if !bytes.Equal(data, mustMask(t, EncodeKey([32]byte{}, kv, testMiner))) {
				t.Errorf("KV %d is not its mask", kv)
			}
		} else if bytes.Count(data, []byte{0}) != KVSize {
			t.Errorf("KV %d was written", kv)
		}
	}
	// Repeating is a no-op; a wider range writes only what is new.
	if r, err := FillEmpty(ours, 10, 13, 0); err != nil || r.KVs != 0 || r.Skipped != 3 {
		t.Errorf("repeat: %+v, %v", r, err)
	}
	if r, err := FillEmpty(ours, 8, 16, 0); err != nil || r.KVs != 5 || r.Threads < 1 {
		t.Errorf("wider: %+v, %v", r, err)
	}
}

func TestEncodeBadInput(t *testing.T) {
	key := [32]byte{9}
	isInvalid := func(what string, err error, words ...string) {
		t.Helper()
		var pe *Error
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &pe) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", what, err)
			return
		}
		for _, w := range words {
			if !strings.Contains(pe.Message, w) {
				t.Errorf("%s: %q missing from %q", what, w, pe.Message)
			}
		}
	}
	buf := bytes.Repeat([]byte{0x5a}, KVSize+1)
	for _, n := range []int{0, 1, KVSize - 1, KVSize + 1} {
		isInvalid("Mask", Mask(key, buf[:n]), "mask", itoa(uint64(n))+" bytes", "expected 131072")
		isInvalid("EncodeKV", EncodeKV(key, buf[:n]), "data", "expected 131072")
	}
	isInvalid("Mask nil", Mask(key, nil), "mask")
	isInvalid("DecodeKV", DecodeKV(key, buf), "data", "at most 131072")
	if bytes.Count(buf, []byte{0x5a}) != len(buf) {
		t.Error("a refused call wrote into the caller's bytes")
	}

	dir := t.TempDir()
	good := writeFillTarget(t, dir, "good.dat", 3)
	plain := writeFillTarget(t, dir, "plain.dat", 0)
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not a data file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, p := range []string{good, plain, text} {
		before[p], _ = os.ReadFile(p)
	}
	cases := []struct {
		path         string
		start, end   uint64
		threads      int
		want         error
		messageParts []string
	}{
		{plain, 8, 9, 1, ErrShard, []string{plain, "encodeType"}},
		{text, 0, 1, 1, ErrShard, []string{text}},
		{good, 7, 9, 1, ErrInvalidArgument, []string{good, "outside", "8..16"}},
		{good, 15, 17, 1, ErrInvalidArgument, []string{good, "outside"}},
		{good, 9, 9, 1, ErrInvalidArgument, []string{"empty"}},
		{good, 8, 9, -1, ErrInvalidArgument, []string{"threads -1"}},
		{good, 8, 9, 257, ErrInvalidArgument, []string{"threads 257", "at most 256"}},
		{good, 8, 9, math.MaxInt, ErrInvalidArgument, []string{"threads"}},
		{filepath.Join(dir, "missing.dat"), 8, 9, 1, ErrIO, []string{"missing.dat"}},
		{"", 8, 9, 1, ErrInvalidArgument, []string{"path"}},
	}
	for _, c := range cases {
		_, err := FillEmpty(c.path, c.start, c.end, c.threads)
		var pe *Error
		if !errors.Is(err, c.want) || !errors.As(err, &pe) {
			t.Errorf("FillEmpty(%q, %d..%d, %d): got %v, want %v", c.path, c.start, c.end, c.threads, err, c.want)
			continue
		}
		for _, w := range c.messageParts {
			if !strings.Contains(pe.Message, w) {
				t.Errorf("FillEmpty(%q, %d..%d): %q missing from %q", c.path, c.start, c.end, w, pe.Message)
			}
		}
	}
	for p, b := range before {
		if after, _ := os.ReadFile(p); !bytes.Equal(after, b) {
			t.Errorf("%s changed after a refused fill", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.dat")); !os.IsNotExist(err) {
		t.Error("a refused fill created the missing file")
	}
}

// writeFillTarget writes a sparse es-node file of shard 1 with 8 KVs of 128 KiB (KVs 8..16).
func writeFillTarget(t testing.TB, dir, name string, encodeType uint64) string {
	spec := shardSpec{shard: 1, kvEntriesBits: 3, kvBits: 17, encodeType: encodeType, miner: testMiner}
	path := filepath.Join(dir, name)
	createSparse(t, path, spec).Close()
	return path
}

// BenchmarkMask is one KV's mask through the ABI; it reports ms per KV.
func BenchmarkMask(b *testing.B) {
	out := make([]byte, KVSize)
	key := [32]byte{0x11, 0x22}
	b.SetBytes(int64(KVSize))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		key[31] = byte(i)
		if err := Mask(key, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1e3/float64(b.N), "ms/KV")
}
