// Where the package has no libpora to link (a GOOS/GOARCH the module carries no library for, or
// CGO_ENABLED=0), it still builds, so a program that imports it (es-node through the esnode
// adapter) builds everywhere and only fails when it asks for pora; ErrNoLibrary is what every
// such call's error wraps (errors.Is), on every platform.
package porago

import "errors"

// ErrNoLibrary is wrapped by every error of a build without libpora (unsupported.go); a build
// that links libpora never returns it.
var ErrNoLibrary = errors.New("no libpora in this build")
