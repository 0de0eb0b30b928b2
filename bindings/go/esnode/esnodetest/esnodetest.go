// Package esnodetest writes es-node data files for tests and tools: the adapter's own tests
// (bindings/go/esnode) and those of the es-node-shaped tree once pora's hook is applied
// (esnode/hook/testdata/es-node), which reach it through pora's module as they reach the adapter.
// It depends on the standard library alone and does not import package testing.
package esnodetest

import (
	"encoding/binary"
	"math/rand"
	"os"
)

// The data file's layout (docs/spec/algorithm.md, "The data file"): a 4096-byte header of
// big-endian u64s with the miner's 20 bytes at 64, the data region, then metaSize bytes per KV.
const (
	headerSize = 4096
	magic      = 0xcf20bd770c22b2e1
	version    = 1
	encodeType = 3 // BLOB_POSEIDON, every production network's
	metaSize   = 32
)

// WriteDataFile writes, at path, an es-node data file holding all of shard shard: 2^kvEntriesBits
// KVs of 2^kvSizeBits bytes, one chunk per KV (chunkSize = maxKvSize), encoded for miner. The KVs
// are random bytes drawn from seed (the same seed, the same file); the metas are zero.
func WriteDataFile(path string, shard, kvEntriesBits, kvSizeBits uint64, miner [20]byte, seed int64) error {
	kvs, kvSize := uint64(1)<<kvEntriesBits, uint64(1)<<kvSizeBits
	file := make([]byte, headerSize+kvs*(kvSize+metaSize))
	// magic, version, chunkIdxStart, chunkIdxLen, encodeType, maxKvSize, chunkSize, metaSize
	for i, v := range []uint64{magic, version, shard * kvs, kvs, encodeType, kvSize, kvSize, metaSize} {
		binary.BigEndian.PutUint64(file[8*i:], v)
	}
	copy(file[64:84], miner[:])
	rand.New(rand.NewSource(seed)).Read(file[headerSize : headerSize+kvs*kvSize])
	return os.WriteFile(path, file, 0o644)
}
