// es-node's go.mod and go.sum: the lines naming pora's module, added and taken out wherever they
// are. A small line editor rather than golang.org/x/mod/modfile: the tool ships inside pora's
// module, which es-node requires, and that module is the standard library and cgo only; the
// edits are two kinds of line (a require and a replace of one module path), and a line editor
// leaves every other byte of es-node's go.mod as it was, where modfile rewrites the file in its
// own layout. `go mod tidy` after apply moves the require into a require block; revert finds it
// there too (TestRevertAfterTidy's shapes are what tidy writes).

package hook

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// modLine is what a go.mod line says about pora's module.
type modLine int

const (
	otherLine modLine = iota
	requiresPora
	replacesPora
)

// poraLines classifies every line of a go.mod: a require or replace of pora's module, single-line
// or inside a block, by the first word after the verb.
func poraLines(f *file) []modLine {
	out := make([]modLine, len(f.lines))
	block := ""
	for i, l := range f.lines {
		fields := strings.Fields(stripComment(l.text))
		if len(fields) == 0 {
			continue
		}
		if block != "" && fields[0] == ")" {
			block = ""
			continue
		}
		verb := block
		if block == "" {
			verb, fields = fields[0], fields[1:]
			if len(fields) == 1 && fields[0] == "(" {
				block = verb
				continue
			}
		}
		if len(fields) == 0 || unquote(fields[0]) != Module {
			continue
		}
		switch verb {
		case "require":
			out[i] = requiresPora
		case "replace":
			out[i] = replacesPora
		}
	}
	return out
}

// stripComment drops a // comment (go.mod has no other; a quoted path holding "//" is quoted
// whole, and the tool only reads the first words).
func stripComment(s string) string {
	if i := strings.Index(s, "//"); i >= 0 && !strings.Contains(s[:i], `"`) {
		return s[:i]
	}
	return s
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// quoteModPath writes a path as go.mod needs it: quoted when it holds white space, a quote or a
// comment marker (what `go mod edit` quotes), as it is otherwise.
func quoteModPath(p string) string {
	if p == "" || strings.ContainsAny(p, "\"'`") || strings.Contains(p, "//") || strings.Contains(p, "/*") ||
		strings.IndexFunc(p, unicode.IsSpace) >= 0 {
		return strconv.Quote(p)
	}
	return p
}

// planModule adds pora's module to go.mod (and go.sum), unless go.mod requires it already.
func planModule(dir string, mod ModuleSource) ([]Change, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, &shapeError{"go.mod", "cannot read it: " + err.Error()}
	}
	gomod := newFile("go.mod", raw)
	kinds := poraLines(gomod)
	var replace, version string
	switch {
	case mod.Vendor:
		replace, version = "./"+VendorDir, "v0.0.0"
	case mod.Dir != "":
		replace, version = mod.Dir, "v0.0.0"
	case mod.Version != "" && strings.HasPrefix(mod.Sum, "h1:"):
		version = mod.Version
	default:
		return nil, fmt.Errorf("no version of pora's module to require: run the tool as `go run %s/cmd/pora-esnode@<version>`, "+
			"or give the directory of pora's module (bindings/go)", Module)
	}
	var changes []Change
	if replace == "" {
		sumPath := filepath.Join(dir, "go.sum")
		sum, err := os.ReadFile(sumPath)
		if err != nil {
			return nil, &shapeError{"go.sum", "cannot read it (es-node's checkout has one): " + err.Error()}
		}
		lines := []string{
			fmt.Sprintf("%s %s %s", Module, version, mod.Sum),
			fmt.Sprintf("%s %s/go.mod %s", Module, version, GoModSum()),
		}
		if next := insertSorted(sum, lines); !bytes.Equal(next, sum) {
			changes = append(changes, Change{Path: "go.sum", Old: sum, New: next})
		}
	}
	has := map[modLine]bool{}
	for _, k := range kinds {
		has[k] = true
	}
	if has[requiresPora] && has[replacesPora] == (replace != "") {
		return changes, nil // go.mod names the module as this source would (a completed or tidied apply)
	}
	if has[requiresPora] || has[replacesPora] {
		return nil, &shapeError{"go.mod", "names " + Module + " already, in another form than this apply " +
			"writes: run revert first"}
	}
	if !gomod.finalEOL && len(gomod.lines) > 0 {
		return nil, &shapeError{"go.mod", "does not end with a newline"}
	}
	add := []string{"", "require " + Module + " " + version}
	if replace != "" {
		add = append(add, "replace "+Module+" => "+quoteModPath(replace))
	}
	gomod.splice(len(gomod.lines), 0, add)
	return append([]Change{{Path: "go.mod", Old: raw, New: gomod.bytes()}}, changes...), nil
}

