// Package hook applies pora's mining hook (and, on request, the encoder block and the Cleanup
// fix) to an es-node checkout, and takes it out again: the engine of cmd/pora-esnode.
//
// Only the hook's lines change. Each file is edited as its lines with their own endings
// (lines.go): the hook's lines are spliced in with the file's line ending and the alignment gofmt
// gives them in place, and every other byte (es-node's lines, CRLF endings, a byte-order mark, a
// miner's own formatting) stays; revert takes exactly those lines out again, so es-node's files
// come back byte for byte.
//
// All or nothing: every file is read and every block placed in memory first; a file missing, a
// function renamed, an anchor line gone or found twice stops the run before any file is written,
// naming the file and the place. A tree holding part of the hook (an interrupted run, a hand
// edit) is completed by Plan and taken out by PlanRevert. Write stages every file before it
// replaces the first and puts back what it replaced when one fails (write.go).
package hook

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ModuleSource says how es-node's go.mod reaches pora's module.
type ModuleSource struct {
	// Version and Sum are a released version and its go.sum hash of the module's zip
	// ("h1:..."): go.mod gets a require line and go.sum the module's two lines.
	Version, Sum string
	// Dir, instead, is a local copy of pora's module (bindings/go of a checkout, or an unpacked
	// release archive): go.mod gets a require and a replace naming it (made absolute from the
	// caller's working directory), go.sum nothing.
	Dir string
	// Vendor copies the module from Dir (or, when Dir is empty, from the module cache's copy of
	// Version) into the es-node tree at VendorDir, and go.mod's replace names that directory
	// relatively: es-node then builds with nothing of pora's fetched (es-node's Dockerfile, its
	// CI, a builder with no proxy settings).
	Vendor bool
}

// VendorDir is where ModuleSource.Vendor puts pora's module in the es-node tree.
const VendorDir = "pora-go"

// Change is one file's new content.
type Change struct {
	Path     string // relative to the es-node directory, slash-separated
	Old, New []byte
	// Create: the file is new (Old is nil); Delete: the file goes (New is nil).
	Create, Delete bool
}

// Result is what a run would change.
type Result struct {
	Changes []Change
	// Already are the sets the tree held whole before the run.
	Already []Set
}

// errShape marks an error about es-node's code not having the expected shape.
var errShape = errors.New("es-node's code does not have the shape of v0.2.10 here")

type shapeError struct{ file, msg string }

func (e *shapeError) Error() string { return e.file + ": " + e.msg }
func (e *shapeError) Unwrap() error { return errShape }

// Plan works out what applying sets to the es-node tree at dir changes, writing nothing. A block
// already there is left as it is, so a tree holding part of a set gets the rest; a set the tree
// held whole is in Result.Already.
func Plan(dir string, sets []Set, mod ModuleSource) (*Result, error) {
	files, order, err := readFiles(dir, sets)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, set := range sets {
		whole := true
		for _, b := range OfSet(set) {
			f := files[b.File]
			if b.Scope == "import" {
				for _, l := range b.Lines {
					path := importPath(l)
					if ok, err := f.imports(path); err != nil {
						return nil, err
					} else if !ok {
						whole = false
						if err := f.insertImport(path, l); err != nil {
							return nil, err
						}
					}
				}
				continue
			}
			lo, hi, err := f.scope(b)
			if err != nil {
				return nil, err
			}
			if _, _, ok := f.find(b, lo, hi); ok {
				continue
			}
			whole = false
			if err := f.insert(b); err != nil {
				return nil, err
			}
		}
		if whole {
			res.Already = append(res.Already, set)
		}
	}
	for _, name := range order {
		f := files[name]
		if bytes.Equal(f.bytes(), f.orig) {
			continue
		}
		if err := f.alignHookLines(); err != nil {
			return nil, err
		}
		res.Changes = append(res.Changes, Change{Path: name, Old: f.orig, New: f.bytes()})
	}
	if mod.Dir != "" {
		if mod.Dir, err = filepath.Abs(mod.Dir); err != nil {
			return nil, err
		}
		if err := declaresModule(mod.Dir); err != nil {
			return nil, fmt.Errorf("pora's module directory: %w", err)
		}
	}
	if mod.Vendor {
		if mod.Dir == "" {
			return nil, errors.New("no copy of pora's module to put in the tree: give its directory")
		}
		changes, err := planVendor(dir, mod.Dir)
		if err != nil {
			return nil, err
		}
		res.Changes = append(res.Changes, changes...)
	}
	changes, err := planModule(dir, mod)
	if err != nil {
		return nil, err
	}
	res.Changes = append(res.Changes, changes...)
	return res, nil
}

