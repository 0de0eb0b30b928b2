// Known answers of this stand-in's Keccak-256 (integrations/es-node/build.sh runs them, in this
// module, as it does the tree's tests).
package crypto

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// counting is n bytes 0, 1, 2, ... counting modulo 251 (a prime, so the pattern does not repeat
// with the lanes or the block).
func counting(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func TestKnownAnswers(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		// The empty string and "abc": Keccak-256's published answers (Ethereum's empty hash).
		{"empty", nil, "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"},
		{"abc", []byte("abc"), "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"},
		// Inputs at and over the 136-byte rate: 135 (0x01 and 0x80 in one byte), 136 (a block
		// of padding alone), 200 and 300 (two and three blocks). The answers are pycryptodome
		// 4.5.0's (Crypto.Hash.keccak, digest_bits=256) and equal those of pora's Go Keccak
		// (bindings/go/internal/keccak's Sum256), each computed outside this repository.
		{"135 bytes", counting(135), "cbdfd9dee5faad3818d6b06f95a219fd290b0e1706f6a82e5a595b9ce9faca62"},
		{"136 bytes", counting(136), "7ce759f1ab7f9ce437719970c26b0a66ff11fe3e38e17df89cf5d29c7d7f807e"},
		{"200 bytes", counting(200), "bfb0aa97863e797943cf7c33bb7e880bb4543f3d2703c0923c6901c2af57b890"},
		{"300 bytes", counting(300), "4699841dafd5e26cca72b05a41d38c96b4b468e5a6cbf694cbebe77dacdf6528"},
	}
	for _, c := range cases {
		got := Keccak256Hash(c.in)
		if hex.EncodeToString(got[:]) != c.want {
			t.Errorf("%s: Keccak256Hash = %x, want %s", c.name, got, c.want)
		}
	}
}

// Parts hash as their concatenation, wherever the cuts fall against the blocks.
func TestPartsAreConcatenated(t *testing.T) {
	msg := counting(300)
	whole := Keccak256Hash(msg)
	for _, cuts := range [][2]int{{0, 0}, {1, 135}, {135, 136}, {136, 272}, {7, 299}, {300, 300}} {
		got := Keccak256Hash(msg[:cuts[0]], msg[cuts[0]:cuts[1]], nil, msg[cuts[1]:])
		if !bytes.Equal(got[:], whole[:]) {
			t.Errorf("cut at %v: %x, want %x", cuts, got, whole)
		}
	}
}

// The constants the standard's algorithms give here, checked at a few places: rho's offsets of
// lanes (0, 0), (1, 0), (0, 2) and (4, 4) (FIPS 202's Table 2: 0, 1, 3 and 78 mod 64), and the
// first, second and last round constants.
func TestDerivedConstants(t *testing.T) {
	if rhoOffset[0][0] != 0 || rhoOffset[1][0] != 1 || rhoOffset[0][2] != 3 || rhoOffset[4][4] != 14 {
		t.Errorf("rho offsets %v", rhoOffset)
	}
	if roundConstant[0] != 1 || roundConstant[1] != 0x8082 || roundConstant[23] != 0x8000000080008008 {
		t.Errorf("round constants %#x", roundConstant)
	}
}
