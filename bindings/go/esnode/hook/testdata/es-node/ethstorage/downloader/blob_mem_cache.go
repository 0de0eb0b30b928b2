// Stand-in for es-node's ethstorage/downloader/blob_mem_cache.go: the memory blob cache (es-node
// uses it in tests), blocks by number, lookups in map order. It has no VisitKVs: the hook adds none.

package downloader

import (
	"bytes"
	"sync"

	"github.com/ethereum/go-ethereum/common"
)

// BlobMemCache keeps blocks in memory by number (es-node uses it in tests); lookups answer the
// first copy a map iteration meets.
type BlobMemCache struct {
	blocks map[uint64]*blockBlobs
	mu     sync.RWMutex
}

func NewBlobMemCache() *BlobMemCache {
	return &BlobMemCache{blocks: map[uint64]*blockBlobs{}}
}

// SetBlockBlobs holds a block's blobs, replacing what the cache held for that block number.
func (c *BlobMemCache) SetBlockBlobs(block *blockBlobs) error {
	c.mu.Lock()
	c.blocks[block.number] = block
	c.mu.Unlock()
	return nil
}

// Blobs is a copy of the blobs held for block number (none for a block not held).
func (c *BlobMemCache) Blobs(number uint64) []blob {
	c.mu.RLock()
	defer c.mu.RUnlock()
	block, held := c.blocks[number]
	if !held {
		return nil
	}
	copied := make([]blob, len(block.blobs))
	for i, b := range block.blobs {
		copied[i] = *b
	}
	return copied
}

// GetKeyValueByIndex is the bytes of KV idx whose hash matches in its first 24 bytes (the
// versioned hash's commitment part, as es-node compares it), or nil.
func (c *BlobMemCache) GetKeyValueByIndex(idx uint64, hash common.Hash) []byte {
	if b := c.first(idx, func(b *blob) bool { return bytes.Equal(b.hash[:24], hash[:24]) }); b != nil {
		return b.data
	}
	return nil
}

// GetSampleData is sample sampleIdx (32 bytes) of KV idx, or nil when the KV is not held.
func (c *BlobMemCache) GetSampleData(idx, sampleIdx uint64) []byte {
	b := c.first(idx, func(b *blob) bool { return b.data != nil })
	if b == nil {
		return nil
	}
	at := sampleIdx * 32
	return b.data[at : at+32]
}

// first is the first cached blob of KV idx that ok accepts, in map order (so, with two blocks
// holding the KV, either: es-node's memory cache leaves that undefined too).
func (c *BlobMemCache) first(idx uint64, ok func(*blob) bool) *blob {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, block := range c.blocks {
		for _, b := range block.blobs {
			if b.kvIndex.Uint64() == idx && ok(b) {
				return b
			}
		}
	}
	return nil
}

func (c *BlobMemCache) Cleanup(finalized uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for number := range c.blocks {
		if number <= finalized {
			delete(c.blocks, number)
		}
	}
}

func (c *BlobMemCache) Close() error { return nil }
