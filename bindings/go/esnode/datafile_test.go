// What the adapter's own tests (package esnode_test) share: a data file in es-node's layout,
// the miner it is encoded for, and a named 32-byte hash type. The tests of the adapter inside
// es-node's worker live in the es-node-shaped tree (hook/testdata/es-node), not here: these need
// no es-node shape.
package esnode_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pora-miner/pora/bindings/go/esnode/esnodetest"
)

const (
	testShard         = 1
	testKvEntriesBits = 6  // 64 KVs per shard
	testKvSizeBits    = 12 // 4 KiB KVs keep the files small; the geometry is the production one's
)

// Hash is a named 32-byte type, as es-node's common.Hash is: the adapter must take it as it is.
type Hash [32]byte

var testMiner = [20]byte{0xe5, 0x0d, 0xe0, 0x0d, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// writeDataFile writes an es-node data file in dir holding shard shard, encoded for miner, and
// returns its path: esnodetest.WriteDataFile's (docs/spec/algorithm.md's header, random KVs,
// zero metas), the one writer this package's tests and the es-node-shaped tree's share.
func writeDataFile(t testing.TB, dir string, shard, kvEntriesBits, kvSizeBits uint64, miner [20]byte, seed int64) string {
	path := filepath.Join(dir, fmt.Sprintf("shard-%d-%d.dat", shard, seed))
	if err := esnodetest.WriteDataFile(path, shard, kvEntriesBits, kvSizeBits, miner, seed); err != nil {
		t.Fatal(err)
	}
	return path
}
