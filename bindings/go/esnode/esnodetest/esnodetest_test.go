package esnodetest_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/pora-miner/pora/bindings/go/esnode/esnodetest"
)

// The file is laid out as docs/spec/algorithm.md says, and the same seed writes the same file.
func TestWriteDataFileLayout(t *testing.T) {
	dir := t.TempDir()
	miner := [20]byte{0xaa, 1, 2, 3}
	var files [2][]byte
	for i := range files {
		path := filepath.Join(dir, string(rune('a'+i))+".dat")
		if err := esnodetest.WriteDataFile(path, 2, 3, 10, miner, 9); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = raw
	}
	raw := files[0]
	if !bytes.Equal(raw, files[1]) {
		t.Error("the same seed wrote two different files")
	}
	kvs, kvSize := uint64(8), uint64(1024)
	if uint64(len(raw)) != 4096+kvs*(kvSize+32) {
		t.Fatalf("%d bytes, want 4096 + %d KVs of %d + 32", len(raw), kvs, kvSize)
	}
	want := []uint64{0xcf20bd770c22b2e1, 1, 2 * kvs, kvs, 3, kvSize, kvSize, 32}
	for i, w := range want {
		if got := binary.BigEndian.Uint64(raw[8*i:]); got != w {
			t.Errorf("header field %d (byte %d) is %d, want %d", i, 8*i, got, w)
		}
	}
	if !bytes.Equal(raw[64:84], miner[:]) || !bytes.Equal(raw[84:4096], make([]byte, 4096-84)) {
		t.Error("the header's miner or its zero rest differs")
	}
	data, metas := raw[4096:4096+kvs*kvSize], raw[4096+kvs*kvSize:]
	if bytes.Count(data, []byte{0}) > len(data)/16 || !bytes.Equal(metas, make([]byte, len(metas))) {
		t.Error("the data region is not random or the metas are not zero")
	}
}
