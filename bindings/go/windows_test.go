//go:build windows

// The Go package on Windows (cross-compiled and run under Wine by .ci/windows.sh), beside the
// portable tests of pora_test.go, which run here too (vectors, the simulated disk's cancel and
// Close, bad input): every Windows access method must open and its `--find all` equal
// `pora.exe mine --json`; cancelling a slot and Close during one stop real overlapped reads on
// a completion port; bad input that only Windows has; and porago.exe equals pora.exe on every
// es-node vector and a two-slot mine.
//
// PORA_BINARY names the Windows pora.exe and PORAGO_BINARY a cross-built porago.exe (no Go
// toolchain runs under Wine to build one, which is why TestPoragoEqualsPora is left out there).
package porago

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// windowsMethods are the methods pora-io has on Windows; each must open here.
var windowsMethods = []string{"pread", "pread-shared", "mmap", "iocp", "iocp-unbuffered"}

// windowsBinary is the executable an environment variable names, or a visible skip.
func windowsBinary(t *testing.T, env string) string {
	bin := os.Getenv(env)
	if bin == "" {
		t.Skipf("SKIP: %s is not set (the Windows executable to compare with; .ci/windows.sh sets it)", env)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return bin
}

func TestWindowsMethodsFindAllEqualsPoraExe(t *testing.T) {
	windowsBinary(t, "PORA_BINARY")
	paths := smallShards(t)
	randao := bytes.Repeat([]byte{0x6b}, 32)
	for _, method := range windowsMethods {
		method := method
		t.Run(method, func(t *testing.T) {
			s, err := Open([][]string{{paths[0]}, {paths[1]}}, Options{Method: method, Threads: 2, Depth: 4, IgnoreProfile: true})
			if err != nil {
				t.Fatalf("a Windows method must open on Windows: %v", err)
			}
			report, err := s.MineSlot(context.Background(), SlotRequest{Randao: randao, NonceStart: 0, NonceEnd: 768, Find: FindAll, Difficulty: &Difficulty{RequiredDiff: findAllDiff}, SlotLength: time.Minute})
			if cerr := s.Close(); cerr != nil {
				t.Fatal(cerr)
			}
			if err != nil {
				t.Fatal(err)
			}
			out := runPora(t, "mine", "--file", paths[0], "--file", paths[1], "--randao", "0x"+hex.EncodeToString(randao),
				"--nonces", "0..768", "--find", "all", "--required-diff", findAllDiff.String(), "--method", method,
				"--threads", "2", "--depth", "4", "--slot", "60", "--json")
			lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
			if len(lines) != len(report.Shards) {
				t.Fatalf("pora.exe printed %d records, the package returned %d", len(lines), len(report.Shards))
			}
			found := 0
			for i, line := range lines {
				want, got := withoutTimings(t, line), withoutTimings(t, report.Shards[i].Raw)
				if got["method"] != method {
					t.Errorf("shard %d mined with %v, asked for %s", i, got["method"], method)
				}
				if !equalJSON(want, got) {
					t.Errorf("shard %d:\n pora.exe: %v\n       go: %v", i, want, got)
				}
				found += len(report.Shards[i].Found)
			}
			if found == 0 {
				t.Errorf("no valid nonce among 1536 at 1/8 odds")
			}
			t.Logf("%s: %d valid nonces, equal to pora.exe mine --json", method, found)
		})
	}
}

// overlappedMethods queue reads on a completion port: what cancel and Close must withdraw.
var overlappedMethods = []string{"iocp", "iocp-unbuffered"}

func TestWindowsCancelStopsAnOverlappedSlot(t *testing.T) {
	path := smallShards(t)[0]
	for _, method := range overlappedMethods {
		s, err := Open([][]string{{path}}, Options{Method: method, Threads: 2, Depth: 16, IgnoreProfile: true})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		for i := 0; i < 5; i++ {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Duration(50+20*i)*time.Millisecond, cancel)
			start := time.Now()
			r, err := s.MineSlot(ctx, longSlot())
			took := time.Since(start)
			cancel()
			if !errors.Is(err, context.Canceled) || r == nil || !r.Shards[0].Interrupted {
				t.Fatalf("%s cancel %d: report %+v err %v", method, i, r, err)
			}
			if n := r.Shards[0].NoncesTried; n == 0 || n >= 1<<30 {
				t.Errorf("%s cancel %d: %d nonces tried, want a partial count", method, i, n)
			}
			// The slot had 10 minutes; cancel reached it if it returned within seconds.
			if took > 10*time.Second {
				t.Errorf("%s cancel %d: returned %v after the slot started", method, i, took)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWindowsCloseDuringAnOverlappedSlot(t *testing.T) {
	path := smallShards(t)[0]
	for _, method := range overlappedMethods {
		s, err := Open([][]string{{path}}, Options{Method: method, Threads: 2, Depth: 16, IgnoreProfile: true})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		done := startLongSlot(t, s)
		if err := s.Close(); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("%s: MineSlot after Close: %v", method, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: MineSlot did not return after Close", method)
		}
	}
}

func TestWindowsBadInputReturnsErrors(t *testing.T) {
	shard := smallShards(t)[0]
	// A drive-letter path with backslashes to a file that is not there names the file.
	missing := `C:\pora-no-such-dir\pora-go-missing.dat`
	if _, err := Open([][]string{{missing}}, Options{IgnoreProfile: true}); !errors.Is(err, ErrIO) || !strings.Contains(err.Error(), "pora-go-missing.dat") {
		t.Errorf("missing file: %v", err)
	}
	// A directory is not a data file.
	dir := filepath.Dir(shard)
	if _, err := Open([][]string{{dir}}, Options{Method: "pread", IgnoreProfile: true}); err == nil {
		t.Errorf("a directory opened as a shard")
	} else if !strings.Contains(err.Error(), filepath.Base(dir)) {
		t.Errorf("directory: the error does not name it: %v", err)
	}
	// Linux's methods are refused with the reason, not a crash.
	for method, why := range map[string]string{"uring": "io_uring", "uring-direct": "io_uring", "direct": "iocp-unbuffered"} {
		_, err := Open([][]string{{shard}}, Options{Method: method, IgnoreProfile: true})
		var pe *Error
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), why) {
			t.Errorf("method %s on Windows: %v (want an error saying %q)", method, err, why)
		}
	}
}

func TestPoragoExeEqualsPoraExe(t *testing.T) {
	pora, porago := windowsBinary(t, "PORA_BINARY"), windowsBinary(t, "PORAGO_BINARY")
	run := func(bin string, args ...string) []byte {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			msg := ""
			if ee, ok := err.(*exec.ExitError); ok {
				msg = string(ee.Stderr)
			}
			t.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, msg)
		}
		return out
	}
	dir := t.TempDir()
	vs := vectors(t)
	for _, v := range vs {
		path := buildVectorShard(t, dir, v)
		args := []string{"hash", "--file", path, "--randao", v.Randao, "--nonce", itoa(v.Nonce),
			"--random-checks", itoa(uint64(v.RandomChecks)), "--kv-entries-bits", itoa(uint64(v.KVEntriesBits)), "--json"}
		a, b := run(pora, args...), run(porago, args...)
		if !bytes.Equal(a, b) {
			t.Errorf("nonce %d: hash differs:\npora.exe:   %s\nporago.exe: %s", v.Nonce, a, b)
		}
		if rec := withoutTimings(t, b); !strings.EqualFold(rec["hash1"].(string), v.Hash1) {
			t.Errorf("nonce %d: porago.exe hash1 %v, es-node %s", v.Nonce, rec["hash1"], v.Hash1)
		}
	}
	paths := smallShards(t)
	mineArgs := []string{"mine", "--file", paths[0], "--file", paths[1], "--random-randao", "--seed", "9", "--slots", "2",
		"--nonces", "0..300", "--find", "all", "--difficulty", "100", "--interval", "10", "--minimum-diff", "8",
		"--method", "iocp", "--threads", "2", "--depth", "4", "--json"}
	a := bytes.Split(bytes.TrimSpace(run(pora, mineArgs...)), []byte("\n"))
	b := bytes.Split(bytes.TrimSpace(run(porago, mineArgs...)), []byte("\n"))
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("expected 2 slots x 2 shards of records, got %d and %d", len(a), len(b))
	}
	for i := range a {
		if x, y := withoutTimings(t, a[i]), withoutTimings(t, b[i]); !equalJSON(x, y) {
			t.Errorf("record %d differs:\npora.exe:   %v\nporago.exe: %v", i, x, y)
		}
	}
	t.Logf("porago.exe equals pora.exe on %d es-node vectors and 2 slots x 2 shards (iocp)", len(vs))
}
