// Command stubgen rewrites bindings/go/unsupported.go (run from bindings/go: `go run
// ./internal/stubgen/cmd`); the package stubgen says what the stub holds.
package main

import (
	"fmt"
	"os"

	"github.com/pora-miner/pora/bindings/go/internal/stubgen"
)

func main() {
	out, err := stubgen.Generate(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(stubgen.StubFile, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
