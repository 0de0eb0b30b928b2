// A copy of pora's Go module inside the es-node tree (ModuleSource.Vendor): es-node's go.mod
// replaces the module with ./pora-go, so every way es-node is built (make, its Dockerfile's `ADD .
// /es-node` then `RUN make` with an empty module cache, its CI) finds pora's module and its
// prebuilt libraries in the tree, with nothing fetched and no setting to know. The copy holds what
// a build needs: the module's files by the rules of a module zip (regular files, no nested module
// or vendor directory), without its tests and testdata.

package hook

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// moduleLine is go.mod's module directive.
var moduleLine = regexp.MustCompile(`(?m)^module\s+"?([^"\s]+)"?\s*$`)

// declaresModule says whether the go.mod in dir declares pora's module.
func declaresModule(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	m := moduleLine.FindSubmatch(raw)
	if m == nil || string(m[1]) != Module {
		return &shapeError{filepath.Join(dir, "go.mod"), "does not declare module " + Module}
	}
	return nil
}

// moduleFiles is every file of the module at src a build needs, as slash-separated paths.
func moduleFiles(src string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module is not part of this one
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, ".") {
			return nil
		}
		out = append(out, rel)
		return nil
	})
	return out, err
}

// planVendor copies the module at src into dir/VendorDir: a new file for each one missing there,
// a changed one for each that differs.
func planVendor(dir, src string) ([]Change, error) {
	if err := declaresModule(src); err != nil {
		return nil, err
	}
	files, err := moduleFiles(src)
	if err != nil {
		return nil, err
	}
	if !hasLib(files) {
		return nil, &shapeError{src, "holds no prebuilt library (lib/<goos>_<goarch>/libpora_ffi.a): " +
			"take the release's Go archive, or run tools/go-lib.sh in a checkout"}
	}
	var changes []Change
	for _, rel := range files {
		raw, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		dst := path.Join(VendorDir, rel)
		old, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(dst)))
		switch {
		case os.IsNotExist(err):
			changes = append(changes, Change{Path: dst, New: raw, Create: true})
		case err != nil:
			return nil, err
		case !bytes.Equal(old, raw):
			changes = append(changes, Change{Path: dst, Old: old, New: raw})
		}
	}
	return changes, nil
}

func hasLib(files []string) bool {
	for _, f := range files {
		if strings.HasPrefix(f, "lib/") && strings.HasSuffix(f, "/libpora_ffi.a") {
			return true
		}
	}
	return false
}

// planVendorRemoval deletes every file of the module copy in dir/VendorDir, after checking that
// the directory is pora's module.
func planVendorRemoval(dir string) ([]Change, error) {
	root := filepath.Join(dir, VendorDir)
	if _, err := os.Lstat(root); os.IsNotExist(err) {
		return nil, nil
	}
	if err := declaresModule(root); err != nil {
		return nil, &shapeError{VendorDir, "is named by go.mod's replace of pora's module but is not pora's module: " +
			err.Error()}
	}
	var changes []Change
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		raw, err := os.ReadFile(p)
		changes = append(changes, Change{Path: filepath.ToSlash(rel), Old: raw, Delete: true})
		return err
	})
	return changes, err
}
