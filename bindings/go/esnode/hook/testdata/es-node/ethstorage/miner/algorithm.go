// Stand-in for es-node's ethstorage/miner/algorithm.go: hashimoto and initHash.

package miner

import (
	"encoding/binary"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

type SampleReader func(uint64, uint64) (common.Hash, error)

// hashimoto reads randomChecks samples: each takes hash0 mod 2^rowBits within the shard, reads
// it, and hashes it into hash0.
func hashimoto(kvEntriesBits, kvSizeBits, sampleSizeBits, shardIdx, randomChecks uint64,
	sampleReader SampleReader, hash0 common.Hash) (common.Hash, []uint64, error) {
	rowBits := kvEntriesBits + kvSizeBits - sampleSizeBits
	var sampleIdxs []uint64
	for i := uint64(0); i < randomChecks; i++ {
		mod := new(big.Int).SetBytes(hash0[:])
		mod.Mod(mod, new(big.Int).Lsh(big.NewInt(1), uint(rowBits)))
		sampleIdx := mod.Uint64() + shardIdx<<rowBits
		sample, err := sampleReader(shardIdx, sampleIdx)
		if err != nil {
			return common.Hash{}, nil, err
		}
		sampleIdxs = append(sampleIdxs, sampleIdx)
		hash0 = crypto.Keccak256Hash(hash0[:], sample[:])
	}
	return hash0, sampleIdxs, nil
}

// initHash is Keccak-256 of the miner (left-padded to 32 bytes), the mix hash and the nonce (32
// bytes, big-endian).
func initHash(miner common.Address, mixedHash common.Hash, nonce uint64) common.Hash {
	var msg [96]byte
	copy(msg[12:32], miner[:])
	copy(msg[32:64], mixedHash[:])
	binary.BigEndian.PutUint64(msg[88:], nonce)
	return crypto.Keccak256Hash(msg[:])
}
