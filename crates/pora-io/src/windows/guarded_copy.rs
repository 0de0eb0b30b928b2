//! Copies out of pora's file maps that survive an in-page error (Windows x86_64).
//!
//! A mapped page whose read fails (a bad sector, a vanished network share) raises
//! `EXCEPTION_IN_PAGE_ERROR` in the thread that touched it; unhandled, it ends the process, which
//! is why `auto` kept `mmap` off Windows. The Linux kernel's way with user copies is the model
//! here: every copy out of a map runs in one small assembly routine, and a vectored exception
//! handler that sees a fault whose instruction pointer lies inside that routine resumes the
//! thread at the routine's fault exit with the error in `rax`. Nothing is patched or remapped:
//! the page stays as the memory manager left it, so the next read of it asks the disk again (a
//! sector that recovers is readable again), and a fault anywhere else is passed on untouched.
//!
//! The routine is a leaf that uses no stack and only volatile registers, so resuming at its
//! exit needs no unwinding: `ret` returns to the caller as the normal path does. It reads only
//! from a view of a file and writes only to the caller's buffer, so a fault inside it is a
//! failed page-in of the view. Windows reports that as `EXCEPTION_IN_PAGE_ERROR`; Wine raises
//! the SIGBUS it gets from Linux as `EXCEPTION_DATATYPE_MISALIGNMENT` (or, in older releases,
//! `EXCEPTION_ACCESS_VIOLATION`): all three are contained, only inside the routine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use windows_sys::Win32::Foundation::{
    RtlNtStatusToDosError, ERROR_READ_FAULT, EXCEPTION_ACCESS_VIOLATION,
    EXCEPTION_DATATYPE_MISALIGNMENT, EXCEPTION_IN_PAGE_ERROR,
};
use windows_sys::Win32::System::Diagnostics::Debug::{
    AddVectoredExceptionHandler, EXCEPTION_POINTERS,
};

// rcx = destination, rdx = source, r8 = length (the Windows x64 calling convention). Eight
// bytes at a time, then the tail; returns 0 in rax. The fault exit returns what the handler put
// in rax. Labels 2-4 are local; the three global ones bound the range the handler trusts.
std::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl pora_guarded_copy",
    "pora_guarded_copy:",
    "    xor eax, eax",
    "    cmp r8, 8",
    "    jb 3f",
    "2:",
    "    mov r9, qword ptr [rdx]",
    "    mov qword ptr [rcx], r9",
    "    add rdx, 8",
    "    add rcx, 8",
    "    sub r8, 8",
    "    cmp r8, 8",
    "    jae 2b",
    "3:",
    "    test r8, r8",
    "    jz 4f",
    "    mov r9b, byte ptr [rdx]",
    "    mov byte ptr [rcx], r9b",
    "    inc rdx",
    "    inc rcx",
    "    dec r8",
    "    jmp 3b",
    "4:",
    "    ret",
    ".globl pora_guarded_copy_fault",
    "pora_guarded_copy_fault:",
    "    ret",
);

extern "C" {
    fn pora_guarded_copy(dst: *mut u8, src: *const u8, len: usize) -> u64;
}

/// The routine's start and its fault exit, found once.
fn routine() -> (usize, usize) {
    static RANGE: OnceLock<(usize, usize)> = OnceLock::new();
    *RANGE.get_or_init(|| {
        let fault: usize;
        // SAFETY: only computes the label's address (rip-relative lea); touches no memory.
        unsafe {
            std::arch::asm!(
                "lea {0}, [rip + pora_guarded_copy_fault]",
                out(reg) fault,
                options(nomem, nostack, preserves_flags)
            )
        };
        (pora_guarded_copy as *const () as usize, fault)
    })
}

/// Faults contained since the process started.
static FAULTS: AtomicU64 = AtomicU64::new(0);

/// In-page errors contained so far (for tests and reports).
pub fn faults_contained() -> u64 {
    FAULTS.load(Ordering::Relaxed)
}

