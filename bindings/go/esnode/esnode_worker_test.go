// es-node stand-in, package miner (ethstorage/miner/worker.go and algorithm.go): the worker's
// task split, mineTask loop and mining-state rules, initHash and hashimoto, written from the
// description of es-node v0.2.10 in docs/spec/es-node.md (no es-node code). miningStates gets one
// entry per shard in newWorker and is never written as a map again: thread 0 writes the entry's
// fields through its pointer. Each shard's threads run on their own goroutines, and shards mine
// at the same time (runHeads). The found-nonce path keeps what a proof needs (the samples read
// again) and stops before the prover. The calls into the adapter are the
// hook's older form; the hook pora-esnode applies is tested on esnode/hook/testdata/es-node.
package esnode_test

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"
	"github.com/pora-miner/pora/bindings/go/internal/keccak"

	"github.com/pora-miner/pora/bindings/go/esnode"
)

type task struct {
	miner    common.Address
	shardIdx uint64
	taskChs  []chan *taskItem
}

type taskItem struct {
	*task
	requiredDiff, blockNumber *big.Int
	mixHash                   common.Hash
	nonceStart, nonceEnd      uint64
	mineTime, thread          uint64
}

// result keeps what the proof is made from (the prover is not stood in).
type result struct {
	blockNumber  *big.Int
	startShardId uint64
	miner        common.Address
	nonce        uint64
	encodedData  []common.Hash
	sampleIdxs   []uint64
	timestamp    uint64
}

type worker struct {
	config       Config
	storageMgr   *StorageManager
	dataReader   DataReader
	resultLock   sync.Mutex
	resultMap    map[uint64]*result
	miningStates map[uint64]*MiningState
	running      int32
	pora         *esnode.Miner[common.Hash]
}

// newWorker makes the worker and the one mining-state entry of each shard the storage manager
// holds: the only writes of the miningStates map.
func newWorker(config Config, sm *StorageManager, dr DataReader) *worker {
	w := &worker{config: config, storageMgr: sm, dataReader: dr, resultMap: map[uint64]*result{}, miningStates: map[uint64]*MiningState{}}
	for _, shardIdx := range sm.Shards() {
		w.miningStates[shardIdx] = &MiningState{}
	}
	return w
}

func (w *worker) start()          { atomic.StoreInt32(&w.running, 1) }
func (w *worker) stop()           { atomic.StoreInt32(&w.running, 0) }
func (w *worker) isRunning() bool { return atomic.LoadInt32(&w.running) == 1 }

// close runs when the miner closes, after every task loop returned.
func (w *worker) close() {
	w.pora.Close() // nil when pora is not enabled: closes nothing
}

// assignTasks splits [0, NonceLimit) into ThreadsPerShard segments (the last takes the rest) and
// hands one item to each thread's channel.
func (w *worker) assignTasks(t task, blockNumber uint64, blockTime uint64, mixDigest common.Hash, reqDiff *big.Int) {
	seg := w.config.NonceLimit / w.config.ThreadsPerShard
	for i := uint64(0); i < w.config.ThreadsPerShard; i++ {
		end := (i + 1) * seg
		if i == w.config.ThreadsPerShard-1 {
			end = w.config.NonceLimit
		}
		t.taskChs[i] <- &taskItem{task: &t, requiredDiff: reqDiff, blockNumber: new(big.Int).SetUint64(blockNumber),
			mixHash: mixDigest, nonceStart: i * seg, nonceEnd: end, mineTime: blockTime, thread: i}
	}
}

// runHead is one L1 head for one shard: the items assigned, each thread's taskLoop running its
// item, the answers collected.
func (w *worker) runHead(shard uint64, blockNumber uint64, mixDigest common.Hash, reqDiff *big.Int) (found bool, err error) {
	miner, _ := w.storageMgr.GetShardMiner(shard)
	t := task{miner: miner, shardIdx: shard}
	for i := uint64(0); i < w.config.ThreadsPerShard; i++ {
		t.taskChs = append(t.taskChs, make(chan *taskItem, 1))
	}
	w.assignTasks(t, blockNumber, uint64(time.Now().Unix()), mixDigest, reqDiff)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, ch := range t.taskChs {
		wg.Add(1)
		go func(item *taskItem) {
			defer wg.Done()
			ok, e := w.mineTask(item)
			mu.Lock()
			found, err = found || ok, firstErr(err, e)
			mu.Unlock()
		}(<-ch)
	}
	wg.Wait()
	return found, err
}

