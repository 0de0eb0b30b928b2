// The speed of es-node's Encode through the hook (bench/encoder-kernels.sh runs it once per
// kernel, PORA_ENCODE_ARITH set, rounds interleaved; docs/BENCHMARKS.md has the figures).
package esnode_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	porago "github.com/pora-miner/pora/bindings/go"
)

// BenchmarkEncoderMask: b.N masks of distinct keys through the hooked Encode on 1 and 2
// goroutines. ms/KV/core is wall time x goroutines / masks (what a core costs while that many
// goroutines run, on a machine with at least that many idle cores); cpu-ms/KV is the process's
// CPU time per mask where the OS reports it.
func BenchmarkEncoderMask(b *testing.B) {
	kernel, _, err := porago.EncodeKernel()
	if err != nil {
		b.Skipf("SKIP: %v", err)
	}
	for _, goroutines := range []int{1, 2} {
		b.Run(fmt.Sprintf("kernel=%s/goroutines=%d", kernel, goroutines), func(b *testing.B) {
			var next atomic.Int64
			var failed atomic.Value
			var wg sync.WaitGroup
			cpuStart := processCPU()
			start := time.Now()
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var key Hash
					key[0] = 0x2a
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						binary.BigEndian.PutUint64(key[24:], uint64(i))
						if mask, err := Encode(key, porago.KVSize); err != nil || len(mask) != porago.KVSize {
							failed.Store(fmt.Sprintf("key %x: %d bytes, %v", key, len(mask), err))
							return
						}
					}
				}()
			}
			wg.Wait()
			wall, cpu := time.Since(start), processCPU()-cpuStart
			if msg := failed.Load(); msg != nil {
				b.Fatal(msg)
			}
			b.ReportMetric(float64(wall.Microseconds())/1e3*float64(goroutines)/float64(b.N), "ms/KV/core")
			if cpuStart >= 0 {
				b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/KV")
			}
		})
	}
}
