// Package hook applies pora's mining hook (and, on request, the encoder block and the Cleanup
// fix) to an es-node checkout, and takes it out again: the engine of cmd/pora-esnode.
//
// All or nothing: every file is read and every block placed in memory first; a file missing, a
// function renamed, an anchor line gone or found twice, or a set applied only in part stops the
// run before any file is written, naming the file and the place. The result is passed through
// go/format, so it is gofmt-clean; es-node's own lines keep their bytes (gofmt leaves an
// already-formatted file as it is), which is also why a revert gives es-node's files back byte
// for byte.
package hook

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ModuleSource says how es-node's go.mod reaches pora's module.
type ModuleSource struct {
	// Version and Sum are a released version and its go.sum hash of the module's zip
	// ("h1:..."): go.mod gets a require line and go.sum the module's two lines.
	Version, Sum string
	// Dir, instead, is a local copy of pora's module (bindings/go of a checkout, or an unpacked
	// release archive): go.mod gets a require and a replace naming it, go.sum nothing.
	Dir string
}

// Change is one file's new content.
type Change struct {
	Path     string // relative to the es-node directory, slash-separated
	Old, New []byte
}

// Result is what a run would change.
type Result struct {
	Changes []Change
	// Already are the sets the tree holds already (apply) or held before the revert.
	Already []Set
}

// errShape marks an error about es-node's code not having the expected shape.
var errShape = errors.New("es-node's code does not have the shape of v0.2.10 here")

type shapeError struct{ file, msg string }

func (e *shapeError) Error() string { return e.file + ": " + e.msg }
func (e *shapeError) Unwrap() error { return errShape }

// Plan works out what applying sets to the es-node tree at dir changes, writing nothing. A set
// already applied whole is left as it is (Result.Already); a set applied in part is an error.
func Plan(dir string, sets []Set, mod ModuleSource) (*Result, error) {
	files, order, err := readFiles(dir, sets)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, set := range sets {
		state, err := setState(files, set)
		if err != nil {
			return nil, err
		}
		if state == applied {
			res.Already = append(res.Already, set)
			continue
		}
		for _, b := range OfSet(set) {
			if err := files[b.File].insert(b); err != nil {
				return nil, err
			}
		}
	}
	if res.Changes, err = formattedChanges(files, order); err != nil {
		return nil, err
	}
	if len(res.Changes) > 0 || !containsSet(res.Already, Mining) {
		changes, err := planModule(dir, mod)
		if err != nil {
			return nil, err
		}
		res.Changes = append(res.Changes, changes...)
	}
	return res, nil
}

// formattedChanges gofmts each file in order and returns those whose text differs from what was
// read: what Plan and PlanRevert change.
func formattedChanges(files map[string]*file, order []string) ([]Change, error) {
	var changes []Change
	for _, name := range order {
		f := files[name]
		if err := f.format(); err != nil {
			return nil, err
		}
		if !bytes.Equal(f.orig, f.text()) {
			changes = append(changes, Change{Path: name, Old: f.orig, New: f.text()})
		}
	}
	return changes, nil
}

// PlanRevert works out what taking every applied set out of the tree at dir changes.
func PlanRevert(dir string) (*Result, error) {
	all := []Set{Mining, Encoder, CleanupFix}
	files, order, err := readFiles(dir, all)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, set := range all {
		state, err := setState(files, set)
		if err != nil {
			return nil, err
		}
		if state != applied {
			continue
		}
		res.Already = append(res.Already, set)
		blocks := OfSet(set)
		for i := len(blocks) - 1; i >= 0; i-- {
			if err := files[blocks[i].File].remove(blocks[i]); err != nil {
				return nil, err
			}
		}
	}
	if res.Changes, err = formattedChanges(files, order); err != nil {
		return nil, err
	}
	changes, err := revertModule(dir)
	if err != nil {
		return nil, err
	}
	res.Changes = append(res.Changes, changes...)
	return res, nil
}

