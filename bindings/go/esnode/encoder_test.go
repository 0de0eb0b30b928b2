// Tests of es-node's encoder through pora (the stand-in's Encode with the encoder hook applied):
// the repository's es-node mask vectors on every kernel pora has, each forced in its own process
// (the kernel is chosen once per process); the encode -> decode round trip; the fall-through to
// es-node's own code for another size, for a key near the field prime and on an error; and many
// goroutines at once (CI runs the tests named Encod* under -race).
package esnode_test

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
	"strings"
	"sync"
	"testing"
	"time"

	porago "github.com/pora-miner/pora/bindings/go"
	"github.com/pora-miner/pora/bindings/go/esnode"
)

// encoderChildEnv makes a test binary started by a test run that test's child part (the value
// says what the child is for).
const encoderChildEnv = "PORA_TEST_ENCODER_CHILD"

// maskCase is one expectation of testdata/esnode-encode.json: word `word` of the mask of key is
// wantWord, and/or the whole mask's SHA-256 is wantSHA256 (either may be empty).
type maskCase struct {
	name              string
	key               Hash
	word              int
	wantWord, wantSHA string
}

// encoderVectors reads testdata/esnode-encode.json as mask cases: the full mask of a KV of
// es-node's shard, the storage contract's raw keys (one of them >= r), a key with a non-zero
// commit, and words es-node wrote into empty-filled KVs of a real shard.
func encoderVectors(t *testing.T) []maskCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "esnode-encode.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Miner   string
		Samples []struct {
			KVIdx  uint64
			Sample int
			Word   string
		}
		FullMask []struct {
			KVIdx                    uint64
			EncodeKey, Mask0, SHA256 string
		}
		RawKeys []struct {
			Key          string
			Sample       int
			Word, SHA256 string
		}
		CommitKey struct {
			EncodeKey, MaskSHA256 string
		}
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	key := func(s string) (h Hash) {
		b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
		if err != nil || len(b) != 32 {
			t.Fatalf("esnode-encode.json: key %q is not 32 hex bytes", s)
		}
		copy(h[:], b)
		return h
	}
	var miner [20]byte
	if b, err := hex.DecodeString(strings.TrimPrefix(v.Miner, "0x")); err != nil || copy(miner[:], b) != 20 || len(b) != 20 {
		t.Fatalf("esnode-encode.json: miner %q is not 20 hex bytes", v.Miner)
	}
	var cases []maskCase
	for _, f := range v.FullMask {
		if got := porago.EncodeKey([32]byte{}, f.KVIdx, miner); got != key(f.EncodeKey) {
			t.Fatalf("KV %d: encode key %x, the vector says %s", f.KVIdx, got, f.EncodeKey)
		}
		cases = append(cases, maskCase{name: "full mask of KV " + f.EncodeKey, key: key(f.EncodeKey), wantWord: f.Mask0, wantSHA: f.SHA256})
	}
	for _, r := range v.RawKeys {
		cases = append(cases, maskCase{name: "raw key " + r.Key, key: key(r.Key), word: r.Sample, wantWord: r.Word, wantSHA: r.SHA256})
	}
	cases = append(cases, maskCase{name: "commit key " + v.CommitKey.EncodeKey, key: key(v.CommitKey.EncodeKey), wantSHA: v.CommitKey.MaskSHA256})
	for _, s := range v.Samples {
		k := porago.EncodeKey([32]byte{}, s.KVIdx, miner)
		cases = append(cases, maskCase{name: "es-node's shard, KV " + itoa(s.KVIdx), key: k, word: s.Sample, wantWord: s.Word})
	}
	if len(v.FullMask) == 0 || len(v.RawKeys) == 0 || len(v.Samples) == 0 || v.CommitKey.MaskSHA256 == "" {
		t.Fatalf("esnode-encode.json lacks vectors: %d full masks, %d raw keys, %d samples, commit key %q",
			len(v.FullMask), len(v.RawKeys), len(v.Samples), v.CommitKey.MaskSHA256)
	}
	return cases
}