const CONTINUE_SEARCH: i32 = 0;
const CONTINUE_EXECUTION: i32 = -1;

/// The vectored handler: resumes a copy that faulted at the routine's fault exit; passes every
/// other exception on.
unsafe extern "system" fn on_exception(info: *mut EXCEPTION_POINTERS) -> i32 {
    // SAFETY: the system passes pointers to the exception being dispatched, valid for the
    // handler's duration; nulls are refused.
    let Some(info) = (unsafe { info.as_mut() }) else {
        return CONTINUE_SEARCH;
    };
    // SAFETY: as above.
    let (record, context) = unsafe { (info.ExceptionRecord.as_ref(), info.ContextRecord.as_mut()) };
    let (Some(record), Some(context)) = (record, context) else {
        return CONTINUE_SEARCH;
    };
    let code = record.ExceptionCode;
    if !matches!(
        code,
        EXCEPTION_IN_PAGE_ERROR | EXCEPTION_DATATYPE_MISALIGNMENT | EXCEPTION_ACCESS_VIOLATION
    ) {
        return CONTINUE_SEARCH;
    }
    let (start, fault) = routine();
    let rip = context.Rip as usize;
    if rip < start || rip >= fault {
        return CONTINUE_SEARCH;
    }
    // For an in-page error the third parameter is the NTSTATUS of the failed page-in.
    let status = if code == EXCEPTION_IN_PAGE_ERROR && record.NumberParameters >= 3 {
        record.ExceptionInformation[2] as u32
    } else {
        0
    };
    FAULTS.fetch_add(1, Ordering::Relaxed);
    context.Rax = (1u64 << 32) | u64::from(status);
    context.Rip = fault as u64;
    CONTINUE_EXECUTION
}

/// Installs the handler once per process; a map is never read through [`copy`] before this.
pub(crate) fn install() -> Result<(), String> {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    let ok = *INSTALLED.get_or_init(|| {
        routine();
        // SAFETY: registers a handler with the documented signature; it stays for the
        // process's life (never removed), first in the chain so a debugger-less process's other
        // handlers never see a fault pora contains.
        !unsafe { AddVectoredExceptionHandler(1, Some(on_exception)) }.is_null()
    });
    if ok {
        Ok(())
    } else {
        Err("AddVectoredExceptionHandler refused the in-page error handler".into())
    }
}

/// Copies `dst.len()` bytes from `src` into `dst`, or returns the Win32 error of the page-in
/// that failed (`ERROR_READ_FAULT` where the OS gave no status).
///
/// # Safety
/// `src .. src + dst.len()` lies inside a live read-only view of a file, and [`install`]
/// succeeded.
pub(crate) unsafe fn copy(dst: &mut [u8], src: *const u8) -> Result<(), i32> {
    // SAFETY: the caller vouches for the source range; `dst` is a valid buffer of that length.
    let got = unsafe { pora_guarded_copy(dst.as_mut_ptr(), src, dst.len()) };
    if got == 0 {
        return Ok(());
    }
    let status = got as u32;
    if status == 0 {
        return Err(ERROR_READ_FAULT as i32);
    }
    // SAFETY: a pure lookup with no preconditions.
    let code = unsafe { RtlNtStatusToDosError(status as i32) };
    Err(if code == 0 { ERROR_READ_FAULT } else { code } as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_length_like_a_slice_copy() {
        install().unwrap();
        let src: Vec<u8> = (0..=255u8).cycle().take(4096 + 13).collect();
        for len in [0usize, 1, 7, 8, 9, 31, 32, 33, 4096, 4096 + 13] {
            for skew in [0usize, 1, 5] {
                let n = len.min(src.len() - skew);
                let mut dst = vec![0xEEu8; n];
                // SAFETY: the source is a live buffer of that length (the handler only matters
                // for faults, which cannot happen here).
                unsafe { copy(&mut dst, src[skew..].as_ptr()) }.unwrap();
                assert_eq!(dst, &src[skew..skew + n], "len {n} skew {skew}");
            }
        }
    }
}