// Write writes the changes; each file is written whole to a temporary file beside it and
// renamed over it, so a file is never left half written.
func Write(dir string, changes []Change) error {
	for _, c := range changes {
		path := filepath.Join(dir, filepath.FromSlash(c.Path))
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		tmp := path + ".pora-esnode.tmp"
		if err := os.WriteFile(tmp, c.New, info.Mode().Perm()); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	return nil
}

func containsSet(sets []Set, s Set) bool {
	for _, x := range sets {
		if x == s {
			return true
		}
	}
	return false
}

// file is one es-node Go file being edited, as lines.
type file struct {
	name  string
	orig  []byte
	lines []string
}

func (f *file) text() []byte { return []byte(strings.Join(f.lines, "\n")) }

// readFiles reads every file the sets touch; a missing or unparsable file is an error naming it.
func readFiles(dir string, sets []Set) (map[string]*file, []string, error) {
	files := map[string]*file{}
	var order []string
	for _, set := range sets {
		for _, b := range OfSet(set) {
			if files[b.File] != nil {
				continue
			}
			raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(b.File)))
			if err != nil {
				if os.IsNotExist(err) {
					return nil, nil, &shapeError{b.File, "missing (is " + dir + " an es-node v0.2.10 checkout?)"}
				}
				return nil, nil, err
			}
			if _, err := parser.ParseFile(token.NewFileSet(), b.File, raw, parser.ParseComments); err != nil {
				return nil, nil, &shapeError{b.File, "not Go that parses: " + err.Error()}
			}
			files[b.File] = &file{name: b.File, orig: raw, lines: strings.Split(string(raw), "\n")}
			order = append(order, b.File)
		}
	}
	sort.Strings(order)
	return files, order, nil
}

// format passes the file through gofmt.
func (f *file) format() error {
	out, err := format.Source(f.text())
	if err != nil {
		return &shapeError{f.name, "the edited file does not format: " + err.Error()}
	}
	f.lines = strings.Split(string(out), "\n")
	return nil
}

type state int

const (
	absent state = iota
	applied
)

// setState says whether the set is absent or applied whole; any other mix is an error naming
// the blocks present and missing.
func setState(files map[string]*file, set Set) (state, error) {
	var present, missing []string
	for _, b := range OfSet(set) {
		f := files[b.File]
		lo, hi, err := f.scope(b)
		if err != nil {
			return absent, err
		}
		if _, _, ok := f.find(b, lo, hi); ok {
			present = append(present, b.File+", "+b.Place)
		} else {
			missing = append(missing, b.File+", "+b.Place)
		}
	}
	switch {
	case len(missing) == 0:
		return applied, nil
	case len(present) == 0:
		return absent, nil
	}
	return absent, fmt.Errorf("%w: the %s set is applied in part: present %s; missing %s",
		errShape, set, strings.Join(present, "; "), strings.Join(missing, "; "))
}

// norm collapses runs of white space, so a line matches whatever alignment gofmt gave it.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

// scope is the block's scope as a half-open range of line indices. A block placed after its
// scope's last line (a new method after a function) is looked for in the lines after it too.
func (f *file) scope(b Block) (lo, hi int, err error) {
	lo, hi, err = f.declRange(b)
	if err == nil && b.Anchor == "" && b.Offset > 0 {
		hi += len(b.Lines) + 1
		if hi > len(f.lines) {
			hi = len(f.lines)
		}
	}
	return lo, hi, err
}

// declRange is the lines of the block's scope, as a half-open range of line indices.
func (f *file) declRange(b Block) (lo, hi int, err error) {
	fset := token.NewFileSet()
	tree, err := parser.ParseFile(fset, f.name, f.text(), parser.ParseComments)
	if err != nil {
		return 0, 0, &shapeError{f.name, "does not parse: " + err.Error()}
	}
	lines := func(from, to token.Pos) (int, int) {
		return fset.Position(from).Line - 1, fset.Position(to).Line
	}
	kind, name, _ := strings.Cut(b.Scope, " ")
	switch kind {
	case "file":
		return 0, len(f.lines), nil
	case "import":
		for _, d := range tree.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT && g.Lparen.IsValid() {
				lo, hi := lines(g.Pos(), g.End())
				return lo, hi, nil
			}
		}
		return 0, 0, &shapeError{f.name, "no parenthesised import list"}
	case "type":
		for _, d := range tree.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					if ts := s.(*ast.TypeSpec); ts.Name.Name == name {
						lo, hi := lines(ts.Pos(), ts.End())
						return lo, hi, nil
					}
				}
			}
		}
		return 0, 0, &shapeError{f.name, "no type " + name + " (es-node v0.2.10 has it), where the block goes (" + b.Place + ")"}
	case "func":
		recv, fn, isMethod := strings.Cut(name, ".")
		if !isMethod {
			recv, fn = "", name
		}
		var found []*ast.FuncDecl
		for _, d := range tree.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn && (recv == "" || recvName(fd) == recv) {
				found = append(found, fd)
			}
		}
		if len(found) != 1 {
			return 0, 0, &shapeError{f.name, fmt.Sprintf("%d functions %s (es-node v0.2.10 has one), "+
				"where the block goes (%s)", len(found), name, b.Place)}
		}
		lo, hi := lines(found[0].Pos(), found[0].End())
		return lo, hi, nil
	}
	return 0, 0, fmt.Errorf("hook: block %s, %s: scope %q", b.File, b.Place, b.Scope)
}

