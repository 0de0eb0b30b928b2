// Package esnode is pora's adapter for es-node's miner (es-node v0.2.10, package
// ethstorage/miner): everything between es-node's worker and porago.Engine that would otherwise
// live in es-node. It keeps one engine per shard, opened on the shard's first task and kept
// across tasks; takes es-node's task with es-node's field types; mines the shard's whole nonce
// range on thread 0 and answers the other threads at once; hands back the found nonce as the
// one-nonce range es-node's own mineTask re-checks, proves and submits unchanged; counts the
// mining state; keeps the engine's copy of es-node's blob cache in step by KV index and commit
// (Cache); and refuses, naming the field, a configuration that disagrees with the data files.
//
// It depends on es-node only through shapes: [20]byte and [32]byte for common.Address and
// common.Hash, *big.Int, uint64, and the Cache interface that es-node's blob caches meet with one
// method added. docs/es-node.md shows the hook that uses it.
package esnode

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	porago "github.com/pora-miner/pora/bindings/go"
)

// Config is what the adapter needs from es-node. Every field except Options and Running is
// required: a zero value is refused rather than replaced by pora's default, because a default
// that differs from the contract's value samples other places without a word.
type Config struct {
	// Files are the node's data files (es-node's node.Config.Storage.Filenames): each shard's
	// engine opens the files whose chunks lie in that shard.
	Files []string
	// Miner is the address the tasks carry (taskItem.miner) and the files must be encoded for.
	Miner [20]byte
	// KvEntriesBits is log2 of the KVs per shard (es.StorageManager.KvEntriesBits()).
	KvEntriesBits uint64
	// RandomChecks and NonceLimit are the storage contract's, as es-node's miner.Config holds
	// them after NewMinerConfig read them from the contract.
	RandomChecks, NonceLimit uint64
	// SlotSec is es-node's miner.Config.Slot: a task ends SlotSec seconds after it starts.
	SlotSec uint64
	// Running is es-node's worker.isRunning: a task returns within ~60 ms once it is false. A
	// task's own Task.Running, when set, is used instead.
	Running func() bool
	// ThreadsPerShard is es-node's --miner.threads-per-shard (miner.Config.ThreadsPerShard). pora
	// does not split a shard's nonces by thread: New logs once that it is not used, with the
	// threads and queue depth pora mines with instead.
	ThreadsPerShard uint64
	// Log is es-node's logger (the worker's w.lg, go-ethereum's log.Logger meets Logger). With it
	// a task logs es-node's own lines for its outcome and one line of pora's facts (MineTask);
	// nil logs nothing.
	Log Logger
	// Options are the engines' porago options (method, threads, depth, profile); their
	// RandomChecks, KVEntriesBits and Miner are set from the fields above.
	Options porago.Options
}

// Task is es-node's taskItem with its field types (common.Address and common.Hash are [20]byte
// and [32]byte, so es-node assigns its fields as they are).
type Task struct {
	Miner                     [20]byte
	ShardIdx                  uint64
	RequiredDiff, BlockNumber *big.Int
	MixHash                   [32]byte
	// NonceStart, NonceEnd and Thread are the thread's segment of [0, NonceLimit) as es-node's
	// assignTasks splits it; thread 0 mines the whole range through pora.
	NonceStart, NonceEnd, Thread uint64
	// Running is the worker's isRunning (nil: Config.Running).
	Running func() bool
	// State is es-node's entry for the shard in worker.miningStates (made once per shard by
	// newWorker), converted: (*esnode.MiningState)(w.miningStates[t.shardIdx]). Thread 0's task
	// writes its fields through this pointer when it ends, as es-node's own thread 0 does; no
	// other thread writes it, and the map itself is never written. Nil: nothing is written.
	State *MiningState
}

// MiningState has es-node's miner.MiningState fields in its order, so a pointer to es-node's
// converts to a pointer to it (Task.State) and back ((*miner.MiningState)(res.State)).
type MiningState struct {
	// MiningPower is the share of [0, NonceLimit) tried, in basis points, counted.
	MiningPower uint64
	// SamplingTime is the task's length in milliseconds.
	SamplingTime uint64
}