// insertSorted puts the lines go.sum lacks into its sorted lines, with its line ending.
func insertSorted(sum []byte, lines []string) []byte {
	f := newFile("go.sum", sum)
	all := f.texts()
	for _, l := range lines {
		i := sort.SearchStrings(all, l)
		if i < len(all) && all[i] == l {
			continue
		}
		all = append(all[:i], append([]string{l}, all[i:]...)...)
		f.splice(i, 0, []string{l})
	}
	return f.bytes()
}

// revertModule takes every line naming pora's module out of go.mod and go.sum, and the copy of
// the module apply put in the tree (a replace naming a directory inside it).
func revertModule(dir string) ([]Change, error) {
	var changes []Change
	raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, &shapeError{"go.mod", "cannot read it: " + err.Error()}
	}
	gomod := newFile("go.mod", raw)
	kinds := poraLines(gomod)
	var vendored string
	for i := len(gomod.lines) - 1; i >= 0; i-- {
		if kinds[i] == otherLine {
			continue
		}
		if kinds[i] == replacesPora {
			text := stripComment(gomod.lines[i].text)
			if _, target, ok := strings.Cut(text, "=>"); ok {
				if t := unquote(strings.TrimSpace(target)); t == "./"+VendorDir || t == VendorDir {
					vendored = VendorDir
				}
			}
		}
		gomod.removeLines(i, 1)
		tidyAround(gomod, i)
	}
	if !bytes.Equal(gomod.bytes(), raw) {
		changes = append(changes, Change{Path: "go.mod", Old: raw, New: gomod.bytes()})
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil && !os.IsNotExist(err) {
		return nil, &shapeError{"go.sum", "cannot read it: " + err.Error()}
	}
	if f := newFile("go.sum", sum); err == nil {
		for i := len(f.lines) - 1; i >= 0; i-- {
			if strings.HasPrefix(f.lines[i].text, Module+" ") {
				f.removeLines(i, 1)
			}
		}
		if !bytes.Equal(f.bytes(), sum) {
			changes = append(changes, Change{Path: "go.sum", Old: sum, New: f.bytes()})
		}
	}
	if vendored != "" {
		del, err := planVendorRemoval(dir)
		if err != nil {
			return nil, err
		}
		changes = append(changes, del...)
	}
	return changes, nil
}

// tidyAround mends go.mod where a line was taken out at index i: an emptied block goes, and so
// does a blank line left doubled or last (apply's own lines came after a blank line of their
// own, so taking them out gives the file back byte for byte).
func tidyAround(f *file, i int) {
	blank := func(k int) bool { return k >= 0 && k < len(f.lines) && strings.TrimSpace(f.lines[k].text) == "" }
	if i > 0 && i < len(f.lines) && strings.HasSuffix(strings.TrimSpace(f.lines[i-1].text), "(") &&
		strings.TrimSpace(f.lines[i].text) == ")" {
		f.removeLines(i-1, 2)
		i--
	}
	switch {
	case i == len(f.lines) && blank(i-1):
		f.removeLines(i-1, 1)
	case blank(i-1) && blank(i):
		f.removeLines(i, 1)
	}
}
