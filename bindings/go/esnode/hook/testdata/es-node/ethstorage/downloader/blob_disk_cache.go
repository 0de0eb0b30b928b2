// Stand-in for es-node's ethstorage/downloader/blob_disk_cache.go: the disk blob cache a node
// uses, with es-node v0.2.10's Cleanup (its kvIndex guard is what apply -cleanup-fix changes).

package downloader

import (
	"bytes"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/log"
)

// BlobDiskCache is the cache a node uses. Its bytes sit in a store by id (a map here, a billy
// database under the data directory in es-node); blockLookup holds ids, and kvIndexLookup maps
// each KV to the copy set most recently, which is all GetSampleData reads.
type BlobDiskCache struct {
	store         map[uint64][]byte
	nextId        uint64
	blockLookup   map[uint64]*blockBlobs
	kvIndexLookup map[uint64]uint64
	mu            sync.RWMutex
	lg            log.Logger
}

func NewBlobDiskCache(lg log.Logger) *BlobDiskCache {
	return &BlobDiskCache{store: map[uint64][]byte{}, blockLookup: map[uint64]*blockBlobs{},
		kvIndexLookup: map[uint64]uint64{}, lg: lg}
}

func (c *BlobDiskCache) SetBlockBlobs(block *blockBlobs) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := &blockBlobs{timestamp: block.timestamp, number: block.number}
	for _, b := range block.blobs {
		if b.data == nil {
			continue
		}
		c.nextId++
		c.store[c.nextId] = append([]byte(nil), b.data...)
		kept.blobs = append(kept.blobs, &blob{kvIndex: b.kvIndex, kvSize: b.kvSize, hash: b.hash,
			dataId: c.nextId})
		c.kvIndexLookup[b.kvIndex.Uint64()] = c.nextId
	}
	c.blockLookup[block.number] = kept
	return nil
}

func (c *BlobDiskCache) Blobs(number uint64) []blob {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []blob
	if block := c.blockLookup[number]; block != nil {
		for _, b := range block.blobs {
			copied := *b
			copied.data = c.store[b.dataId]
			out = append(out, copied)
		}
	}
	return out
}

func (c *BlobDiskCache) GetKeyValueByIndex(idx uint64, hash common.Hash) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, block := range c.blockLookup {
		for _, b := range block.blobs {
			if b.kvIndex.Uint64() == idx && bytes.Equal(b.hash[:24], hash[:24]) {
				return append([]byte(nil), c.store[b.dataId]...)
			}
		}
	}
	return nil
}

func (c *BlobDiskCache) GetSampleData(idx, sampleIdx uint64) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.kvIndexLookup[idx]
	if !ok || c.store[id] == nil {
		return nil
	}
	return append([]byte(nil), c.store[id][sampleIdx<<5:sampleIdx<<5+32]...)
}

// Cleanup drops every block at or below finalized with its stored bytes, and for each of its KVs
// the kvIndexLookup entry, whichever copy that entry points at (es-node v0.2.10 does so).
func (c *BlobDiskCache) Cleanup(finalized uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var done []uint64
	for number := range c.blockLookup {
		if number <= finalized {
			done = append(done, number)
		}
	}
	for _, number := range done {
		for _, blob := range c.blockLookup[number].blobs {
			// The guard pora-esnode's -cleanup-fix narrows (it anchors on this line).
			if blob.kvIndex != nil {
				delete(c.kvIndexLookup, blob.kvIndex.Uint64())
			}
			delete(c.store, blob.dataId)
		}
		delete(c.blockLookup, number)
	}
}

func (c *BlobDiskCache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store = nil
	return nil
}
