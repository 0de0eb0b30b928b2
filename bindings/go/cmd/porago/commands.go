// The two subcommands of porago: hash (one nonce) and mine (slots), with pora's flags and output.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	porago "github.com/pora-miner/pora/bindings/go"
)

func runHash(args []string) error {
	fs := flag.NewFlagSet("hash", flag.ContinueOnError)
	files, randao := addShardFlags(fs, "data files of the shard (repeat, or comma-separated)")
	nonce := fs.Uint64("nonce", 0, "the nonce")
	miner := &hexBytes{name: "--miner", len: 20}
	fs.Var(miner, "miner", "miner address; defaults to the files' header")
	shard := fs.Int64("shard", -1, "shard index; must match the files (checked)")
	kvBits := fs.Int("kv-entries-bits", 0, "shard size as log2(KVs); inferred from the files when omitted")
	checks := fs.Int("random-checks", porago.DefaultRandomChecks, "samples per nonce")
	diffs := addDiffFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	set := parse(fs, args)
	if len(*files) == 0 || !set["randao"] || !set["nonce"] {
		return errors.New("hash: --file, --randao and --nonce are required")
	}
	diff, err := diffs.difficultyOf(set)
	if err != nil {
		return err
	}
	var group []string
	for _, g := range *files {
		group = append(group, g...)
	}
	// One read at a time through plain pread, as `pora hash` does.
	shards, err := porago.Open([][]string{group}, porago.Options{
		Method: "pread", Threads: 1, Depth: 1, RandomChecks: *checks,
		KVEntriesBits: *kvBits, IgnoreProfile: true, Miner: miner.val,
	})
	if err != nil {
		return err
	}
	defer shards.Close()
	idx, err := onlyShard(shards, *shard)
	if err != nil {
		return err
	}
	rec, err := shards.HashWithDifficulty(idx, randao.val, *nonce, diff)
	if err != nil {
		return err
	}
	if *asJSON {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, rec.Raw, "", "  "); err != nil {
			return err
		}
		fmt.Println(pretty.String())
		return nil
	}
	printHash(rec)
	return nil
}

// onlyShard is the shard index of a one-shard set, checked against --shard when given.
func onlyShard(shards *porago.Shards, want int64) (uint64, error) {
	idx := shards.ShardIdxs[0]
	if want >= 0 && uint64(want) != idx {
		return 0, fmt.Errorf("--shard %d does not match the files, which hold shard %d", want, idx)
	}
	return idx, nil
}

func printHash(r *porago.HashRecord) {
	fmt.Printf("shard        %d\n", r.Shard)
	fmt.Printf("miner        %s\n", r.Miner)
	fmt.Printf("nonce        %d\n", r.Nonce)
	fmt.Printf("hash0        %s\n", r.Hash0)
	for i := range r.SampleIdxs {
		fmt.Printf("sample %d     idx %d (kv %d, sample %d in kv) = %s\n", i, r.SampleIdxs[i], r.KvIdxs[i], r.SampleIdxsInKv[i], r.EncodedSamples[i])
	}
	fmt.Printf("hash1        %s\n", r.Hash1)
	if r.Valid != nil {
		fmt.Printf("requiredDiff %s\n", r.RequiredDiff)
		fmt.Printf("valid        %v\n", *r.Valid)
	}
}

// mineFlags are `pora mine`'s flags.
type mineFlags struct {
	files                 fileGroups
	randao, miner         *hexBytes
	randomRandao, asJSON  *bool
	seed, slots           *uint64
	nonces, find, slotSec *string
	method, onIOError     *string
	profile               *string
	threads, depth        *int
	checks, kvBits        *int
	diffs                 diffFlags
}

func newMineFlags(fs *flag.FlagSet) *mineFlags {
	m := &mineFlags{
		randao: &hexBytes{name: "--randao", len: 32},
		miner:  &hexBytes{name: "--miner", len: 20},
	}
	fs.Var(&m.files, "file", "data files of one shard (comma-separated); repeat --file for each further shard")
	fs.Var(m.randao, "randao", "the 32-byte randao mix digest, 0x-prefixed hex (the same for every slot)")
	m.randomRandao = fs.Bool("random-randao", false, "derive each slot's randao from --seed and the slot number")
	m.seed = fs.Uint64("seed", 1, "seed of --random-randao")
	m.nonces = fs.String("nonces", fmt.Sprintf("0..%d", porago.DefaultNonces), "nonces of each shard's slot, A..B (B exclusive)")
	m.slotSec = fs.String("slot", fmt.Sprint(porago.DefaultSlotLength.Seconds()), "slot length in seconds")
	m.slots = fs.Uint64("slots", 1, "slots to mine, on a fixed rhythm: slot k ends k+1 slot lengths after the first began")
	m.diffs = addDiffFlags(fs)
	m.find = fs.String("find", "first", "which valid nonces to report: first, best or all")
	m.checks = fs.Int("random-checks", porago.DefaultRandomChecks, "samples per nonce")
	m.kvBits = fs.Int("kv-entries-bits", 0, "shard size as log2(KVs); inferred when omitted")
	m.method = fs.String("method", "auto", "access method")
	m.threads = fs.Int("threads", 0, "worker threads [default: chosen by pora]")
	m.depth = fs.Int("depth", 0, "reads in flight per thread [default: chosen by pora]")
	m.onIOError = fs.String("on-io-error", "retry", "retry, skip or stop")
	fs.Var(m.miner, "miner", "miner address used in hash0; defaults to the files' header")
	m.asJSON = fs.Bool("json", false, "one JSON object per slot and shard (JSON lines)")
	m.profile = fs.String("profile", "", "tune profile to use [default: <first file>.pora-profile.toml when present]")
	return m
}

