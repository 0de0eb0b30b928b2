// es-node stand-in, package downloader (ethstorage/downloader): the blob caches as es-node
// v0.2.10's are described in docs/es-node.md, written here from that description (no es-node
// code). BlobMemCache keys blocks by number and answers lookups in map order;
// BlobDiskCache keeps the bytes in a store whose reads the tests count, a KV lookup to its most
// recent copy, and a Cleanup by finalized block. The calls into the adapter are the
// hook's older form; the hook pora-esnode applies is tested on esnode/hook/testdata/es-node.
package esnode_test

import (
	"bytes"
	"math/big"
	"sync"
	"sync/atomic"

	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"
)

// hashSizeInContract is es.HashSizeInContract: lookups compare the hash's first 24 bytes.
const hashSizeInContract = 24

type blob struct {
	kvIndex, kvSize *big.Int
	hash            common.Hash
	data            []byte
	dataId          uint64
}

type blockBlobs struct {
	timestamp, number uint64
	blobs             []*blob
}

// BlobCache is downloader's cache interface.
type BlobCache interface {
	SetBlockBlobs(block *blockBlobs) error
	Blobs(number uint64) []blob
	GetKeyValueByIndex(idx uint64, hash common.Hash) []byte
	GetSampleData(idx uint64, sampleIdx uint64) []byte
	Cleanup(finalized uint64)
	Close() error
	VisitKVs(visit func(kvIdx uint64, hash common.Hash, blockNumber uint64))
}

// BlobMemCache is the memory cache (es-node v0.2.10 uses it in tests only).
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
	if b := c.blocks[number]; b != nil {
		for _, bl := range b.blobs {
			out = append(out, *bl)
		}
	}
	return out
}

// GetKeyValueByIndex returns the first copy a map iteration meets with the KV index and hash.
func (c *BlobMemCache) GetKeyValueByIndex(idx uint64, hash common.Hash) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, b := range c.blocks {
		for _, bl := range b.blobs {
			if bl.kvIndex.Uint64() == idx && bytes.Equal(bl.hash[:hashSizeInContract], hash[:hashSizeInContract]) {
				return bl.data
			}
		}
	}
	return nil
}

// GetSampleData matches the KV index only and returns a sub-slice of whichever copy a map
// iteration meets first.
func (c *BlobMemCache) GetSampleData(idx, sampleIdx uint64) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, b := range c.blocks {
		for _, bl := range b.blobs {
			if bl.kvIndex.Uint64() == idx && bl.data != nil {
				return bl.data[sampleIdx<<5 : sampleIdx<<5+32]
			}
		}
	}
	return nil
}

// Cleanup drops whole blocks at or below finalized.
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

func (c *BlobMemCache) VisitKVs(visit func(kvIdx uint64, hash common.Hash, blockNumber uint64)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for number, block := range c.blocks {
		for _, blob := range block.blobs { // a blob of a shard not held has no data: pora skips other shards' KVs
			visit(blob.kvIndex.Uint64(), blob.hash, number)
		}
	}
}

// countingStore stands in for the billy database under <datadir>/cached_blobs: items by id,
// every read counted (bytes and reads by id) so a test sees exactly what was read.
type countingStore struct {
	mu        sync.Mutex
	items     map[uint64][]byte
	next      uint64
	reads     int64
	readBytes int64
	readsByID map[uint64]int
}

func newCountingStore() *countingStore {
	return &countingStore{items: map[uint64][]byte{}, readsByID: map[uint64]int{}}
}

func (s *countingStore) Put(data []byte) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.items[s.next] = append([]byte(nil), data...)
	return s.next
}

// Get returns a copy of the item, as a read from disk does.
func (s *countingStore) Get(id uint64) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	item, ok := s.items[id]
	if !ok {
		return nil
	}
	atomic.AddInt64(&s.reads, 1)
	atomic.AddInt64(&s.readBytes, int64(len(item)))
	s.readsByID[id]++
	return append([]byte(nil), item...)
}

func (s *countingStore) Delete(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, id)
}

// BlobDiskCache is the cache a real node uses: bytes in the store, blockLookup holding ids (blobs
// without data skipped), kvIndexLookup mapping each KV to its most recently set copy.
type BlobDiskCache struct {
	store         *countingStore
	blockLookup   map[uint64]*blockBlobs
	kvIndexLookup map[uint64]uint64
	mu            sync.RWMutex
}

func NewBlobDiskCache() *BlobDiskCache {
	return &BlobDiskCache{store: newCountingStore(), blockLookup: map[uint64]*blockBlobs{}, kvIndexLookup: map[uint64]uint64{}}
}

func (c *BlobDiskCache) SetBlockBlobs(block *blockBlobs) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := &blockBlobs{timestamp: block.timestamp, number: block.number}
	for _, bl := range block.blobs {
		if bl.data == nil {
			continue
		}
		id := c.store.Put(bl.data)
		kept.blobs = append(kept.blobs, &blob{kvIndex: bl.kvIndex, kvSize: bl.kvSize, hash: bl.hash, dataId: id})
		c.kvIndexLookup[bl.kvIndex.Uint64()] = id
	}
	c.blockLookup[block.number] = kept
	return nil
}

func (c *BlobDiskCache) Blobs(number uint64) []blob {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []blob
	if b := c.blockLookup[number]; b != nil {
		for _, bl := range b.blobs {
			cp := *bl
			cp.data = c.store.Get(bl.dataId)
			out = append(out, cp)
		}
	}
	return out
}

// GetKeyValueByIndex scans blockLookup by KV index and 24-byte hash and reads that copy.
func (c *BlobDiskCache) GetKeyValueByIndex(idx uint64, hash common.Hash) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, b := range c.blockLookup {
		for _, bl := range b.blobs {
			if bl.kvIndex.Uint64() == idx && bytes.Equal(bl.hash[:hashSizeInContract], hash[:hashSizeInContract]) {
				return c.store.Get(bl.dataId)
			}
		}
	}
	return nil
}

// GetSampleData reads the KV's most recently set copy through kvIndexLookup.
func (c *BlobDiskCache) GetSampleData(idx, sampleIdx uint64) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.kvIndexLookup[idx]
	if !ok {
		return nil
	}
	data := c.store.Get(id)
	if data == nil {
		return nil
	}
	return data[sampleIdx<<5 : sampleIdx<<5+32]
}

// Cleanup deletes each block at or below finalized, its store entries and its KVs' lookups. In
// es-node v0.2.10 the lookup is deleted under the existing `if blob.kvIndex != nil` guard even when
// it points at a newer block's copy; the hook adds the condition that it points at this copy.
func (c *BlobDiskCache) Cleanup(finalized uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for number, block := range c.blockLookup {
		if number <= finalized {
			for _, blob := range block.blobs {
				if blob.kvIndex != nil && c.kvIndexLookup[blob.kvIndex.Uint64()] == blob.dataId {
					delete(c.kvIndexLookup, blob.kvIndex.Uint64())
				}
				c.store.Delete(blob.dataId)
			}
			delete(c.blockLookup, number)
		}
	}
}

func (c *BlobDiskCache) Close() error { return nil }

func (c *BlobDiskCache) VisitKVs(visit func(kvIdx uint64, hash common.Hash, blockNumber uint64)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for number, block := range c.blockLookup {
		for _, blob := range block.blobs {
			if blob.kvIndex != nil && c.kvIndexLookup[blob.kvIndex.Uint64()] == blob.dataId { // the copy GetSampleData reads
				visit(blob.kvIndex.Uint64(), blob.hash, number)
			}
		}
	}
}
