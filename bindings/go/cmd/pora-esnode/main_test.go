// The command's behaviour on a copy of the es-node-shaped tree: -n prints the diff and writes
// nothing; apply then apply again says the second changed nothing; a refusal exits 1 naming the
// file and saying no file changed; bad usage exits 2.
package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pora-miner/pora/bindings/go/internal/esnodetree"
)

// copyTree is a copy of the es-node-shaped tree for one test to apply the tool to.
func copyTree(t *testing.T) string {
	return esnodetree.Copy(t, filepath.Join("..", "..", "esnode", "hook", "testdata", "es-node"))
}

// poraDir is this checkout's pora module, as -pora-dir names it.
var poraDir = filepath.Join("..", "..")

func runTool(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestDryRunApplyAgainRevert(t *testing.T) {
	dir := copyTree(t)
	worker := filepath.Join(dir, "ethstorage", "miner", "worker.go")
	before, _ := os.ReadFile(worker)

	code, out, errOut := runTool("apply", "-n", "-encoder", "-pora-dir", poraDir, dir)
	if code != 0 {
		t.Fatalf("apply -n: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"+++ b/ethstorage/miner/worker.go", "+\tif pora := w.config.PoraMiner; pora != nil {", "+require github.com/pora-miner/pora/bindings/go v0.0.0", "none written"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply -n's output lacks %q:\n%s", want, out)
		}
	}
	if now, _ := os.ReadFile(worker); !bytes.Equal(now, before) {
		t.Fatal("apply -n wrote worker.go")
	}

	if code, _, errOut := runTool("apply", "-pora-dir", poraDir, dir); code != 0 {
		t.Fatalf("apply: exit %d: %s", code, errOut)
	}
	code, out, _ = runTool("apply", "-pora-dir", poraDir, dir)
	if code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("the second apply: exit %d: %s", code, out)
	}
	if code, _, errOut := runTool("revert", dir); code != 0 {
		t.Fatalf("revert: exit %d: %s", code, errOut)
	}
	if now, _ := os.ReadFile(worker); !bytes.Equal(now, before) {
		t.Fatal("revert did not give worker.go back byte for byte")
	}
}

func TestRefusalAndUsage(t *testing.T) {
	dir := copyTree(t)
	if err := os.Remove(filepath.Join(dir, "ethstorage", "miner", "cli.go")); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runTool("apply", "-pora-dir", poraDir, dir)
	if code != 1 || !strings.Contains(errOut, "ethstorage/miner/cli.go: missing") || !strings.Contains(errOut, "no file changed") {
		t.Fatalf("a missing file: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{nil, {"patch", dir}, {"apply"}, {"apply", "-bogus", dir}} {
		if code, _, _ := runTool(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// -vendor copies pora's module into the tree and revert, run from inside the tree as `revert .`,
// takes it out again: the tree as it was, and the command never says more than it did.
func TestVendorThenRevertFromInsideTheTree(t *testing.T) {
	dir := copyTree(t)
	before := treeFiles(t, dir)
	code, out, errOut := runTool("apply", "-vendor", "-pora-dir", poraDir, dir)
	if code != 0 || !strings.Contains(out, "copied pora's module into pora-go") {
		t.Fatalf("apply -vendor: exit %d: %s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "pora-go", "go.mod")); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runTool("revert", ".")
	if err := os.Chdir(wd); err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.Contains(out, "removed pora's module from pora-go") || strings.Contains(out, "as they were") {
		t.Fatalf("revert .: exit %d: %s%s", code, out, errOut)
	}
	after := treeFiles(t, dir)
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("after revert %s is left", name)
		}
	}
	for name, raw := range before {
		if !bytes.Equal(after[name], raw) {
			t.Errorf("after revert %s differs", name)
		}
	}
}

// treeFiles is every file (its bytes) and directory (nil) under dir.
func treeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if info.IsDir() {
			out[rel+"/"] = nil
			return nil
		}
		raw, err := os.ReadFile(path)
		out[rel] = raw
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
