// Package common stands in for go-ethereum's common package in the es-node-shaped tree: the two
// types es-node's miner and caches use, with go-ethereum's underlying types.
package common

// Hash is 32 bytes (a Keccak-256 hash, a blob's versioned hash).
type Hash [32]byte

// Bytes is the hash as a slice.
func (h Hash) Bytes() []byte { return h[:] }

// Address is a 20-byte account address.
type Address [20]byte
