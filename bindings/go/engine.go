// Engine: pora as the mining engine inside es-node's miner. es-node's worker hands each shard's
// task (its whole nonce range, the randao, requiredDiff and the slot deadline) to MineTask and
// keeps everything after a found nonce (getMiningData, the prover, resultMap, notify) as it is.
// The blob cache reaches the engine by KV index (PutKV, DropKV) with a cheap identity of each
// blob (es-node's commit), so a task costs nothing for cached KVs that did not change.
package porago

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"sync"
	"time"
)

// FindPolicy says which valid nonce MineTask answers. Any valid nonce earns the reward; the two
// differ in which one and in cost.
type FindPolicy int

const (
	// FirstInTime stops at the first valid nonce pora's workers find in time. Its workers run
	// many nonces at once, so this is not always the lowest valid nonce of the range (nor
	// es-node's own loop's answer, which walks each thread's nonces in order), and two runs may
	// answer different valid nonces. The cheapest: the task ends at the first find.
	FirstInTime FindPolicy = iota
	// LowestInRange tries every nonce of the range (up to the deadline) and answers the lowest
	// valid one: deterministic when the whole range is tried (NoncesTried = NonceEnd -
	// NonceStart), at the cost of mining the whole range even after a find (docs/BENCHMARKS.md).
	LowestInRange
)

func (f FindPolicy) String() string {
	switch f {
	case FirstInTime:
		return "first-in-time"
	case LowestInRange:
		return "lowest-in-range"
	}
	return fmt.Sprintf("FindPolicy(%d)", int(f))
}

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
	// Find is the find policy (the zero value: FirstInTime).
	Find FindPolicy
}

// TaskResult is what es-node's mineTask needs back: a valid nonce chosen by the task's
// FindPolicy, with its sample indices (everything after it is es-node's), and its miningStates
// from exact counts.
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
	// Commit identifies the bytes: es-node's commit of the blob, or any value that changes
	// whenever Data changes. The engine compares it, never Data.
	Commit [32]byte
	// Data is the KV's encoded bytes (maxKvSize); read only when Commit differs from the one
	// last put for KvIdx.
	Data []byte
}

// Engine mines one shard for es-node: one per shard, so the shards' tasks run concurrently as
// es-node runs them. Safe for concurrent use; one task at a time per engine, and the cache may
// change while a task runs (the task keeps the overlay it started with).
type Engine struct {
	shards  *Shards
	overlay *Overlay
	shard   uint64
	// task serialises MineTask; cache guards cached (PutKV during a task does not wait).
	task, cache sync.Mutex
	// cached are the KVs in the overlay by index: a put with the same commit copies nothing.
	cached map[uint64]*cachedEntry
	// listing counts SyncCache calls: an entry listed by the current one carries its number.
	listing uint64
	// lastList is the last SyncCache's list (index and commit, in its order) when nothing
	// changed the cache since: the same list again is then one comparison per KV, no lookup.
	lastList []cachedKey
}

// cachedKey is what SyncCache compares of a listed KV.
type cachedKey struct {
	kvIdx  uint64
	commit [32]byte
}

// cachedEntry is one KV the overlay holds.
type cachedEntry struct {
	commit [32]byte
	// listed is the SyncCache call that last listed it.
	listed uint64
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
	return &Engine{shards: shards, overlay: overlay, shard: shards.ShardIdxs[0], cached: map[uint64]*cachedEntry{}}, nil
}

// Shards is the engine's opened shard set (its Choice says how it reads).
func (e *Engine) Shards() *Shards { return e.shards }

// PutKV tells the engine that es-node's blob cache holds KV kvIdx (global KV index) with the
// encoded bytes data, identified by commit (es-node's commit of the blob). data must be one KV of
// the shard (2^kvSizeBits bytes; anything else is ErrInvalidArgument). When commit equals
// the one last put for kvIdx, nothing is read or copied and changed is false; otherwise the
// bytes are copied into the overlay once (about 0.1 ms for 128 KiB) and later tasks sample them.
func (e *Engine) PutKV(kvIdx uint64, commit [32]byte, data []byte) (changed bool, err error) {
	e.cache.Lock()
	defer e.cache.Unlock()
	return e.putLocked(kvIdx, commit, data)
}

func (e *Engine) putLocked(kvIdx uint64, commit [32]byte, data []byte) (bool, error) {
	entry := e.cached[kvIdx]
	if entry != nil && entry.commit == commit {
		return false, nil
	}
	// The size is checked here, before the overlay takes the bytes: a KV of another size would
	// make every later task and Hash fail until it is dropped.
	if info := e.shards.Info[0]; len(data) != 1<<info.KVSizeBits {
		return false, &Error{Status: StatusInvalidArgument, Op: "put_kv", Message: fmt.Sprintf(
			"KV %d: %d bytes; shard %d's KVs are %d bytes (kvSizeBits %d)", kvIdx, len(data), info.Shard, 1<<info.KVSizeBits, info.KVSizeBits)}
	}
	e.lastList = e.lastList[:0]
	if err := e.overlay.Put(kvIdx, data); err != nil {
		return false, err
	}
	if entry == nil {
		entry = &cachedEntry{}
		e.cached[kvIdx] = entry
	}
	entry.commit = commit
	return true, nil
}

