// The cache contract: before each task the adapter asks es-node's blob cache which KVs it holds
// (index, commit and block number: cheap) and fetches the bytes itself, by index and commit,
// only for a KV that is new or whose commit changed; a KV no longer listed is dropped. So es-node
// keeps no second copy of its cache, and an unchanged KV of a disk-backed cache is never read.
package esnode

import "fmt"

// Cache is es-node's blob cache (package downloader's BlobCache, memory or disk) as the adapter
// reads it. GetKeyValueByIndex is the method es-node's caches already have; VisitKVs is the one
// es-node adds: it calls visit for each blob it holds (the KV index, the blob's hash as the
// cache carries it, the number of the block that brought it), under its read lock. KVs of other
// shards than the task's are skipped, so blobs of shards the node does not hold may be listed.
type Cache[H ~[32]byte] interface {
	GetKeyValueByIndex(index uint64, hash H) []byte
	VisitKVs(visit func(kvIdx uint64, hash H, blockNumber uint64))
}

// cacheSync is one shard's engine's view of the cache: what was put, and what the current
// listing says.
type cacheSync[H ~[32]byte] struct {
	held map[uint64]*heldKV[H]
	// listing numbers the syncs: an entry listed by the current one carries its number.
	listing uint64
	// visit is the listing's callback, made once (a closure per task would allocate).
	visit               func(kvIdx uint64, hash H, blockNumber uint64)
	firstKV, kvsInShard uint64
	// Fetched counts the KVs read through GetKeyValueByIndex (tests and benchmarks read it).
	fetched uint64
}

// heldKV is one KV of the shard the cache listed or the engine holds.
type heldKV[H ~[32]byte] struct {
	put    H // the commit the engine holds the bytes of
	inUse  bool
	listed H      // the commit the current listing names (newest block wins)
	block  uint64 // the block that brought listed
	seen   uint64 // the listing that last named the KV
}

// run brings the engine's cache in step with the listing: newest block wins for a KV cached
// twice (later in the listing wins within one block, as es-node's lookup keeps the last set);
// bytes are fetched for new or changed KVs only; KVs gone from the cache are dropped.
func (c *cacheSync[H]) run(cache Cache[H], engine kvSink, shard, kvEntriesBits uint64) error {
	if c.held == nil {
		c.held = map[uint64]*heldKV[H]{}
		c.firstKV, c.kvsInShard = shard<<kvEntriesBits, 1<<kvEntriesBits
		c.visit = func(kvIdx uint64, hash H, blockNumber uint64) {
			if kvIdx-c.firstKV >= c.kvsInShard {
				return // another shard's KV
			}
			e := c.held[kvIdx]
			if e == nil {
				e = &heldKV[H]{}
				c.held[kvIdx] = e
			} else if e.seen == c.listing && blockNumber < e.block {
				return // an older block's copy of a KV a newer block holds
			}
			e.listed, e.block, e.seen = hash, blockNumber, c.listing
		}
	}
	c.listing++
	cache.VisitKVs(c.visit)
	for kvIdx, e := range c.held {
		switch {
		case e.seen != c.listing: // left the cache (finalized into the file)
			if e.inUse {
				if _, err := engine.DropKV(kvIdx); err != nil {
					return err
				}
			}
			delete(c.held, kvIdx)
		case !e.inUse || e.put != e.listed:
			c.fetched++
			data := cache.GetKeyValueByIndex(kvIdx, e.listed)
			if data == nil { // gone between the listing and the fetch: the file holds it now
				if e.inUse {
					if _, err := engine.DropKV(kvIdx); err != nil {
						return err
					}
				}
				delete(c.held, kvIdx)
				continue
			}
			if _, err := engine.PutKV(kvIdx, [32]byte(e.listed), data); err != nil {
				return fmt.Errorf("esnode: blob cache KV %d: %w", kvIdx, err)
			}
			e.put, e.inUse = e.listed, true
		}
	}
	return nil
}

// kvSink is the part of porago.Engine the sync writes to.
type kvSink interface {
	PutKV(kvIdx uint64, commit [32]byte, data []byte) (bool, error)
	DropKV(kvIdx uint64) (bool, error)
}
