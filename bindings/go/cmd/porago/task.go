// porago task: one slot of es-node's mining task per shard through porago.Engine, the engine
// es-node's miner would call, printing es-node's own state for it (mining power in basis points,
// sampling time, the first valid nonce with its samples). Shards' tasks run concurrently, as
// es-node runs one task per shard. --tasks N runs N consecutive slots on the same engines, as a
// node does for months (each slot's randao differs in its last byte; `auto` decides again before
// every slot: the record names the method each slot used).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"sync"
	"time"

	porago "github.com/pora-miner/pora/bindings/go"
)

// taskRecord is what es-node keeps of a task: its MiningState and the found nonce's samples.
type taskRecord struct {
	Engine         string       `json:"engine"`
	Task           uint64       `json:"task"`
	Shard          uint64       `json:"shard"`
	MiningPowerBps uint64       `json:"miningPowerBps"`
	SamplingTimeMs uint64       `json:"samplingTimeMs"`
	NoncesTried    uint64       `json:"noncesTried"`
	Method         string       `json:"method"`
	Threads        int          `json:"threads"`
	Depth          int          `json:"depth"`
	Found          []foundNonce `json:"found"`
}

type foundNonce struct {
	Nonce          uint64   `json:"nonce"`
	SampleIdxs     []uint64 `json:"sampleIdxs"`
	EncodedSamples []string `json:"encodedSamples"`
}

func runTask(args []string) error {
	fs := flag.NewFlagSet("task", flag.ContinueOnError)
	files, randao := addShardFlags(fs, "data files of one shard (comma-separated); repeat --file for each further shard")
	required := fs.String("required-diff", "", "the threshold hash1 must not exceed (decimal or 0x hex)")
	slotSec := fs.String("slot", fmt.Sprint(porago.DefaultSlotLength.Seconds()), "slot length in seconds (es-node's)")
	nonceLimit := fs.Uint64("nonce-limit", porago.DefaultNonces, "nonces per shard and slot (es-node's)")
	method := fs.String("method", "auto", "access method")
	threads := fs.Int("threads", 0, "worker threads [default: chosen by pora]")
	depth := fs.Int("depth", 0, "reads in flight per thread [default: chosen by pora]")
	asJSON := fs.Bool("json", false, "one JSON object per shard and task")
	tasks := fs.Uint64("tasks", 1, "consecutive slots on the same engines (the randao's last byte differs per slot)")
	set := parse(fs, args)
	if len(*files) == 0 || !set["randao"] || !set["required-diff"] {
		return errors.New("task: --file, --randao and --required-diff are required")
	}
	if *tasks == 0 {
		return errors.New("task: --tasks must be at least 1")
	}
	diff, err := porago.ParseU256("--required-diff", *required)
	if err != nil {
		return err
	}
	slotLen, err := parseSlot(*slotSec)
	if err != nil {
		return err
	}
	engines := make([]*porago.Engine, len(*files))
	for i, group := range *files {
		e, err := porago.OpenEngine(group, porago.Options{Method: *method, Threads: *threads, Depth: *depth})
		if err != nil {
			return err
		}
		defer e.Close()
		engines[i] = e
	}
	for t := uint64(0); t < *tasks; t++ {
		mix := append([]byte(nil), randao.val...)
		mix[len(mix)-1] ^= byte(t)
		deadline := time.Now().Add(slotLen)
		records := make([]taskRecord, len(engines))
		errs := make([]error, len(engines))
		var wg sync.WaitGroup
		for i, e := range engines {
			wg.Add(1)
			go func(i int, e *porago.Engine) {
				defer wg.Done()
				records[i], errs[i] = mineTask(e, mix, diff, *nonceLimit, deadline)
			}(i, e)
		}
		wg.Wait()
		for i, rec := range records {
			if errs[i] != nil {
				return errs[i]
			}
			rec.Task = t
			printTask(rec, *asJSON)
		}
	}
	return nil
}

func mineTask(e *porago.Engine, randao []byte, diff *big.Int, limit uint64, deadline time.Time) (taskRecord, error) {
	res, err := e.MineTask(porago.Task{MixHash: randao, RequiredDiff: diff, NonceEnd: limit, NonceLimit: limit, Deadline: deadline}, nil)
	if err != nil {
		return taskRecord{}, err
	}
	c := e.Shards().Choice
	method := res.Record.Method // the method this slot read with (auto may switch between slots)
	if method == "" {
		method = c.Method
	}
	rec := taskRecord{Engine: "pora", Shard: e.Shards().ShardIdxs[0], MiningPowerBps: res.MiningPowerBps, SamplingTimeMs: res.SamplingTimeMs,
		NoncesTried: res.NoncesTried, Method: method, Threads: c.Threads, Depth: c.Depth, Found: []foundNonce{}}
	if res.Found {
		rec.Found = append(rec.Found, foundNonce{res.Nonce, res.SampleIdxs, res.EncodedSamples})
	}
	return rec, nil
}

func printTask(r taskRecord, asJSON bool) {
	if asJSON {
		line, _ := json.Marshal(r)
		fmt.Println(string(line))
		return
	}
	fmt.Printf("shard %d: mining power %d bps, sampling time %d ms, %d nonces tried, %s %dx%d, found %d\n",
		r.Shard, r.MiningPowerBps, r.SamplingTimeMs, r.NoncesTried, r.Method, r.Threads, r.Depth, len(r.Found))
	for _, f := range r.Found {
		fmt.Printf("  nonce %d sampleIdxs %v encodedSamples %v\n", f.Nonce, f.SampleIdxs, f.EncodedSamples)
	}
}
