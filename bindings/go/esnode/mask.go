// pora's answer to es-node's encoder (es-node v0.2.10's ethstorage/encoder.Encode): the
// BLOB_POSEIDON mask of one KV, or "not mine to answer", so the block es-node adds at the top of
// Encode is one call and a return (docs/es-node.md, "es-node's encoder through pora"). It answers
// only once UseEncoder (New, with --miner.pora) turned it on.

package esnode

import (
	"fmt"
	"math/big"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	porago "github.com/pora-miner/pora/bindings/go"
)

// EncoderSwitch is the environment variable that keeps the encoder block off in a node started
// with --miner.pora: "off" leaves every mask to es-node's own code; unset or "on" lets pora answer.
// Any other value is refused when the node starts (UseEncoder).
const EncoderSwitch = "PORA_ENCODE"

// encoderState is the process's encoder block: off (every EncodeMask call falls through to
// es-node's own code) until UseEncoder turns it on.
var encoderState struct {
	check sync.Once
	err   error // a setting pora does not know: every UseEncoder returns it, pora stays off
	off   bool  // PORA_ENCODE=off
	// kernel and supported are the encode kernel this process runs and those the CPU runs.
	kernel    string
	supported []string
	on        atomic.Pointer[encoderLog] // nil: off
	said      sync.Once                  // the one line: the first mask pora answers, or off
}

// encoderLog is the logger the encoder's one line goes through (nil: no line).
type encoderLog struct{ log Logger }

// UseEncoder lets the encoder block answer (EncodeMask): New calls it, so the block answers only
// in a node started with --miner.pora; without it es-node's own code computes every mask, as in
// es-node as released. It checks pora's settings once per process, at the node's start: a value
// of PORA_ENCODE other than on or off, or of PORA_ENCODE_ARITH naming a kernel pora does not know
// or this CPU cannot run, is an error naming the variable, and pora then answers no mask (never an
// empty one). log (es-node's logger; nil: none) gets the encoder's one line, at the first mask
// pora answers: the kernel and the kernels this CPU runs; with PORA_ENCODE=off it gets that line
// at once. Safe from any goroutine; once on, the block stays on for the process.
func UseEncoder(log Logger) error {
	c := &encoderState
	c.check.Do(func() {
		switch v := os.Getenv(EncoderSwitch); v {
		case "off":
			c.off = true
			return
		case "", "on":
		default:
			c.err = fmt.Errorf("esnode: %s=%q: not a value pora knows (on, off)", EncoderSwitch, v)
			return
		}
		if err := porago.Available(); err != nil {
			c.err = fmt.Errorf("esnode: es-node's encoder through pora: %w", err)
			return
		}
		if c.kernel, c.supported, c.err = porago.EncodeKernel(); c.err != nil {
			c.err = fmt.Errorf("esnode: es-node's encoder through pora: %w (unset it, or %s=off)",
				c.err, EncoderSwitch)
		}
	})
	switch {
	case c.err != nil:
		return c.err
	case c.off:
		if log != nil {
			c.said.Do(func() {
				log.Info("Encoder without pora: es-node's own code computes the masks",
					"switch", EncoderSwitch+"=off")
			})
		}
		return nil
	}
	c.on.CompareAndSwap(nil, &encoderLog{log: log})
	return nil
}

// EncodeMask is the call of the encoder block at the top of es-node's encoder.Encode:
//
//	if mask, ok := esnode.EncodeMask(hash, size); ok {
//		return mask, nil
//	}
//
// ok false sends the call to es-node's own code, as it ran before: before UseEncoder (a node
// without --miner.pora, or one not started yet), with PORA_ENCODE=off or a setting UseEncoder
// refused, in a build without pora's library, or for a call Mask leaves to es-node (another size,
// a key near r, an error). ok true comes with the whole mask, never an empty one. Off, it costs
// one atomic load.
func EncodeMask(hash [32]byte, size int) (mask []byte, ok bool) {
	c := &encoderState
	on := c.on.Load()
	if on == nil {
		return nil, false
	}
	if mask, ok = Mask(hash, size); ok && on.log != nil {
		c.said.Do(func() {
			on.log.Info("Encoder computes masks with pora", "kernel", c.kernel,
				"cpuRuns", strings.Join(c.supported, ","), "switch", EncoderSwitch+"=off")
		})
	}
	return mask, ok
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
