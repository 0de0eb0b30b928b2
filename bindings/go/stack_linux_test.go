//go:build linux

// The linked program's stack flag: link.go passes no stack flag, so a program linking libpora
// keeps a non-executable stack only if every object of the library says so
// (.note.GNU-stack; tools/go-lib.sh assembles with -Wa,--noexecstack). This test binary is such
// a program.
package porago

import (
	"debug/elf"
	"testing"
)

func TestLinkedStackIsNotExecutable(t *testing.T) {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_GNU_STACK {
			if p.Flags&elf.PF_X != 0 {
				t.Fatalf("the test binary's stack is executable (PT_GNU_STACK %v): an object of libpora_ffi.a lacks .note.GNU-stack", p.Flags)
			}
			return
		}
	}
	t.Fatal("the test binary has no PT_GNU_STACK header: the linker made the stack executable by default")
}
