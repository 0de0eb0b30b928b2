// es-node stand-in, package node (ethstorage/node/config.go and the storage config): the part of
// node.Config that initMiner reads. It lives apart from esnode_node_test.go because es-node's
// node.go does not import go-ethereum's common (these types do).
package esnode_test

import "github.com/pora-miner/pora/bindings/go/esnode/internal/common"

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
