// pora's answer to es-node's encoder (es-node v0.2.10's ethstorage/encoder.Encode): the
// BLOB_POSEIDON mask of one KV, or "not mine to answer", so the block es-node adds at the top of
// Encode is one call and a return (docs/es-node.md, "es-node's encoder through pora").

package esnode

import (
	"math/big"

	porago "github.com/pora-miner/pora/bindings/go"
)

// fieldPrime is the BN254 scalar field's prime r, the modulus of BLOB_POSEIDON's arithmetic.
var fieldPrime, _ = new(big.Int).SetString("30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001", 16)

// nearPrimeSpan: a key whose value mod r lies within this many of r is left to es-node. Its
// 2048 permutations take k+i and k+i+1 for i < 2048, so for such a key an input reaches r.
const nearPrimeSpan = 2048

// Mask is es-node's encoder.Encode(hash, size) when pora answers it: the mask of the raw encode
// key hash (es.CalcEncodeKey's result, as es-node passes it) for a KV of porago.KVSize bytes, in
// a new slice of size bytes, with ok true. The bytes are es-node's (the repository's es-node
// vectors on every kernel: TestEncoderMatchesVectorsOnEveryKernel).
//
// ok is false, and mask nil, whenever es-node's own code should answer instead, so its callers
// behave as they always did:
//   - size is not the KV size pora computes (es-node's Encode takes any multiple of 64; es-node
//     v0.2.10 only asks for the KV size);
//   - the key reduced mod r lies within 2048 of r: es-node v0.2.10's own Encode panics on such a
//     key, where pora would wrap k+i mod r; pora does not answer for it, so es-node keeps its own
//     behaviour there (about one key in 2^243: never met in practice);
//   - pora returns any error: a bad PORA_ENCODE_ARITH, or a build of the package for a platform
//     without pora's library, whose every call returns an error.
//
// It does not panic on any input and is safe to call from many goroutines at once.
func Mask(hash [32]byte, size int) (mask []byte, ok bool) {
	if size != porago.KVSize || nearFieldPrime(hash) {
		return nil, false
	}
	mask = make([]byte, size)
	if err := porago.Mask(hash, mask); err != nil {
		return nil, false
	}
	return mask, true
}

// nearFieldPrime says whether the key, read big-endian and reduced mod r, is within
// nearPrimeSpan of r.
func nearFieldPrime(hash [32]byte) bool {
	k := new(big.Int).SetBytes(hash[:])
	k.Mod(k, fieldPrime)
	return k.Sub(fieldPrime, k).Cmp(big.NewInt(nearPrimeSpan)) <= 0
}
