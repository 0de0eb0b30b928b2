// es-node stand-in, package encoder (ethstorage/encoder/encoder.go) and the chunk coding of
// ethstorage/data_shard.go that calls it, as es-node v0.2.10 has them from docs/es-node.md's
// facts (no es-node code), with the encoder block's call in its older form (esnode.Mask). The block
// as pora-esnode applies it (esnode.EncodeMask) is in esnode/hook/blocks.go and is tested on the
// es-node-shaped tree (esnode/hook/testdata/es-node).
//
// es-node's own mask code, which runs when the hook does not answer, is stood in for by
// esNodeOwnEncode: a slow reference that does not share this process's library or kernel.
package esnode_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"

	"github.com/pora-miner/pora/bindings/go/esnode"
)

// Encode is es-node's encoder.Encode: the mask of size bytes for the raw encode key hash.
func Encode(hash Hash, size int) ([]byte, error) {
	if mask, ok := esnode.Mask(hash, size); ok {
		return mask, nil
	}
	return esNodeOwnEncode(hash, size)
}

// ownEncodeCalls counts the calls that reached es-node's own code (the hook did not answer).
var ownEncodeCalls atomic.Int64

// errNoOwnEncoder: the stand-in of es-node's own code needs a pora binary (PORA_BINARY).
var errNoOwnEncoder = errors.New("es-node stand-in: es-node's own encoder runs `pora mask`; PORA_BINARY names no pora binary")

// esNodeOwnEncode stands in for es-node's own mask code after the hook. For a KV (128 KiB) it is
// the mask computed by pora's portable kernel in another process (`$PORA_BINARY mask --key K
// --out F` with PORA_ENCODE_ARITH=portable), so its bytes do not depend on this process's
// library, kernel or PORA_ENCODE_ARITH. es-node's bytes for other sizes are not modelled here:
// any other size is an error naming it.
func esNodeOwnEncode(hash Hash, size int) ([]byte, error) {
	ownEncodeCalls.Add(1)
	if size != 1<<17 {
		return nil, fmt.Errorf("es-node stand-in: es-node's own mask of %d bytes is not modelled (only a 131072-byte KV)", size)
	}
	bin := os.Getenv("PORA_BINARY")
	if bin == "" {
		return nil, errNoOwnEncoder
	}
	dir, err := os.MkdirTemp("", "esnode-own-encode")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "mask")
	cmd := exec.Command(bin, "mask", "--key", "0x"+hex.EncodeToString(hash[:]), "--out", out)
	// The last value of a repeated variable wins: the portable kernel, whatever this process has.
	cmd.Env = append(os.Environ(), "PORA_ENCODE_ARITH=portable")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("es-node stand-in: %s mask: %v\n%s", bin, err, msg)
	}
	return os.ReadFile(out)
}

// encodeChunk is data_shard.go's chunk encoding for BLOB_POSEIDON: data, zero-padded to
// chunkSize, XOR the mask of key. es-node v0.2.10 drops Encode's error at this call; the
// stand-in returns it so a test sees it.
func encodeChunk(chunkSize uint64, data []byte, key Hash) ([]byte, error) {
	if uint64(len(data)) > chunkSize {
		return nil, fmt.Errorf("es-node stand-in: %d bytes do not fit a %d-byte chunk", len(data), chunkSize)
	}
	mask, err := Encode(key, int(chunkSize))
	if err != nil {
		return nil, err
	}
	for i, b := range data {
		mask[i] ^= b
	}
	return mask, nil
}

// decodeChunk is data_shard.go's decoding: the same XOR, over the stored bytes given (a prefix
// of the chunk decodes to the blob's prefix).
func decodeChunk(chunkSize uint64, stored []byte, key Hash) ([]byte, error) {
	decoded, err := encodeChunk(chunkSize, stored, key)
	if err != nil {
		return nil, err
	}
	return decoded[:len(stored)], nil
}
