// Command es-node stands in for es-node's cmd/es-node: a binary that links the node, its miner and
// (once the hook is applied) pora, so the size of es-node's executable with and without pora can
// be measured on this tree (integrations/es-node/windows-size.sh). It reads the miner's flags and
// says what it would mine with; it does not run a node.
package main

import (
	"fmt"
	"os"

	"github.com/ethstorage/go-ethstorage/ethstorage/miner"
	"github.com/ethstorage/go-ethstorage/ethstorage/node"
	"github.com/urfave/cli"
)

// newNode keeps the node (and what initMiner builds) in the binary, as es-node's start links it.
var newNode = node.New

func main() {
	ctx, err := cli.NewContext(miner.CLIFlags(), os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "es-node:", err)
		os.Exit(2)
	}
	cfg, err := miner.ReadCLIConfig(ctx).ToMinerConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "es-node:", err)
		os.Exit(2)
	}
	fmt.Printf("es-node stand-in: %d threads per shard (node.New linked: %t)\n",
		cfg.ThreadsPerShard, newNode != nil)
}
