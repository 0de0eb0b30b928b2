//go:build !cgo

// A build without libpora (here CGO_ENABLED=0; another GOOS/GOARCH behaves the same) compiles the
// adapter and es-node's hook, and the hook is then a start-up error only when --miner.pora is
// set: esnode.New refuses, naming the platform and that cgo is off. CI runs it with
// `CGO_ENABLED=0 go test -run NoLibrary ./esnode/` (.ci/bindings.sh).
package esnode_test

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	porago "github.com/pora-miner/pora/bindings/go"
	"github.com/pora-miner/pora/bindings/go/esnode"
	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"
)

func TestNoLibraryIsAStartUpErrorOnlyWithPora(t *testing.T) {
	path := writeDataFile(t, t.TempDir(), testShard, testKvEntriesBits, testKvSizeBits, testMiner, 5)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sm := &StorageManager{kvEntriesBits: testKvEntriesBits, maxKvSizeBits: testKvSizeBits, files: map[uint64]*os.File{testShard: f}, miner: testMiner}
	storage := StorageConfig{Filenames: []string{path}, Miner: testMiner}
	mining := Config{RandomChecks: 2, NonceLimit: 1 << 12, Slot: 12, ThreadsPerShard: 2}
	off := &EsNode{storageManager: sm, blobCache: NewBlobDiskCache()}
	if err := off.initMiner(&NodeConfig{Storage: storage, Mining: &mining}); err != nil {
		t.Fatalf("without --miner.pora: %v", err)
	}
	mining.Pora = true
	on := &EsNode{storageManager: sm, blobCache: NewBlobDiskCache()}
	err = on.initMiner(&NodeConfig{Storage: storage, Mining: &mining})
	if err == nil {
		t.Fatal("with --miner.pora and no libpora: no error")
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
	if _, err := porago.OpenEngine([]string{path}, porago.Options{}); err == nil || !strings.Contains(err.Error(), platform) {
		t.Fatalf("porago.OpenEngine without libpora: %v", err)
	}
	var _ *esnode.Miner[common.Hash] = on.miner.worker.pora // nil: the worker mines with its own loop
	if on.miner.worker.pora != nil {
		t.Fatal("a failed start-up left an adapter in the worker")
	}
	t.Logf("with --miner.pora: %v", err)
}
