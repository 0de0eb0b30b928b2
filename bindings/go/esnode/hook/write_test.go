// Writing all or nothing: a failure injected before each file's replacement in turn leaves the
// tree as it was (the files replaced before it put back, no staged file left), with the
// vendored module's new files too; a read-only file, a symbolic link and a file changed since
// the plan are refused before any write, naming the file.
package hook_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pora-miner/pora/bindings/go/esnode/hook"
)

func TestAWriteFailureAtEachFileLeavesTheTreeAsItWas(t *testing.T) {
	cases := []struct {
		what string
		mod  hook.ModuleSource
		plan func(dir string) (*hook.Result, error)
	}{
		{"apply", release, func(dir string) (*hook.Result, error) { return hook.Plan(dir, allSets, release) }},
		{"apply -vendor", hook.ModuleSource{Dir: poraDir, Vendor: true}, func(dir string) (*hook.Result, error) {
			return hook.Plan(dir, allSets, hook.ModuleSource{Dir: poraDir, Vendor: true})
		}},
		{"revert", release, func(dir string) (*hook.Result, error) { return hook.PlanRevert(dir) }},
	}
	defer hook.FailBeforeReplace(nil)
	for _, c := range cases {
		base := copyTree(t)
		if c.what == "revert" {
			apply(t, base, allSets, c.mod)
		}
		res, err := c.plan(base)
		if err != nil {
			t.Fatal(err)
		}
		n := len(res.Changes)
		if n < 3 {
			t.Fatalf("%s: %d changes", c.what, n)
		}
		// Every file in turn for the hook's files; first, middle and last of a vendored copy.
		for k := 0; k < n; k++ {
			if n > 20 && k != n/2 && k != n-1 && k > 7 {
				continue
			}
			dir := copyTree(t)
			if c.what == "revert" {
				apply(t, dir, allSets, c.mod)
			}
			before := snapshot(t, dir)
			res, err := c.plan(dir)
			if err != nil {
				t.Fatal(err)
			}
			failAt := filepath.Join(dir, filepath.FromSlash(res.Changes[k].Path))
			hook.FailBeforeReplace(func(path string) error {
				if path == failAt {
					return errors.New("injected failure")
				}
				return nil
			})
			err = hook.Write(dir, res.Changes)
			hook.FailBeforeReplace(nil)
			if err == nil || !strings.Contains(err.Error(), res.Changes[k].Path) || !strings.Contains(err.Error(), "no file changed") {
				t.Fatalf("%s, failing at %s: %v", c.what, res.Changes[k].Path, err)
			}
			sameTree(t, c.what+", failing at "+res.Changes[k].Path, before, snapshot(t, dir))
		}
	}
}

func TestRefusedBeforeAnyWrite(t *testing.T) {
	cases := []struct {
		what   string
		prep   func(t *testing.T, dir string)
		naming string
	}{
		{"a read-only file", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, "ethstorage/miner/worker.go"), 0o444); err != nil {
				t.Fatal(err)
			}
		}, "ethstorage/miner/worker.go: is read-only"},
		{"a symbolic link", func(t *testing.T, dir string) {
			path := filepath.Join(dir, "ethstorage/miner/config.go")
			elsewhere := filepath.Join(t.TempDir(), "miner.go")
			raw, _ := os.ReadFile(path)
			if err := os.WriteFile(elsewhere, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, path); err != nil {
				t.Skip("SKIP: symbolic links: " + err.Error())
			}
		}, "ethstorage/miner/config.go: is a symbolic link"},
	}
	for _, c := range cases {
		dir := copyTree(t)
		c.prep(t, dir)
		before := snapshot(t, dir)
		res, err := hook.Plan(dir, allSets, release)
		if err != nil {
			t.Fatal(err)
		}
		err = hook.Write(dir, res.Changes)
		if err == nil || !strings.Contains(err.Error(), c.naming) {
			t.Fatalf("%s: %v", c.what, err)
		}
		sameTree(t, c.what, before, snapshot(t, dir))
	}

	// A file changed between the plan and the write.
	dir := copyTree(t)
	res, err := hook.Plan(dir, allSets, release)
	if err != nil {
		t.Fatal(err)
	}
	edit(t, dir, "ethstorage/miner/cli.go", "package miner", "package miner // edited")
	before := snapshot(t, dir)
	if err := hook.Write(dir, res.Changes); err == nil || !strings.Contains(err.Error(), "ethstorage/miner/cli.go: changed since") {
		t.Fatalf("a file changed since the plan: %v", err)
	}
	sameTree(t, "a file changed since the plan", before, snapshot(t, dir))
}