// Result is one task's answer.
type Result struct {
	// Found says a valid nonce was found; NonceStart..NonceEnd is then [nonce, nonce+1), the
	// range es-node's own mineTask runs to re-check the nonce with its hashing and reach its
	// unchanged proof and submit code.
	Found                bool
	NonceStart, NonceEnd uint64
	// State is thread 0's mining state, also written through Task.State (es-node writes its
	// mining state from thread 0 only); nil for the other threads and when the task failed.
	State *MiningState
	// Record is pora's record of the task (nil for threads other than 0).
	Record *porago.ShardSlot
}

// Miner is the adapter: one per es-node worker, safe for concurrent use by its task loops. H is
// es-node's common.Hash.
type Miner[H ~[32]byte] struct {
	cfg    Config
	cache  Cache[H]
	layout map[uint64][]string // shard -> its data files, from their headers
	mu     sync.Mutex
	shards map[uint64]*shardEngine[H]
	closed bool
}

// shardEngine is one shard's engine and the cache state it mirrors; its lock serialises the
// shard's tasks (es-node runs one thread-0 task per shard at a time).
type shardEngine[H ~[32]byte] struct {
	mu     sync.Mutex
	engine *porago.Engine
	sync   cacheSync[H]
}

// Logger is the part of es-node's logger (go-ethereum's log.Logger, which es-node's worker holds
// as w.lg) the adapter writes through: messages with key-value pairs. pora's package imports no
// logging library; es-node hands it the logger it already has.
type Logger interface {
	Debug(msg string, ctx ...any)
	Info(msg string, ctx ...any)
	Warn(msg string, ctx ...any)
	Error(msg string, ctx ...any)
}

// ErrClosed is returned by MineTask after Close.
var ErrClosed = errors.New("esnode: the miner is closed")

