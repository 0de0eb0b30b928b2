// es-node stand-in, package node (ethstorage/node): initMiner as es-node v0.2.10 orders it
// (storage manager and blob cache first, then the miner), with the hook that makes pora's
// adapter and hands it to the miner. Lines between "pora hook begin" and "pora hook end" are the
// hook (hook_test.go).
package esnode_test

import (
	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"

	// pora hook begin: node/node.go, imports
	"github.com/pora-miner/pora/bindings/go/esnode"
	// pora hook end
)

// StorageConfig is node.Config.Storage: the data files and the miner they are encoded for.
type StorageConfig struct {
	Filenames []string
	Miner     common.Address
}

// NodeConfig is the part of node.Config initMiner reads.
type NodeConfig struct {
	Storage StorageConfig
	Mining  *Config
}

// EsNode is node.EsNode's fields that initMiner touches.
type EsNode struct {
	storageManager *StorageManager
	blobCache      BlobCache
	miner          *Miner
}

func (n *EsNode) initMiner(cfg *NodeConfig) error {
	n.miner = &Miner{worker: newWorker(*cfg.Mining, n.storageManager, &BlobReader{cr: n.blobCache, sm: n.storageManager})}
	// pora hook begin: node/node.go, initMiner after miner.New
	if cfg.Mining.Pora {
		p, err := esnode.New[common.Hash](esnode.Config{Files: cfg.Storage.Filenames, Miner: cfg.Storage.Miner,
			KvEntriesBits: n.storageManager.KvEntriesBits(), RandomChecks: cfg.Mining.RandomChecks,
			NonceLimit: cfg.Mining.NonceLimit, SlotSec: cfg.Mining.Slot, Running: n.miner.Mining}, n.blobCache)
		if err != nil {
			return err
		}
		n.miner.UsePora(p)
	}
	// pora hook end
	return nil
}
