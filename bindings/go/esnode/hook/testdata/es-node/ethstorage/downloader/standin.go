// Not es-node's: es-node's downloader builds blocks of blobs from L1 events. The tree's tests
// build them here, the only way from outside the package to its unexported blob types.
package downloader

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
)

// NewBlock is an empty block of blobs at number.
func NewBlock(number uint64) *blockBlobs { return &blockBlobs{number: number} }

// AddBlob adds a blob of KV kvIdx (encoded bytes, nil for a shard not held) to the block.
func AddBlob(b *blockBlobs, kvIdx uint64, hash common.Hash, data []byte) {
	b.blobs = append(b.blobs, &blob{kvIndex: new(big.Int).SetUint64(kvIdx),
		kvSize: big.NewInt(int64(len(data))), hash: hash, data: data})
}
