//go:build !cgo

// es-node's encoder in a build without libpora (here CGO_ENABLED=0; another GOOS/GOARCH behaves
// the same): the hook compiles and never answers, so es-node's own code computes every mask, as
// without the hook. CI runs it with `CGO_ENABLED=0 go test -run NoLibrary ./esnode/`.
package esnode_test

import (
	"errors"
	"testing"

	porago "github.com/pora-miner/pora/bindings/go"
	"github.com/pora-miner/pora/bindings/go/esnode"
)

func TestEncoderFallsThroughWithNoLibrary(t *testing.T) {
	key := Hash{0x11, 0x22}
	if err := porago.Mask(key, make([]byte, porago.KVSize)); !errors.Is(err, porago.ErrNoLibrary) {
		t.Fatalf("porago.Mask in a build without libpora: %v, want an error wrapping ErrNoLibrary", err)
	}
	if mask, ok := esnode.Mask(key, porago.KVSize); ok || mask != nil {
		t.Fatal("esnode.Mask answered in a build without libpora")
	}
	// The encoder block's call leaves it to es-node's own code too, even after UseEncoder
	// refused to turn it on (the node's start fails there only with --miner.pora).
	if err := esnode.UseEncoder(nil); !errors.Is(err, porago.ErrNoLibrary) {
		t.Fatalf("esnode.UseEncoder in a build without libpora: %v, want ErrNoLibrary", err)
	}
	if mask, answered := esnode.EncodeMask(key, porago.KVSize); answered || mask != nil {
		t.Fatal("esnode.EncodeMask answered in a build without libpora")
	}
	before := ownEncodeCalls.Load()
	_, err := Encode(key, porago.KVSize) // the own code's answer is not the point; that it ran is
	if ownEncodeCalls.Load() != before+1 {
		t.Fatal("es-node's own code did not run")
	}
	t.Logf("the hook fell through; es-node's own code answered (%v)", err)
}
