// Package common gives the tests' es-node stand-in go-ethereum's common.Hash and common.Address
// shapes under their usual names, so the hook the tests compile reads as it does in es-node
// (docs/es-node.md shows it). Nothing outside the tests uses it.
package common

// Hash is go-ethereum's common.Hash: 32 bytes.
type Hash [32]byte

// Address is go-ethereum's common.Address: 20 bytes.
type Address [20]byte
