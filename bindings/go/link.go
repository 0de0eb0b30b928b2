//go:build cgo && ((linux && (amd64 || arm64)) || (darwin && (amd64 || arm64)) || (windows && amd64))

// Where cgo finds libpora: a prebuilt static library per GOOS/GOARCH inside this module (the
// convention of es-node's go-rapidsnark dependency), so building a program that imports the
// package needs Go and a C compiler only, no Rust. The libraries are not committed (their sizes
// are in the release archive's TARGETS.txt, six targets, every release: docs/release.md);
// tools/go-lib.sh builds them from a checkout and the release's Go module archive
// (tools/dist.sh) carries them for every target.
//
// The link flags are only the system libraries libpora needs. No flag changes the consumer's
// binary: the library's objects carry their own non-executable-stack notes (tools/go-lib.sh),
// so a program's stack flag stays what its own objects make it.
//
// Build tags choose another library of the same platform:
//   - pora_musl: linux/amd64's musl build (lib/linux_amd64_musl), for a C toolchain on musl libc
//     (Alpine); the default linux_amd64 library is for glibc.
//   - pora_sim: the tests' library with the simulated disk (lib/sim/..., `tools/go-lib.sh --sim`);
//     a production build never links it, whatever the Cargo target directory holds.

package porago

/*
#cgo CFLAGS: -I${SRCDIR}/include

#cgo linux,amd64,!pora_sim,!pora_musl LDFLAGS: ${SRCDIR}/lib/linux_amd64/libpora_ffi.a
#cgo linux,amd64,!pora_sim,pora_musl LDFLAGS: ${SRCDIR}/lib/linux_amd64_musl/libpora_ffi.a
#cgo linux,arm64,!pora_sim LDFLAGS: ${SRCDIR}/lib/linux_arm64/libpora_ffi.a
#cgo darwin,amd64,!pora_sim LDFLAGS: ${SRCDIR}/lib/darwin_amd64/libpora_ffi.a
#cgo darwin,arm64,!pora_sim LDFLAGS: ${SRCDIR}/lib/darwin_arm64/libpora_ffi.a
#cgo windows,amd64,!pora_sim LDFLAGS: ${SRCDIR}/lib/windows_amd64/libpora_ffi.a

#cgo linux,amd64,pora_sim LDFLAGS: ${SRCDIR}/lib/sim/linux_amd64/libpora_ffi.a
#cgo linux,arm64,pora_sim LDFLAGS: ${SRCDIR}/lib/sim/linux_arm64/libpora_ffi.a
#cgo darwin,amd64,pora_sim LDFLAGS: ${SRCDIR}/lib/sim/darwin_amd64/libpora_ffi.a
#cgo darwin,arm64,pora_sim LDFLAGS: ${SRCDIR}/lib/sim/darwin_arm64/libpora_ffi.a
#cgo windows,amd64,pora_sim LDFLAGS: ${SRCDIR}/lib/sim/windows_amd64/libpora_ffi.a

#cgo linux LDFLAGS: -ldl -lm -lpthread
#cgo darwin LDFLAGS: -lm -lpthread
#cgo windows LDFLAGS: -lws2_32 -luserenv -lntdll -lbcrypt -lkernel32
*/
import "C"
