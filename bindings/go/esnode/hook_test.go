// The hook's size, its lines' width and the docs: the blocks pora-esnode applies (esnode/hook's
// Blocks, the one source) are what docs/es-node.md shows. For each set (the mining hook, the
// encoder block, the Cleanup fix) this counts the lines es-node gets, prints each block's and
// file's size, holds the count to the set's bound and every line to 100 columns (a tab counted as
// 8, gofmt's width), and checks that the page's section for the set shows exactly those blocks, in the same
// order, under the same labels ("<es-node file>, <place>"), and states the count.
package esnode_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pora-miner/pora/bindings/go/esnode/hook"
)

// maxColumns is the widest a hook line may be, a tab counted as tabColumns.
const (
	maxColumns = 100
	tabColumns = 8 // gofmt's tab width, as GitHub and es-node's reviewers see the lines
)

// hookBlock is one block as the page shows it: its label and its lines.
type hookBlock struct {
	label string
	lines []string
}

// docSection is the text of the doc between the markers.
func docSection(t *testing.T, path, begin, end string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start, stop := strings.Index(text, begin), strings.Index(text, end)
	if start < 0 || stop < start {
		t.Fatalf("%s: no %s ... %s section", path, begin, end)
	}
	return text[start:stop]
}

// docHookBlocks returns the ```go blocks of a section: each starts with a "// label" line.
func docHookBlocks(t *testing.T, section string) []hookBlock {
	t.Helper()
	var blocks []hookBlock
	var cur *hookBlock
	for _, line := range strings.Split(section, "\n") {
		switch {
		case cur == nil && line == "```go":
			cur = &hookBlock{}
		case cur != nil && line == "```":
			blocks, cur = append(blocks, *cur), nil
		case cur != nil && cur.label == "" && cur.lines == nil:
			if !strings.HasPrefix(line, "// ") {
				t.Fatalf("a hook block of the page starts with %q, not a // label", line)
			}
			cur.label = strings.TrimPrefix(line, "// ")
			cur.lines = []string{}
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	return blocks
}

// columns is the line's width, a tab reaching the next multiple of tabColumns.
func columns(line string) int {
	n := 0
	for _, r := range line {
		if r == '\t' {
			n += tabColumns - n%tabColumns
		} else {
			n++
		}
	}
	return n
}

var docPath = filepath.Join("..", "..", "..", "docs", "es-node.md")

// checkSet checks one set's size, widths and section of the page; it returns the line count.
func checkSet(t *testing.T, set hook.Set, bound int, begin, end, countFormat string) int {
	t.Helper()
	blocks := hook.OfSet(set)
	if len(blocks) == 0 {
		t.Fatalf("no blocks in the %s set", set)
	}
	total := 0
	files := map[string]int{}
	var fileOrder []string
	var want []hookBlock
	for _, b := range blocks {
		total += len(b.Lines)
		if _, seen := files[b.File]; !seen {
			fileOrder = append(fileOrder, b.File)
		}
		files[b.File] += len(b.Lines)
		t.Logf("%3d  %s, %s", len(b.Lines), b.File, b.Place)
		for _, l := range b.Lines {
			if columns(l) > maxColumns {
				t.Errorf("%s, %s: a line of %d columns (over %d): %s", b.File, b.Place, columns(l), maxColumns, l)
			}
		}
		if !strings.HasPrefix(b.File, "ethstorage/") {
			t.Errorf("block %s, %s: the file must be es-node's real path (ethstorage/...)", b.File, b.Place)
		}
		want = append(want, hookBlock{label: b.File + ", " + b.Place, lines: b.Lines})
	}
	for _, f := range fileOrder {
		t.Logf("%3d  in %s", files[f], f)
	}
	t.Logf("the %s set: %d lines in %d es-node files (%d blocks), no new es-node file", set, total, len(files), len(blocks))
	if total > bound {
		t.Errorf("the %s set is %d lines, over its bound of %d", set, total, bound)
	}
	section := docSection(t, docPath, begin, end)
	if count := fmt.Sprintf(countFormat, total, len(files)); !strings.Contains(section, count) {
		t.Errorf("%s's %s section does not state the count as %s", docPath, set, count)
	}
	if len(files) > 1 {
		for _, f := range fileOrder {
			if size := fmt.Sprintf("`%s` %d", f, files[f]); !strings.Contains(section, size) {
				t.Errorf("%s's %s section does not give %s's size as %s", docPath, set, f, size)
			}
		}
	}
	render := func(blocks []hookBlock) string {
		var text strings.Builder
		for _, b := range blocks {
			fmt.Fprintf(&text, "// %s\n%s\n\n", b.label, strings.Join(b.lines, "\n"))
		}
		return text.String()
	}
	if shown, w := render(docHookBlocks(t, section)), render(want); shown != w {
		t.Errorf("%s's %s section shows:\n%s\npora-esnode applies (esnode/hook/blocks.go):\n%s", docPath, set, shown, w)
	}
	return total
}

func TestHookSizeAndDoc(t *testing.T) {
	checkSet(t, hook.Mining, 60, "<!-- mining hook begin -->", "<!-- mining hook end -->",
		"**%d lines in %d es-node files**")
}

func TestEncoderBlockSizeAndDoc(t *testing.T) {
	n := checkSet(t, hook.Encoder, 10, "<!-- encoder hook begin -->", "<!-- encoder hook end -->",
		"**%d lines in %d es-node file**")
	t.Logf("encoder block: %d lines", n)
}

func TestCleanupFixSizeAndDoc(t *testing.T) {
	checkSet(t, hook.CleanupFix, 2, "<!-- cleanup fix begin -->", "<!-- cleanup fix end -->",
		"**%d lines in %d es-node file**")
}