// recvName is a method's receiver type name ("" for a function).
func recvName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) != 1 {
		return ""
	}
	t := fd.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// find says where the block's lines are in [lo, hi), if they are: from its first non-blank line
// to the line after its last (blank lines inside the block may or may not have been kept).
func (f *file) find(b Block, lo, hi int) (from, to int, ok bool) {
	want := nonBlank(b.Lines)
	if b.Scope == "import" {
		// gofmt sorts each import line into place: each must be in the list, anywhere.
		for _, w := range want {
			if f.lineIn(w, lo, hi) < 0 {
				return 0, 0, false
			}
		}
		return lo, hi, true
	}
	for i := lo; i < hi; i++ {
		if norm(f.lines[i]) != want[0] {
			continue
		}
		j, k := i, 0
		for ; k < len(want) && j < hi; j++ {
			switch norm(f.lines[j]) {
			case want[k]:
				k++
			case "":
			default:
				j = hi
			}
		}
		if k == len(want) {
			return i, j, true
		}
	}
	return 0, 0, false
}

// lineIn is the index of the line (white space collapsed) in [lo, hi), or -1.
func (f *file) lineIn(want string, lo, hi int) int {
	for i := lo; i < hi; i++ {
		if norm(f.lines[i]) == want {
			return i
		}
	}
	return -1
}

