// Package encoder stands in for es-node's ethstorage/encoder: Encode is the BLOB_POSEIDON mask of
// size bytes for an encode key. es-node's own mask code is not modelled in this tree: without
// pora's encoder block Encode answers an error saying so.
package encoder

import (
	"errors"

	"github.com/ethereum/go-ethereum/common"
)

var errNotModelled = errors.New("es-node-shaped tree: es-node's own encoder is not modelled")

// Encode is the mask of size bytes for the encode key hash.
func Encode(hash common.Hash, size int) ([]byte, error) {
	if size%64 != 0 {
		return nil, errors.New("size must be a multiple of 64")
	}
	return nil, errNotModelled
}
