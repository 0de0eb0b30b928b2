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

func (c *BlobMemCache) SetBlockBlobs(block *blockBlobs) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocks[block.number] = block
	return nil
}

func (c *BlobMemCache) Blobs(number uint64) []blob {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []blob
	if block := c.blocks[number]; block != nil {
		for _, b := range block.blobs {
			out = append(out, *b)
		}
	}
	return out
}

func (c *BlobMemCache) GetKeyValueByIndex(idx uint64, hash common.Hash) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, block := range c.blocks {
		for _, b := range block.blobs {
			if b.kvIndex.Uint64() == idx && bytes.Equal(b.hash[:24], hash[:24]) {
				return b.data
			}
		}
	}
	return nil
}

func (c *BlobMemCache) GetSampleData(idx, sampleIdx uint64) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, block := range c.blocks {
		for _, b := range block.blobs {
			if b.kvIndex.Uint64() == idx && b.data != nil {
				return b.data[sampleIdx<<5 : sampleIdx<<5+32]
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