func nonBlank(lines []string) []string {
	var out []string
	for _, l := range lines {
		if n := norm(l); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// anchor is the line index of the block's anchor, which must occur once in its scope.
func (f *file) anchor(b Block) (int, error) {
	lo, hi, err := f.scope(b)
	if err != nil {
		return 0, err
	}
	if b.Anchor == "" {
		_, end, err := f.declRange(b)
		return end - 1, err
	}
	want := norm(b.Anchor)
	at, n := -1, 0
	for i := lo; i < hi; i++ {
		line := norm(f.lines[i])
		if (b.Replace && line == want) || (!b.Replace && strings.Contains(line, want)) {
			at, n = i, n+1
		}
	}
	if n != 1 {
		return 0, &shapeError{f.name, fmt.Sprintf("%s (lines %d-%d): %d lines `%s`, want one (the place: %s)",
			b.Scope, lo+1, hi, n, b.Anchor, b.Place)}
	}
	return at, nil
}

// insert writes the block at its place.
func (f *file) insert(b Block) error {
	if b.Scope == "import" {
		_, hi, err := f.scope(b)
		if err != nil {
			return err
		}
		f.splice(hi-1, 0, b.Lines) // before the list's closing parenthesis
		return nil
	}
	at, err := f.anchor(b)
	if err != nil {
		return err
	}
	if b.Replace {
		f.splice(at, 1, b.Lines)
		return nil
	}
	f.splice(at+b.Offset, 0, b.Lines)
	return nil
}

// remove takes the block out, putting the anchor line back where the block replaced it.
func (f *file) remove(b Block) error {
	lo, hi, err := f.scope(b)
	if err != nil {
		return err
	}
	from, to, ok := f.find(b, lo, hi)
	if !ok {
		return &shapeError{f.name, "the block at " + b.Place + " is not there to take out"}
	}
	if b.Scope == "import" {
		for _, w := range nonBlank(b.Lines) {
			f.splice(f.lineIn(w, lo, hi), 1, nil)
			hi--
		}
		return nil
	}
	if b.Replace {
		f.splice(from, to-from, []string{b.Anchor})
		return nil
	}
	// A block that starts with a blank line brought the blank above its first line.
	if norm(b.Lines[0]) == "" && from > 0 && norm(f.lines[from-1]) == "" {
		from--
	}
	f.splice(from, to-from, nil)
	return nil
}

func (f *file) splice(at, del int, add []string) {
	out := append([]string{}, f.lines[:at]...)
	out = append(out, add...)
	f.lines = append(out, f.lines[at+del:]...)
}

// modLines matches the lines apply appends to go.mod (a require, and a replace with -pora-dir);
// sumPrefix starts go.sum's lines of pora's module.
var (
	modLines = regexp.MustCompile(`\n\nrequire ` + regexp.QuoteMeta(Module) + ` \S+\n(replace ` +
		regexp.QuoteMeta(Module) + ` => .*\n)?$`)
	sumPrefix = Module + " "
)

// planModule adds pora's module to go.mod (and go.sum), unless go.mod names it already.
func planModule(dir string, mod ModuleSource) ([]Change, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, &shapeError{"go.mod", "cannot read it: " + err.Error()}
	}
	if bytes.Contains(gomod, []byte(Module+" ")) {
		if modLines.Match(gomod) {
			return nil, nil
		}
		return nil, &shapeError{"go.mod", "names " + Module + " already, not as pora-esnode writes it: " +
			"take that line out, or run revert first"}
	}
	if len(gomod) > 0 && gomod[len(gomod)-1] != '\n' {
		return nil, &shapeError{"go.mod", "does not end with a newline"}
	}
	var add string
	var changes []Change
	switch {
	case mod.Dir != "":
		add = fmt.Sprintf("\nrequire %s v0.0.0\nreplace %s => %s\n", Module, Module, mod.Dir)
	case mod.Version != "" && strings.HasPrefix(mod.Sum, "h1:"):
		add = fmt.Sprintf("\nrequire %s %s\n", Module, mod.Version)
		sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		lines := []string{
			fmt.Sprintf("%s %s %s", Module, mod.Version, mod.Sum),
			fmt.Sprintf("%s %s/go.mod %s", Module, mod.Version, GoModSum()),
		}
		changes = append(changes, Change{Path: "go.sum", Old: sum, New: insertSorted(sum, lines)})
	default:
		return nil, errors.New("no version of pora's module to require: run the tool as " +
			"`go run " + Module + "/cmd/pora-esnode@<version>`, or give -pora-dir <pora's bindings/go>")
	}
	return append([]Change{{Path: "go.mod", Old: gomod, New: append(append([]byte{}, gomod...), add...)}}, changes...), nil
}

// insertSorted puts lines into go.sum's sorted lines.
func insertSorted(sum []byte, lines []string) []byte {
	all := strings.Split(strings.TrimSuffix(string(sum), "\n"), "\n")
	if len(sum) == 0 {
		all = nil
	}
	for _, l := range lines {
		i := sort.SearchStrings(all, l)
		all = append(all[:i], append([]string{l}, all[i:]...)...)
	}
	return []byte(strings.Join(all, "\n") + "\n")
}

// revertModule takes pora's lines out of go.mod and go.sum.
func revertModule(dir string) ([]Change, error) {
	var changes []Change
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, &shapeError{"go.mod", "cannot read it: " + err.Error()}
	}
	if loc := modLines.FindIndex(gomod); loc != nil {
		changes = append(changes, Change{Path: "go.mod", Old: gomod, New: append([]byte{}, gomod[:loc[0]+1]...)})
	} else if bytes.Contains(gomod, []byte(Module+" ")) {
		return nil, &shapeError{"go.mod", "names " + Module + " in a line pora-esnode did not write " +
			"(go mod tidy moves it): take it out by hand"}
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err == nil && bytes.Contains(sum, []byte(sumPrefix)) {
		var kept []string
		for _, l := range strings.SplitAfter(string(sum), "\n") {
			if !strings.HasPrefix(l, sumPrefix) {
				kept = append(kept, l)
			}
		}
		changes = append(changes, Change{Path: "go.sum", Old: sum, New: []byte(strings.Join(kept, ""))})
	}
	return changes, nil
}
