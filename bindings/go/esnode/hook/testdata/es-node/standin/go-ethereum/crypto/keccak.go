// Package crypto stands in for go-ethereum's crypto package in the es-node-shaped tree:
// Keccak256Hash, pora's own Keccak-256 (bindings/go/internal/keccak) under go-ethereum's name.
// It is a copy, not an import: this stand-in is its own module (github.com/ethereum/go-ethereum,
// replaced in the tree's go.mod), and Go lets only packages under bindings/go import
// bindings/go/internal/keccak. A copy also keeps es-node's hashing in the tree apart from the
// code pora hashes with, as es-node's own go-ethereum is.
package crypto

import (
	"encoding/binary"
	"math/bits"

	"github.com/ethereum/go-ethereum/common"
)

// Keccak256Hash is Keccak-256 over the parts, concatenated.
func Keccak256Hash(parts ...[]byte) common.Hash { return sum256(parts...) }

const rate = 136 // bytes absorbed per permutation for a 256-bit output

var roundConstants = [24]uint64{
	0x0000000000000001, 0x0000000000008082, 0x800000000000808a, 0x8000000080008000,
	0x000000000000808b, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
	0x000000000000008a, 0x0000000000000088, 0x0000000080008009, 0x000000008000000a,
	0x000000008000808b, 0x800000000000008b, 0x8000000000008089, 0x8000000000008003,
	0x8000000000008002, 0x8000000000000080, 0x000000000000800a, 0x800000008000000a,
	0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
}

// Rotation offsets and lane order of the combined rho and pi steps, walking the lanes from (1,0).
var rotations = [24]int{1, 3, 6, 10, 15, 21, 28, 36, 45, 55, 2, 14, 27, 41, 56, 8, 25, 43, 62, 18, 39, 61, 20, 44}
var piLanes = [24]int{10, 7, 11, 17, 18, 3, 5, 16, 8, 21, 24, 4, 15, 23, 19, 13, 12, 2, 20, 14, 22, 9, 6, 1}

// permute is Keccak-f[1600] over the 25 lanes a[x+5y].
func permute(a *[25]uint64) {
	var c [5]uint64
	for round := 0; round < 24; round++ {
		for x := 0; x < 5; x++ { // theta
			c[x] = a[x] ^ a[x+5] ^ a[x+10] ^ a[x+15] ^ a[x+20]
		}
		for x := 0; x < 5; x++ {
			d := c[(x+4)%5] ^ bits.RotateLeft64(c[(x+1)%5], 1)
			for y := 0; y < 25; y += 5 {
				a[y+x] ^= d
			}
		}
		current := a[1] // rho and pi
		for i := 0; i < 24; i++ {
			j := piLanes[i]
			current, a[j] = a[j], bits.RotateLeft64(current, rotations[i])
		}
		for y := 0; y < 25; y += 5 { // chi
			row := [5]uint64{a[y], a[y+1], a[y+2], a[y+3], a[y+4]}
			for x := 0; x < 5; x++ {
				a[y+x] = row[x] ^ (^row[(x+1)%5] & row[(x+2)%5])
			}
		}
		a[0] ^= roundConstants[round] // iota
	}
}

// sum256 is Keccak-256 of the concatenation of parts.
func sum256(parts ...[]byte) [32]byte {
	var msg []byte
	for _, p := range parts {
		msg = append(msg, p...)
	}
	var state [25]uint64
	padded := make([]byte, (len(msg)/rate+1)*rate)
	copy(padded, msg)
	padded[len(msg)] ^= 0x01
	padded[len(padded)-1] ^= 0x80
	for off := 0; off < len(padded); off += rate {
		for i := 0; i < rate/8; i++ {
			state[i] ^= binary.LittleEndian.Uint64(padded[off+8*i:])
		}
		permute(&state)
	}
	var out [32]byte
	for i := 0; i < 4; i++ {
		binary.LittleEndian.PutUint64(out[8*i:], state[i])
	}
	return out
}
