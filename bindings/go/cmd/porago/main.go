// Command porago is `pora hash` and `pora mine` written on the Go package alone: the conformance
// harness of the bindings (its --json output equals pora's, timings aside) and the example
// es-node developers read first; `porago task` runs es-node's per-shard task through porago.Engine.
//
//	porago hash --file shard0.dat --randao 0x.. --nonce 7 --json
//	porago mine --file shard0.dat --file shard1.dat --random-randao --slots 3 --find all --required-diff 0x..
//	porago task --file shard0.dat --randao 0x.. --required-diff 0x.. --json   (es-node's task via porago.Engine)
//
// Each --file is one shard; a shard of several data files is given as --file a.dat,b.dat (Go's
// flag package takes one value per occurrence, where pora takes `--file a.dat b.dat`).
package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	porago "github.com/pora-miner/pora/bindings/go"
	"github.com/pora-miner/pora/bindings/go/internal/keccak"
)

// exitInterrupted is pora's exit status after Ctrl-C / SIGTERM (128 + SIGINT).
const exitInterrupted = 130

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "hash":
		err = runHash(os.Args[2:])
	case "mine":
		err = runMine(os.Args[2:])
	case "task":
		err = runTask(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "porago: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: porago hash|mine|task [flags]  (porago hash -h for the flags)")
	os.Exit(2)
}

// fileGroups is a repeated --file flag: one shard per occurrence, files split on commas.
type fileGroups [][]string

func (f *fileGroups) String() string { return fmt.Sprint(*f) }
func (f *fileGroups) Set(v string) error {
	*f = append(*f, strings.Split(v, ","))
	return nil
}

// hexBytes is a 0x-prefixed fixed-length hex flag (--randao, --miner).
type hexBytes struct {
	name string
	len  int
	val  []byte
}

func (h *hexBytes) String() string { return "0x" + hex.EncodeToString(h.val) }
func (h *hexBytes) Set(v string) error {
	if !strings.HasPrefix(v, "0x") && !strings.HasPrefix(v, "0X") {
		return fmt.Errorf("%s %s: expected 0x followed by %d hex bytes", h.name, v, h.len)
	}
	b, err := hex.DecodeString(v[2:])
	if err != nil || len(b) != h.len {
		return fmt.Errorf("%s %s: expected 0x followed by %d hex bytes", h.name, v, h.len)
	}
	h.val = b
	return nil
}

// diffFlags are pora's difficulty inputs: --required-diff or --difficulty with --interval.
type diffFlags struct {
	required, difficulty, minimum *string
	interval, cutoff, divisor     *uint64
}

func addDiffFlags(fs *flag.FlagSet) diffFlags {
	return diffFlags{
		required:   fs.String("required-diff", "", "the threshold hash1 must not exceed (decimal or 0x hex); instead of --difficulty"),
		difficulty: fs.String("difficulty", "", "the storage contract's current difficulty (decimal or 0x hex)"),
		interval:   fs.Uint64("interval", 0, "seconds since the shard was last mined (blockTime - lastMineTime)"),
		cutoff:     fs.Uint64("cutoff", porago.DefaultCutoff, "difficulty adjustment cutoff, seconds"),
		divisor:    fs.Uint64("diff-adj-divisor", porago.DefaultDiffAdjDivisor, "difficulty adjustment divisor"),
		minimum:    fs.String("minimum-diff", fmt.Sprint(porago.DefaultMinimumDiff), "minimum difficulty (decimal or 0x hex)"),
	}
}

func (d diffFlags) difficultyOf(set map[string]bool) (*porago.Difficulty, error) {
	switch {
	case set["required-diff"] && (set["difficulty"] || set["interval"]):
		return nil, errors.New("--required-diff cannot be used with --difficulty/--interval")
	case set["required-diff"]:
		r, err := porago.ParseU256("--required-diff", *d.required)
		return &porago.Difficulty{RequiredDiff: r}, err
	case set["difficulty"] != set["interval"]:
		return nil, errors.New("--difficulty and --interval go together")
	case !set["difficulty"]:
		return nil, nil
	}
	diff, err := porago.ParseU256("--difficulty", *d.difficulty)
	if err != nil {
		return nil, err
	}
	min, err := porago.ParseU256("--minimum-diff", *d.minimum)
	if err != nil {
		return nil, err
	}
	if *d.cutoff == 0 || *d.divisor == 0 {
		return nil, errors.New("--cutoff and --diff-adj-divisor must be positive")
	}
	return &porago.Difficulty{Difficulty: diff, Interval: *d.interval, Cutoff: *d.cutoff, DiffAdjDivisor: *d.divisor, MinimumDiff: min}, nil
}

// parse parses args and returns which flags were given.
func parse(fs *flag.FlagSet, args []string) map[string]bool {
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "porago %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		os.Exit(2)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// randomRandao is pora's --random-randao: keccak256("pora-random-randao" || seed || slot), both
// 8-byte big-endian.
func randomRandao(seed, slot uint64) []byte {
	var s, n [8]byte
	binary.BigEndian.PutUint64(s[:], seed)
	binary.BigEndian.PutUint64(n[:], slot)
	sum := keccak.Sum256([]byte("pora-random-randao"), s[:], n[:])
	return sum[:]
}

func interruptContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// addShardFlags registers --file (fileHelp says what one group is) and --randao on fs.
func addShardFlags(fs *flag.FlagSet, fileHelp string) (*fileGroups, *hexBytes) {
	files := &fileGroups{}
	fs.Var(files, "file", fileHelp)
	randao := &hexBytes{name: "--randao", len: 32}
	fs.Var(randao, "randao", "the 32-byte randao mix digest, 0x-prefixed hex")
	return files, randao
}
