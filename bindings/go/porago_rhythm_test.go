//go:build linux

// porago mine --slots on a fixed rhythm, as pora mine --slots: slot k ends at the run's start +
// (k+1) slot lengths, the caller's deadline taken as absolute, never a length restarted each
// slot. Shown where the difference shows: `auto` on a mount whose every request (open, the
// page-cache facts' open, a switch's opens, each read) is answered 200 ms late, so each slot ends
// a little past its deadline and the next one's steering waits on the device; a restarted
// length would add that to every later slot.
//
// Needs $PORA_FAULTFS, root and /dev/fuse (mountFaulted skips, saying which is missing) and the
// Go toolchain (porago is built here).
package porago

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Measured on this test's clock from when each record is read, with no figure of porago's own:
// slot k's record comes by slot 0's record + k slot lengths + 1 s (the slot's bound: 500 ms for
// stragglers, 500 ms for verification; a length restarted each slot adds each slot's lateness to
// every later one and breaks it), and slot 0's came at least one slot length after porago was
// started (it ran to its deadline). porago's endLateMs is then checked against that clock: the
// differences between slots agree with the records' times within 250 ms, and slot 0's lateness is
// at most what this clock allows, so an under-reported lateness fails here instead of loosening
// the checks.
func TestPoragoSlotsKeepAFixedRhythmWhileSteeringWaitsOnAStallingMount(t *testing.T) {
	const (
		slots   = 5
		slotLen = 1500 * time.Millisecond
	)
	intact := writeShard(t, t.TempDir(), faultSpec, 38)
	// Stalled from the start: slot k+1 steers right after slot k's record.
	m := mountFaulted(t, intact, "stall 200\n")
	porago := filepath.Join(t.TempDir(), "porago")
	if out, err := exec.Command("go", "build", "-tags", buildTags, "-o", porago, "./cmd/porago").CombinedOutput(); err != nil {
		t.Fatalf("building porago: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, porago, "mine", "--file", m.path, "--method", "auto", "--randao", "0x"+strings.Repeat("ab", 32),
		"--slot", "1.5", "--slots", "5", "--on-io-error", "skip", "--json")
	// Each record is timed as it is read: the scanner waits for it, no polling. The pipe ends
	// with porago's exit status once it has exited.
	read, write := io.Pipe()
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = write, &stderr
	// porago's rhythm starts after this (once it has opened the shard): slot 0's deadline is at
	// least one slot length past it.
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { write.CloseWithError(cmd.Wait()) }()
	var seen []time.Time
	var records []ShardSlot
	scan := bufio.NewScanner(read)
	scan.Buffer(make([]byte, 1<<20), 1<<24)
	for scan.Scan() {
		seen = append(seen, time.Now())
		var r ShardSlot
		if err := json.Unmarshal(scan.Bytes(), &r); err != nil {
			t.Fatalf("record %d: %v: %s", len(records), err, scan.Text())
		}
		records = append(records, r)
	}
	if err := scan.Err(); err != nil {
		t.Fatalf("porago mine: %v\n%s", err, stderr.String())
	}
	if len(records) != slots {
		t.Fatalf("%d records for %d slots of one shard\n%s", len(records), slots, stderr.String())
	}
	// Slot 0 ran to its deadline (a million nonces do not fit in 1.5 s through 200 ms reads),
	// which is at least one slot length after porago started.
	if ran := seen[0].Sub(started); ran < slotLen {
		t.Fatalf("slot 0's record came %v after porago started, less than one slot length: it did not run to its deadline", ran)
	}
	if records[0].EndLateMs < 0 {
		t.Errorf("slot 0 reports ending %.0f ms before its deadline, though it ran to it", -records[0].EndLateMs)
	}
	// porago's deadline 0 is no earlier than started + slotLen, so the lateness it reports for
	// slot 0 is at most what this clock allows.
	if most := seen[0].Sub(started.Add(slotLen)); time.Duration(records[0].EndLateMs*float64(time.Millisecond)) > most+50*time.Millisecond {
		t.Errorf("slot 0 reports %.0f ms late; this clock allows at most %v", records[0].EndLateMs, most)
	}
	worst := time.Duration(-1 << 62)
	held := 0.0
	for k, r := range records {
		// Past slot 0's record + k slot lengths, on this clock alone.
		drift := seen[k].Sub(seen[0]) - time.Duration(k)*slotLen
		if drift > worst {
			worst = drift
		}
		if drift > time.Second {
			t.Errorf("slot %d came %v past slot 0's record + %d x %v (bound 1 s): the rhythm drifts\n%s",
				k, drift, k, slotLen, stderr.String())
		}
		// porago's own lateness, relative to slot 0's, against the same clock.
		reported := time.Duration((r.EndLateMs - records[0].EndLateMs) * float64(time.Millisecond))
		if diff := reported - drift; diff > 250*time.Millisecond || diff < -250*time.Millisecond {
			t.Errorf("slot %d: endLateMs %.0f (slot 0: %.0f) says %v relative to slot 0; the records' times say %v",
				k, r.EndLateMs, records[0].EndLateMs, reported, drift)
		}
		if s := r.Steering; s != nil && s.DecisionMs+s.SwitchMs > held {
			held = s.DecisionMs + s.SwitchMs
		}
	}
	// The stalled mount held steering up (facts at least 200 ms late, or their budget) in at
	// least one slot, and the rhythm above absorbed it.
	if held < 150 {
		t.Errorf("steering never waited on the stalled mount (longest %.0f ms)", held)
	}
	t.Logf("porago mine --slots %d through a 200 ms stall: longest steering %.0f ms, worst record past slot 0's + k slot lengths %v", slots, held, worst)
}
