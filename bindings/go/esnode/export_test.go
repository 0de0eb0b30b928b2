// Test access to the adapter's per-shard engine, for the external tests (package esnode_test)
// that check when an engine is opened, kept and closed.
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
