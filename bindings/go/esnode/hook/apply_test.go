// The tool's promises on the es-node-shaped tree (testdata/es-node), in each form a checkout comes
// in (LF, CRLF, a file with a byte-order mark, a file that is not gofmt-clean): apply adds only
// the hook's lines (a line diff of the bytes shows nothing else), apply again changes nothing,
// revert gives every file back byte for byte; a renamed function, a missing file or a moved
// anchor stops the run before any file is written, naming the file and the place; a tree holding
// part of the hook is completed by apply and taken out by revert. The tree is copied to a
// temporary directory for each case.
package hook_test

import (
	"bytes"
	"go/format"
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

// poraDir is this checkout's pora module (bindings/go).
var poraDir = filepath.Join("..", "..")

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

// forms are the shapes of checkout apply and revert must keep byte for byte.
var forms = []struct {
	name string
	make func(t *testing.T, dir string)
}{
	{"LF", func(*testing.T, string) {}},
	{"CRLF", func(t *testing.T, dir string) { eachFile(t, dir, toCRLF) }},
	{"a BOM", func(t *testing.T, dir string) {
		rewrite(t, dir, "ethstorage/miner/worker.go", func(b []byte) []byte { return append([]byte("\xEF\xBB\xBF"), b...) })
	}},
	{"not gofmt-clean", func(t *testing.T, dir string) {
		// A miner's own edits gofmt would change: an unaligned field beside the hook's, spaces
		// for a tab, a missing space around :=.
		edit(t, dir, "ethstorage/miner/config.go", "\tEmailEnabled bool\n", "\tEmailEnabled    bool\n\tMinerNote  string\n")
		edit(t, dir, "ethstorage/miner/worker.go", "\tw.wg.Wait()\n", "        w.wg.Wait()\n")
		edit(t, dir, "ethstorage/miner/cli.go", "func CLIFlags() []cli.Flag {\n", "func CLIFlags() []cli.Flag {\n\tx:=0\n\t_ = x\n")
	}},
}

func TestApplyTwiceThenRevertByteForByte(t *testing.T) {
	for _, form := range forms {
		for _, mod := range []hook.ModuleSource{release, {Dir: poraDir}, {Dir: poraDir, Vendor: true}} {
			t.Run(form.name, func(t *testing.T) {
				dir := copyTree(t)
				form.make(t, dir)
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
				applied := snapshot(t, dir)
				onlyHookLines(t, form.name, before, applied)
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
			})
		}
	}
}

// onlyHookLines fails unless every changed Go file is its old bytes with lines added (and the
// Cleanup fix's one line changed): each added line one of the hook's (white space aside), with
// the line ending of the file's other lines, and gofmt-clean where it landed when the file was.
func onlyHookLines(t *testing.T, form string, before, after map[string][]byte) {
	t.Helper()
	hookLines := map[string]bool{"": true}
	for _, b := range hook.Blocks {
		for _, l := range b.Lines {
			hookLines[strings.Join(strings.Fields(l), " ")] = true
		}
	}
	for name, old := range before {
		now := after[name]
		if !strings.HasSuffix(name, ".go") || bytes.Equal(old, now) {
			continue
		}
		if bytes.HasPrefix(old, []byte("\xEF\xBB\xBF")) != bytes.HasPrefix(now, []byte("\xEF\xBB\xBF")) {
			t.Errorf("%s: %s: the byte-order mark changed", form, name)
		}
		eol := "\n"
		if bytes.Contains(old, []byte("\r\n")) {
			eol = "\r\n"
		}
		a, b := linesWithEnds(old), linesWithEnds(now)
		added, removed := lineDiff(a, b)
		for _, l := range removed {
			if strings.TrimSpace(l) != "if blob.kvIndex != nil {" {
				t.Errorf("%s: %s: es-node's line %q changed or went", form, name, l)
			}
		}
		for _, l := range added {
			text := strings.TrimRight(l, "\r\n")
			if !hookLines[strings.Join(strings.Fields(text), " ")] {
				t.Errorf("%s: %s: the added line %q is not the hook's", form, name, l)
			}
			if !strings.HasSuffix(l, eol) || (eol == "\n" && strings.HasSuffix(l, "\r\n")) {
				t.Errorf("%s: %s: the added line %q does not end as the file's lines do (%q)", form, name, l, eol)
			}
		}
		if len(added) == 0 {
			t.Errorf("%s: %s changed with no line added", form, name)
		}
		lf := func(raw []byte) []byte {
			return bytes.ReplaceAll(bytes.TrimPrefix(raw, []byte("\xEF\xBB\xBF")), []byte("\r\n"), []byte("\n"))
		}
		if clean, err := format.Source(lf(old)); err == nil && bytes.Equal(clean, lf(old)) {
			if got, err := format.Source(lf(now)); err != nil || !bytes.Equal(got, lf(now)) {
				t.Errorf("%s: %s was gofmt-clean and is not with the hook (%v)", form, name, err)
			}
		}
	}
}

// linesWithEnds splits raw after each newline, keeping it.
func linesWithEnds(raw []byte) []string { return strings.SplitAfter(string(raw), "\n") }

// lineDiff is the lines b adds to a and the lines of a it lacks (a longest common subsequence).
func lineDiff(a, b []string) (added, removed []string) {
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			switch {
			case a[i] == b[j]:
				lcs[i][j] = lcs[i+1][j+1] + 1
			case lcs[i+1][j] > lcs[i][j+1]:
				lcs[i][j] = lcs[i+1][j]
			default:
				lcs[i][j] = lcs[i][j+1]
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			added, j = append(added, b[j]), j+1
		default:
			removed, i = append(removed, a[i]), i+1
		}
	}
	return added, removed
}

