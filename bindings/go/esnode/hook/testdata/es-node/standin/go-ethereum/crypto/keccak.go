// Package crypto stands in for go-ethereum's crypto package in the es-node-shaped tree:
// Keccak256Hash, the Keccak-256 es-node's miner hashes with.
//
// It is a second Keccak-256, independent of the one pora's Go code hashes with
// (bindings/go/internal/keccak, a table-driven permutation over a flat state): this one is
// written from FIPS 202's own definitions of Keccak-p[1600, 24] (section 3.2), the state an array
// of lanes A[x][y], each round the step mappings theta, rho, pi, chi and iota as the standard
// states them, rho's offsets and iota's round constants computed at start-up by the standard's
// algorithms (2, 5 and 6), not copied from a table; the sponge is Keccak's original one (rate
// 136 bytes, padding 0x01 ... 0x80, not SHA3-256's 0x06). So the tests that judge pora's nonces by
// es-node's hashing in this tree compare two implementations, and a mistake in either shows, as it
// would against es-node's own go-ethereum. keccak_test.go checks this one against known answers.
//
// The stand-in is its own module (github.com/ethereum/go-ethereum, replaced in the tree's go.mod),
// so it could not import pora's internal package in any case.
package crypto

import (
	"math/bits"

	"github.com/ethereum/go-ethereum/common"
)

// Keccak256Hash is Keccak-256 over the parts, concatenated.
func Keccak256Hash(parts ...[]byte) (h common.Hash) {
	var s sponge
	for _, p := range parts {
		s.absorb(p)
	}
	s.pad()
	s.squeeze(h[:])
	return h
}

// rate is the sponge's rate r for a 256-bit digest, in bytes: 1600 - 2*256 bits.
const rate = 136

// rounds is n_r of Keccak-f[1600] = Keccak-p[1600, 24].
const rounds = 24

// state is FIPS 202's state array as 25 lanes of w = 64 bits: a[x][y] holds bits A[x, y, z] for
// z = 0..63, bit z of the lane being A[x, y, z].
type state [5][5]uint64

// rhoOffset[x][y] is the rotation rho applies to lane (x, y); roundConstant[ir] is RC of round ir.
var (
	rhoOffset     [5][5]int
	roundConstant [rounds]uint64
)

func init() {
	// FIPS 202 Algorithm 2 (rho): from (x, y) = (1, 0), lane t of the walk is rotated by
	// (t+1)(t+2)/2 and the walk goes on to (y, (2x + 3y) mod 5); lane (0, 0) is not rotated.
	x, y := 1, 0
	for t := 0; t < 24; t++ {
		rhoOffset[x][y] = (t + 1) * (t + 2) / 2 % 64
		x, y = y, (2*x+3*y)%5
	}
	// FIPS 202 Algorithm 6 (iota): bit 2^j - 1 of round ir's constant is rc(j + 7 ir), j = 0..6.
	for ir := 0; ir < rounds; ir++ {
		for j := 0; j <= 6; j++ {
			roundConstant[ir] |= rc(j+7*ir) << (1<<j - 1)
		}
	}
}

// rc is FIPS 202 Algorithm 5: the output bit of the LFSR x^8 + x^6 + x^5 + x^4 + 1 after t mod 255
// steps. R is kept as the bits R[0..8] of r (R[i] = bit i), starting from R = 10000000.
func rc(t int) uint64 {
	r := uint16(1)
	for i := 1; i <= t%255; i++ {
		r <<= 1 // R = 0 || R
		r8 := r >> 8 & 1
		r ^= r8 | r8<<4 | r8<<5 | r8<<6 // R[0], R[4], R[5], R[6] ^= R[8]
		r &= 0xff                       // R = Trunc8(R)
	}
	return uint64(r & 1)
}

// permute is Keccak-p[1600, 24] (FIPS 202 Algorithm 7): rounds ir = 0..23 of
// iota(chi(pi(rho(theta(A)))), ir).
func (a *state) permute() {
	for ir := 0; ir < rounds; ir++ {
		a.theta()
		a.rho()
		a.pi()
		a.chi()
		a.iota(ir)
	}
}

// theta XORs into every bit the parities of two nearby columns: C[x] is column x's parity,
// D[x] = C[x-1] ^ rot(C[x+1], 1).
func (a *state) theta() {
	var c, d [5]uint64
	for x := 0; x < 5; x++ {
		c[x] = a[x][0] ^ a[x][1] ^ a[x][2] ^ a[x][3] ^ a[x][4]
	}
	for x := 0; x < 5; x++ {
		d[x] = c[(x+4)%5] ^ bits.RotateLeft64(c[(x+1)%5], 1)
		for y := 0; y < 5; y++ {
			a[x][y] ^= d[x]
		}
	}
}

// rho rotates each lane by its offset: A'[x, y, z] = A[x, y, (z - offset) mod 64].
func (a *state) rho() {
	for x := 0; x < 5; x++ {
		for y := 0; y < 5; y++ {
			a[x][y] = bits.RotateLeft64(a[x][y], rhoOffset[x][y])
		}
	}
}

// pi moves the lanes: A'[x, y] = A[(x + 3y) mod 5, x].
func (a *state) pi() {
	old := *a
	for x := 0; x < 5; x++ {
		for y := 0; y < 5; y++ {
			a[x][y] = old[(x+3*y)%5][x]
		}
	}
}

// chi is the non-linear step, along each row: A'[x, y] = A[x, y] ^ (^A[x+1, y] & A[x+2, y]).
func (a *state) chi() {
	old := *a
	for x := 0; x < 5; x++ {
		for y := 0; y < 5; y++ {
			a[x][y] = old[x][y] ^ (^old[(x+1)%5][y] & old[(x+2)%5][y])
		}
	}
}

// iota XORs round ir's constant into lane (0, 0).
func (a *state) iota(ir int) { a[0][0] ^= roundConstant[ir] }

// sponge is Keccak[512] (capacity 512 bits) absorbing a byte string: byte i of a block goes to
// bits 8(i mod 8) .. 8(i mod 8)+7 of lane i/8, lanes counted x first (lane l is (l mod 5, l/5)).
type sponge struct {
	a   state
	pos int // bytes of the current block absorbed so far
}

// xor XORs b into byte i of the state's first rate bytes.
func (s *sponge) xor(i int, b byte) {
	lane := i / 8
	s.a[lane%5][lane/5] ^= uint64(b) << (8 * (i % 8))
}

func (s *sponge) absorb(p []byte) {
	for _, b := range p {
		s.xor(s.pos, b)
		if s.pos++; s.pos == rate {
			s.a.permute()
			s.pos = 0
		}
	}
}

// pad is Keccak's multi-rate padding pad10*1 after the message's bits, as bytes: 0x01 right after
// the message, 0x80 in the block's last byte (0x81 when they are the same byte), then the block's
// permutation.
func (s *sponge) pad() {
	s.xor(s.pos, 0x01)
	s.xor(rate-1, 0x80)
	s.a.permute()
	s.pos = 0
}

// squeeze reads the first len(out) bytes of the state (at most rate), the digest after pad.
func (s *sponge) squeeze(out []byte) {
	for i := range out {
		lane := i / 8
		out[i] = byte(s.a[lane%5][lane/5] >> (8 * (i % 8)))
	}
}
