// Engine: pora as the mining engine inside es-node's miner. es-node's worker hands each shard's
// task (its whole nonce range, the randao, requiredDiff and the slot deadline) to MineTask and
// keeps everything after a found nonce (getMiningData, the prover, resultMap, notify) as it is.
package pora

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// Task is one shard's mining task as es-node's worker holds it (taskItem): es-node's thread
// split is pora's business, so one task covers the shard's whole nonce range.
type Task struct {
	// MixHash is the L1 block's randao mix digest (32 bytes).
	MixHash []byte
	// RequiredDiff is the threshold hash1 must not exceed (es-node's requiredDiff).
	RequiredDiff *big.Int
	// NonceStart..NonceEnd (end exclusive): 0..NonceLimit for es-node.
	NonceStart, NonceEnd uint64
	// NonceLimit is what MiningPowerBps is measured against (0 = NonceEnd - NonceStart).
	NonceLimit uint64
	// Deadline is the slot's end: es-node's startTime + Slot.
	Deadline time.Time
	// BlockNumber is written into the record's slot field.
	BlockNumber uint64
}

// TaskResult is what es-node's mineTask needs back: the first valid nonce with its sample
// indices (everything after it is es-node's), and its miningStates from exact counts.
type TaskResult struct {
	Found bool
	Nonce uint64
	// SampleIdxs and EncodedSamples are the proof's samples, as es-node's computeHash and
	// ReadSample give them (cache first, then the file).
	SampleIdxs     []uint64
	EncodedSamples []string
	NoncesTried    uint64
	// MiningPowerBps is es-node's MiningState.MiningPower: noncesTried * 10000 / NonceLimit,
	// counted rather than extrapolated from one thread.
	MiningPowerBps uint64
	// SamplingTimeMs is es-node's MiningState.SamplingTime.
	SamplingTimeMs uint64
	// Stopped is set when running() turned false before the slot ended (the miner stopped).
	Stopped bool
	// Record is pora's full record of the slot for this shard.
	Record ShardSlot
}

// CachedKV is one blob of es-node's blob cache: downloaded, encoded with the miner's key, not
// yet finalized into the data file.
type CachedKV struct {
	KvIdx uint64
	// Data is the KV's encoded bytes (maxKvSize).
	Data []byte
}

// Engine mines one shard for es-node: one per shard, so the shards' tasks run concurrently as
// es-node runs them. Safe for concurrent use; one task at a time per engine.
type Engine struct {
	shards  *Shards
	overlay *Overlay
	mu      sync.Mutex
	// digests of the cached KVs put into the overlay, so an unchanged blob is not copied again.
	digests map[uint64][32]byte
}

// stopPoll is how often MineTask looks at es-node's isRunning: a stopped miner ends the slot
// within this plus pora's cancel latency (~50 ms), inside es-node's 100 ms expectation.
const stopPoll = 10 * time.Millisecond

// OpenEngine opens one shard's files read-only for es-node. A failed sample read ends the task
// with an error, as es-node's mineTask fails on a ReadSample error (opts.OnIOError "" means
// "stop" here, not pora's usual retry).
func OpenEngine(files []string, opts Options) (*Engine, error) {
	if opts.OnIOError == "" {
		opts.OnIOError = "stop"
	}
	shards, err := Open([][]string{files}, opts)
	if err != nil {
		return nil, err
	}
	overlay, err := NewOverlay()
	if err != nil {
		shards.Close()
		return nil, err
	}
	return &Engine{shards: shards, overlay: overlay, digests: map[uint64][32]byte{}}, nil
}

// Shards is the engine's opened shard set (its Choice says how it reads).
func (e *Engine) Shards() *Shards { return e.shards }

