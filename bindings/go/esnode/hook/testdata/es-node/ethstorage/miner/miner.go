// Stand-in for es-node's ethstorage/miner/miner.go: Miner around its worker (receiver `miner`),
// and the DataReader the worker samples through.

package miner

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/log"
	es "github.com/ethstorage/go-ethstorage/ethstorage"
)

// DataReader is what the worker reads samples through (blobs.BlobReader).
type DataReader interface {
	ReadSample(shardIdx, sampleIdx uint64) (common.Hash, error)
}

// Miner runs the worker.
type Miner struct {
	worker *worker
	lg     log.Logger
}

func New(config *Config, storageMgr *es.StorageManager, dr DataReader, lg log.Logger) *Miner {
	return &Miner{worker: newWorker(*config, storageMgr, dr, lg), lg: lg}
}

func (miner *Miner) Start() {
	miner.worker.start()
}

func (miner *Miner) Stop() {
	miner.worker.stop()
}

func (miner *Miner) Close() {
	miner.Stop()
	miner.lg.Warn("Miner is being closed...")
	miner.worker.close()
}

func (miner *Miner) Mining() bool {
	return miner.worker.isRunning()
}
