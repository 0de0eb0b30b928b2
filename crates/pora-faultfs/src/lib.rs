//! pora-faultfs: test support, never shipped. A FUSE file system holding one file, a read-only
//! pass-through of a real shard, whose reads can be made to fail the way a miner's disk fails:
//! EIO inside chosen byte ranges, short reads, fixed or heavy-tailed delays, reads held until
//! released, a whole mount that stalls or freezes (every request, opens included, waits), and a
//! disk that vanishes (reads fail with ENXIO and the mount goes away). The fault
//! schedule is a text file ([`rules`]) re-read whenever it changes, so a test steers the faults
//! while `pora` reads through the real kernel paths (`pread`, `O_DIRECT`, `mmap` page faults,
//! io_uring).
//!
//! By default opens are answered with `FOPEN_DIRECT_IO`, so every `read` reaches the file system
//! (a page cache in between would hide faults after the first read), and the kernel is asked for
//! `FUSE_DIRECT_IO_ALLOW_MMAP` (Linux 6.6+) so that `mmap` still works, through the page cache.
//! [`MountOptions`] makes other servers: the page cache on, a small pool of server threads that
//! each wait on the request they serve ([`MountOptions::libfuse_like`]: libfuse's defaults).
//! [`FaultMount::counts`] says what was seen and what waits right now, and
//! [`FaultMount::wait_for`] waits for a condition on it, so tests never sleep a fixed time.
//!
//! Linux only (the crate is empty elsewhere); mounting needs root or `fusermount3`.

pub mod rules;

#[cfg(target_os = "linux")]
mod fs;

#[cfg(target_os = "linux")]
pub use fs::{fuse_unavailable, Counts, FaultMount, MountOptions};
