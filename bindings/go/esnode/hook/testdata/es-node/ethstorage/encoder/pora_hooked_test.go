//go:build pora_hooked

// The encoder block in this tree, once pora-esnode applied it (apply -encoder): until the node
// starts pora (esnode.UseEncoder, which esnode.New calls with --miner.pora) every mask is
// es-node's own; then a KV's mask comes from pora, with es-node's bytes (a known answer of the
// repository's es-node vectors), and any other size still reaches es-node's own code.
package encoder

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	porago "github.com/pora-miner/pora/bindings/go"
	"github.com/pora-miner/pora/bindings/go/esnode"
)

// maskSHA256 is the SHA-256 of the whole 128 KiB mask of the raw key 0x1122 (then zeros), as
// testdata/esnode-encode.json's rawKeys give it (es-node's own encoder computed it).
const maskSHA256 = "edce894ee22ac65f5947e3640fdf6e6ca32278cd965464fb16817c6017855fbe"

func TestEncodeThroughPora(t *testing.T) {
	key := common.Hash{0x11, 0x22}
	if _, err := Encode(key, porago.KVSize); !errors.Is(err, errNotModelled) {
		t.Fatalf("before the node starts pora: %v; want es-node's own code (not modelled here)", err)
	}
	if err := esnode.UseEncoder(nil); err != nil {
		t.Fatal(err)
	}
	mask, err := Encode(key, porago.KVSize)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(mask); hex.EncodeToString(sum[:]) != maskSHA256 {
		t.Fatalf("Encode's mask has SHA-256 %x, es-node's vector %s", sum, maskSHA256)
	}
	if _, err := Encode(key, 4096); !errors.Is(err, errNotModelled) {
		t.Fatalf("a 4096-byte mask: %v; want es-node's own code (not modelled in this tree)", err)
	}
}
