package esnodetest_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	porago "github.com/pora-miner/pora/bindings/go"
	"github.com/pora-miner/pora/bindings/go/esnode/esnodetest"
)

// The file is laid out as docs/spec/algorithm.md says (pora's own reader opens it as the shard,
// size and miner written), and the same seed writes the same file.
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
	// The header as another reader takes it: pora's own (the Rust parser of the data file), not
	// the writer's constants again.
	shards, err := porago.Open([][]string{{filepath.Join(dir, "a.dat")}}, porago.Options{})
	if err != nil {
		t.Fatalf("pora does not open the file: %v", err)
	}
	defer shards.Close()
	if len(shards.Info) != 1 {
		t.Fatalf("pora opens %d shards in the file, want 1", len(shards.Info))
	}
	if info := shards.Info[0]; info.Shard != 2 || info.KVEntriesBits != 3 || info.KVSizeBits != 10 ||
		!strings.EqualFold(info.Miner, "0x"+hex.EncodeToString(miner[:])) {
		t.Fatalf("pora reads the file as %+v; want shard 2, 2^3 KVs of 2^10 bytes, miner %x", shards.Info, miner)
	}
	if !bytes.Equal(raw[64:84], miner[:]) || !bytes.Equal(raw[84:4096], make([]byte, 4096-84)) {
		t.Error("the header's miner or its zero rest differs")
	}
	data, metas := raw[4096:4096+kvs*kvSize], raw[4096+kvs*kvSize:]
	if bytes.Count(data, []byte{0}) > len(data)/16 || !bytes.Equal(metas, make([]byte, len(metas))) {
		t.Error("the data region is not random or the metas are not zero")
	}
}
