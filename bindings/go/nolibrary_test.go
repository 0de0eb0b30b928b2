// The no-library stub (unsupported.go) is what internal/stubgen writes from the library files as
// they are now: a change to the package's API that was not carried into the stub fails here, on
// the platforms where the package links libpora, before a cross build meets it.
package porago

import (
	"bytes"
	"os"
	"testing"

	"github.com/pora-miner/pora/bindings/go/internal/stubgen"
)

func TestNoLibraryStubIsCurrent(t *testing.T) {
	want, err := stubgen.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(stubgen.StubFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what internal/stubgen writes from the library files: run `go run ./internal/stubgen/cmd` in bindings/go", stubgen.StubFile)
	}
	if err := Available(); err != nil {
		t.Fatalf("Available in a build that links libpora: %v", err)
	}
}
