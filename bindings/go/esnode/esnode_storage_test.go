// es-node stand-in, packages ethstorage and blobs: es.StorageManager's sizes, unlocked sample
// reads and finalized writes over one data file per shard, and blobs.BlobReader.ReadSample (blob
// cache first, then the file), as es-node v0.2.10's are described in docs/spec/es-node.md (no es-node
// code).
package esnode_test

import (
	"os"
	"sort"

	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"
)

// StorageManager stands in for es.StorageManager: one data file per shard, sizes, unlocked
// sample reads, and the write of a finalized blob.
type StorageManager struct {
	kvEntriesBits, maxKvSizeBits uint64
	files                        map[uint64]*os.File // by shard
	miner                        common.Address
}

func (sm *StorageManager) KvEntriesBits() uint64 { return sm.kvEntriesBits }
func (sm *StorageManager) MaxKvSizeBits() uint64 { return sm.maxKvSizeBits }

// Shards is the shards the node holds, sorted.
func (sm *StorageManager) Shards() []uint64 {
	var shards []uint64
	for shardIdx := range sm.files {
		shards = append(shards, shardIdx)
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i] < shards[j] })
	return shards
}

func (sm *StorageManager) GetShardMiner(shardIdx uint64) (common.Address, bool) {
	_, ok := sm.files[shardIdx]
	return sm.miner, ok
}

// ReadSampleUnlocked reads 32 bytes at 4096 + sampleIdx*32 - chunkIdxStart*chunkSize.
func (sm *StorageManager) ReadSampleUnlocked(shardIdx, sampleIdx uint64) (common.Hash, error) {
	var h common.Hash
	start := shardIdx << (sm.kvEntriesBits + sm.maxKvSizeBits)
	_, err := sm.files[shardIdx].ReadAt(h[:], int64(4096+sampleIdx*32-start))
	return h, err
}

// DownloadFinished writes finalized blobs (encoded bytes) to their KVs in the data file.
func (sm *StorageManager) DownloadFinished(blobs []blob) error {
	for _, bl := range blobs {
		kv := bl.kvIndex.Uint64()
		shard := kv >> sm.kvEntriesBits
		if sm.files[shard] == nil || bl.data == nil {
			continue // a shard this node does not hold
		}
		off := 4096 + (kv-shard<<sm.kvEntriesBits)<<sm.maxKvSizeBits
		if _, err := sm.files[shard].WriteAt(bl.data, int64(off)); err != nil {
			return err
		}
	}
	return nil
}

// BlobReader is blobs.BlobReader: ReadSample asks the cache, then the file.
type BlobReader struct {
	cr BlobCache
	sm *StorageManager
}

func (r *BlobReader) ReadSample(shardIdx, sampleIdx uint64) (common.Hash, error) {
	sampleBits := r.sm.MaxKvSizeBits() - 5
	if d := r.cr.GetSampleData(sampleIdx>>sampleBits, sampleIdx&(1<<sampleBits-1)); d != nil {
		return common.Hash(*(*[32]byte)(d)), nil
	}
	return r.sm.ReadSampleUnlocked(shardIdx, sampleIdx)
}
