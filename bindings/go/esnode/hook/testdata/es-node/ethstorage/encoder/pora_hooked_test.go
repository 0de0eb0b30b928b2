//go:build pora_hooked

// The encoder block in this tree, once pora-esnode applied it (apply -encoder): a KV's mask comes
// from pora (the same bytes as pora's own Mask), any other size reaches es-node's own code.
package encoder

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	porago "github.com/pora-miner/pora/bindings/go"
)

func TestEncodeThroughPora(t *testing.T) {
	key := common.Hash{0x11, 0x22}
	mask, err := Encode(key, porago.KVSize)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, porago.KVSize)
	if err := porago.Mask(key, want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mask, want) {
		t.Fatal("Encode's mask is not pora's")
	}
	if _, err := Encode(key, 4096); !errors.Is(err, errNotModelled) {
		t.Fatalf("a 4096-byte mask: %v; want es-node's own code (not modelled in this tree)", err)
	}
}