// runHeads mines one head on several shards at once, each shard's threads on their own
// goroutines, as es-node's task loops do; it returns which shards found a nonce.
func (w *worker) runHeads(shards []uint64, blockNumber uint64, mixDigest common.Hash, reqDiff *big.Int) (map[uint64]bool, error) {
	found := make([]bool, len(shards))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, shard := range shards {
		wg.Add(1)
		go func(i int, shard uint64) {
			defer wg.Done()
			found[i], errs[i] = w.runHead(shard, blockNumber, mixDigest, reqDiff)
		}(i, shard)
	}
	wg.Wait()
	out := map[uint64]bool{}
	for i, shard := range shards {
		if errs[i] != nil {
			return nil, fmt.Errorf("shard %d: %w", shard, errs[i])
		}
		out[shard] = found[i]
	}
	return out, nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// mineTask is es-node's loop over the item's nonces, with the hook at its top.
func (w *worker) mineTask(t *taskItem) (bool, error) {
	if w.pora != nil {
		res, err := w.pora.MineTask(esnode.Task{Miner: t.miner, ShardIdx: t.shardIdx, RequiredDiff: t.requiredDiff, BlockNumber: t.blockNumber,
			MixHash: t.mixHash, NonceStart: t.nonceStart, NonceEnd: t.nonceEnd, Thread: t.thread, State: (*esnode.MiningState)(w.miningStates[t.shardIdx])})
		if err != nil || !res.Found {
			return false, err
		}
		t.nonceStart, t.nonceEnd = res.NonceStart, res.NonceEnd // es-node's loop below re-checks pora's nonce, proves and submits it
	}
	startTime := time.Now()
	nonce := t.nonceStart
	for w.isRunning() {
		if time.Since(startTime).Seconds() > float64(w.config.Slot) || nonce >= t.nonceEnd {
			if t.thread == 0 {
				power := (nonce - t.nonceStart) * w.config.ThreadsPerShard * 10000 / w.config.NonceLimit
				if nonce >= t.nonceEnd {
					power = 10000
				}
				state := w.miningStates[t.shardIdx]
				state.MiningPower, state.SamplingTime = power, uint64(time.Since(startTime).Milliseconds())
			}
			return false, nil
		}
		hash0 := initHash(t.miner, t.mixHash, nonce)
		hash1, sampleIdxs, err := w.computeHash(t.shardIdx, hash0)
		if err != nil {
			return false, err
		}
		if t.requiredDiff.Cmp(new(big.Int).SetBytes(hash1[:])) >= 0 {
			return true, w.foundNonce(t, nonce, sampleIdxs)
		}
		nonce++
	}
	return false, nil
}

// foundNonce is the found-nonce path up to the prover: the samples read again, the result
// stored by shard.
func (w *worker) foundNonce(t *taskItem, nonce uint64, sampleIdxs []uint64) error {
	encoded := make([]common.Hash, len(sampleIdxs))
	for i, idx := range sampleIdxs {
		s, err := w.dataReader.ReadSample(t.shardIdx, idx)
		if err != nil {
			return err
		}
		encoded[i] = s
	}
	w.resultLock.Lock()
	defer w.resultLock.Unlock()
	w.resultMap[t.shardIdx] = &result{blockNumber: t.blockNumber, startShardId: t.shardIdx, miner: t.miner, nonce: nonce,
		encodedData: encoded, sampleIdxs: sampleIdxs, timestamp: t.mineTime}
	return nil
}

func (w *worker) computeHash(shardIdx uint64, hash0 common.Hash) (common.Hash, []uint64, error) {
	return hashimoto(w.storageMgr.KvEntriesBits(), w.storageMgr.MaxKvSizeBits(), 5, shardIdx, w.config.RandomChecks, w.dataReader.ReadSample, hash0)
}

// initHash = keccak256(miner left-padded to 32 bytes ‖ mixedHash ‖ nonce as 32 bytes big-endian).
func initHash(miner common.Address, mixedHash common.Hash, nonce uint64) common.Hash {
	var msg [96]byte
	copy(msg[12:32], miner[:])
	copy(msg[32:64], mixedHash[:])
	binary.BigEndian.PutUint64(msg[88:], nonce)
	return keccak.Sum256(msg[:])
}

type SampleReader func(uint64, uint64) (common.Hash, error)

// hashimoto: each check takes hash0's 256 bits mod 2^rowBits plus shardIdx<<rowBits, reads that
// sample and hashes it in.
func hashimoto(kvEntriesBits, kvSizeBits, sampleSizeBits, shardIdx, randomChecks uint64, sampleReader SampleReader, hash0 common.Hash) (common.Hash, []uint64, error) {
	rowBits := kvEntriesBits + kvSizeBits - sampleSizeBits
	var idxs []uint64
	for i := uint64(0); i < randomChecks; i++ {
		idx := binary.BigEndian.Uint64(hash0[24:])&(1<<rowBits-1) + shardIdx<<rowBits
		sample, err := sampleReader(shardIdx, idx)
		if err != nil {
			return common.Hash{}, nil, err
		}
		idxs = append(idxs, idx)
		hash0 = keccak.Sum256(hash0[:], sample[:])
	}
	return hash0, idxs, nil
}
