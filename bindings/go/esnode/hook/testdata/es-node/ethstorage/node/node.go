// Stand-in for es-node's ethstorage/node/node.go: the node and initMiner, which builds the blob
// reader over the cache and the storage manager, then the miner (es-node v0.2.10's order).

package node

import (
	"context"
	"fmt"

	"github.com/ethereum/go-ethereum/log"
	"github.com/ethstorage/go-ethstorage/ethstorage"
	"github.com/ethstorage/go-ethstorage/ethstorage/blobs"
	"github.com/ethstorage/go-ethstorage/ethstorage/downloader"
	"github.com/ethstorage/go-ethstorage/ethstorage/miner"
)

// es-node's node.go imports fmt for errors of its own; the hook's block in initMiner uses it.
var _ = fmt.Errorf

// EsNode is the node: what initMiner reads and makes.
type EsNode struct {
	lg             log.Logger
	storageManager *ethstorage.StorageManager
	blobCache      downloader.BlobCache
	miner          *miner.Miner
}

// New is a node over a storage manager and a blob cache, with its miner built.
func New(ctx context.Context, cfg *Config, sm *ethstorage.StorageManager,
	cache downloader.BlobCache, lg log.Logger) (*EsNode, error) {
	n := &EsNode{lg: lg, storageManager: sm, blobCache: cache}
	// es-node passes initMiner's error on with no prefix of its own, after logging it.
	if err := n.initMiner(ctx, cfg); err != nil {
		lg.Error("Error initializing the rollup node", "err", err)
		return nil, err
	}
	return n, nil
}

func (n *EsNode) initMiner(ctx context.Context, cfg *Config) error {
	if cfg.Mining == nil {
		// not enabled
		return nil
	}
	br := blobs.NewBlobReader(n.blobCache, n.storageManager, n.lg)
	n.miner = miner.New(cfg.Mining, n.storageManager, br, n.lg)
	n.lg.Info("Initialized miner")
	return nil
}
