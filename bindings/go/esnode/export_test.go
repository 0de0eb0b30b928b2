// Test access to the adapter's per-shard engine and its cache counters, for the external tests
// (package esnode_test) that check pora's hashing against the es-node stand-in's.
package esnode

import porago "github.com/pora-miner/pora/bindings/go"

// EngineOf is the shard's engine, nil before its first task.
func EngineOf[H ~[32]byte](m *Miner[H], shard uint64) *porago.Engine {
	m.mu.Lock()
	defer m.mu.Unlock()
	if se := m.shards[shard]; se != nil {
		return se.engine
	}
	return nil
}

// FetchedOf counts the KVs the shard's cache sync read through GetKeyValueByIndex.
func FetchedOf[H ~[32]byte](m *Miner[H], shard uint64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if se := m.shards[shard]; se != nil {
		se.mu.Lock()
		defer se.mu.Unlock()
		return se.sync.fetched
	}
	return 0
}

// HeldCommitOf is the commit of the copy of kv the shard's engine was given by the cache sync
// (false when the sync holds no copy of kv).
func HeldCommitOf[H ~[32]byte](m *Miner[H], shard, kv uint64) (H, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if se := m.shards[shard]; se != nil {
		se.mu.Lock()
		defer se.mu.Unlock()
		if e := se.sync.held[kv]; e != nil && e.inUse {
			return e.put, true
		}
	}
	var none H
	return none, false
}
