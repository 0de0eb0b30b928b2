// Generate on small made-up packages: a library file's stubs keep their docs and take pora.h's
// values, and what needs no library (an exported type, a pure-Go function, a constant that takes
// nothing from pora.h) is refused, naming it, so it is written once in a shared file instead of
// being copied into the stub (where the two copies would drift apart).
package stubgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writePackage lays out a package directory with a one-constant pora.h and one library file.
func writePackage(t *testing.T, library string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "include"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "include", "pora.h"), []byte("#define PORA_KV_LEN 131072\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := SupportedConstraint + "\n\npackage porago\n\nimport \"C\"\n\n" + library
	if err := os.WriteFile(filepath.Join(dir, "lib.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestStubKeepsDocsAndHeaderValues(t *testing.T) {
	dir := writePackage(t, `// KVSize is one KV.
const KVSize = int(C.PORA_KV_LEN)

// Mask masks.
func Mask(out []byte) error { return C.mask(out) }
`)
	out, err := Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// KVSize is one KV.\nconst KVSize = int(131072)",
		"// Mask masks.\nfunc Mask(out []byte) error {\n\treturn noLibrary(\"Mask\")\n}",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the stub lacks %q:\n%s", want, out)
		}
	}
}

func TestNoLibraryDeclarationIsRefused(t *testing.T) {
	for name, library := range map[string]string{
		"type Record":    "type Record struct{ N int }\n",
		"func Parse":     "func Parse(s string) string { return s }\n",
		"const Defaults": "const Defaults = 3\n",
	} {
		_, err := Generate(writePackage(t, library))
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), sharedHint) {
			t.Errorf("%s in a library file: error %v, want one naming it and saying where it belongs", name, err)
		}
	}
}
