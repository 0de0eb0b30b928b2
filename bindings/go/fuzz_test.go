package porago

// Fuzz tests (go test -fuzz) for what the package decodes or checks: the slot record pora
// returns (parseSlot), the find mode and 256-bit values a caller types (ParseFind, ParseU256,
// Difficulty.toC), and options through the C ABI's pora_open. Plain `go test` runs each on its
// seed corpus; a longer run:
//
//	go test -run='^$' -fuzz=FuzzParseSlot -fuzztime=60s
//
// Every input must give a value or an error, never a panic.

import (
	"encoding/json"
	"testing"
)

func FuzzParseSlot(f *testing.F) {
	f.Add([]byte(`{"shards":[{"slot":0,"shard":0,"noncesTried":5,"found":[]}],"ioErrorMessages":["x"]}`))
	f.Add([]byte(`{"shards":[null,{}],"ioErrorMessages":null}`))
	f.Add([]byte(`{"shards":[{"found":[{"nonce":-1}]}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		report, err := parseSlot(data)
		if err != nil {
			return
		}
		if report == nil {
			t.Fatal("no report and no error")
		}
		for i, s := range report.Shards {
			if s.Raw == nil {
				t.Fatalf("shard %d: its raw record is missing", i)
			}
		}
		if _, err := json.Marshal(report); err != nil {
			t.Fatalf("a decoded report does not encode: %v", err)
		}
	})
}

func FuzzParseFindAndU256(f *testing.F) {
	for _, s := range []string{"first", "best", "all", "0x10", "1000000", "0x", "-1", "1_0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if find, err := ParseFind(s); err == nil && find != FindFirst && find != FindBest && find != FindAll {
			t.Fatalf("ParseFind(%q) = %d", s, find)
		}
		v, err := ParseU256("difficulty", s)
		if err != nil {
			return
		}
		if v.Sign() < 0 || v.BitLen() > 256 {
			t.Fatalf("ParseU256(%q) = %v: not a 256-bit value", s, v)
		}
		d := Difficulty{RequiredDiff: v}
		if _, err := d.toC(); err != nil {
			t.Fatalf("a parsed 256-bit value is refused: %v", err)
		}
	})
}

// FuzzOpenOptions sends arbitrary options through the C ABI's pora_open (its option checks)
// with a file that does not exist: an error every time, never a panic or a crash.
func FuzzOpenOptions(f *testing.F) {
	f.Add("auto", 0, 0, 0, "retry", "", uint8(0))
	f.Add("pread", 4, 64, 2, "skip", "/nonexistent/profile.toml", uint8(1))
	f.Add("uring-direct", 1<<31, -1, 9, "stop", "x", uint8(2))
	f.Fuzz(func(t *testing.T, method string, threads, depth, checks int, onIOError, profile string, files uint8) {
		o := Options{Method: method, Threads: threads, Depth: depth, RandomChecks: checks, OnIOError: onIOError, Profile: profile}
		var paths [][]string
		switch files % 3 {
		case 1:
			paths = [][]string{{"/nonexistent/pora-fuzz.dat"}}
		case 2:
			paths = [][]string{{"/nonexistent/a.dat", "/nonexistent/b.dat"}, {}}
		}
		s, err := Open(paths, o)
		if err == nil {
			s.Close()
			t.Fatalf("opened %v with %+v", paths, o)
		}
	})
}
