// Not es-node's: es-node's worker takes L1 heads from its newWorkLoop and runs each thread's
// task on a taskLoop goroutine. RunHead does that for one head, so the tree's tests drive the
// worker from outside the package.
package miner

import (
	"fmt"
	"math/big"
	"sync"

	"github.com/ethereum/go-ethereum/common"
)

// RunHead mines one head on the shards at once, each shard's threads on their own goroutines,
// and says which shards found a nonce.
func (miner *Miner) RunHead(shards []uint64, blockNumber uint64, mixDigest common.Hash,
	reqDiff *big.Int) (map[uint64]bool, error) {
	w := miner.worker
	var mu sync.Mutex
	var wg sync.WaitGroup
	found := map[uint64]bool{}
	var firstErr error
	for _, shard := range shards {
		shardMiner, _ := w.storageMgr.GetShardMiner(shard)
		t := task{miner: shardMiner, shardIdx: shard}
		for i := uint64(0); i < w.config.ThreadsPerShard; i++ {
			t.taskChs = append(t.taskChs, make(chan *taskItem, 1))
		}
		w.assignTasks(t, blockNumber, blockNumber*12, mixDigest, reqDiff)
		for _, ch := range t.taskChs {
			wg.Add(1)
			go func(item *taskItem) {
				defer wg.Done()
				ok, err := w.mineTask(item)
				mu.Lock()
				defer mu.Unlock()
				found[item.shardIdx] = found[item.shardIdx] || ok
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("shard %d thread %d: %w", item.shardIdx, item.thread, err)
				}
			}(<-ch)
		}
	}
	wg.Wait()
	return found, firstErr
}

// MiningStates is the worker's mining state by shard (the map, read after the tasks returned).
func (miner *Miner) MiningStates() map[uint64]*MiningState { return miner.worker.miningStates }

// Result takes the shard's stored result (what es-node's found-nonce path keeps for the prover):
// its nonce and the samples es-node read again. ok is false when none was stored since the last
// call, so each head's answer is its own.
func (miner *Miner) Result(shard uint64) (nonce uint64, encodedSamples []common.Hash, ok bool) {
	w := miner.worker
	w.resultLock.Lock()
	defer w.resultLock.Unlock()
	r := w.resultMap[shard]
	if r == nil {
		return 0, nil, false
	}
	delete(w.resultMap, shard)
	return r.nonce, r.encodedData, true
}

// Hash is es-node's own hashing of one nonce for the shard (initHash, then computeHash through
// the worker's DataReader): hash1 and the sample indices, to judge another miner's nonce with.
func (miner *Miner) Hash(shard uint64, mixDigest common.Hash, nonce uint64) (common.Hash,
	[]uint64, error) {
	w := miner.worker
	shardMiner, _ := w.storageMgr.GetShardMiner(shard)
	return w.computeHash(shard, initHash(shardMiner, mixDigest, nonce))
}