func itoa(n uint64) string { return new(big.Int).SetUint64(n).String() }

// checkMask fails the test where mask differs from the case.
func checkMask(t *testing.T, c maskCase, mask []byte) {
	t.Helper()
	if len(mask) != porago.KVSize {
		t.Fatalf("%s: %d bytes, want %d", c.name, len(mask), porago.KVSize)
	}
	if c.wantWord != "" {
		if got := "0x" + hex.EncodeToString(mask[32*c.word:32*c.word+32]); !strings.EqualFold(got, c.wantWord) {
			t.Errorf("%s: word %d is %s, want %s", c.name, c.word, got, c.wantWord)
		}
	}
	if c.wantSHA != "" {
		if sum := sha256.Sum256(mask); !strings.EqualFold("0x"+hex.EncodeToString(sum[:]), c.wantSHA) {
			t.Errorf("%s: mask SHA-256 %x, want %s", c.name, sum, c.wantSHA)
		}
	}
}

// runEncoderChild runs the test binary's test `name` alone with env added, and fails with its
// output if it fails or neither passes nor skips.
func runEncoderChild(t *testing.T, name string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in a child process with %v: %v\n%s", name, env, err, out)
	}
	// A child that skips (t.Skip, a visible SKIP line) passes here; its caller reads why.
	if !strings.Contains(string(out), "--- PASS: "+name) && !strings.Contains(string(out), "--- SKIP: "+name) {
		t.Fatalf("%s in a child process with %v did not pass:\n%s", name, env, out)
	}
	return string(out)
}

// TestEncoderMatchesVectorsOnEveryKernel: es-node's Encode with the hook gives the vectors' bytes
// on each kernel pora has, forced one by one through PORA_ENCODE_ARITH in a child process; a
// kernel this CPU lacks is a visible SKIP naming it.
func TestEncoderMatchesVectorsOnEveryKernel(t *testing.T) {
	if child := os.Getenv(encoderChildEnv); strings.HasPrefix(child, "kernel=") {
		kernel := strings.TrimPrefix(child, "kernel=")
		got, _, err := porago.EncodeKernel()
		if err != nil || got != kernel {
			t.Fatalf("the child runs kernel %q (%v), want %q", got, err, kernel)
		}
		before := ownEncodeCalls.Load()
		for _, c := range encoderVectors(t) {
			mask, err := Encode(c.key, porago.KVSize)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			checkMask(t, c, mask)
		}
		if n := ownEncodeCalls.Load() - before; n != 0 {
			t.Fatalf("es-node's own code ran %d times: the hook did not answer every KV", n)
		}
		t.Logf("kernel %s: every vector equal through the hook", kernel)
		return
	}
	_, supported, err := porago.EncodeKernel()
	if err != nil {
		t.Fatal(err)
	}
	for _, kernel := range []string{"portable", "adx", "avx512f", "ifma"} {
		t.Run(kernel, func(t *testing.T) {
			if !strings.Contains(" "+strings.Join(supported, " ")+" ", " "+kernel+" ") {
				t.Skipf("SKIP: this CPU lacks pora's %s kernel (it runs %v)", kernel, supported)
			}
			out := runEncoderChild(t, "TestEncoderMatchesVectorsOnEveryKernel", encoderChildEnv+"=kernel="+kernel, "PORA_ENCODE_ARITH="+kernel)
			if !strings.Contains(out, "kernel "+kernel+": every vector equal") {
				t.Fatalf("the child did not check the vectors:\n%s", out)
			}
		})
	}
}

