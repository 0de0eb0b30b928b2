// Package miner stands in for es-node's ethstorage/miner: its Config, flags, Miner, the worker's
// task split and mineTask loop with its log lines, and the sampling algorithm.
package miner

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
)

// Config is the miner's configuration: the contract's mining parameters and the flags'.
type Config struct {
	// es network chain id
	ChainID *big.Int
	Slot    uint64

	// contract
	RandomChecks uint64
	NonceLimit   uint64
	MinimumDiff  *big.Int

	// cli
	GasPrice        *big.Int
	ThreadsPerShard uint64
	SignerAddr      common.Address

	// for proof submission notifications
	EmailEnabled bool
}

// DefaultConfig is the configuration before the contract and the flags set it.
var DefaultConfig = Config{
	Slot:            12,
	RandomChecks:    2,
	NonceLimit:      1048576,
	MinimumDiff:     big.NewInt(1000000),
	ThreadsPerShard: 4,
}
