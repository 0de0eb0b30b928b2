//go:build cgo && ((linux && (amd64 || arm64)) || (darwin && (amd64 || arm64)) || (windows && amd64))

// Available for a build that links libpora.
package porago

// Available is nil when this build links libpora; where it does not (unsupported.go), it is an
// error naming the platform (GOOS/GOARCH, and cgo when it is off) that wraps ErrNoLibrary. A
// caller checks it once at start-up, before opening anything. stubgen: stub body.
func Available() error { return nil }
