// The encoder checked once: EncodeKernel names a kernel this CPU runs, a bad PORA_ENCODE_ARITH is
// an error from EncodeKernel and NewEncoder naming the variable (in a child process: the choice
// is made once per process), and EncodeBlob pads a short blob as es-node pads it.
package porago

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestEncodeKernelIsCheckedOnce(t *testing.T) {
	if os.Getenv("PORA_TEST_BAD_ARITH_CHILD") == "1" {
		// The child: PORA_ENCODE_ARITH is bad; every way in says so, naming the variable.
		if _, _, err := EncodeKernel(); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "PORA_ENCODE_ARITH") {
			t.Fatalf("EncodeKernel with a bad PORA_ENCODE_ARITH: %v", err)
		}
		if _, err := NewEncoder(); err == nil || !strings.Contains(err.Error(), "PORA_ENCODE_ARITH") {
			t.Fatalf("NewEncoder with a bad PORA_ENCODE_ARITH: %v", err)
		}
		out := make([]byte, KVSize)
		if err := Mask([32]byte{1}, out); err == nil || !bytes.Equal(out, make([]byte, KVSize)) {
			t.Fatalf("Mask with a bad PORA_ENCODE_ARITH: %v (or it wrote)", err)
		}
		return
	}
	kernel, supported, err := EncodeKernel()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, k := range supported {
		found = found || k == kernel
	}
	if !found || len(supported) == 0 {
		t.Fatalf("kernel %q is not among the supported %v", kernel, supported)
	}
	enc, err := NewEncoder()
	if err != nil || enc.Kernel != kernel {
		t.Fatalf("NewEncoder: %+v, %v (kernel %s)", enc, err, kernel)
	}
	if os.Getenv("PORA_ENCODE_ARITH") != "" {
		t.Logf("PORA_ENCODE_ARITH is set (%s): the bad-value child is not run", os.Getenv("PORA_ENCODE_ARITH"))
		return
	}
	for _, bad := range []string{"bogus", "avx9"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEncodeKernelIsCheckedOnce$", "-test.count=1")
		cmd.Env = append(os.Environ(), "PORA_TEST_BAD_ARITH_CHILD=1", "PORA_ENCODE_ARITH="+bad)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("PORA_ENCODE_ARITH=%s child: %v\n%s", bad, err, out)
		}
	}
}

func TestEncodeBlobPadsAShortBlobAsEsNode(t *testing.T) {
	enc, err := NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(29))
	var key [32]byte
	rng.Read(key[:])
	for _, n := range []int{0, 1, 31, 4096, 100000, KVSize} {
		blob := make([]byte, n)
		rng.Read(blob)
		// es-node: the blob zero-padded to the KV size, then EncodeChunk in place.
		want := make([]byte, KVSize)
		copy(want, blob)
		if err := EncodeKV(key, want); err != nil {
			t.Fatal(err)
		}
		out := make([]byte, KVSize)
		if err := enc.EncodeBlob(key, blob, out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("%d-byte blob: EncodeBlob differs from EncodeKV of the padded blob", n)
		}
		// Decoding the stored bytes gives the blob back, padded with zeros.
		if err := DecodeKV(key, out); err != nil || !bytes.Equal(out[:n], blob) || !bytes.Equal(out[n:], make([]byte, KVSize-n)) {
			t.Fatalf("%d-byte blob: decode of EncodeBlob's bytes: %v", n, err)
		}
	}
	out := bytes.Repeat([]byte{7}, KVSize)
	if err := enc.EncodeBlob(key, make([]byte, KVSize+1), out); !errors.Is(err, ErrInvalidArgument) || !bytes.Equal(out, bytes.Repeat([]byte{7}, KVSize)) {
		t.Fatalf("a blob longer than a KV: %v (or out was written)", err)
	}
	if err := enc.EncodeBlob(key, nil, make([]byte, KVSize-1)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a short out: %v", err)
	}
}

