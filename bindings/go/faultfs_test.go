//go:build linux

// The Engine under a failing disk: a real shard mounted through the pora-faultfs FUSE
// pass-through (crates/pora-faultfs) with EIO inside 8 KVs, mined through the real pread path.
// With OnIOError "stop" (the Engine's default, es-node's behaviour) MineTask returns the read
// error naming the file and offset, as es-node's mineTask returns its ReadSample error; with
// "skip" it mines on, counts the errors and reports no nonce resting on a failed KV.
//
// Needs $PORA_FAULTFS (the pora-faultfs binary: .ci/bindings.sh builds it and sets it), root and
// /dev/fuse; elsewhere the tests skip, saying which is missing.
package porago

import (
	"bufio"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The faulted shard: 64 KVs of 4 KiB (256 KiB), EIO inside 8 of them (an eighth of the shard,
// so about a quarter of the nonces touch one with 2 samples each).
var (
	faultSpec   = shardSpec{shard: 0, kvEntriesBits: 6, kvBits: 12, miner: testMiner}
	faultBadKVs = []uint64{3, 11, 19, 27, 35, 43, 51, 59}
)

// faultMount is one running pora-faultfs and the path of the shard inside its mount.
type faultMount struct {
	cmd  *exec.Cmd
	path string
}

// mountFaulted mounts source through pora-faultfs with rules already in place, or skips the
// test naming what is missing (the binary, /dev/fuse, the right to mount).
func mountFaulted(t *testing.T, source, rules string) *faultMount {
	t.Helper()
	bin := os.Getenv("PORA_FAULTFS")
	if bin == "" {
		t.Skip("SKIP: PORA_FAULTFS is not set (the pora-faultfs binary: cargo build --release -p pora-faultfs; .ci/bindings.sh sets it)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("SKIP: no /dev/fuse: %v", err)
	}
	dir := t.TempDir()
	mnt, control := filepath.Join(dir, "mnt"), filepath.Join(dir, "rules")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	// The rules are written before the mount, so the very first read already sees them.
	if err := os.WriteFile(control, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, source, mnt, control)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	// The binary prints the file's path inside the mount once the mount is up.
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
	}()
	var path string
	select {
	case p, ok := <-line:
		if !ok {
			err := cmd.Wait()
			msg := strings.TrimSpace(stderr.String())
			// fuse_unavailable's answer (no root, no /dev/fuse, no fuse module) is a missing
			// platform feature; any other failure to mount is a failure.
			if !strings.Contains(msg, "mounting") {
				t.Skipf("SKIP: pora-faultfs cannot mount here: %s (%v)", msg, err)
			}
			t.Fatalf("pora-faultfs failed: %s (%v)", msg, err)
		}
		path = p
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("pora-faultfs did not mount within 20 s: %s", stderr.String())
	}
	m := &faultMount{cmd: cmd, path: path}
	t.Cleanup(func() {
		// SIGTERM unmounts; a stuck unmount must not hang the test run.
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("pora-faultfs did not stop within 10 s of SIGTERM: %s", stderr.String())
		}
	})
	return m
}

// kvRules is a pora-faultfs schedule: rule (`eio`, `hold`) for every read overlapping one of kvs.
func kvRules(rule string, s shardSpec, kvs []uint64) string {
	var b strings.Builder
	kv := uint64(1) << s.kvBits
	for _, k := range kvs {
		start := headerSize + k*kv
		fmt.Fprintf(&b, "%s %d %d\n", rule, start, start+kv)
	}
	return b.String()
}

func faultedShard(t *testing.T) (intact string, m *faultMount) {
	intact = writeShard(t, t.TempDir(), faultSpec, 30)
	return intact, mountFaulted(t, intact, kvRules("eio", faultSpec, faultBadKVs))
}

func TestEngineUnderEIOStopReturnsTheReadErrorNamingFileAndOffset(t *testing.T) {
	_, m := faultedShard(t)
	// OnIOError "" is "stop" for the Engine: es-node fails the task on a read error.
	e, err := OpenEngine([]string{m.path}, Options{Method: "pread", Threads: 2, Depth: 4, IgnoreProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	start := time.Now()
	// requiredDiff 0: no nonce is valid, so the task reads on until it meets a bad KV (about a
	// quarter of the nonces do).
	res, err := e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: big.NewInt(0), NonceEnd: 1 << 16, Deadline: start.Add(5 * time.Second)}, nil)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("MineTask through EIO with stop: no error (%d nonces tried)", res.NoncesTried)
	}
	if !errors.Is(err, ErrIO) {
		t.Errorf("error %v: want an I/O error (StatusIO)", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, m.path) || !strings.Contains(msg, "offset") || strings.Contains(msg, "panic") {
		t.Errorf("error %q: want the file %s and the offset named", msg, m.path)
	}
	t.Logf("MineTask with stop: %v (after %d ms)", err, time.Since(start).Milliseconds())
	// The offset named is inside one of the bad KVs.
	if !namesABadOffset(msg) {
		t.Errorf("error %q names no offset inside the failing KVs %v", msg, faultBadKVs)
	}
	// The first error ends the task, long before its 5 s deadline.
	if took > 3*time.Second {
		t.Errorf("the task ended %v after it started (deadline 5 s; a stop should end it at once)", took)
	}
}

// namesABadOffset says whether msg names "offset N" with N inside a failing KV.
func namesABadOffset(msg string) bool {
	rest := msg
	kv := uint64(1) << faultSpec.kvBits
	for {
		i := strings.Index(rest, "offset ")
		if i < 0 {
			return false
		}
		rest = rest[i+len("offset "):]
		var off uint64
		if _, err := fmt.Sscanf(rest, "%d", &off); err == nil && off >= headerSize {
			k := (off - headerSize) / kv
			for _, b := range faultBadKVs {
				if k == b {
					return true
				}
			}
		}
	}
}

func TestEngineUnderEIOSkipMinesOnWithNoNonceOnAFailedKV(t *testing.T) {
	intact, m := faultedShard(t)
	e, err := OpenEngine([]string{m.path}, Options{Method: "pread", Threads: 2, Depth: 4, IgnoreProfile: true, OnIOError: "skip"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	randao := make([]byte, 32)
	randao[0] = 0x42
	required := new(big.Int).Rsh(maxUint256(), 4) // one nonce in 16 is valid
	const nonces = 4096
	res, err := e.MineTask(Task{MixHash: randao, RequiredDiff: required, NonceEnd: nonces, Deadline: time.Now().Add(30 * time.Second), Find: LowestInRange}, nil)
	if err != nil {
		t.Fatalf("MineTask through EIO with skip: %v", err)
	}
	if res.Record.IOErrors == 0 {
		t.Error("no read errors counted, yet a quarter of the nonces touch a failing KV")
	}
	if res.NoncesTried == 0 || len(res.Record.Found) == 0 || !res.Found {
		t.Fatalf("skip must mine on: %d nonces tried, %d found", res.NoncesTried, len(res.Record.Found))
	}
	// es-node's answer from the intact file for each nonce: the clean valid nonces are those
	// whose samples are all outside the failing KVs.
	f, err := os.Open(intact)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := &goSampler{file: f, shard: 0, kvEntriesBits: faultSpec.kvEntriesBits, kvBits: faultSpec.kvBits, miner: testMiner, checks: 2}
	bad := map[uint64]bool{}
	for _, k := range faultBadKVs {
		bad[k] = true
	}
	onBad := func(idxs []uint64) bool {
		for _, idx := range idxs {
			if bad[idx>>(faultSpec.kvBits-5)] {
				return true
			}
		}
		return false
	}
	lowestClean, touched := uint64(nonces), 0
	for n := uint64(0); n < nonces; n++ {
		h, idxs, err := g.hash1(randao, n)
		if err != nil {
			t.Fatal(err)
		}
		if onBad(idxs) {
			touched++
			continue
		}
		if new(big.Int).SetBytes(h[:]).Cmp(required) <= 0 && n < lowestClean {
			lowestClean = n
		}
	}
	if touched == 0 {
		t.Fatal("no nonce touches a failing KV: the test proves nothing")
	}
	for _, p := range res.Record.Found {
		if onBad(p.SampleIdxs) {
			t.Errorf("nonce %d reported with samples %v inside a failing KV", p.Nonce, p.SampleIdxs)
		}
		h, idxs, err := g.hash1(randao, p.Nonce)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("0x%x", h); !strings.EqualFold(got, p.Hash1) || new(big.Int).SetBytes(h[:]).Cmp(required) > 0 {
			t.Errorf("nonce %d: pora hash1 %s, es-node's from the intact file %s (samples %v), required %x", p.Nonce, p.Hash1, got, idxs, required)
		}
	}
	// Samples are dependent, so a nonce meets at most one failed read: with skip, every nonce
	// touching a failing KV is one counted error and is dropped, every other one is tried.
	if res.Record.IOErrors != uint64(touched) || res.NoncesTried != nonces-uint64(touched) {
		t.Errorf("%d read errors and %d nonces tried; es-node's sampling says %d nonces touch a failing KV, %d do not",
			res.Record.IOErrors, res.NoncesTried, touched, nonces-touched)
	}
	if res.Nonce != lowestClean {
		t.Errorf("lowest reported nonce %d, want %d (the lowest valid nonce with every sample readable)", res.Nonce, lowestClean)
	}
	t.Logf("%d of %d nonces tried, %d read errors counted, %d of them touch a failing KV, %d found (lowest %d)",
		res.NoncesTried, nonces, res.Record.IOErrors, touched, len(res.Record.Found), res.Nonce)
}
