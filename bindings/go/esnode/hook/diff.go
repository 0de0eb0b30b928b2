// A unified diff of one change, for pora-esnode's dry run (-n). The standard library has none;
// files here are a few hundred lines, so a longest-common-subsequence table is small enough.

package hook

import (
	"fmt"
	"strings"
)

// op is one step from a to b: keep (' '), delete ('-') or add ('+') one line.
type op struct {
	kind byte
	text string
	ai   int // a's line index before the op
	bi   int
}

// lcsOps is a shortest edit from a to b, from a longest-common-subsequence table.
func lcsOps(a, b []string) []op {
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = maxInt(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], i, j})
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, op{'+', b[j], i, j})
			j++
		default:
			ops = append(ops, op{'-', a[i], i, j})
			i++
		}
	}
	return ops
}

// Diff is the change as a unified diff with three lines of context (a line's CR shown as "\r").
func Diff(c Change) string {
	if c.Delete {
		return fmt.Sprintf("--- a/%s\n+++ /dev/null\n(deleted, %d bytes)\n", c.Path, len(c.Old))
	}
	if c.Create {
		return fmt.Sprintf("--- /dev/null\n+++ b/%s\n(new file, %d bytes)\n", c.Path, len(c.New))
	}
	ops := lcsOps(splitLines(string(c.Old)), splitLines(string(c.New)))
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", c.Path, c.Path)
	const context = 3
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := maxInt(0, k-context)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run-end > 2*context || run == len(ops) {
				end = minInt(len(ops), end+context)
				break
			}
			end = run
		}
		aLen, bLen := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", ops[start].ai+1, aLen, ops[start].bi+1, bLen)
		for _, o := range ops[start:end] {
			fmt.Fprintf(&out, "%c%s\n", o.kind, o.text)
		}
		k = end
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		if strings.HasSuffix(l, "\r") {
			lines[i] = strings.TrimSuffix(l, "\r") + `\r`
		}
	}
	return lines
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}
