// Package downloader stands in for es-node's ethstorage/downloader: the BlobCache interface and
// the blob types its caches hold (blobs downloaded from L1, encoded for the miner, not yet final).
package downloader

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
)

type blob struct {
	kvIndex *big.Int
	kvSize  *big.Int
	hash    common.Hash
	data    []byte
	dataId  uint64
}

type blockBlobs struct {
	timestamp uint64
	number    uint64
	blobs     []*blob
}

// BlobCache is the downloader's cache of blobs not yet finalized.
type BlobCache interface {
	SetBlockBlobs(block *blockBlobs) error
	Blobs(number uint64) []blob
	GetKeyValueByIndex(idx uint64, hash common.Hash) []byte
	GetSampleData(idx uint64, sampleIdx uint64) []byte
	Cleanup(finalized uint64)
	Close() error
}
