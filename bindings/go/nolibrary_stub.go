//go:build !(cgo && ((linux && (amd64 || arm64)) || (darwin && (amd64 || arm64)) || (windows && amd64)))

// The error of a build without libpora (see nolibrary.go): it names the call, the platform and
// why there is no library.
package porago

import (
	"fmt"
	"runtime"
)

// noLibrary is the error of op in a build without libpora.
func noLibrary(op string) error {
	return fmt.Errorf("porago: %s: %w: %s/%s%s; pora's Go package links a prebuilt libpora on linux/amd64, linux/arm64, darwin/amd64, darwin/arm64 and windows/amd64, with cgo on",
		op, ErrNoLibrary, runtime.GOOS, runtime.GOARCH, whyNoLibrary)
}

// liveID is the library state of a handle (handles.go); a build without libpora opens none, so
// there is nothing to hold.
type liveID struct{}
