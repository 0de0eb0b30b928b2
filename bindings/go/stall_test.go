//go:build linux

// The Engine on a stalled disk (RELIABILITY.md): tasks of 1 s over a shard whose reads in 2 KVs the
// pora-faultfs server holds until released. Every task returns by its deadline plus the slot's
// bound, the workers held by the device stay within the pool's cap (twice its threads), a task
// after the release mines every nonce with every worker, and Close returns at once even while
// reads are held: es-node's consecutive 12 s tasks keep their rhythm through a stall.
//
// Needs $PORA_FAULTFS, root and /dev/fuse (mountFaulted skips, saying which is missing).
package porago

import (
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestEngineTasksThroughHeldReadsStayBoundedAndRecover(t *testing.T) {
	intact := writeShard(t, t.TempDir(), faultSpec, 36)
	held := kvRules("hold", faultSpec, []uint64{20, 40})
	m := mountFaulted(t, intact, held)
	// The binary re-reads its rules file (beside the mount) whenever its text changes.
	control := filepath.Join(filepath.Dir(filepath.Dir(m.path)), "rules")
	setRules := func(text string) {
		t.Helper()
		if err := os.WriteFile(control, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const threads = 8
	e, err := OpenEngine([]string{m.path}, Options{Method: "pread", Threads: threads, Depth: 1, IgnoreProfile: true, OnIOError: "skip"})
	if err != nil {
		t.Fatal(err)
	}
	const (
		slot   = time.Second
		bound  = 1250 * time.Millisecond // the slot's own bound (1 s) and scheduling slack
		nonces = 20000
	)
	required := new(big.Int).Rsh(maxUint256(), 6)
	task := func(n int) (TaskResult, time.Duration) {
		t.Helper()
		start := time.Now()
		res, err := e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: required, NonceEnd: nonces, Deadline: start.Add(slot), Find: LowestInRange, BlockNumber: uint64(n)}, nil)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("task %d: %v", n, err)
		}
		if took > slot+bound {
			t.Errorf("task %d returned %v after it started (slot %v + bound %v)", n, took, slot, bound)
		}
		if res.Record.StuckBackends > 2*threads {
			t.Errorf("task %d: %d workers held by the device, past the pool's cap of %d", n, res.Record.StuckBackends, 2*threads)
		}
		return res, took
	}
	var tried []uint64
	recovered := -1
	for n := 0; n < 8; n++ {
		if n == 4 {
			setRules("")
		}
		res, _ := task(n)
		tried = append(tried, res.NoncesTried)
		if n >= 4 && recovered < 0 && res.NoncesTried == nonces && res.Record.StuckBackends == 0 && res.Record.IOErrors == 0 {
			recovered = n
		}
	}
	if recovered < 0 {
		t.Fatalf("no task after the release mined every nonce with every worker: nonces tried %v", tried)
	}
	// Held again: one task, then Close while its reads are still held.
	setRules(held)
	task(8)
	closing := time.Now()
	e.Close()
	if took := time.Since(closing); took > time.Second {
		t.Errorf("Close took %v with reads held", took)
	}
	setRules("")
	t.Logf("nonces tried per task %v; first full task after the release %d; Close with reads held %v", tried, recovered, time.Since(closing))
}

// The Engine's deadline is es-node's, on es-node's clock: with `auto` on a mount whose every
// request (the page-cache facts' open, a switch's opens, each read) is answered 200 ms late,
// steering waits on the device inside the task's time, and each task returns by its Deadline
// plus the slot's 1 s bound, measured here with time.Now against Task.Deadline; the record's
// EndLateMs says the same from pora's side.
func TestEngineAutoSteeringOnAStallingMountEndsByTheDeadline(t *testing.T) {
	intact := writeShard(t, t.TempDir(), faultSpec, 37)
	// Stalled from the start: the rules file is re-read asynchronously, so a change between two
	// tasks could miss the second task's steering.
	m := mountFaulted(t, intact, "stall 200\n")
	control := filepath.Join(filepath.Dir(filepath.Dir(m.path)), "rules")
	e, err := OpenEngine([]string{m.path}, Options{Method: "auto", IgnoreProfile: true, OnIOError: "skip"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const slot = 1500 * time.Millisecond
	// Few valid nonces: re-verifying them through the stalled mount may take the slot's other
	// half second by design; this test is about steering's time, not the verification's.
	required := new(big.Int).Rsh(maxUint256(), 16)
	var steeringMs []float64
	worst := time.Duration(-1 << 62)
	for n := 0; n < 4; n++ {
		deadline := time.Now().Add(slot)
		res, err := e.MineTask(Task{MixHash: make([]byte, 32), RequiredDiff: required, NonceEnd: 1 << 20, Deadline: deadline, Find: LowestInRange, BlockNumber: uint64(n)}, nil)
		late := time.Since(deadline)
		if err != nil {
			t.Fatalf("task %d: %v", n, err)
		}
		if late > time.Second {
			t.Errorf("task %d returned %v after its deadline (bound 1 s)", n, late)
		}
		if res.Record.EndLateMs > 1000 || res.Record.EndLateMs > float64(late)/1e6+1 {
			t.Errorf("task %d: endLateMs %.1f, returned %v after the deadline", n, res.Record.EndLateMs, late)
		}
		if late > worst {
			worst = late
		}
		if s := res.Record.Steering; s != nil {
			steeringMs = append(steeringMs, s.DecisionMs+s.SwitchMs)
		}
	}
	_ = os.WriteFile(control, nil, 0o644)
	held := 0.0
	for _, ms := range steeringMs {
		if ms > held {
			held = ms
		}
	}
	if held < 150 {
		t.Errorf("steering never waited on the stalled mount: %v ms per task", steeringMs)
	}
	t.Logf("auto through a 200 ms stall: steering ms per task %v, worst return past the deadline %v", steeringMs, worst)
}
