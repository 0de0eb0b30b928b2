//go:build cgo

// The encoder block's call, esnode.EncodeMask, and the switch that turns it on, esnode.UseEncoder
// (New calls it: only a node started with --miner.pora). Before UseEncoder every mask is es-node's
// own; after it pora answers with the mask of the repository's es-node vectors and says once,
// through es-node's logger, which kernel it runs; PORA_ENCODE=off keeps es-node's own code and
// says so; a value pora does not know, of PORA_ENCODE or of PORA_ENCODE_ARITH, is refused by
// UseEncoder naming the variable, and pora then answers no mask (never an empty one). Each case
// runs in a child process, as the choice is made once per process.
package esnode_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	porago "github.com/pora-miner/pora/bindings/go"
	"github.com/pora-miner/pora/bindings/go/esnode"
)

// lineLog is a Logger that keeps each line as "level msg k=v ...".
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) add(level, msg string, ctx []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+msg+" "+fmt.Sprint(ctx))
}
func (l *lineLog) Debug(msg string, ctx ...any) { l.add("debug", msg, ctx) }
func (l *lineLog) Info(msg string, ctx ...any)  { l.add("info", msg, ctx) }
func (l *lineLog) Warn(msg string, ctx ...any)  { l.add("warn", msg, ctx) }
func (l *lineLog) Error(msg string, ctx ...any) { l.add("error", msg, ctx) }

func TestEncodeMaskFollowsUseEncoder(t *testing.T) {
	const child = "PORA_TEST_ENCODEMASK_CHILD"
	// The raw key 0x1122... of testdata/esnode-encode.json, whose whole mask's SHA-256 it gives.
	var vector maskCase
	for _, c := range encoderVectors(t) {
		if c.key == (Hash{0x11, 0x22}) && c.wantSHA != "" {
			vector = c
		}
	}
	if vector.wantSHA == "" {
		t.Fatal("testdata/esnode-encode.json has no whole-mask SHA-256 for the raw key 0x1122...")
	}
	if mode := os.Getenv(child); mode != "" {
		encodeMaskChild(t, mode, vector)
		return
	}
	cases := []struct {
		mode string
		env  []string
		want []string // in the child's output
	}{
		{"before-use", nil, []string{"es-node's own code: every call"}},
		{"on", nil, []string{"info Encoder computes masks with pora [kernel", "cpuRuns",
			"switch PORA_ENCODE=off]"}},
		{"off", []string{"PORA_ENCODE=off"}, []string{
			"info Encoder without pora: es-node's own code computes the masks [switch PORA_ENCODE=off]"}},
		{"bad-switch", []string{"PORA_ENCODE=of"}, []string{`PORA_ENCODE="of": not a value pora knows`}},
		{"bad-kernel", []string{"PORA_ENCODE_ARITH=ifmaa"}, []string{"PORA_ENCODE_ARITH", "PORA_ENCODE=off"}},
	}
	for _, c := range cases {
		out := runEncoderChild(t, "TestEncodeMaskFollowsUseEncoder", append(c.env, child+"="+c.mode)...)
		if !strings.Contains(out, "--- PASS: TestEncodeMaskFollowsUseEncoder") {
			t.Errorf("%s: the child failed:\n%s", c.mode, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the child's output lacks %q:\n%s", c.mode, w, out)
			}
		}
	}
}

// encodeMaskChild runs one case in this process: two rounds of UseEncoder and two masks.
func encodeMaskChild(t *testing.T, mode string, vector maskCase) {
	lg := &lineLog{}
	for round := 0; round < 2; round++ {
		var err error
		if mode != "before-use" {
			err = esnode.UseEncoder(lg)
		}
		mask, ok := esnode.EncodeMask(vector.key, porago.KVSize)
		switch mode {
		case "on":
			if err != nil || !ok {
				t.Fatalf("round %d: UseEncoder %v, answered %v; want pora's mask", round, err, ok)
			}
			checkMask(t, vector, mask)
		case "before-use", "off":
			if err != nil || ok || mask != nil {
				t.Fatalf("round %d: UseEncoder %v, answered %v (%d bytes); want es-node's own code",
					round, err, ok, len(mask))
			}
		case "bad-switch", "bad-kernel":
			if err == nil || ok || mask != nil {
				t.Fatalf("round %d: UseEncoder %v, answered %v (%d bytes); want a refusal and no mask",
					round, err, ok, len(mask))
			}
			t.Logf("refused: %v", err)
		}
	}
	if mode == "before-use" {
		t.Log("es-node's own code: every call")
	}
	// The one line: once for two masks (on) or two UseEncoder calls (off), none when refused.
	wantLines := map[string]int{"on": 1, "off": 1}[mode]
	if len(lg.lines) != wantLines {
		t.Fatalf("%d lines through es-node's logger, want %d: %q", len(lg.lines), wantLines, lg.lines)
	}
	for _, l := range lg.lines {
		t.Log(l)
	}
}
