// es-node stand-in, package node (ethstorage/node/node.go): initMiner as es-node v0.2.10 orders
// it (storage manager and blob cache first, then the miner), with the hook that makes pora's
// adapter and hands it to the miner. es-node's node.go does not import go-ethereum's common, so
// this file imports it only inside the hook (the adapter's hash type, common.Hash, is named
// there: Go does not infer it from the blob cache's interface type).
// The calls into the adapter are the
// hook's older form; the hook pora-esnode applies is tested on esnode/hook/testdata/es-node.
package esnode_test

import (
	"github.com/pora-miner/pora/bindings/go/esnode"
	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"
)

// EsNode is node.EsNode's fields that initMiner touches.
type EsNode struct {
	storageManager *StorageManager
	blobCache      BlobCache
	miner          *Miner
}

func (n *EsNode) initMiner(cfg *NodeConfig) error {
	n.miner = &Miner{worker: newWorker(*cfg.Mining, n.storageManager, &BlobReader{cr: n.blobCache, sm: n.storageManager})}
	if cfg.Mining.Pora {
		p, err := esnode.New[common.Hash](esnode.Config{Files: cfg.Storage.Filenames, Miner: cfg.Storage.Miner,
			KvEntriesBits: n.storageManager.KvEntriesBits(), RandomChecks: cfg.Mining.RandomChecks,
			NonceLimit: cfg.Mining.NonceLimit, SlotSec: cfg.Mining.Slot, Running: n.miner.Mining}, n.blobCache)
		if err != nil {
			return err
		}
		n.miner.UsePora(p)
	}
	return nil
}
