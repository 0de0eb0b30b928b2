//go:build windows && wine

// Built only for the Windows leg's Wine runs (.ci/windows.sh: `go test -c -tags wine
// -ldflags=-checklinkname=0`), into every test binary that links porago: pora's own and the
// es-node-shaped tree's (its node and encoder packages reach porago through esnode), so the
// switch is set in one place. Go's os.RemoveAll on Windows deletes through
// NtSetInformationFile(FileDispositionInformationEx), which Wine 8 does not implement: it fails
// with "Invalid function", a status Go does not take as "use the fallback", so every t.TempDir
// cleanup would fail its test although pora did nothing wrong. Go keeps a fallback path (plain
// FileDispositionInformation, for older Windows and file systems without POSIX deletes) behind a
// test switch; this turns it on, and only when ntdll says it is Wine's. Without the wine tag
// (every build a miner makes) the file is not compiled.

package porago

import (
	"syscall"
	_ "unsafe" // go:linkname
)

//go:linkname deleteatFallback internal/syscall/windows.TestDeleteatFallback
var deleteatFallback bool

func init() {
	if syscall.NewLazyDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil {
		deleteatFallback = true
	}
}
