// Command pora-esnode applies pora's mining hook to an es-node v0.2.10 checkout, so a miner builds
// es-node with pora using es-node's own commands, and takes it out again:
//
//	go run github.com/pora-miner/pora/bindings/go/cmd/pora-esnode@v0.1.0 apply [flags] <es-node dir>
//	go run github.com/pora-miner/pora/bindings/go/cmd/pora-esnode@v0.1.0 revert [flags] <es-node dir>
//
// apply adds the hook's lines to es-node's files (the blocks of docs/es-node.md; every other byte
// of each file stays, line endings included), go.mod (a require of pora's module at the tool's own
// version) and go.sum (the module's two lines); with -vendor it copies pora's module into the
// es-node tree (./pora-go) and go.mod replaces the module with it, so es-node builds with nothing
// of pora's fetched. Run again, it changes nothing and says so; on a tree holding part of the hook
// it adds the rest. Where es-node's code does not have the shape it expects (another version, a
// renamed function, a missing file) it changes no file and names the file and the place. -n
// prints the diff instead of writing. revert takes every pora line out of es-node's files, go.mod
// and go.sum, and the copy -vendor made.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/pora-miner/pora/bindings/go/esnode/hook"
)

const usage = `usage: pora-esnode apply [-encoder] [-cleanup-fix] [-n] [-vendor] [-pora-dir DIR] <es-node dir>
       pora-esnode revert [-n] <es-node dir>

apply   adds pora's mining hook (--miner.pora) to es-node v0.2.10's files, go.mod and go.sum
revert  takes everything apply added out again
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments; it returns the exit status (0 done or nothing to do,
// 1 refused or failed, 2 bad usage).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "apply" && args[0] != "revert") {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd := args[0]
	fs := flag.NewFlagSet("pora-esnode "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dryRun := fs.Bool("n", false, "print the diff, write nothing")
	encoder := fs.Bool("encoder", false, "also apply the encoder block (ethstorage/encoder/encoder.go)")
	cleanupFix := fs.Bool("cleanup-fix", false,
		"also apply the fix to BlobDiskCache.Cleanup (an es-node bug, apart from the hook)")
	poraDir := fs.String("pora-dir", "",
		"require pora's module from this directory (a replace line) instead of the tool's version")
	vendor := fs.Bool("vendor", false,
		"copy pora's module (the tool's own, or -pora-dir) into the es-node tree as ./"+hook.VendorDir+
			" and replace the module with it: es-node then builds with nothing of pora's fetched")
	version := fs.String("pora-version", "", "require this version of pora's module (with -pora-sum)")
	sum := fs.String("pora-sum", "", "the go.sum hash (h1:...) of -pora-version's module zip")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "pora-esnode %s: give one es-node directory\n%s", cmd, usage)
		return 2
	}
	dir := fs.Arg(0)

	var res *hook.Result
	var err error
	if cmd == "apply" {
		sets := []hook.Set{hook.Mining}
		if *encoder {
			sets = append(sets, hook.Encoder)
		}
		if *cleanupFix {
			sets = append(sets, hook.CleanupFix)
		}
		mod := hook.ModuleSource{Dir: *poraDir, Version: *version, Sum: *sum, Vendor: *vendor}
		if mod.Dir == "" && mod.Version == "" {
			mod.Version, mod.Sum = ownVersion()
		}
		if mod.Vendor && mod.Dir == "" {
			if mod.Dir, err = moduleCacheDir(mod.Version); err != nil {
				fmt.Fprintf(stderr, "pora-esnode apply: -vendor: %v\npora-esnode apply: no file changed\n", err)
				return 1
			}
		}
		res, err = hook.Plan(dir, sets, mod)
	} else {
		res, err = hook.PlanRevert(dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pora-esnode %s: %s: %v\npora-esnode %s: no file changed\n", cmd, dir, err, cmd)
		return 1
	}
	if len(res.Changes) == 0 {
		if cmd == "apply" {
			fmt.Fprintf(stdout, "pora-esnode apply: %s holds the hook already (%v): nothing changed\n", dir, res.Already)
		} else {
			fmt.Fprintf(stdout, "pora-esnode revert: %s holds no pora block: nothing changed\n", dir)
		}
		return 0
	}
	if *dryRun {
		for _, c := range res.Changes {
			fmt.Fprint(stdout, hook.Diff(c))
		}
		fmt.Fprintf(stdout, "pora-esnode %s -n: %d files would change; none written\n", cmd, len(res.Changes))
		return 0
	}
	if err := hook.Write(dir, res.Changes); err != nil {
		fmt.Fprintf(stderr, "pora-esnode %s: %s: %v\n", cmd, dir, err)
		return 1
	}
	copied := 0
	for _, c := range res.Changes {
		switch {
		case strings.HasPrefix(c.Path, hook.VendorDir+"/"):
			copied++
		default:
			fmt.Fprintf(stdout, "pora-esnode %s: changed %s\n", cmd, c.Path)
		}
	}
	if copied > 0 {
		what := "copied pora's module into"
		if cmd == "revert" {
			what = "removed pora's module from"
		}
		fmt.Fprintf(stdout, "pora-esnode %s: %s %s (%d files)\n", cmd, what, hook.VendorDir, copied)
	}
	if cmd == "apply" {
		fmt.Fprintf(stdout, "pora-esnode apply: done; build es-node as before and run it with --miner.pora\n")
	} else {
		fmt.Fprintf(stdout, "pora-esnode revert: done; took out every pora line it found\n")
	}
	return 0
}

// moduleCacheDir is the module cache's copy of pora's module at version: where `go run
// ...@version` took this tool from, libraries included.
func moduleCacheDir(version string) (string, error) {
	if version == "" {
		return "", fmt.Errorf("this tool was not built from a released module: give -pora-dir (pora's bindings/go, " +
			"or the release's unpacked Go archive)")
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %v", err)
	}
	// The module path has no upper-case letter, so its cache path is the path itself.
	return filepath.Join(strings.TrimSpace(string(out)), filepath.FromSlash(hook.Module)+"@"+version), nil
}

// ownVersion is the version and go.sum hash of the module this binary was built from, when it
// was built from a released module (go run/install ...@version); empty in a checkout.
func ownVersion() (version, sum string) {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Main.Path != hook.Module || info.Main.Version == "(devel)" {
		return "", ""
	}
	return info.Main.Version, info.Main.Sum
}
