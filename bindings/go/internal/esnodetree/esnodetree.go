// Package esnodetree copies the es-node-shaped tree (esnode/hook/testdata/es-node) for a test that
// applies pora-esnode to it: the engine's tests (esnode/hook) and the command's
// (cmd/pora-esnode) each edit a copy, never the tree in the repository. Only tests import it.
package esnodetree

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Copy copies the tree at src into a new temporary directory of t's and returns that directory.
func Copy(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), raw, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
