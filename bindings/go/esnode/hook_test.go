// The mining hook's size and the docs: the lines between "pora hook begin" and "pora hook end" in
// the es-node mining stand-in files (standInFiles, and only those) are what es-node adds or
// changes in its existing files, imports and the --miner.pora flag included; this test counts
// them, prints the count and each block's size, holds it to the bound (60), and checks that the
// mining-hook section of docs/es-node.md (between <!-- mining hook begin --> and <!-- mining hook
// end -->) states that count and shows exactly those blocks, in the same order, under the same
// labels. Other sections of the page (and other hooks' blocks) are not read here.
package esnode_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// standInFiles are the es-node stand-in files in the order docs/es-node.md shows their hooks.
var standInFiles = []string{"esnode_node_test.go", "esnode_miner_test.go", "esnode_cli_test.go", "esnode_worker_test.go", "esnode_downloader_test.go"}

// hookBound is the limit on lines es-node adds or changes (go.mod aside).
const hookBound = 60

const (
	beginMarker = "// pora hook begin: "
	endMarker   = "// pora hook end"
)

// hookBlock is one delimited block: its label (the es-node file and place) and its lines.
type hookBlock struct {
	label string
	lines []string
}

// standInImports maps a stand-in's import line to the line es-node writes: the stand-ins import
// this module's own copy of go-ethereum's `common` (an internal package, which es-node could not
// import), so the hook read from them names the package es-node really imports, and the docs show
// exactly what es-node compiles.
var standInImports = map[string]string{
	`	"github.com/pora-miner/pora/bindings/go/esnode/internal/common"`: `	"github.com/ethereum/go-ethereum/common"`,
}

// readHookBlocks returns the delimited blocks of a file as es-node's text (standInImports),
// failing on an unclosed or nested one.
func readHookBlocks(t *testing.T, path string) []hookBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []hookBlock
	var cur *hookBlock
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, beginMarker):
			if cur != nil {
				t.Fatalf("%s:%d: a hook block begins inside another", path, n)
			}
			cur = &hookBlock{label: strings.TrimPrefix(trimmed, beginMarker)}
		case trimmed == endMarker:
			if cur == nil {
				t.Fatalf("%s:%d: a hook block ends that never began", path, n)
			}
			blocks, cur = append(blocks, *cur), nil
		case cur != nil:
			if esnode, ok := standInImports[line]; ok {
				line = esnode
			}
			cur.lines = append(cur.lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s: the hook block %q never ends", path, cur.label)
	}
	return blocks
}

const (
	docSectionBegin = "<!-- mining hook begin -->"
	docSectionEnd   = "<!-- mining hook end -->"
)

// miningHookSection is the text of the doc between the mining hook's section markers.
func miningHookSection(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start, end := strings.Index(text, docSectionBegin), strings.Index(text, docSectionEnd)
	if start < 0 || end < start {
		t.Fatalf("%s: no %s ... %s section", path, docSectionBegin, docSectionEnd)
	}
	return text[start:end]
}

// docHookBlocks returns the ```go blocks of the doc's mining-hook section: each starts with a
// "// label" line, then the block's lines.
func docHookBlocks(t *testing.T, path string) []hookBlock {
	t.Helper()
	var blocks []hookBlock
	var cur *hookBlock
	for _, line := range strings.Split(miningHookSection(t, path), "\n") {
		switch {
		case cur == nil && line == "```go":
			cur = &hookBlock{}
		case cur != nil && line == "```":
			blocks, cur = append(blocks, *cur), nil
		case cur != nil && cur.label == "" && cur.lines == nil:
			if !strings.HasPrefix(line, "// ") {
				t.Fatalf("%s: a hook block starts with %q, not a // label", path, line)
			}
			cur.label = strings.TrimPrefix(line, "// ")
			cur.lines = []string{}
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	return blocks
}

func TestHookSizeAndDoc(t *testing.T) {
	var blocks []hookBlock
	files := map[string]int{} // es-node file -> lines
	var fileOrder []string
	total := 0
	for _, f := range standInFiles {
		for _, b := range readHookBlocks(t, f) {
			blocks = append(blocks, b)
			total += len(b.lines)
			file := strings.SplitN(b.label, ",", 2)[0]
			if _, seen := files[file]; !seen {
				fileOrder = append(fileOrder, file)
			}
			files[file] += len(b.lines)
		}
	}
	for _, b := range blocks {
		t.Logf("%3d  %s", len(b.lines), b.label)
	}
	for _, file := range fileOrder {
		t.Logf("%3d  in %s", files[file], file)
	}
	t.Logf("the hook: %d lines added or changed in %d es-node files (%d blocks), no new es-node file", total, len(files), len(blocks))
	if total > hookBound {
		t.Errorf("the hook is %d lines, over the bound of %d", total, hookBound)
	}
	if total == 0 {
		t.Fatal("no hook blocks found: the markers moved")
	}

	doc := filepath.Join("..", "..", "..", "docs", "es-node.md")
	if count := fmt.Sprintf("**%d lines in %d es-node files**", total, len(files)); !strings.Contains(miningHookSection(t, doc), count) {
		t.Errorf("%s's mining-hook section does not state the count as %s", doc, count)
	}
	for _, file := range fileOrder {
		if size := fmt.Sprintf("`%s` %d", file, files[file]); !strings.Contains(miningHookSection(t, doc), size) {
			t.Errorf("%s's mining-hook section does not give %s's size as %s", doc, file, size)
		}
	}
	for _, b := range blocks {
		if !strings.HasPrefix(b.label, "ethstorage/") {
			t.Errorf("hook block %q: its label must name es-node's real path (ethstorage/...)", b.label)
		}
	}
	shown := docHookBlocks(t, doc)
	if len(shown) != len(blocks) {
		t.Fatalf("%s shows %d hook blocks; the stand-in has %d", doc, len(shown), len(blocks))
	}
	for i, b := range blocks {
		if shown[i].label != b.label || strings.Join(shown[i].lines, "\n") != strings.Join(b.lines, "\n") {
			t.Errorf("%s hook block %d (%q) differs from the stand-in's (%q):\n--- doc\n%s\n--- stand-in\n%s",
				doc, i+1, shown[i].label, b.label, strings.Join(shown[i].lines, "\n"), strings.Join(b.lines, "\n"))
		}
	}
}
