// Package blobs stands in for es-node's ethstorage/blobs: BlobReader reads a sample from the blob
// cache first (a non-nil answer wins), then from the data file.
package blobs

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/log"
	es "github.com/ethstorage/go-ethstorage/ethstorage"
)

// BlobCacheReader is what the reader asks the cache.
type BlobCacheReader interface {
	GetKeyValueByIndex(index uint64, hash common.Hash) []byte
	GetSampleData(kvIndex, sampleIndexInKv uint64) []byte
}

// BlobReader reads samples for the miner.
type BlobReader struct {
	cr BlobCacheReader
	sm *es.StorageManager
	lg log.Logger
}

func NewBlobReader(cr BlobCacheReader, sm *es.StorageManager, lg log.Logger) *BlobReader {
	return &BlobReader{cr: cr, sm: sm, lg: lg}
}

// ReadSample splits the global sample index into KV and in-KV sample and asks the cache, then
// the file.
func (n *BlobReader) ReadSample(shardIdx, sampleIdx uint64) (common.Hash, error) {
	sampleBits := n.sm.MaxKvSizeBits() - 5
	if d := n.cr.GetSampleData(sampleIdx>>sampleBits, sampleIdx&(1<<sampleBits-1)); d != nil {
		return common.Hash(d), nil
	}
	return n.sm.ReadSampleUnlocked(shardIdx, sampleIdx)
}
