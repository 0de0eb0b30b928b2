// Package ethstorage stands in for es-node's root package (es.StorageManager): one data file per
// shard in pora's layout (a 4096-byte header, then the chunks), its sizes, the file's miner, and
// the unlocked 32-byte sample read es-node's miner goes through.
package ethstorage

import (
	"os"
	"sort"

	"github.com/ethereum/go-ethereum/common"
)

// StorageManager holds the node's data files by shard.
type StorageManager struct {
	kvEntriesBits, maxKvSizeBits uint64
	files                        map[uint64]*os.File
	miner                        common.Address
}

// NewStorageManager is a storage manager over open data files, one per shard.
func NewStorageManager(files map[uint64]*os.File, kvEntriesBits, maxKvSizeBits uint64,
	miner common.Address) *StorageManager {
	return &StorageManager{kvEntriesBits: kvEntriesBits, maxKvSizeBits: maxKvSizeBits,
		files: files, miner: miner}
}

func (s *StorageManager) KvEntriesBits() uint64 { return s.kvEntriesBits }
func (s *StorageManager) MaxKvSizeBits() uint64 { return s.maxKvSizeBits }

// Shards is the shards the node holds, sorted.
func (s *StorageManager) Shards() []uint64 {
	var shards []uint64
	for shardIdx := range s.files {
		shards = append(shards, shardIdx)
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i] < shards[j] })
	return shards
}

// GetShardMiner is the miner the shard's file is encoded for.
func (s *StorageManager) GetShardMiner(shardIdx uint64) (common.Address, bool) {
	_, ok := s.files[shardIdx]
	return s.miner, ok
}

// ReadSampleUnlocked reads the 32-byte sample at its place in the shard's file, with no lock.
func (s *StorageManager) ReadSampleUnlocked(shardIdx, sampleIdx uint64) (common.Hash, error) {
	var h common.Hash
	first := shardIdx << (s.kvEntriesBits + s.maxKvSizeBits)
	_, err := s.files[shardIdx].ReadAt(h[:], int64(4096+sampleIdx*32-first))
	return h, err
}
