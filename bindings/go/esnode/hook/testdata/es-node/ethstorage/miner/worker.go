// Stand-in for es-node's ethstorage/miner/worker.go: the task split, mineTask's loop with the
// lines it logs (messages and keys as es-node v0.2.10's), the mining state thread 0 writes
// through the entry newWorker made, close, and the found-nonce path up to the prover.

package miner

import (
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/log"
	es "github.com/ethstorage/go-ethstorage/ethstorage"
)

type task struct {
	miner    common.Address
	shardIdx uint64
	taskChs  []chan *taskItem
}

type taskItem struct {
	*task
	requiredDiff *big.Int
	blockNumber  *big.Int
	mixHash      common.Hash
	nonceStart   uint64
	nonceEnd     uint64
	mineTime     uint64
	thread       uint64
}

// result is what a proof is made from (the prover is not stood in).
type result struct {
	blockNumber  *big.Int
	startShardId uint64
	miner        common.Address
	nonce        uint64
	encodedData  []common.Hash
	timestamp    uint64
}

// MiningState is the shard's last task: its share of the nonces in 1/10000 and its length in ms.
type MiningState struct {
	MiningPower  uint64 `json:"mining_power"`
	SamplingTime uint64 `json:"sampling_time"`
}

type worker struct {
	config     Config
	dataReader DataReader
	storageMgr *es.StorageManager

	exitCh chan struct{}

	resultLock sync.Mutex
	resultMap  map[uint64]*result // protected by resultLock

	miningStates map[uint64]*MiningState

	running int32
	wg      sync.WaitGroup
	lg      log.Logger
}

// newWorker makes one mining-state entry per shard: the only writes of the map.
func newWorker(config Config, storageMgr *es.StorageManager, dr DataReader, lg log.Logger) *worker {
	worker := &worker{
		config:       config,
		dataReader:   dr,
		storageMgr:   storageMgr,
		exitCh:       make(chan struct{}),
		resultMap:    make(map[uint64]*result),
		miningStates: make(map[uint64]*MiningState),
		lg:           lg,
	}
	for _, shardId := range storageMgr.Shards() {
		worker.miningStates[shardId] = &MiningState{}
	}
	return worker
}

func (w *worker) start() { atomic.StoreInt32(&w.running, 1) }
func (w *worker) stop()  { atomic.StoreInt32(&w.running, 0) }

func (w *worker) isRunning() bool {
	return atomic.LoadInt32(&w.running) == 1
}

// close stops the worker and waits for its loops.
func (w *worker) close() {
	w.stop()
	w.lg.Warn("Worker is being closed...")
	close(w.exitCh)
	w.wg.Wait()
}

// assignTasks splits [0, NonceLimit) into ThreadsPerShard segments, the last taking the rest.
func (w *worker) assignTasks(t task, blockNumber, blockTime uint64, mixDigest common.Hash,
	reqDiff *big.Int) {
	seg := w.config.NonceLimit / w.config.ThreadsPerShard
	for i := uint64(0); i < w.config.ThreadsPerShard; i++ {
		end := (i + 1) * seg
		if i == w.config.ThreadsPerShard-1 {
			end = w.config.NonceLimit
		}
		t.taskChs[i] <- &taskItem{task: &t, requiredDiff: reqDiff,
			blockNumber: new(big.Int).SetUint64(blockNumber), mixHash: mixDigest,
			nonceStart: i * seg, nonceEnd: end, mineTime: blockTime, thread: i}
	}
}

// mineTask models es-node's per-thread loop (ESNODE.md, "The mining loop"): nonces from the
// task's start while the worker runs, until the slot's seconds pass or the range ends, the first
// valid one stored. Only thread 0 writes the shard's mining state, extrapolating its progress.
// The log lines carry es-node's messages and keys, which the operator watches.
func (w *worker) mineTask(t *taskItem) (bool, error) {
	nonce, startTime := t.nonceStart, time.Now()
	// One line, as es-node's: pora-esnode's mining block goes right after it.
	w.lg.Debug("Mining task started", "shard", t.shardIdx, "thread", t.thread, "block", t.blockNumber, "nonces", fmt.Sprintf("%d~%d", t.nonceStart, t.nonceEnd))
	for ; w.isRunning(); nonce++ {
		switch {
		case time.Since(startTime).Seconds() > float64(w.config.Slot): // tested first, as es-node's
			w.endTimedOut(t, nonce, startTime)
			return false, nil
		case nonce >= t.nonceEnd:
			w.endAllTried(t, nonce, startTime)
			return false, nil
		}
		hash0 := initHash(t.miner, t.mixHash, nonce)
		hash1, sampleIdxs, err := w.computeHash(t.shardIdx, hash0)
		if err != nil {
			w.lg.Error("Calculate hash error", "shard", t.shardIdx, "thread", t.thread,
				"block", t.blockNumber, "err", err.Error())
			return false, err
		}
		if new(big.Int).SetBytes(hash1.Bytes()).Cmp(t.requiredDiff) <= 0 {
			w.lg.Info("Calculated a valid hash", "shard", t.shardIdx, "block", t.blockNumber,
				"timestamp", t.mineTime, "randao", t.mixHash, "nonce", nonce, "hash0", hash0,
				"hash1", hash1, "sampleIdxs", sampleIdxs)
			return true, w.storeResult(t, nonce, sampleIdxs)
		}
	}
	return false, nil
}