// TestEncoderRoundTripThroughTheChunkCoding: es-node's chunk coding over the hooked Encode gives
// pora's EncodeKV bytes, and decoding them (whole, or a prefix as es-node reads a shorter blob)
// gives the blob back.
func TestEncoderRoundTripThroughTheChunkCoding(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for _, n := range []int{porago.KVSize, 4096*31 + 7, 1} {
		var key Hash
		rng.Read(key[:])
		blob := make([]byte, n)
		rng.Read(blob)
		stored, err := encodeChunk(uint64(porago.KVSize), blob, key)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, porago.KVSize)
		copy(want, blob)
		if err := porago.EncodeKV(key, want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stored, want) {
			t.Fatalf("%d-byte blob: the stored bytes differ from porago.EncodeKV's", n)
		}
		back, err := decodeChunk(uint64(porago.KVSize), stored[:n], key)
		if err != nil || !bytes.Equal(back, blob) {
			t.Fatalf("%d-byte blob: decode(encode(x)) != x (%v)", n, err)
		}
	}
}

// TestEncoderHookChangesNoBytes: for random keys the hook's mask equals es-node's own code's
// (the stand-in's slow reference in another process).
func TestEncoderHookChangesNoBytes(t *testing.T) {
	if os.Getenv("PORA_BINARY") == "" {
		t.Skip("SKIP: PORA_BINARY names no pora binary, which the stand-in of es-node's own encoder runs")
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := 0; i < 2; i++ {
		var key Hash
		rng.Read(key[:])
		hooked, err := Encode(key, porago.KVSize)
		if err != nil {
			t.Fatal(err)
		}
		own, err := esNodeOwnEncode(key, porago.KVSize)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(hooked, own) {
			t.Fatalf("key %x: the hook's mask differs from es-node's own code's", key)
		}
	}
}

// TestEncoderFallsThroughForAnotherSize: pora answers only the KV size; every other size reaches
// es-node's own code, and esnode.Mask never panics on it.
func TestEncoderFallsThroughForAnotherSize(t *testing.T) {
	key := Hash{0x11, 0x22}
	for _, size := range []int{0, 64, porago.KVSize - 64, porago.KVSize + 64, 2 * porago.KVSize, -1, -porago.KVSize} {
		if mask, ok := esnode.Mask(key, size); ok || mask != nil {
			t.Errorf("esnode.Mask(key, %d) answered (%d bytes)", size, len(mask))
		}
		before := ownEncodeCalls.Load()
		_, err := Encode(key, size)
		if ownEncodeCalls.Load() != before+1 {
			t.Errorf("size %d: es-node's own code did not run", size)
		}
		if err == nil || !strings.Contains(err.Error(), "not modelled") {
			t.Errorf("size %d: Encode returned %v, not the own code's answer", size, err)
		}
	}
	before := ownEncodeCalls.Load()
	if mask, err := Encode(key, porago.KVSize); err != nil || len(mask) != porago.KVSize || ownEncodeCalls.Load() != before {
		t.Fatalf("the KV size: %d bytes, %v, own code ran %d times", len(mask), err, ownEncodeCalls.Load()-before)
	}
}

// keyOf is v as a 32-byte big-endian key (v < 2^256).
func keyOf(v *big.Int) (h Hash) {
	v.FillBytes(h[:])
	return h
}

// TestEncoderLeavesNearPrimeKeysToEsNode: a key whose value mod r is within 2048 of r (es-node
// v0.2.10's own Encode panics there) is left to es-node's own code; the next key below is pora's.
func TestEncoderLeavesNearPrimeKeysToEsNode(t *testing.T) {
	offset := func(base *big.Int, d int64) *big.Int { return new(big.Int).Add(base, big.NewInt(d)) }
	twoR := new(big.Int).Lsh(esnode.FieldPrime, 1)
	for _, v := range []*big.Int{offset(esnode.FieldPrime, -1), offset(esnode.FieldPrime, -2048), offset(twoR, -1), offset(twoR, -1000)} {
		key := keyOf(v)
		if mask, ok := esnode.Mask(key, porago.KVSize); ok || mask != nil {
			t.Errorf("key %x (within 2048 of r mod r): pora answered", key)
		}
		before := ownEncodeCalls.Load()
		_, _ = Encode(key, porago.KVSize) // the own code's answer is not the point; that it ran is
		if ownEncodeCalls.Load() != before+1 {
			t.Errorf("key %x: es-node's own code did not run", key)
		}
	}
	for _, v := range []*big.Int{offset(esnode.FieldPrime, -2049), offset(twoR, -2049), big.NewInt(0), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))} {
		key := keyOf(v)
		mask, ok := esnode.Mask(key, porago.KVSize)
		want := make([]byte, porago.KVSize)
		if err := porago.Mask(key, want); err != nil {
			t.Fatal(err)
		}
		if !ok || !bytes.Equal(mask, want) {
			t.Errorf("key %x: pora did not answer with its mask (ok %v)", key, ok)
		}
	}
}

