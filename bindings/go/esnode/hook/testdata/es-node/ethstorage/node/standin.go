// Not es-node's: an accessor the tree's tests use to reach the miner initMiner built.
package node

import "github.com/ethstorage/go-ethstorage/ethstorage/miner"

// Miner is the node's miner (nil when mining is off).
func (n *EsNode) Miner() *miner.Miner { return n.miner }