// TestFillEmptyKVsWritesWhatTheCallerNames: es-node's view (the contract says which KVs are
// empty) overwrites a KV that holds a locally written blob, where FillEmpty skips it by its
// meta entry and says so in Skipped.
func TestFillEmptyKVsWritesWhatTheCallerNames(t *testing.T) {
	path := writeFillTarget(t, t.TempDir(), "named.dat", 3) // KVs 8..16
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	blob := bytes.Repeat([]byte{0xab}, KVSize)
	meta := bytes.Repeat([]byte{0x11}, 32) // a blob's commit
	metaAt := func(kv uint64) int64 { return headerSize + 8*int64(KVSize) + int64(kv-8)*32 }
	dataAt := func(kv uint64) int64 { return headerSize + int64(kv-8)*int64(KVSize) }
	if _, err := f.WriteAt(blob, dataAt(9)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(meta, metaAt(9)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r, err := FillEmpty(path, 8, 11, 2)
	if err != nil || r.KVs != 2 || r.Skipped != 1 || r.Kernel == "" {
		t.Fatalf("FillEmpty 8..11 over a blob at 9: %+v, %v", r, err)
	}
	r, err = FillEmptyKVs(path, []uint64{11, 9}, 2)
	if err != nil || r.KVs != 2 || r.Skipped != 0 || r.KVStart != 9 || r.KVEnd != 12 || r.Kernel == "" {
		t.Fatalf("FillEmptyKVs [11 9]: %+v, %v", r, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	emptyMeta := make([]byte, 32)
	emptyMeta[24] = 0x80
	for _, kv := range []uint64{8, 9, 10, 11} {
		if !bytes.Equal(data[dataAt(kv):dataAt(kv)+int64(KVSize)], mustMask(t, EncodeKey([32]byte{}, kv, testMiner))) {
			t.Errorf("KV %d does not hold its mask", kv)
		}
		if !bytes.Equal(data[metaAt(kv):metaAt(kv)+32], emptyMeta) {
			t.Errorf("KV %d's meta is %x, want filled commit 0", kv, data[metaAt(kv):metaAt(kv)+32])
		}
	}
	if !bytes.Equal(data[dataAt(12):dataAt(12)+int64(KVSize)], make([]byte, KVSize)) {
		t.Error("KV 12, not named, was written")
	}
	for _, bad := range [][]uint64{nil, {9, 9}, {7}, {16}} {
		if _, err := FillEmptyKVs(path, bad, 1); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("FillEmptyKVs %v: %v, want ErrInvalidArgument", bad, err)
		}
	}
}

// TestMaskKVsHandsMasksInOrderToTheCallersWriter: es-node's DataFile writes under its own lock.
func TestMaskKVsHandsMasksInOrderToTheCallersWriter(t *testing.T) {
	enc, err := NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	kvs := []uint64{12, 3, 40, 7, 9}
	var got []uint64
	err = enc.MaskKVs(testMiner, kvs, 2, func(kv uint64, mask []byte) error {
		if !bytes.Equal(mask, mustMask(t, EncodeKey([32]byte{}, kv, testMiner))) {
			t.Errorf("KV %d: not its mask", kv)
		}
		got = append(got, kv)
		return nil
	})
	if err != nil || !bytes.Equal(u64s(got), u64s(kvs)) {
		t.Fatalf("MaskKVs: %v, order %v, want %v", err, got, kvs)
	}
	stop := errors.New("disk full")
	got = got[:0]
	err = enc.MaskKVs(testMiner, kvs, 2, func(kv uint64, mask []byte) error {
		got = append(got, kv)
		if len(got) == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || len(got) != 3 {
		t.Fatalf("a failing write: %v after %v", err, got)
	}
}

func u64s(v []uint64) []byte {
	var b []byte
	for _, x := range v {
		b = append(b, byte(x), byte(x>>8))
	}
	return b
}
