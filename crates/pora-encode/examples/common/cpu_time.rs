//! Thread CPU time for the benchmark examples (robust to other processes on a shared machine,
//! unlike wall time). Linux/Unix: CLOCK_THREAD_CPUTIME_ID; elsewhere wall time as a fallback.

use std::time::Duration;

#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

#[cfg(target_os = "linux")]
extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// CPU time consumed by the calling thread so far.
pub fn thread_cpu_time() -> Duration {
    #[cfg(target_os = "linux")]
    {
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut ts = Timespec::default();
        // SAFETY: clock_gettime writes one timespec through the pointer, which is valid.
        unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
    #[cfg(not(target_os = "linux"))]
    {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed()
    }
}
