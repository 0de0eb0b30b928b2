//! Bounded teardown bookkeeping: how long a backend may wait for the OS to give back its reads
//! when it is dropped, and the process-wide count of backends that were leaked because the OS
//! still held reads after that (a dead or hung device).
//!
//! Leaking is deliberate: the kernel may still write into a leaked backend's buffers (and read
//! its OVERLAPPED structures or timespecs), so they must never return to the allocator. A leak
//! costs one worker's buffers and one ring or port per occurrence, and happens only when a
//! device stopped answering.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Longest time dropping one backend waits for reads the OS still holds (after asking it to
/// cancel them) before leaking the backend instead.
pub const TEARDOWN_WAIT: Duration = Duration::from_secs(2);

static LEAKED_BACKENDS: AtomicU64 = AtomicU64::new(0);

/// Backends (io_uring rings, IOCP ports, simulated devices) dropped with reads the OS never gave
/// back within the bound, since the process started. Non-zero means a device stopped answering;
/// each one leaked its ring or port and its read buffers rather than risk the kernel writing
/// into freed memory.
pub fn leaked_backends() -> u64 {
    LEAKED_BACKENDS.load(Ordering::Relaxed)
}

/// Records one leaked backend (also used by the miner for a worker it left behind inside a
/// read, with its backend).
pub fn note_leaked_backend() {
    LEAKED_BACKENDS.fetch_add(1, Ordering::Relaxed);
}
