// es-node stand-in, package miner (ethstorage/miner/miner.go and config.go): miner.Miner around
// its worker (receiver name `miner`, as es-node's methods have it), the DataReader it mines
// through, and the Config fields the worker reads, as es-node v0.2.10's are described in
// docs/es-node.md ("The stand-in"). The calls into the adapter are the
// hook's older form; the hook pora-esnode applies is tested on esnode/hook/testdata/es-node.
package esnode_test

import (
	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"

	"github.com/pora-miner/pora/bindings/go/esnode"
)

// Config is miner.Config's fields the worker reads (config.go).
type Config struct {
	RandomChecks, NonceLimit, Slot, ThreadsPerShard uint64
	Pora                                            bool
}

// DefaultConfig is config.go's defaults for those fields.
var DefaultConfig = Config{RandomChecks: 2, NonceLimit: 1 << 20, Slot: 12, ThreadsPerShard: 4}

// MiningState is worker.go's exported mining state, saved to the database.
type MiningState struct {
	MiningPower  uint64 `json:"mining_power"`
	SamplingTime uint64 `json:"sampling_time"`
}

// DataReader is what the worker reads blobs and samples through (blobs.BlobReader).
type DataReader interface {
	ReadSample(shardIdx, sampleIdx uint64) (common.Hash, error)
}

// Miner is miner.Miner around its worker.
type Miner struct{ worker *worker }

func (miner *Miner) Mining() bool { return miner.worker.isRunning() }

// Close stops the worker and closes it (task loops have returned when close runs).
func (miner *Miner) Close() {
	miner.worker.stop()
	miner.worker.close()
}

func (miner *Miner) UsePora(p *esnode.Miner[common.Hash]) { miner.worker.pora = p }
