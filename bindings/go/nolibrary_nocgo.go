//go:build !cgo

// Why a build without cgo has no libpora.
package porago

// whyNoLibrary completes noLibrary's message: cgo is off, so no C library links on any platform.
const whyNoLibrary = " (cgo disabled: CGO_ENABLED=0)"
