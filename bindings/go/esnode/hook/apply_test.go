// The tool's promises on the es-node-shaped tree (testdata/es-node): apply then apply again
// changes nothing; revert gives every file back byte for byte; a renamed function, a missing file,
// a moved anchor or a set applied in part stops the run before any file is written, naming the
// file and the place. The tree is copied to a temporary directory for each case.
package hook_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pora-miner/pora/bindings/go/esnode/hook"
	"github.com/pora-miner/pora/bindings/go/internal/esnodetree"
)

var allSets = []hook.Set{hook.Mining, hook.Encoder, hook.CleanupFix}

// release is how a released tool names pora's module (a version and its zip's hash).
var release = hook.ModuleSource{Version: "v0.1.0", Sum: "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}

// copyTree copies testdata/es-node to a new directory and returns it.
func copyTree(t *testing.T) string {
	return esnodetree.Copy(t, filepath.Join("testdata", "es-node"))
}

// snapshot is every file of the tree by relative path.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = raw
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails naming every file that differs.
func sameTree(t *testing.T, what string, a, b map[string][]byte) {
	t.Helper()
	for name, raw := range a {
		if !bytes.Equal(raw, b[name]) {
			t.Errorf("%s: %s differs", what, name)
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			t.Errorf("%s: %s appeared", what, name)
		}
	}
}

func apply(t *testing.T, dir string, sets []hook.Set, mod hook.ModuleSource) *hook.Result {
	t.Helper()
	res, err := hook.Plan(dir, sets, mod)
	if err != nil {
		t.Fatal(err)
	}
	if err := hook.Write(dir, res.Changes); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestApplyTwiceThenRevertByteForByte(t *testing.T) {
	for _, mod := range []hook.ModuleSource{release, {Dir: "/some/pora/bindings/go"}} {
		dir := copyTree(t)
		before := snapshot(t, dir)
		res := apply(t, dir, allSets, mod)
		files := map[string]bool{}
		for _, c := range res.Changes {
			files[c.Path] = true
		}
		for _, b := range hook.Blocks {
			if !files[b.File] {
				t.Errorf("%s was not changed (block %s)", b.File, b.Place)
			}
		}
		if !files["go.mod"] || (mod.Version != "") != files["go.sum"] {
			t.Errorf("go.mod/go.sum changes %v with module source %+v", files, mod)
		}
		gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
		if !strings.Contains(string(gomod), "require "+hook.Module+" ") {
			t.Errorf("go.mod has no require of pora's module:\n%s", gomod)
		}
		if mod.Version != "" {
			sum, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
			for _, want := range []string{hook.Module + " v0.1.0 " + mod.Sum, hook.Module + " v0.1.0/go.mod " + hook.GoModSum()} {
				if !strings.Contains(string(sum), want+"\n") {
					t.Errorf("go.sum lacks %q:\n%s", want, sum)
				}
			}
		}
		applied := snapshot(t, dir)

		again, err := hook.Plan(dir, allSets, mod)
		if err != nil {
			t.Fatalf("the second apply: %v", err)
		}
		if len(again.Changes) != 0 || len(again.Already) != len(allSets) {
			t.Fatalf("the second apply would change %d files (already: %v)", len(again.Changes), again.Already)
		}
		sameTree(t, "after a second apply", applied, snapshot(t, dir))

		rev, err := hook.PlanRevert(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := hook.Write(dir, rev.Changes); err != nil {
			t.Fatal(err)
		}
		sameTree(t, "after revert", before, snapshot(t, dir))
		if rev, err := hook.PlanRevert(dir); err != nil || len(rev.Changes) != 0 {
			t.Fatalf("a second revert: %d changes, %v", len(rev.Changes), err)
		}
	}
}

// Each refusal names the file and the place, and no file changes.
func TestRefusalsChangeNoFile(t *testing.T) {
	cases := []struct {
		what      string
		breakTree func(t *testing.T, dir string)
		want      []string
	}{
		{"mineTask renamed", func(t *testing.T, dir string) {
			edit(t, dir, "ethstorage/miner/worker.go", "func (w *worker) mineTask(", "func (w *worker) mineTaskItem(")
			edit(t, dir, "ethstorage/miner/standin.go", "w.mineTask(item)", "w.mineTaskItem(item)")
		}, []string{"ethstorage/miner/worker.go", "mineTask"}},
		{"a missing file", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "ethstorage/downloader/blob_disk_cache.go")); err != nil {
				t.Fatal(err)
			}
		}, []string{"ethstorage/downloader/blob_disk_cache.go", "missing"}},
		{"an anchor line gone", func(t *testing.T, dir string) {
			edit(t, dir, "ethstorage/miner/worker.go", `w.lg.Debug("Mining task started"`, `w.lg.Debug("Task started"`)
		}, []string{"ethstorage/miner/worker.go", "func mineTask", "Mining task started"}},
		{"an anchor line twice", func(t *testing.T, dir string) {
			edit(t, dir, "ethstorage/miner/worker.go", "\tw.wg.Wait()\n", "\tw.wg.Wait()\n\tw.wg.Wait()\n")
		}, []string{"ethstorage/miner/worker.go", "func close", "2 lines", "w.wg.Wait()"}},
		{"the hook applied in part", func(t *testing.T, dir string) {
			edit(t, dir, "ethstorage/miner/config.go", "\tEmailEnabled bool\n", "\tEmailEnabled bool\n\tPora         bool // --miner.pora: mine through pora's engine\n")
		}, []string{"applied in part", "ethstorage/miner/config.go, the end of `type Config`", "missing"}},
	}
	for _, c := range cases {
		dir := copyTree(t)
		c.breakTree(t, dir)
		before := snapshot(t, dir)
		_, err := hook.Plan(dir, allSets, release)
		if err == nil {
			t.Fatalf("%s: applied", c.what)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error %q does not name %q", c.what, err, w)
			}
		}
		sameTree(t, c.what, before, snapshot(t, dir))
		t.Logf("%s: %v", c.what, err)
	}
}