// endTimedOut is the slot ending before the range: thread 0 records the share it extrapolates.
func (w *worker) endTimedOut(t *taskItem, nonce uint64, startTime time.Time) {
	if t.thread == 0 {
		tried := (nonce - t.nonceStart) * w.config.ThreadsPerShard
		share := float64(tried*100) / float64(w.config.NonceLimit)
		w.lg.Warn("Mining tasks timed out", "shard", t.shardIdx, "block", t.blockNumber,
			"noncesTried", fmt.Sprintf("%d(%.1f%%)", tried, share))
		w.recordState(t.shardIdx, startTime, tried*10000/w.config.NonceLimit)
	}
	w.lg.Debug("Mining task timed out", "shard", t.shardIdx, "thread", t.thread,
		"block", t.blockNumber, "noncesTried", nonce-t.nonceStart)
}

// endAllTried is the range ending within the slot: thread 0 records full power.
func (w *worker) endAllTried(t *taskItem, nonce uint64, startTime time.Time) {
	took := fmt.Sprintf("%.1fs", time.Since(startTime).Seconds())
	if t.thread == 0 {
		w.lg.Info("Sampling done with all nonces", "samplingTime", took, "shard", t.shardIdx,
			"block", t.blockNumber)
		w.recordState(t.shardIdx, startTime, 10000)
	}
	w.lg.Debug("Sampling done with all nonces", "samplingTime", took, "shard", t.shardIdx,
		"block", t.blockNumber, "thread", t.thread, "nonceEnd", nonce)
}

// recordState writes the shard's state through the pointer newWorker made (never the map).
func (w *worker) recordState(shard uint64, startTime time.Time, powerBps uint64) {
	state := w.miningStates[shard]
	state.SamplingTime = uint64(time.Since(startTime).Milliseconds())
	state.MiningPower = powerBps
}

// storeResult reads the samples again and stores the shard's result (es-node's getMiningData,
// prover and resultMap; the proof itself is not stood in, only its log line).
func (w *worker) storeResult(t *taskItem, nonce uint64, sampleIdxs []uint64) error {
	encodedSamples := make([]common.Hash, len(sampleIdxs))
	for i, idx := range sampleIdxs {
		sample, err := w.dataReader.ReadSample(t.shardIdx, idx)
		if err != nil {
			return err
		}
		encodedSamples[i] = sample
	}
	w.lg.Info("Got sample data", "shard", t.shardIdx, "block", t.blockNumber, "encodedSamples", encodedSamples)
	// Where the prover would run: the KVs and the samples within them it proves.
	sampleBits := w.storageMgr.MaxKvSizeBits() - 5
	kvIdxs, sampleIdxsInKv := make([]uint64, len(sampleIdxs)), make([]uint64, len(sampleIdxs))
	for i, idx := range sampleIdxs {
		kvIdxs[i], sampleIdxsInKv[i] = idx>>sampleBits, idx&(1<<sampleBits-1)
	}
	w.lg.Info("Got storage proof", "shard", t.shardIdx, "block", t.blockNumber, "kvIdx", kvIdxs,
		"sampleIdxsInKv", sampleIdxsInKv)
	w.resultLock.Lock()
	w.resultMap[t.shardIdx] = &result{blockNumber: t.blockNumber, startShardId: t.shardIdx,
		miner: t.miner, nonce: nonce, encodedData: encodedSamples, timestamp: t.mineTime}
	w.resultLock.Unlock()
	w.lg.Info("Set mining result", "shard", t.shardIdx, "block", t.blockNumber, "nonce", nonce)
	return nil
}

func (w *worker) computeHash(shardIdx uint64, hash0 common.Hash) (common.Hash, []uint64, error) {
	return hashimoto(w.storageMgr.KvEntriesBits(), w.storageMgr.MaxKvSizeBits(), 5, shardIdx,
		w.config.RandomChecks, w.dataReader.ReadSample, hash0)
}