func toCRLF(raw []byte) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}

// eachFile rewrites every file of the tree (go.mod and go.sum too, as a CRLF checkout has them).
func eachFile(t *testing.T, dir string, change func([]byte) []byte) {
	t.Helper()
	for name := range snapshot(t, dir) {
		rewrite(t, dir, name, change)
	}
}

func rewrite(t *testing.T, dir, name string, change func([]byte) []byte) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, change(raw), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A tree holding part of the hook (each file of a whole apply left out in turn, or go.mod's
// lines) is completed by apply to exactly the whole apply, and taken out by revert to exactly the
// original tree.
func TestHalfAppliedIsMendedByApplyAndByRevert(t *testing.T) {
	for _, form := range forms[:2] {
		dir := copyTree(t)
		form.make(t, dir)
		original := snapshot(t, dir)
		apply(t, dir, allSets, release)
		whole := snapshot(t, dir)
		for name := range whole {
			if bytes.Equal(whole[name], original[name]) {
				continue
			}
			for _, fix := range []string{"apply", "revert"} {
				half := copyTree(t)
				for n, raw := range whole {
					if n == name {
						raw = original[n]
					}
					writeFile(t, half, n, raw)
				}
				var res *hook.Result
				var err error
				if fix == "apply" {
					res, err = hook.Plan(half, allSets, release)
				} else {
					res, err = hook.PlanRevert(half)
				}
				if err != nil {
					t.Fatalf("%s: %s without its hook lines: %s: %v", form.name, name, fix, err)
				}
				if fix == "apply" && len(res.Changes) == 0 {
					t.Errorf("%s: %s without its hook lines: apply says nothing to change", form.name, name)
				}
				if err := hook.Write(half, res.Changes); err != nil {
					t.Fatal(err)
				}
				want := whole
				if fix == "revert" {
					want = original
				}
				sameTree(t, form.name+": "+name+" left out, then "+fix, want, snapshot(t, half))
			}
		}
	}
}

func writeFile(t *testing.T, dir, name string, raw []byte) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
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
		{"go.sum missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "go.sum")); err != nil {
				t.Fatal(err)
			}
		}, []string{"go.sum", "cannot read"}},
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

// Without a version or a directory for pora's module (a tool built in a checkout), apply says how.
func TestApplyNeedsAModuleSource(t *testing.T) {
	dir := copyTree(t)
	before := snapshot(t, dir)
	_, err := hook.Plan(dir, []hook.Set{hook.Mining}, hook.ModuleSource{})
	if err == nil || !strings.Contains(err.Error(), "pora-esnode@<version>") {
		t.Fatalf("no module source: %v", err)
	}
	sameTree(t, "no module source", before, snapshot(t, dir))
}

// The go.sum line of pora's go.mod is computed from a copy of bindings/go/go.mod: it must be the
// module's, and the hash Go's dirhash gives it (tools/go-proxy.py's GOSUM.txt computed
// h1:C+8wQw... for that go.mod; integrations/es-node/build.sh checks it against a go build).
func TestGoModTextIsTheModules(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	const known = "h1:C+8wQwtChKwjOtPlVSfjiJq3OZtCSLDNRFKJHdpFG98="
	if got := hook.GoModSumOf(raw); got != known {
		t.Fatalf("bindings/go/go.mod hashes to %s, not %s: update goModText and this known answer", got, known)
	}
	if hook.GoModSum() != known {
		t.Fatalf("the tool writes %s for pora's go.mod, not %s", hook.GoModSum(), known)
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