// A tree whose go.mod names pora's module in a line the tool did not write is refused on revert,
// and no file changes.
func TestRevertRefusesAMovedRequire(t *testing.T) {
	dir := copyTree(t)
	apply(t, dir, []hook.Set{hook.Mining}, release)
	edit(t, dir, "go.mod", "\n\nrequire "+hook.Module+" v0.1.0\n", "\nrequire "+hook.Module+" v0.1.0 // moved\n")
	before := snapshot(t, dir)
	_, err := hook.PlanRevert(dir)
	if err == nil || !strings.Contains(err.Error(), "go.mod") {
		t.Fatalf("revert with a moved require: %v", err)
	}
	sameTree(t, "refused revert", before, snapshot(t, dir))
}

// Without a version or a directory for pora's module (a tool built in a checkout), apply says how.
func TestApplyNeedsAModuleSource(t *testing.T) {
	dir := copyTree(t)
	before := snapshot(t, dir)
	_, err := hook.Plan(dir, []hook.Set{hook.Mining}, hook.ModuleSource{})
	if err == nil || !strings.Contains(err.Error(), "-pora-dir") {
		t.Fatalf("no module source: %v", err)
	}
	sameTree(t, "no module source", before, snapshot(t, dir))
}

// The go.sum line of pora's go.mod is computed from a copy of bindings/go/go.mod: it must be the
// module's.
func TestGoModTextIsTheModules(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if got := hook.GoModSumOf(raw); got != hook.GoModSum() {
		t.Fatalf("bindings/go/go.mod hashes to %s, the tool writes %s: update goModText", got, hook.GoModSum())
	}
}

func edit(t *testing.T, dir, name, old, new string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), old) {
		t.Fatalf("%s has no %q to change", name, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}
