//go:build !cgo

// A build without libpora (here CGO_ENABLED=0; another GOOS/GOARCH behaves the same) compiles the
// adapter, and esnode.New refuses, naming the platform and that cgo is off. CI runs it with
// `CGO_ENABLED=0 go test -run NoLibrary ./esnode/` (.ci/bindings.sh). That the hook makes this a
// start-up error only with --miner.pora set is checked in the es-node-shaped tree
// (TestNoLibraryIsAStartUpErrorOnlyWithPora, run by integrations/es-node/build.sh).
package esnode_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	porago "github.com/pora-miner/pora/bindings/go"
	"github.com/pora-miner/pora/bindings/go/esnode"
)

func TestNoLibraryIsRefusedByNew(t *testing.T) {
	path := writeDataFile(t, t.TempDir(), testShard, testKvEntriesBits, testKvSizeBits, testMiner, 5)
	m, err := esnode.New[Hash](esnode.Config{Files: []string{path}, Miner: testMiner,
		KvEntriesBits: testKvEntriesBits, RandomChecks: 2, NonceLimit: 1 << 12, SlotSec: 12}, nil)
	if err == nil {
		t.Fatal("esnode.New with no libpora: no error")
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, want := range []string{platform, "cgo disabled", "esnode"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the error does not name %q: %v", want, err)
		}
	}
	if !errors.Is(err, porago.ErrNoLibrary) {
		t.Fatalf("the error does not wrap porago.ErrNoLibrary: %v", err)
	}
	if m != nil || m.Close() != nil { // the hook closes whatever New returned: nil closes nothing
		t.Fatal("a refused New returned an adapter")
	}
	if _, err := porago.OpenEngine([]string{path}, porago.Options{}); err == nil || !strings.Contains(err.Error(), platform) {
		t.Fatalf("porago.OpenEngine without libpora: %v", err)
	}
	t.Logf("esnode.New: %v", err)
}
