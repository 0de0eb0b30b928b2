// pora's answer to es-node's encoder (es-node v0.2.10's ethstorage/encoder.Encode): the
// BLOB_POSEIDON mask of one KV, or "not mine to answer", so the block es-node adds at the top of
// Encode is one call and a return (docs/es-node.md, "es-node's encoder through pora").

package esnode

import (
	"fmt"
	"io"
	"math/big"
	"os"
	"strings"
	"sync"

	porago "github.com/pora-miner/pora/bindings/go"
)

// EncoderSwitch is the environment variable that turns the encoder block off: "off" sends every
// mask to es-node's own code; unset or "on" leaves it on. Any other value is an error.
const EncoderSwitch = "PORA_ENCODE"

// encoderChoice is the process's one decision about the encoder block, made on its first call.
var encoderChoice struct {
	once     sync.Once
	on       bool  // pora answers
	err      error // a switch or kernel name pora does not know: every call returns it
	announce io.Writer
}

// EncodeMask is the call of the encoder block at the top of es-node's encoder.Encode:
//
//	if mask, answered, err := esnode.EncodeMask(hash, size); answered {
//		return mask, err
//	}
//
// answered false sends the call to es-node's own code, as it ran before: PORA_ENCODE=off, a
// build without pora's library, or a call Mask leaves to es-node (another size, a key near r).
// A value pora does not know, of PORA_ENCODE or of PORA_ENCODE_ARITH (a kernel name it does not
// know, or one this CPU cannot run), is answered with an error naming the variable, on every
// call: never a silent fall back to the 8x slower encoder. On its first call it writes one line to
// standard error saying which it does (the kernel, with the kernels this CPU runs).
func EncodeMask(hash [32]byte, size int) (mask []byte, answered bool, err error) {
	c := &encoderChoice
	c.once.Do(func() {
		out := c.announce
		if out == nil {
			out = os.Stderr
		}
		switch v := os.Getenv(EncoderSwitch); v {
		case "off":
			fmt.Fprintf(out, "pora: es-node's encoder: %s=off: es-node's own code computes the masks\n", EncoderSwitch)
			return
		case "", "on":
		default:
			c.err = fmt.Errorf("esnode: %s=%q: not a value pora knows (on, off)", EncoderSwitch, v)
			fmt.Fprintf(out, "pora: es-node's encoder: %v\n", c.err)
			return
		}
		if err := porago.Available(); err != nil {
			fmt.Fprintf(out, "pora: es-node's encoder: es-node's own code computes the masks: %v\n", err)
			return
		}
		kernel, supported, err := porago.EncodeKernel()
		if err != nil {
			c.err = fmt.Errorf("esnode: es-node's encoder through pora: %w (unset it, or %s=off)", err, EncoderSwitch)
			fmt.Fprintf(out, "pora: %v\n", c.err)
			return
		}
		c.on = true
		fmt.Fprintf(out, "pora: es-node's encoder computes masks with pora's %s kernel (this CPU runs: %s); "+
			"%s=off turns it off\n", kernel, strings.Join(supported, ", "), EncoderSwitch)
	})
	if c.err != nil {
		return nil, true, c.err
	}
	if !c.on {
		return nil, false, nil
	}
	mask, ok := Mask(hash, size)
	return mask, ok, nil
}

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
