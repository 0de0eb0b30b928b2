// es-node stand-in, package miner (ethstorage/miner/miner.go and config.go): miner.Miner around
// its worker and the Config fields the worker reads, as docs/spec/es-node.md describes es-node
// v0.2.10's. Lines between "pora hook begin" and "pora hook end" are the hook (hook_test.go).
package esnode_test

import (
	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"

	// pora hook begin: miner/miner.go, imports
	"github.com/pora-miner/pora/bindings/go/esnode"
	// pora hook end
)

// Config is miner.Config's fields the worker reads.
type Config struct {
	RandomChecks, NonceLimit, Slot, ThreadsPerShard uint64
	// pora hook begin: miner/config.go, Config (set from a --miner.pora flag)
	Pora bool
	// pora hook end
}

type MiningState struct {
	MiningPower  uint64 `json:"mining_power"`
	SamplingTime uint64 `json:"sampling_time"`
}

// Miner is miner.Miner around its worker.
type Miner struct{ worker *worker }

func (m *Miner) Mining() bool { return m.worker.isRunning() }

// Close stops the worker and closes it (task loops have returned when close runs).
func (m *Miner) Close() {
	m.worker.stop()
	m.worker.close()
}

// pora hook begin: miner/miner.go, a new method
func (m *Miner) UsePora(p *esnode.Miner[common.Hash]) { m.worker.pora = p }

// pora hook end
