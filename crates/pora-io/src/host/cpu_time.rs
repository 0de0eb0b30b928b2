//! CPU time of the process (bench and tune report CPU per read) and of the calling thread (the
//! miner splits the time a synchronous read spends inside the backend into CPU work, such as an
//! mmap copy from the page cache, and waiting for the device). Host facts, not device facts.

use super::Unknown;
use std::time::Duration;

/// The process's CPU time so far, user plus system, over all threads.
pub fn process_cpu_time() -> Result<Duration, Unknown> {
    platform::process_cpu_time()
}

/// The calling thread's CPU time so far, user plus system.
pub fn thread_cpu_time() -> Result<Duration, Unknown> {
    platform::thread_cpu_time()
}

#[cfg(unix)]
mod platform {
    use crate::host::Unknown;
    use std::time::Duration;

    pub fn process_cpu_time() -> Result<Duration, Unknown> {
        // SAFETY: getrusage fills the zeroed struct we own; RUSAGE_SELF is always valid.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
                return Err(Unknown(format!(
                    "getrusage: {}",
                    std::io::Error::last_os_error()
                )));
            }
            usage
        };
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        Ok(tv(usage.ru_utime) + tv(usage.ru_stime))
    }

    pub fn thread_cpu_time() -> Result<Duration, Unknown> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a timespec we own; CLOCK_THREAD_CPUTIME_ID exists on Linux and macOS.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
            return Err(Unknown(format!(
                "clock_gettime(CLOCK_THREAD_CPUTIME_ID): {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
}

#[cfg(windows)]
mod platform {
    use crate::host::Unknown;
    use std::time::Duration;
    use windows_sys::Win32::Foundation::{FILETIME, HANDLE};
    use windows_sys::Win32::System::Threading::{
        GetCurrentProcess, GetCurrentThread, GetProcessTimes, GetThreadTimes,
    };

    type TimesFn = unsafe extern "system" fn(
        HANDLE,
        *mut FILETIME,
        *mut FILETIME,
        *mut FILETIME,
        *mut FILETIME,
    ) -> i32;

    /// Kernel + user time from GetProcessTimes / GetThreadTimes (same signature).
    fn cpu_time(what: &str, times: TimesFn, handle: HANDLE) -> Result<Duration, Unknown> {
        let zero = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
        // SAFETY: a pseudo-handle of the current process or thread and four FILETIMEs we own.
        let ok = unsafe { times(handle, &mut created, &mut exited, &mut kernel, &mut user) };
        if ok == 0 {
            return Err(Unknown(format!(
                "{what}: {}",
                std::io::Error::last_os_error()
            )));
        }
        // FILETIME counts 100 ns ticks.
        let ticks = |t: FILETIME| ((t.dwHighDateTime as u64) << 32) | t.dwLowDateTime as u64;
        Ok(Duration::from_nanos((ticks(kernel) + ticks(user)) * 100))
    }

    pub fn process_cpu_time() -> Result<Duration, Unknown> {
        // SAFETY: returns a constant pseudo-handle.
        cpu_time("GetProcessTimes", GetProcessTimes, unsafe {
            GetCurrentProcess()
        })
    }

    pub fn thread_cpu_time() -> Result<Duration, Unknown> {
        // SAFETY: returns a constant pseudo-handle.
        cpu_time("GetThreadTimes", GetThreadTimes, unsafe {
            GetCurrentThread()
        })
    }
}

#[cfg(not(any(unix, windows)))]
mod platform {
    use crate::host::Unknown;
    use std::time::Duration;

    const WHY: &str = "CPU time is not implemented on this OS";

    pub fn process_cpu_time() -> Result<Duration, Unknown> {
        Err(Unknown(WHY.into()))
    }

    pub fn thread_cpu_time() -> Result<Duration, Unknown> {
        Err(Unknown(WHY.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(ms: u64) {
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(ms) {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
    }

    #[test]
    fn process_and_thread_cpu_time_are_known_and_grow() {
        let (process, thread) = (process_cpu_time().unwrap(), thread_cpu_time().unwrap());
        spin(60);
        assert!(process_cpu_time().unwrap() > process);
        assert!(thread_cpu_time().unwrap() > thread);
    }

    #[test]
    fn a_sleeping_thread_uses_almost_no_cpu() {
        let before = thread_cpu_time().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(thread_cpu_time().unwrap() - before < Duration::from_millis(25));
    }
}
