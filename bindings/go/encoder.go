// The encoder's Go side, shared by every build: the Encoder handle and its pure-Go methods
// (padding a blob, masking many KVs on goroutines) and the FillEmpty record. They need no
// library of their own, only the package's Mask and EncodeKey (encode.go with libpora, the
// erroring stubs of unsupported.go without), so they are written once here rather than copied
// into the no-library stub.

package porago

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
)

// Encoder is the encoder with its kernel checked once: NewEncoder fails on a bad
// PORA_ENCODE_ARITH, so its methods fail only on a wrong buffer length (which leaves the
// buffers as they were). Safe for concurrent use.
type Encoder struct {
	// Kernel is the multiply kernel every mask of this process runs on.
	Kernel string
}

// NewEncoder checks the encoder's kernel (EncodeKernel) and returns an Encoder.
func NewEncoder() (*Encoder, error) {
	kernel, _, err := EncodeKernel()
	if err != nil {
		return nil, err
	}
	return &Encoder{Kernel: kernel}, nil
}

// Mask is the package's Mask: the mask of key into out (exactly KVSize bytes).
func (e *Encoder) Mask(key [32]byte, out []byte) error { return Mask(key, out) }

// EncodeBlob is es-node's EncodeChunk(KVSize, blob, 3, key) into a buffer the caller owns: out
// (exactly KVSize bytes) becomes the stored bytes of blob, which may be shorter than a KV and is
// zero-padded to one as es-node pads it (its trailing KVSize-len(blob) bytes are the mask's). A
// blob longer than a KV or an out of another length is ErrInvalidArgument and out is left as it
// was. blob and out must not overlap.
func (e *Encoder) EncodeBlob(key [32]byte, blob, out []byte) error {
	if len(blob) > KVSize {
		return &Error{Status: StatusInvalidArgument, Op: "encode blob", Message: fmt.Sprintf("blob: %d bytes, at most %d", len(blob), KVSize)}
	}
	if err := Mask(key, out); err != nil {
		return err
	}
	for i, b := range blob {
		out[i] ^= b
	}
	return nil
}

// FillReport is what FillEmpty did: `pora create --fill empty --json`'s record plus the request.
type FillReport struct {
	File    string `json:"file"`
	KVStart uint64 `json:"kvStart"`
	KVEnd   uint64 `json:"kvEnd"`
	// KVs is how many KVs were written; Skipped those of the range left alone (they already
	// held their mask, or a blob). Refilled counts KVs marked filled that did not hold their
	// mask and were written again (part of KVs).
	KVs      uint64 `json:"kvs"`
	Skipped  uint64 `json:"skipped"`
	Refilled uint64 `json:"refilled"`
	// Kernel is the encoder's multiply kernel every mask ran on (EncodeKernel).
	Kernel  string  `json:"kernel"`
	Seconds float64 `json:"seconds"`
	Threads int     `json:"threads"`
	// MsPerKVPerCore is wall time per KV times threads.
	MsPerKVPerCore float64 `json:"msPerKvPerCore"`
	// CPUSeconds and CPUMsPerKV are the process's CPU time, where the OS reports it.
	CPUSeconds *float64 `json:"cpuSeconds"`
	CPUMsPerKV *float64 `json:"cpuMsPerKv"`
	// Raw is the record as pora produced it.
	Raw json.RawMessage `json:"-"`
}

// MaskKVs computes the empty masks of the KVs kvIdxs (global indices) of miner on threads
// goroutines (0 = runtime.NumCPU()) and hands each to write, one call at a time, in the order
// of kvIdxs: for a caller that writes its data file itself, under its own lock (es-node's
// DataFile keeps its file private). mask is the encoder's buffer, valid only during the call:
// write copies or writes it out. The first error of write stops the work and is returned; no
// later KV is handed over.
func (e *Encoder) MaskKVs(miner [20]byte, kvIdxs []uint64, threads int, write func(kvIdx uint64, mask []byte) error) error {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	// Batches of `threads` masks computed at once, then written in order: no mask is computed
	// that a failed write would leave unused beyond one batch, and no goroutine outlives the call.
	masks := make([][]byte, threads)
	errs := make([]error, threads)
	for i := range masks {
		masks[i] = make([]byte, KVSize)
	}
	for start := 0; start < len(kvIdxs); start += threads {
		batch := kvIdxs[start:]
		if len(batch) > threads {
			batch = batch[:threads]
		}
		var wg sync.WaitGroup
		for i, kv := range batch {
			wg.Add(1)
			go func(i int, kv uint64) {
				defer wg.Done()
				errs[i] = Mask(EncodeKey([32]byte{}, kv, miner), masks[i])
			}(i, kv)
		}
		wg.Wait()
		for i, kv := range batch {
			if errs[i] != nil {
				return errs[i]
			}
			if err := write(kv, masks[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
