//go:build windows && wine

// Built only for CI's Wine run of this tree's tests (.ci/windows.sh: `go test -c -tags
// wine,... -ldflags=-checklinkname=0`), as bindings/go/wine_windows_test.go is for pora's own:
// Wine 8 does not implement the POSIX delete Go's os.RemoveAll uses on Windows, so every
// t.TempDir cleanup would fail; Go's fallback path is turned on when ntdll is Wine's.
package node_test

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
