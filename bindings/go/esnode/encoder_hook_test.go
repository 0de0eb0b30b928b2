// The encoder hook's size and the docs: the delimited blocks of the encoder stand-in
// (encoder_esnode_test.go) are what es-node adds to ethstorage/encoder/encoder.go. They are
// counted on their own, apart from the mining hook (hook_test.go), held to 10 lines, and
// docs/es-node.md's encoder section must state that count and show exactly those blocks.
package esnode_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// encoderHookBound is the limit on the lines the encoder hook adds, imports included.
const encoderHookBound = 10

// encoderHookFile is the es-node file every encoder hook block goes into.
const encoderHookFile = "ethstorage/encoder/encoder.go"

func TestEncoderBlockSizeAndDoc(t *testing.T) {
	blocks := readHookBlocks(t, "encoder_esnode_test.go")
	total := 0
	for _, b := range blocks {
		total += len(b.lines)
		if !strings.HasPrefix(b.label, encoderHookFile+", ") {
			t.Errorf("encoder hook block %q is not labelled with %s", b.label, encoderHookFile)
		}
	}
	t.Logf("encoder block: %d lines", total)
	if total == 0 {
		t.Fatal("no encoder hook blocks found: the markers moved")
	}
	if total > encoderHookBound {
		t.Errorf("the encoder hook is %d lines, over the bound of %d", total, encoderHookBound)
	}

	doc := filepath.Join("..", "..", "..", "docs", "es-node.md")
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if count := fmt.Sprintf("**%d lines in one es-node file**", total); !strings.Contains(text, count) {
		t.Errorf("%s does not state the encoder hook's count as %s", doc, count)
	}
	// The encoder section has its own markers; docHookBlocks reads the mining hook's
	// (docSectionBegin/End), so it is given the encoder section alone between those.
	start, end := strings.Index(text, "<!-- encoder hook begin -->"), strings.Index(text, "<!-- encoder hook end -->")
	if start < 0 || end < start {
		t.Fatalf("%s: no <!-- encoder hook begin --> ... <!-- encoder hook end --> section", doc)
	}
	section := filepath.Join(t.TempDir(), "encoder-section.md")
	if err := os.WriteFile(section, []byte(docSectionBegin+"\n"+text[start:end]+docSectionEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// One text of all blocks, labels included, each side: any difference in order, label or
	// line shows.
	render := func(blocks []hookBlock) string {
		var text strings.Builder
		for _, b := range blocks {
			fmt.Fprintf(&text, "// %s\n%s\n\n", b.label, strings.Join(b.lines, "\n"))
		}
		return text.String()
	}
	if shown, want := render(docHookBlocks(t, section)), render(blocks); shown != want {
		t.Errorf("%s's encoder section shows:\n%s\nthe stand-in's encoder hook blocks are:\n%s", doc, shown, want)
	}
}