func parseNonces(s string) (uint64, uint64, error) {
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		return 0, 0, fmt.Errorf("--nonces %s: expected A..B, e.g. 0..%d", s, porago.DefaultNonces)
	}
	start, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
	end, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("--nonces %s: A and B must be nonces", s)
	}
	if start >= end {
		return 0, 0, fmt.Errorf("--nonces %s: the range is empty (B must be greater than A)", s)
	}
	return start, end, nil
}

func parseSlot(s string) (time.Duration, error) {
	secs, err := strconv.ParseFloat(s, 64)
	limit := porago.MaxSlotLength.Seconds()
	if err != nil || !(secs > 0 && secs <= limit) || math.IsNaN(secs) {
		return 0, fmt.Errorf("--slot %s: must be more than 0 and at most %v seconds", s, limit)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

func runMine(args []string) error {
	fs := flag.NewFlagSet("mine", flag.ContinueOnError)
	m := newMineFlags(fs)
	set := parse(fs, args)
	if len(m.files) == 0 {
		return errors.New("mine: --file is required")
	}
	if set["randao"] == *m.randomRandao {
		return errors.New("mine: give exactly one of --randao and --random-randao")
	}
	start, end, err := parseNonces(*m.nonces)
	if err != nil {
		return err
	}
	slotLen, err := parseSlot(*m.slotSec)
	if err != nil {
		return err
	}
	find, err := porago.ParseFind(*m.find)
	if err != nil {
		return fmt.Errorf("--%w", err)
	}
	diff, err := m.diffs.difficultyOf(set)
	if err != nil {
		return err
	}
	if *m.slots < 1 {
		return errors.New("--slots must be at least 1")
	}
	shards, err := porago.Open(m.files, porago.Options{
		Method: *m.method, Threads: *m.threads, Depth: *m.depth, RandomChecks: *m.checks,
		KVEntriesBits: *m.kvBits, OnIOError: *m.onIOError, Profile: *m.profile, Miner: m.miner.val,
	})
	if err != nil {
		return err
	}
	defer shards.Close()
	for _, note := range shards.Notes {
		fmt.Fprintf(os.Stderr, "porago mine: %s\n", note)
	}
	if !*m.asJSON {
		for _, c := range shards.Choices {
			fmt.Fprintf(os.Stderr, "porago mine: shards %v: %s %d threads x depth %d (%s)\n", c.Shards, c.Method, c.Threads, c.Depth, c.Why)
		}
	}
	ctx, stop := interruptContext()
	defer stop()
	// A fixed rhythm, as pora mine --slots and es-node's slots: slot k (0-based) ends at
	// begun + (k+1) x the slot length, whatever steering, stragglers or verification cost the
	// slot before it. Each slot gets that absolute deadline, never a length started anew.
	begun := time.Now()
	for slot := uint64(0); slot < *m.slots; slot++ {
		randao := m.randao.val
		if *m.randomRandao {
			randao = randomRandao(*m.seed, slot)
		}
		if slot+1 > uint64(math.MaxInt64/int64(slotLen)) {
			return fmt.Errorf("--slots %d: slot %d would end further out than this system's clock reaches", *m.slots, slot)
		}
		deadline := begun.Add(time.Duration(slot+1) * slotLen)
		if late := time.Since(deadline); late >= 0 {
			// The slot before ran past this slot's whole length: this one has no time, as
			// es-node would miss it, and the rhythm holds (pora mine prints a record with
			// nothing tried; the Go API refuses a deadline already past).
			fmt.Fprintf(os.Stderr, "porago mine: slot %d has no time: its deadline passed %.0f ms before the slot before it ended\n", slot, late.Seconds()*1e3)
			continue
		}
		slotCtx, cancel := context.WithDeadline(ctx, deadline)
		report, err := shards.MineSlot(slotCtx, porago.SlotRequest{
			Randao: randao, NonceStart: start, NonceEnd: end, Find: find, Difficulty: diff, SlotNumber: slot,
		})
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && report == nil && ctx.Err() == nil {
			// The deadline came in the moment between the check above and the call.
			fmt.Fprintf(os.Stderr, "porago mine: slot %d has no time: its deadline passed before the call\n", slot)
			continue
		}
		if err != nil && report == nil {
			return err
		}
		printReport(slot, report, *m.asJSON)
		if err != nil {
			fmt.Fprintf(os.Stderr, "porago mine: interrupted during slot %d; statistics above are partial\n", slot)
			shards.Close()
			os.Exit(exitInterrupted)
		}
	}
	return nil
}

func printReport(slot uint64, r *porago.SlotReport, asJSON bool) {
	for _, s := range r.Shards {
		if asJSON {
			fmt.Println(string(s.Raw))
			continue
		}
		fmt.Printf("slot %d shard %d: tried %d/%d nonces, mining power %.2f%% (%.0f bps), %.3f s, %d samples (%.0f/s), %s %dx%d, found %d\n",
			slot, s.Shard, s.NoncesTried, s.NonceLimit, s.MiningPower*100, math.Floor(s.MiningPower*10000),
			s.ElapsedSec, s.SamplesRead, s.SamplesPerSec, s.Method, s.Threads, s.Depth, len(s.Found))
		for _, p := range s.Found {
			fmt.Printf("  nonce %d hash1 %s\n", p.Nonce, p.Hash1)
			for i := range p.SampleIdxs {
				fmt.Printf("    sample %d: idx %d kv %d in-kv %d = %s\n", i, p.SampleIdxs[i], p.KvIdxs[i], p.SampleIdxsInKv[i], p.EncodedSamples[i])
			}
		}
	}
	for _, msg := range r.IOErrorMessages {
		fmt.Fprintf(os.Stderr, "porago mine: read error: %s\n", msg)
	}
}