// PlanRevert works out what taking every pora block, and pora's go.mod and go.sum lines, out of
// the tree at dir changes. Blocks are taken out one by one wherever they are found, so a tree
// holding part of the hook is reverted too.
func PlanRevert(dir string) (*Result, error) {
	all := []Set{Mining, Encoder, CleanupFix}
	files, order, err := readFiles(dir, all)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, set := range all {
		blocks := OfSet(set)
		found, whole := 0, true
		// The blocks first, last to first, then the imports they needed.
		for i := len(blocks) - 1; i >= 0; i-- {
			b := blocks[i]
			if b.Scope == "import" {
				continue
			}
			removed, err := files[b.File].remove(b)
			if err != nil {
				return nil, err
			}
			if removed {
				found++
			} else {
				whole = false
			}
		}
		for _, b := range blocks {
			if b.Scope != "import" {
				continue
			}
			for _, l := range b.Lines {
				removed, err := files[b.File].removeImport(importPath(l))
				if err != nil {
					return nil, err
				}
				if removed {
					found++
				} else {
					whole = false
				}
			}
		}
		if whole && found > 0 {
			res.Already = append(res.Already, set)
		}
	}
	for _, name := range order {
		f := files[name]
		if bytes.Equal(f.bytes(), f.orig) {
			continue
		}
		if _, err := parser.ParseFile(token.NewFileSet(), name, f.text(), parser.ParseComments); err != nil {
			return nil, &shapeError{name, "does not parse with pora's blocks taken out: " + err.Error()}
		}
		res.Changes = append(res.Changes, Change{Path: name, Old: f.orig, New: f.bytes()})
	}
	changes, err := revertModule(dir)
	if err != nil {
		return nil, err
	}
	res.Changes = append(res.Changes, changes...)
	return res, nil
}

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
			f := newFile(b.File, raw)
			if _, err := parser.ParseFile(token.NewFileSet(), b.File, f.text(), parser.ParseComments); err != nil {
				return nil, nil, &shapeError{b.File, "not Go that parses: " + err.Error()}
			}
			files[b.File] = f
			order = append(order, b.File)
		}
	}
	sort.Strings(order)
	return files, order, nil
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
	for i := lo; i < hi; i++ {
		if norm(f.lines[i].text) != want[0] {
			continue
		}
		j, k := i, 0
		for ; k < len(want) && j < hi; j++ {
			switch norm(f.lines[j].text) {
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
		line := norm(f.lines[i].text)
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

// insert writes a (non-import) block at its place.
func (f *file) insert(b Block) error {
	at, err := f.anchor(b)
	if err != nil {
		return err
	}
	if b.Replace {
		// The block's lines take the anchor line's indentation in place of their first line's
		// (deeper lines keep their extra tabs), so revert gives the anchor back as it was.
		old := f.lines[at].text
		indent := old[:len(old)-len(strings.TrimLeft(old, " \t"))]
		first := b.Lines[0][:len(b.Lines[0])-len(strings.TrimLeft(b.Lines[0], " \t"))]
		add := make([]string, len(b.Lines))
		for i, l := range b.Lines {
			add[i] = indent + strings.TrimPrefix(l, first)
		}
		f.splice(at, 1, add)
		return nil
	}
	f.splice(at+b.Offset, 0, b.Lines)
	return nil
}

// remove takes the block out where it is found, putting the anchor line back where the block
// replaced it; false when the block is not there.
func (f *file) remove(b Block) (bool, error) {
	lo, hi, err := f.scope(b)
	if err != nil {
		return false, err
	}
	from, to, ok := f.find(b, lo, hi)
	if !ok {
		return false, nil
	}
	if b.Replace {
		// The block's first line becomes the anchor line again (its indentation and line ending
		// kept); the block's other lines go.
		old := f.lines[from].text
		f.lines[from].text = old[:len(old)-len(strings.TrimLeft(old, " \t"))] + b.Anchor
		f.removeLines(from+1, to-from-1)
		return true, nil
	}
	// A block that starts with a blank line brought the blank above its first line.
	if norm(b.Lines[0]) == "" && from > 0 && norm(f.lines[from-1].text) == "" {
		from--
	}
	f.removeLines(from, to-from)
	return true, nil
}

// importPath is the path of an import block's line (`\t"path"`).
func importPath(l string) string { return unquote(strings.TrimSpace(l)) }

// importList is the file's parenthesised import list: its specs (path and first and last line
// index) and the line index of its closing parenthesis.
func (f *file) importList() (specs []importSpec, closing int, err error) {
	fset := token.NewFileSet()
	tree, err := parser.ParseFile(fset, f.name, f.text(), parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return nil, 0, &shapeError{f.name, "does not parse: " + err.Error()}
	}
	for _, d := range tree.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT || !g.Lparen.IsValid() {
			continue
		}
		for _, sp := range g.Specs {
			is := sp.(*ast.ImportSpec)
			p, _ := strconv.Unquote(is.Path.Value)
			specs = append(specs, importSpec{p, is.Name, fset.Position(is.Pos()).Line - 1, fset.Position(is.End()).Line - 1})
		}
		return specs, fset.Position(g.Rparen).Line - 1, nil
	}
	return nil, 0, &shapeError{f.name, "no parenthesised import list"}
}

type importSpec struct {
	path        string
	name        *ast.Ident
	first, last int
}

// imports says whether the file imports path (under any name).
func (f *file) imports(path string) (bool, error) {
	specs, _, err := f.importList()
	for _, s := range specs {
		if s.path == path {
			return true, err
		}
	}
	return false, err
}

// insertImport puts the import line where gofmt would sort it: into the list's last group (the
// specs on consecutive lines before the closing parenthesis), before the first path greater than
// it.
func (f *file) insertImport(path, text string) error {
	specs, closing, err := f.importList()
	if err != nil {
		return err
	}
	at := closing
	if n := len(specs); n > 0 && specs[n-1].last == closing-1 {
		first := n - 1
		for first > 0 && specs[first-1].last == specs[first].first-1 {
			first--
		}
		at = specs[n-1].last + 1
		for _, s := range specs[first:] {
			if s.path > path {
				at = s.first
				break
			}
		}
	}
	f.splice(at, 0, []string{text})
	return nil
}

// removeImport takes the import of path out. pora's own packages go whenever they are there; any
// other (go-ethereum's common) only when nothing left in the file uses it, so an import es-node
// has of its own stays.
func (f *file) removeImport(path string) (bool, error) {
	specs, _, err := f.importList()
	if err != nil {
		return false, err
	}
	for _, s := range specs {
		if s.path != path || s.first != s.last {
			continue
		}
		if !strings.HasPrefix(path, Module) {
			used, err := f.usesPackage(s)
			if err != nil || used {
				return false, err
			}
		}
		f.removeLines(s.first, 1)
		return true, nil
	}
	return false, nil
}

// usesPackage says whether any selector in the file names the import's package.
func (f *file) usesPackage(s importSpec) (bool, error) {
	name := s.path[strings.LastIndex(s.path, "/")+1:]
	if s.name != nil {
		name = s.name.Name
	}
	tree, err := parser.ParseFile(token.NewFileSet(), f.name, f.text(), parser.SkipObjectResolution)
	if err != nil {
		return false, &shapeError{f.name, "does not parse: " + err.Error()}
	}
	used := false
	ast.Inspect(tree, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
				used = true
			}
		}
		return !used
	})
	return used, nil
}
