//go:build cgo && !((linux && (amd64 || arm64)) || (darwin && (amd64 || arm64)) || (windows && amd64))

// Why a cgo build of another platform has no libpora.
package porago

// whyNoLibrary completes noLibrary's message: cgo is on, but the module carries no library for
// this GOOS/GOARCH.
const whyNoLibrary = " (no prebuilt library for this platform)"
