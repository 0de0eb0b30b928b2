//go:build pora_hooked && !cgo

// A build of the hooked tree without libpora (here CGO_ENABLED=0; another GOOS/GOARCH behaves the
// same) compiles, and the hook is a start-up error only when --miner.pora is set: node.New
// refuses, naming the flag, the platform and that cgo is off. integrations/es-node/build.sh runs
// it with `CGO_ENABLED=0 go test -tags pora_hooked -run NoLibrary ./ethstorage/node/`.
package node_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	porago "github.com/pora-miner/pora/bindings/go"
)

func TestNoLibraryIsAStartUpErrorOnlyWithPora(t *testing.T) {
	shards := []uint64{1}
	if _, err := newNode(t, shards, config(1<<12, 12, false), cacheWithBlobs(t, shards)); err != nil {
		t.Fatalf("without --miner.pora: %v", err)
	}
	_, err := newNode(t, shards, config(1<<12, 12, true), cacheWithBlobs(t, shards))
	if err == nil {
		t.Fatal("with --miner.pora and no libpora: no error")
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, want := range []string{"--miner.pora", platform, "cgo disabled"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the error does not name %q: %v", want, err)
		}
	}
	if !errors.Is(err, porago.ErrNoLibrary) {
		t.Fatalf("the error does not wrap porago.ErrNoLibrary: %v", err)
	}
	t.Logf("with --miner.pora: %v", err)
}
