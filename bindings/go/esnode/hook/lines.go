// One es-node file as the tool edits it: its lines with each line's own ending, a byte-order mark
// and whether the file ends with a newline, so that writing it back gives es-node's bytes for
// every line the hook did not add. The hook's lines take the file's line ending (CRLF in a
// Windows checkout) and the alignment gofmt gives them in place; es-node's lines are never
// reformatted, even where gofmt would change them (a miner's own edit).

package hook

import (
	"bytes"
	"go/format"
	"strconv"
	"strings"
)

// utf8BOM is the byte-order mark some Windows editors put at a file's start.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// line is one line of a file: its text without the line ending, and the ending ("\n", "\r\n", or
// "" for a last line with none).
type line struct {
	text string
	eol  string
	hook bool // added by this run (only these are given gofmt's alignment)
}

// file is one es-node Go file being edited.
type file struct {
	name     string
	orig     []byte
	bom      bool
	eol      string // the ending the hook's lines get: the file's most common one
	finalEOL bool   // the last line ends with a newline
	lines    []line
}

// newFile splits raw into lines, keeping each line's ending.
func newFile(name string, raw []byte) *file {
	f := &file{name: name, orig: raw, eol: "\n", finalEOL: true}
	body := raw
	if bytes.HasPrefix(body, utf8BOM) {
		f.bom, body = true, body[len(utf8BOM):]
	}
	crlf, lf := 0, 0
	for len(body) > 0 {
		i := bytes.IndexByte(body, '\n')
		if i < 0 {
			f.lines = append(f.lines, line{text: string(body)})
			f.finalEOL = false
			break
		}
		l := line{text: string(body[:i]), eol: "\n"}
		if strings.HasSuffix(l.text, "\r") {
			l.text, l.eol = l.text[:len(l.text)-1], "\r\n"
			crlf++
		} else {
			lf++
		}
		f.lines = append(f.lines, l)
		body = body[i+1:]
	}
	if crlf > lf {
		f.eol = "\r\n"
	}
	return f
}

// text is the file as Go source for the parser and gofmt: LF endings, no byte-order mark. Line
// numbers in it are indices into f.lines plus one.
func (f *file) text() []byte {
	var b strings.Builder
	for i, l := range f.lines {
		b.WriteString(l.text)
		if i < len(f.lines)-1 || f.finalEOL {
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// bytes is the file as written: every line with its own ending, the byte-order mark kept.
func (f *file) bytes() []byte {
	var b bytes.Buffer
	if f.bom {
		b.Write(utf8BOM)
	}
	for i, l := range f.lines {
		b.WriteString(l.text)
		switch {
		case i == len(f.lines)-1 && !f.finalEOL:
		case l.eol == "": // a last line without an ending that is no longer last
			b.WriteString(f.eol)
		default:
			b.WriteString(l.eol)
		}
	}
	return b.Bytes()
}

// texts is the lines' texts.
func (f *file) texts() []string {
	out := make([]string, len(f.lines))
	for i, l := range f.lines {
		out[i] = l.text
	}
	return out
}

// splice replaces del lines at index at with the hook's lines add.
func (f *file) splice(at, del int, add []string) {
	out := append([]line{}, f.lines[:at]...)
	for _, a := range add {
		out = append(out, line{text: a, eol: f.eol, hook: true})
	}
	f.lines = append(out, f.lines[at+del:]...)
}

// removeLines takes n lines out at index at.
func (f *file) removeLines(at, n int) {
	f.lines = append(f.lines[:at:at], f.lines[at+n:]...)
}

// alignHookLines gives each line the hook added the text gofmt gives it where it landed (the
// alignment of a struct field or a literal's key with its neighbours), leaving es-node's lines as
// they are. Then it checks the result: where es-node's file was gofmt-clean, the edited file must
// be too; elsewhere every hook line must be as gofmt would write it.
func (f *file) alignHookLines() error {
	formatted, err := format.Source(f.text())
	if err != nil {
		return &shapeError{f.name, "the edited file does not format: " + err.Error()}
	}
	pairs := hunkPairs(f.texts(), splitText(string(formatted)))
	for i, j := range pairs {
		if f.lines[i].hook && j != "" {
			f.lines[i].text = j
		}
	}
	// The check, on what will be written.
	origClean := isFormatted(newFile(f.name, f.orig).text())
	now := f.text()
	if origClean && isFormatted(now) {
		return nil
	}
	formatted, err = format.Source(now)
	if err != nil {
		return &shapeError{f.name, "the edited file does not format: " + err.Error()}
	}
	pairs = hunkPairs(f.texts(), splitText(string(formatted)))
	for i, l := range f.lines {
		if !l.hook && !origClean {
			continue
		}
		if want, changed := pairs[i]; changed && want != l.text {
			return &shapeError{f.name, "line " + strconv.Itoa(i+1) + " would not be gofmt-clean with the hook in " +
				"place (`" + strings.TrimSpace(l.text) + "`); gofmt writes `" + strings.TrimSpace(want) + "`"}
		}
	}
	return nil
}

// isFormatted says whether gofmt leaves src as it is.
func isFormatted(src []byte) bool {
	out, err := format.Source(src)
	return err == nil && bytes.Equal(out, src)
}

// splitText splits a text into lines (no trailing empty line for a final newline).
func splitText(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// hunkPairs compares a file's lines a with gofmt's lines b and, for each line of a inside a part
// that gofmt changed, gives the line of b it became: the next line of b in that part that equals
// it with runs of white space taken as one ("" when none does; such a line of a is absent from
// the map when gofmt left it as it is).
func hunkPairs(a, b []string) map[int]string {
	out := map[int]string{}
	for _, h := range hunks(a, b) {
		j := h.b0
		for i := h.a0; i < h.a1; i++ {
			out[i] = ""
			for k := j; k < h.b1; k++ {
				if norm(b[k]) == norm(a[i]) {
					out[i], j = b[k], k+1
					break
				}
			}
		}
	}
	return out
}

// hunk is a part where two line lists differ: a[a0:a1] became b[b0:b1].
type hunk struct{ a0, a1, b0, b1 int }

// hunks is where a and b differ, from a longest common subsequence of the two (after their common
// start and end, which is most of a file gofmt barely changes).
func hunks(a, b []string) []hunk {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []hunk
	for _, o := range lcsOps(a[pre:len(a)-suf], b[pre:len(b)-suf]) {
		o.ai, o.bi = o.ai+pre, o.bi+pre
		if o.kind == ' ' {
			continue
		}
		if n := len(out); n > 0 && out[n-1].a1 == o.ai && out[n-1].b1 == o.bi {
			if o.kind == '-' {
				out[n-1].a1++
			} else {
				out[n-1].b1++
			}
			continue
		}
		h := hunk{o.ai, o.ai, o.bi, o.bi}
		if o.kind == '-' {
			h.a1++
		} else {
			h.b1++
		}
		out = append(out, h)
	}
	return out
}