// DropKV tells the engine that KV kvIdx left the blob cache (finalized into the data file):
// later tasks read it from the file. It says whether the engine held it.
func (e *Engine) DropKV(kvIdx uint64) (bool, error) {
	e.cache.Lock()
	defer e.cache.Unlock()
	return e.dropLocked(kvIdx)
}

func (e *Engine) dropLocked(kvIdx uint64) (bool, error) {
	if _, ok := e.cached[kvIdx]; !ok {
		return false, nil
	}
	e.lastList = e.lastList[:0]
	if _, err := e.overlay.Drop(kvIdx); err != nil {
		return false, err
	}
	delete(e.cached, kvIdx)
	return true, nil
}

// CachedKVs lists the KVs the engine samples from memory, ascending.
func (e *Engine) CachedKVs() []uint64 {
	e.cache.Lock()
	defer e.cache.Unlock()
	kvs := make([]uint64, 0, len(e.cached))
	for kv := range e.cached {
		kvs = append(kvs, kv)
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i] < kvs[j] })
	return kvs
}

// SyncCache makes the engine's overlay hold exactly kvs, for a caller that lists its whole
// cache before each task: a KV whose Commit is the one already put costs one map lookup (its
// Data is not read), a new or changed one is copied as PutKV copies it, and KVs no longer
// listed are dropped. A KV listed twice is ErrInvalidArgument (the KVs before it are synced).
func (e *Engine) SyncCache(kvs []CachedKV) error {
	e.cache.Lock()
	defer e.cache.Unlock()
	if e.sameAsLastList(kvs) {
		return nil
	}
	e.listing++
	for _, kv := range kvs {
		if entry := e.cached[kv.KvIdx]; entry != nil && entry.listed == e.listing {
			return &Error{Status: StatusInvalidArgument, Op: "sync_cache", Message: fmt.Sprintf("KV %d is listed twice", kv.KvIdx)}
		}
		if _, err := e.putLocked(kv.KvIdx, kv.Commit, kv.Data); err != nil {
			return err
		}
		e.cached[kv.KvIdx].listed = e.listing
	}
	if len(e.cached) != len(kvs) { // some cached KVs were not listed: they left the cache
		var gone []uint64
		for kv, entry := range e.cached {
			if entry.listed != e.listing {
				gone = append(gone, kv)
			}
		}
		for _, kv := range gone {
			if _, err := e.dropLocked(kv); err != nil {
				return err
			}
		}
	}
	e.lastList = e.lastList[:0]
	for _, kv := range kvs {
		e.lastList = append(e.lastList, cachedKey{kv.KvIdx, kv.Commit})
	}
	return nil
}

// sameAsLastList says whether kvs lists exactly what the last SyncCache listed, in the same
// order, with nothing put or dropped since.
func (e *Engine) sameAsLastList(kvs []CachedKV) bool {
	if len(kvs) != len(e.lastList) || len(kvs) != len(e.cached) {
		return false
	}
	for i := range kvs {
		if kvs[i].KvIdx != e.lastList[i].kvIdx || kvs[i].Commit != e.lastList[i].commit {
			return false
		}
	}
	return true
}

// Hash computes one nonce of the engine's shard as a task with the current cache samples it
// (cached KVs from memory, the rest from the file): what es-node's verification of a found
// nonce against its blob cache needs. requiredDiff may be nil; given, the record says whether
// hash1 meets it (Valid).
func (e *Engine) Hash(randao []byte, nonce uint64) (*HashRecord, error) {
	return e.HashWithDifficulty(randao, nonce, nil)
}

// HashWithDifficulty is Hash with requiredDiff (nil: no validity check).
func (e *Engine) HashWithDifficulty(randao []byte, nonce uint64, requiredDiff *big.Int) (*HashRecord, error) {
	var d *Difficulty
	if requiredDiff != nil {
		d = &Difficulty{RequiredDiff: requiredDiff}
	}
	return e.shards.HashWithOverlay(e.shard, randao, nonce, d, e.overlay)
}

// MineTask mines task until a valid nonce under task.Find (FirstInTime: the first found;
// LowestInRange: after the whole range), its deadline, or running() turning false (polled
// every 10 ms). A read error or a bad task is an error, as es-node's mineTask reports one; no
// valid nonce is Found false with the counts.
func (e *Engine) MineTask(task Task, running func() bool) (TaskResult, error) {
	e.task.Lock()
	defer e.task.Unlock()
	if task.RequiredDiff == nil {
		return TaskResult{}, &Error{Status: StatusInvalidArgument, Op: "mine_task", Message: "RequiredDiff is nil"}
	}
	find := FindFirst
	switch task.Find {
	case FirstInTime:
	case LowestInRange:
		find = FindAll // every valid nonce of the tried range, ascending: the first is the lowest
	default:
		return TaskResult{}, &Error{Status: StatusInvalidArgument, Op: "mine_task", Message: fmt.Sprintf("Find %d: FirstInTime or LowestInRange", int(task.Find))}
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
		Find:       find,
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
		for _, g := range rec.Found[1:] { // pora reports them ascending; the lowest is answered
			if g.Nonce < f.Nonce {
				f = g
			}
		}
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
