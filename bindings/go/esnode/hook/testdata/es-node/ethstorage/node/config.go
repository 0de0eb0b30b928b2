// Package node stands in for es-node's ethstorage/node: the node's configuration and initMiner,
// which builds the miner over the storage manager and the blob cache.
package node

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethstorage/go-ethstorage/ethstorage/miner"
)

// StorageConfig is the data files and the miner they are encoded for.
type StorageConfig struct {
	Filenames []string
	Miner     common.Address
}

// Config is the part of the node's configuration initMiner reads.
type Config struct {
	Storage StorageConfig
	Mining  *miner.Config
}
