// es-node's go.mod after apply and after `go mod tidy`: revert takes pora's lines out wherever
// tidy put them (a blank line between them, the require moved into es-node's require block);
// -pora-dir is made absolute from the caller's directory and quoted when it holds a space, so
// the Go command parses the go.mod apply wrote.
package hook_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pora-miner/pora/bindings/go/esnode/hook"
)

// goCommand is the go command, or a visible skip.
func goCommand(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("SKIP: no go command on PATH to run go mod tidy / go mod edit with")
	}
	return gobin
}

// Real `go mod tidy` on the applied tree (pora's module from this checkout, so nothing is
// fetched), then revert: go.mod and go.sum as before apply.
func TestRevertAfterGoModTidy(t *testing.T) {
	gobin := goCommand(t)
	for _, mod := range []hook.ModuleSource{{Dir: poraDir}, {Dir: poraDir, Vendor: true}} {
		dir := copyTree(t)
		before := snapshot(t, dir)
		apply(t, dir, allSets, mod)
		cmd := exec.Command(gobin, "mod", "tidy")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go mod tidy: %v\n%s", err, out)
		}
		rev, err := hook.PlanRevert(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := hook.Write(dir, rev.Changes); err != nil {
			t.Fatal(err)
		}
		sameTree(t, "tidied, then reverted", before, snapshot(t, dir))
	}
}

// The shapes tidy writes into a go.mod with require blocks (es-node v0.2.10 has a direct and an
// indirect one): the require moved into the direct block, sorted; the replace after a blank line.
func TestRevertFindsTheRequireInABlock(t *testing.T) {
	original := "module example.com/node\n\ngo 1.24.0\n\ntoolchain go1.24.9\n\nrequire (\n" +
		"\tgithub.com/ethereum/go-ethereum v1.16.5\n\tgithub.com/urfave/cli v1.22.16\n)\n\n" +
		"require (\n\tgithub.com/aa/bb v1.0.0 // indirect\n)\n\nreplace github.com/iden3/go-iden3-crypto => github.com/ethstorage/go-iden3-crypto v0.0.0-1\n"
	tidied := strings.Replace(original, "\tgithub.com/ethereum/go-ethereum v1.16.5\n",
		"\tgithub.com/ethereum/go-ethereum v1.16.5\n\t"+hook.Module+" v0.1.0\n", 1) +
		"\nreplace " + hook.Module + " => \"/home/a miner/pora/bindings/go\"\n"
	alone := "module example.com/node\n\ngo 1.24.0\n\nrequire " + hook.Module + " v0.1.0\n"
	for _, c := range []struct{ name, gomod, want string }{
		{"moved into the block", tidied, original},
		{"CRLF", strings.ReplaceAll(tidied, "\n", "\r\n"), strings.ReplaceAll(original, "\n", "\r\n")},
		{"a block of its own", strings.Replace(tidied, "\t"+hook.Module+" v0.1.0\n", "", 1) +
			"\nrequire (\n\t" + hook.Module + " v0.1.0\n)\n", original},
		{"the only requirement", alone, "module example.com/node\n\ngo 1.24.0\n"},
	} {
		dir := copyTree(t)
		writeFile(t, dir, "go.mod", []byte(c.gomod))
		rev, err := hook.PlanRevert(dir)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := hook.Write(dir, rev.Changes); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "go.mod")); string(got) != c.want {
			t.Errorf("%s: go.mod after revert:\n%q\nwant\n%q", c.name, got, c.want)
		}
	}
}

// A relative -pora-dir is the caller's, and a path with a space is written so go.mod parses: the
// Go command reads the replace back as that directory.
func TestPoraDirIsTheCallersAndParses(t *testing.T) {
	gobin := goCommand(t)
	spaced := filepath.Join(t.TempDir(), "a miner's pora", "bindings go")
	writeFile(t, spaced, "go.mod", []byte("module "+hook.Module+"\n\ngo 1.19\n"))
	abs, err := filepath.Abs(poraDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{{poraDir, abs}, {spaced, spaced}} {
		tree := copyTree(t)
		apply(t, tree, []hook.Set{hook.Mining}, hook.ModuleSource{Dir: c.dir})
		cmd := exec.Command(gobin, "mod", "edit", "-json")
		cmd.Dir = tree
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOWORK=off")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go mod edit -json on the go.mod apply wrote (-pora-dir %s): %v", c.dir, err)
		}
		var parsed struct {
			Replace []struct{ Old, New struct{ Path string } }
		}
		if err := json.Unmarshal(out, &parsed); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range parsed.Replace {
			if r.Old.Path == hook.Module {
				found = true
				if r.New.Path != c.want {
					t.Errorf("-pora-dir %s: go.mod replaces pora's module with %q, want %q", c.dir, r.New.Path, c.want)
				}
			}
		}
		if !found {
			t.Errorf("-pora-dir %s: no replace of pora's module in %s", c.dir, out)
		}
	}
}

// A directory that is not pora's module is refused before any write, named.
func TestPoraDirMustBePorasModule(t *testing.T) {
	dir := copyTree(t)
	before := snapshot(t, dir)
	_, err := hook.Plan(dir, []hook.Set{hook.Mining}, hook.ModuleSource{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "go.mod") {
		t.Fatalf("a directory without pora's go.mod: %v", err)
	}
	sameTree(t, "refused -pora-dir", before, snapshot(t, dir))
}
