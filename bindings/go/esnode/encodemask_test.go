//go:build cgo

// The encoder block's call, esnode.EncodeMask: on by default, it answers with pora's mask and
// says once which kernel it runs; PORA_ENCODE=off sends every call to es-node's own code; a
// value pora does not know, of PORA_ENCODE or of PORA_ENCODE_ARITH, is an error naming the
// variable on every call, never a silent fall back. Each case runs in a child process, as the
// choice is made once per process.
package esnode_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	porago "github.com/pora-miner/pora/bindings/go"
	"github.com/pora-miner/pora/bindings/go/esnode"
)

func TestEncodeMaskSaysWhatItDoes(t *testing.T) {
	const child = "PORA_TEST_ENCODEMASK_CHILD"
	key := [32]byte{0x11, 0x22}
	if mode := os.Getenv(child); mode != "" {
		for call := 0; call < 2; call++ {
			mask, answered, err := esnode.EncodeMask(key, porago.KVSize)
			switch mode {
			case "on":
				want := make([]byte, porago.KVSize)
				if e := porago.Mask(key, want); e != nil {
					t.Fatal(e)
				}
				if !answered || err != nil || !bytes.Equal(mask, want) {
					t.Fatalf("call %d: answered %v, %v; want pora's mask", call, answered, err)
				}
			case "off":
				if answered || mask != nil || err != nil {
					t.Fatalf("call %d with PORA_ENCODE=off: answered %v, %v", call, answered, err)
				}
			case "bad-switch", "bad-kernel":
				if !answered || mask != nil || err == nil {
					t.Fatalf("call %d: answered %v, mask %d bytes, %v; want an error", call, answered, len(mask), err)
				}
				t.Logf("error: %v", err)
			}
		}
		return
	}
	cases := []struct {
		mode string
		env  []string
		want []string // in the child's output: its one line on standard error, and the error
	}{
		{"on", nil, []string{"pora: es-node's encoder computes masks with pora's", "kernel (this CPU runs:", "PORA_ENCODE=off turns it off"}},
		{"off", []string{"PORA_ENCODE=off"}, []string{"PORA_ENCODE=off: es-node's own code computes the masks"}},
		{"bad-switch", []string{"PORA_ENCODE=of"}, []string{`PORA_ENCODE="of": not a value pora knows`}},
		{"bad-kernel", []string{"PORA_ENCODE_ARITH=ifmaa"}, []string{"PORA_ENCODE_ARITH", "PORA_ENCODE=off"}},
	}
	for _, c := range cases {
		out := runEncoderChild(t, "TestEncodeMaskSaysWhatItDoes", append(c.env, child+"="+c.mode)...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the child's output lacks %q:\n%s", c.mode, w, out)
			}
		}
		if n := strings.Count(out, "pora: es-node's encoder"); c.mode != "bad-kernel" && n != 1 {
			t.Errorf("%s: %d lines from the encoder block, want one for two calls:\n%s", c.mode, n, out)
		}
	}
}
