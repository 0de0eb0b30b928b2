// Known-answer tests of the Keccak-256 in this package.
package keccak

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestKnownAnswers(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"},
		{"abc", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"},
		// Two blocks: 200 bytes crosses the 136-byte rate (the answer: pycryptodome 4.5.0's
		// Crypto.Hash.keccak, digest_bits=256).
		{strings.Repeat("a", 200), "96ea54061def936c4be90b518992fdc6f12f535068a256229aca54267b4d084d"},
	}
	for _, c := range cases {
		got := Sum256([]byte(c.in))
		if hex.EncodeToString(got[:]) != c.want {
			t.Errorf("keccak256(%q) = %x, want %s", c.in, got, c.want)
		}
	}
	// Split input must hash like the joined input.
	long := []byte(cases[2].in)
	if Sum256(long) != Sum256(long[:7], long[7:150], long[150:]) {
		t.Error("hashing in parts differs from hashing the whole")
	}
}