// New checks cfg against the data files' headers (miner, KV entries per shard) and returns the
// adapter; no engine is opened until a shard's first task. It also turns on the encoder block
// (UseEncoder), refusing a setting of it pora does not know. cache is es-node's blob cache as
// es-node holds it (its downloader.BlobCache interface, unchanged): the adapter finds VisitKVs by
// a type assertion (Cache), so the hook adds the method to the caches without changing the
// interface that other implementations meet. nil: no blob cache.
func New[H ~[32]byte](cfg Config, cache any) (*Miner[H], error) {
	// A build without libpora (another GOOS/GOARCH, or CGO_ENABLED=0) compiles, and refuses here,
	// naming the platform: es-node fails at start-up only when it asked for pora.
	if err := porago.Available(); err != nil {
		return nil, fmt.Errorf("esnode: %w", err)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	var listed Cache[H]
	if cache != nil {
		var ok bool
		if listed, ok = cache.(Cache[H]); !ok {
			return nil, fmt.Errorf("esnode: the blob cache %T has no VisitKVs(func(kvIdx uint64, "+
				"hash %T, blockNumber uint64)) method: add the hook's VisitKVs to it", cache, *new(H))
		}
	}
	layout, err := shardLayout(cfg.Files, cfg.KvEntriesBits, cfg.Miner)
	if err != nil {
		return nil, err
	}
	// The encoder block follows --miner.pora too: a node started without it (no New) computes
	// every mask with es-node's own code; a mistyped encoder setting is refused here, once.
	if err := UseEncoder(cfg.Log); err != nil {
		return nil, err
	}
	if cfg.Log != nil {
		cfg.Log.Info("Mining with pora: --miner.threads-per-shard is not used",
			"threadsPerShard", cfg.ThreadsPerShard, "poraThreads", orAuto(cfg.Options.Threads),
			"poraDepth", orAuto(cfg.Options.Depth), "method", orAuto(cfg.Options.Method))
	}
	return &Miner[H]{cfg: cfg, cache: listed, layout: layout, shards: map[uint64]*shardEngine[H]{}}, nil
}

// orAuto names a zero option as what pora does with it: it decides per device and task.
func orAuto[T comparable](v T) any {
	var zero T
	if v == zero {
		return "auto"
	}
	return v
}

// check refuses zero or out-of-range fields, naming them.
func (c *Config) check() error {
	switch {
	case len(c.Files) == 0:
		return errors.New("esnode: Config.Files: no data files")
	case c.RandomChecks == 0 || c.RandomChecks > 64:
		return fmt.Errorf("esnode: Config.RandomChecks %d: give the storage contract's randomChecks (1..64)", c.RandomChecks)
	case c.NonceLimit == 0:
		return errors.New("esnode: Config.NonceLimit 0: give the storage contract's nonceLimit")
	case c.KvEntriesBits == 0 || c.KvEntriesBits > 40:
		return fmt.Errorf("esnode: Config.KvEntriesBits %d: give the storage manager's KvEntriesBits (1..40)", c.KvEntriesBits)
	case c.SlotSec == 0:
		return errors.New("esnode: Config.SlotSec 0: give miner.Config.Slot (seconds)")
	case c.Miner == [20]byte{}:
		return errors.New("esnode: Config.Miner: the zero address")
	}
	return nil
}

// MineTask runs one of es-node's tasks. Thread 0 mines the shard's whole range [0, NonceLimit)
// through the shard's engine until a valid nonce, the slot's end (SlotSec after the call) or
// Running turning false; the other threads' tasks are answered at once with nothing found, so
// es-node's thread split costs no work. The blob cache is synced first (Cache).
func (m *Miner[H]) MineTask(t Task) (Result, error) {
	start := time.Now()
	if t.Thread != 0 {
		return Result{}, nil
	}
	if err := m.checkTask(t); err != nil {
		return Result{}, err
	}
	se, err := m.engineFor(t.ShardIdx)
	if err != nil {
		return Result{}, err
	}
	se.mu.Lock()
	defer se.mu.Unlock()
	if m.cache != nil {
		if err := se.sync.run(m.cache, se.engine, t.ShardIdx, m.cfg.KvEntriesBits); err != nil {
			return Result{}, err
		}
	}
	var blockNumber uint64
	if t.BlockNumber != nil && t.BlockNumber.IsUint64() {
		blockNumber = t.BlockNumber.Uint64()
	}
	running := m.cfg.Running
	if t.Running != nil {
		running = t.Running
	}
	res, err := se.engine.MineTask(porago.Task{
		MixHash:      t.MixHash[:],
		RequiredDiff: t.RequiredDiff,
		NonceStart:   0,
		NonceEnd:     m.cfg.NonceLimit,
		NonceLimit:   m.cfg.NonceLimit,
		Deadline:     start.Add(time.Duration(m.cfg.SlotSec) * time.Second),
		BlockNumber:  blockNumber,
	}, running)
	if err != nil {
		return Result{}, err
	}
	m.logTask(t, &res, time.Since(start))
	out := Result{
		State:  &MiningState{MiningPower: res.MiningPowerBps, SamplingTime: res.SamplingTimeMs},
		Record: &res.Record,
	}
	if t.State != nil {
		*t.State = *out.State
	}
	if res.Found {
		out.Found, out.NonceStart, out.NonceEnd = true, res.Nonce, res.Nonce+1
	}
	return out, nil
}

// checkTask refuses a task that disagrees with the configuration, naming the field.
func (m *Miner[H]) checkTask(t Task) error {
	switch {
	case t.Miner != m.cfg.Miner:
		return fmt.Errorf("esnode: Task.Miner 0x%x: the adapter was configured (and the files checked) for 0x%x", t.Miner, m.cfg.Miner)
	case t.RequiredDiff == nil:
		return errors.New("esnode: Task.RequiredDiff is nil")
	case t.NonceStart != 0 || t.NonceEnd == 0 || t.NonceEnd > m.cfg.NonceLimit:
		return fmt.Errorf("esnode: Task nonces [%d, %d) of thread 0: not the first segment of [0, Config.NonceLimit %d); the worker's NonceLimit differs from the adapter's", t.NonceStart, t.NonceEnd, m.cfg.NonceLimit)
	}
	if _, ok := m.layout[t.ShardIdx]; !ok {
		return fmt.Errorf("esnode: Task.ShardIdx %d: no data file in Config.Files holds it", t.ShardIdx)
	}
	return nil
}

// engineFor opens the shard's engine on its first task and checks what pora opened against the
// configuration.
func (m *Miner[H]) engineFor(shard uint64) (*shardEngine[H], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if se := m.shards[shard]; se != nil {
		return se, nil
	}
	opts := m.cfg.Options
	opts.RandomChecks = int(m.cfg.RandomChecks)
	opts.KVEntriesBits = int(m.cfg.KvEntriesBits)
	opts.Miner = nil // the files' miner, checked equal to Config.Miner by New
	engine, err := porago.OpenEngine(m.layout[shard], opts)
	if err != nil {
		return nil, fmt.Errorf("esnode: shard %d: %w", shard, err)
	}
	if err := checkOpened(engine.Shards(), shard, m.cfg); err != nil {
		engine.Close()
		return nil, err
	}
	se := &shardEngine[H]{engine: engine}
	m.shards[shard] = se
	return se, nil
}

// checkOpened compares what pora reports for the opened shard with the configuration.
func checkOpened(s *porago.Shards, shard uint64, cfg Config) error {
	if len(s.Info) != 1 || s.Info[0].Shard != shard {
		return fmt.Errorf("esnode: shard %d: pora opened %v", shard, s.ShardIdxs)
	}
	info := s.Info[0]
	switch {
	case uint64(s.RandomChecks) != cfg.RandomChecks:
		return fmt.Errorf("esnode: Config.RandomChecks %d: pora mines shard %d with %d", cfg.RandomChecks, shard, s.RandomChecks)
	case uint64(info.KVEntriesBits) != cfg.KvEntriesBits:
		return fmt.Errorf("esnode: Config.KvEntriesBits %d: pora reads shard %d with %d", cfg.KvEntriesBits, shard, info.KVEntriesBits)
	case !strings.EqualFold(info.Miner, fmt.Sprintf("0x%x", cfg.Miner)):
		return fmt.Errorf("esnode: Config.Miner 0x%x: pora reads shard %d as encoded for %s", cfg.Miner, shard, info.Miner)
	}
	return nil
}

// Close closes every engine; later tasks return ErrClosed. es-node calls it when its worker
// closes (after every task loop returned). A nil *Miner (pora not enabled) closes nothing, so
// the caller needs no check.
func (m *Miner[H]) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	var first error
	for shard, se := range m.shards {
		se.mu.Lock()
		if err := se.engine.Close(); err != nil && first == nil {
			first = err
		}
		se.mu.Unlock()
		delete(m.shards, shard)
	}
	return first
}

