//go:build !unix

// Without getrusage, BenchmarkEncoderMask reports wall time only.
package esnode_test

import "time"

// processCPU is -1: no CPU time here.
func processCPU() time.Duration { return -1 }