// SyncCache makes the engine's overlay hold exactly kvs: new or changed blobs are copied in,
// blobs that left the cache are dropped. Call it before each task with the cache's entries.
func (e *Engine) SyncCache(kvs []CachedKV) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	keep := make([]uint64, 0, len(kvs))
	seen := make(map[uint64]bool, len(kvs))
	for _, kv := range kvs {
		if seen[kv.KvIdx] {
			return &Error{Status: StatusInvalidArgument, Op: "sync_cache", Message: fmt.Sprintf("KV %d is listed twice", kv.KvIdx)}
		}
		seen[kv.KvIdx] = true
		keep = append(keep, kv.KvIdx)
		digest := sha256.Sum256(kv.Data)
		if old, ok := e.digests[kv.KvIdx]; ok && bytes.Equal(old[:], digest[:]) {
			continue
		}
		if err := e.overlay.Put(kv.KvIdx, kv.Data); err != nil {
			return err
		}
		e.digests[kv.KvIdx] = digest
	}
	if _, _, err := e.overlay.Retain(keep); err != nil {
		return err
	}
	for kv := range e.digests {
		if !seen[kv] {
			delete(e.digests, kv)
		}
	}
	return nil
}

// MineTask mines task until its first valid nonce, its deadline, or running() turning false
// (polled every 10 ms). A read error or a bad task is an error, as es-node's mineTask reports
// one; no valid nonce is Found false with the counts.
func (e *Engine) MineTask(task Task, running func() bool) (TaskResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if task.RequiredDiff == nil {
		return TaskResult{}, &Error{Status: StatusInvalidArgument, Op: "mine_task", Message: "RequiredDiff is nil"}
	}
	if time.Until(task.Deadline) < time.Millisecond {
		// es-node's loop times out before its first nonce: no power, no error.
		return TaskResult{}, nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), task.Deadline)
	defer cancel()
	stopped := watchRunning(running, cancel)
	report, err := e.shards.MineSlot(ctx, SlotRequest{
		Randao:     task.MixHash,
		NonceStart: task.NonceStart,
		NonceEnd:   task.NonceEnd,
		Find:       FindFirst,
		Difficulty: &Difficulty{RequiredDiff: task.RequiredDiff},
		SlotNumber: task.BlockNumber,
		Overlay:    e.overlay,
	})
	wasStopped := stopped()
	if err != nil && !(wasStopped && errors.Is(err, context.Canceled) && report != nil) {
		return TaskResult{}, err
	}
	if len(report.Shards) != 1 {
		return TaskResult{}, fmt.Errorf("pora mine_task: %d shard records, expected 1", len(report.Shards))
	}
	return taskResult(task, report.Shards[0], wasStopped), nil
}

// watchRunning cancels the slot once running() is false and returns a function that stops the
// watch and says whether it fired.
func watchRunning(running func() bool, cancel context.CancelFunc) func() bool {
	if running == nil {
		return func() bool { return false }
	}
	done, fired := make(chan struct{}), make(chan bool, 1)
	go func() {
		ticker := time.NewTicker(stopPoll)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				fired <- false
				return
			case <-ticker.C:
				if !running() {
					cancel()
					<-done
					fired <- true
					return
				}
			}
		}
	}()
	return func() bool {
		close(done)
		return <-fired
	}
}

func taskResult(task Task, rec ShardSlot, stopped bool) TaskResult {
	limit := task.NonceLimit
	if limit == 0 {
		limit = task.NonceEnd - task.NonceStart
	}
	bps := rec.NoncesTried * 10000 / limit
	if bps > 10000 {
		bps = 10000
	}
	r := TaskResult{
		NoncesTried:    rec.NoncesTried,
		MiningPowerBps: bps,
		SamplingTimeMs: uint64(rec.ElapsedSec * 1000),
		Stopped:        stopped,
		Record:         rec,
	}
	if len(rec.Found) > 0 {
		f := rec.Found[0]
		r.Found, r.Nonce, r.SampleIdxs, r.EncodedSamples = true, f.Nonce, f.SampleIdxs, f.EncodedSamples
	}
	return r
}

// Close frees the engine's overlay and closes its shard set.
func (e *Engine) Close() error {
	oerr := e.overlay.Close()
	if err := e.shards.Close(); err != nil {
		return err
	}
	return oerr
}