// logTask writes, through es-node's logger, the lines es-node's own thread 0 writes for the
// task's outcome (the same messages and keys, es-node v0.2.10's mineTask), then one line of
// pora's facts. A found nonce gets no line here: es-node's own loop re-checks it and logs
// "Calculated a valid hash" and what follows. A task stopped with the worker logs only pora's
// line, as es-node's loop logs nothing when it stops.
func (m *Miner[H]) logTask(t Task, res *porago.TaskResult, took time.Duration) {
	lg := m.cfg.Log
	if lg == nil {
		return
	}
	switch {
	case res.Found || res.Stopped:
	case res.NoncesTried >= m.cfg.NonceLimit:
		samplingTime := fmt.Sprintf("%.1fs", took.Seconds())
		lg.Info("Sampling done with all nonces",
			"samplingTime", samplingTime, "shard", t.ShardIdx, "block", t.BlockNumber)
		lg.Debug("Sampling done with all nonces", "samplingTime", samplingTime, "shard", t.ShardIdx,
			"block", t.BlockNumber, "thread", t.Thread, "nonceEnd", res.NoncesTried)
	default:
		lg.Warn("Mining tasks timed out", "shard", t.ShardIdx, "block", t.BlockNumber,
			"noncesTried", fmt.Sprintf("%d(%.1f%%)", res.NoncesTried,
				float64(res.NoncesTried*100)/float64(m.cfg.NonceLimit)))
		lg.Debug("Mining task timed out", "shard", t.ShardIdx, "thread", t.Thread,
			"block", t.BlockNumber, "noncesTried", res.NoncesTried)
	}
	lg.Info("Mined with pora", "shard", t.ShardIdx, "block", t.BlockNumber,
		"method", res.Record.Method, "miningPower", fmt.Sprintf("%d(%.2f%%)", res.MiningPowerBps,
			float64(res.MiningPowerBps)/100), "found", res.Found, "samplingTime", took.Round(time.Millisecond))
}
