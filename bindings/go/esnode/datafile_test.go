// What the adapter's own tests (package esnode_test) share: a data file in es-node's layout,
// the miner it is encoded for, and a named 32-byte hash type. The tests of the adapter inside
// es-node's worker live in the es-node-shaped tree (hook/testdata/es-node), not here: these need
// no es-node shape.
package esnode_test

import (
	"encoding/hex"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

const (
	testShard         = 1
	testKvEntriesBits = 6  // 64 KVs per shard
	testKvSizeBits    = 12 // 4 KiB KVs keep the files small; the geometry is the production one's
)

// Hash is a named 32-byte type, as es-node's common.Hash is: the adapter must take it as it is.
type Hash [32]byte

var testMiner = [20]byte{0xe5, 0x0d, 0xe0, 0x0d, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// writeDataFile writes an es-node data file (docs/spec/algorithm.md's header, random KVs, zero
// metas) holding shard shard, encoded for miner, and returns its path.
func writeDataFile(t testing.TB, dir string, shard, kvEntriesBits, kvSizeBits uint64, miner [20]byte, seed int64) string {
	kvs, kvSize := uint64(1)<<kvEntriesBits, uint64(1)<<kvSizeBits
	header := make([]byte, 4096)
	for i, v := range []uint64{0xcf20bd770c22b2e1, 1, shard * kvs, kvs, 3, kvSize, kvSize, 32} {
		for b := 0; b < 8; b++ {
			header[8*i+b] = byte(v >> (56 - 8*b))
		}
	}
	copy(header[64:84], miner[:])
	data := make([]byte, kvs*(kvSize+32))
	rand.New(rand.NewSource(seed)).Read(data[:kvs*kvSize])
	path := filepath.Join(dir, "shard-"+hex.EncodeToString([]byte{byte(shard), byte(seed)})+".dat")
	if err := os.WriteFile(path, append(header, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