// TestEncoderFallsThroughOnAnError: with pora's every mask failing (a bad PORA_ENCODE_ARITH, in
// a child process), es-node's Encode still answers, through its own code, with the same bytes.
func TestEncoderFallsThroughOnAnError(t *testing.T) {
	if os.Getenv(encoderChildEnv) == "error" {
		key := Hash{0x11, 0x22}
		if err := porago.Mask(key, make([]byte, porago.KVSize)); err == nil {
			t.Fatal("porago.Mask succeeded with a bad PORA_ENCODE_ARITH: the child tests nothing")
		}
		if mask, ok := esnode.Mask(key, porago.KVSize); ok || mask != nil {
			t.Fatal("esnode.Mask answered although pora failed")
		}
		before := ownEncodeCalls.Load()
		mask, err := Encode(key, porago.KVSize)
		if ownEncodeCalls.Load() != before+1 {
			t.Fatal("es-node's own code did not run")
		}
		if errors.Is(err, errNoOwnEncoder) {
			t.Skip("SKIP: the own code's bytes: PORA_BINARY names no pora binary")
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range encoderVectors(t) {
			if c.key == key {
				checkMask(t, c, mask)
				t.Log("the own code's mask equals the vector")
				return
			}
		}
		t.Fatal("no vector for key 0x1122...")
	}
	out := runEncoderChild(t, "TestEncoderFallsThroughOnAnError", encoderChildEnv+"=error", "PORA_ENCODE_ARITH=bogus")
	if !strings.Contains(out, "the own code's mask equals the vector") && !strings.Contains(out, "SKIP:") {
		t.Fatalf("the child checked nothing:\n%s", out)
	}
	if strings.Contains(out, "SKIP:") {
		t.Skip("SKIP: the own code's bytes after the fall-through: PORA_BINARY names no pora binary (the fall-through itself was checked)")
	}
}

// TestEncoderFromManyGoroutines: 6 goroutines encode at once (different keys, and the same key
// twice), with fall-through sizes mixed in; each mask equals the one computed alone.
func TestEncoderFromManyGoroutines(t *testing.T) {
	const goroutines, rounds = 6, 3
	keys := make([]Hash, goroutines)
	want := make([][]byte, goroutines)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := range keys {
		if i == goroutines-1 {
			keys[i] = keys[0] // two goroutines on one key
		} else {
			rng.Read(keys[i][:])
		}
		want[i] = make([]byte, porago.KVSize)
		if err := porago.Mask(keys[i], want[i]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, goroutines*rounds*2)
	start := make(chan struct{})
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			<-start
			for r := 0; r < rounds; r++ {
				if mask, ok := esnode.Mask(keys[g], 64*(r+1)); ok || mask != nil {
					errs <- "a 64-byte-multiple size was answered"
				}
				mask, err := Encode(keys[g], porago.KVSize)
				if err != nil || !bytes.Equal(mask, want[g]) {
					errs <- "goroutine " + itoa(uint64(g)) + ": a mask differs from the one computed alone"
				}
			}
		}(g)
	}
	close(start)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
