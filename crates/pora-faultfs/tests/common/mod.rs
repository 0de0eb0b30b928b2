//! What the fault file system's tests share: a mounted pass-through of a 1 MiB file of known
//! bytes (or a visible SKIP where FUSE is missing), `pread`, and the timeout every wait uses.
#![allow(dead_code)]

use pora_faultfs::{FaultMount, MountOptions};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

pub const LEN: usize = 1 << 20;

/// How long a test waits for a condition before failing: far more than any condition needs on
/// a loaded 2-core machine, so a failure means it never came, not that it came late.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub fn content() -> Vec<u8> {
    (0..LEN).map(|i| (i * 7 + i / 4096) as u8).collect()
}

/// A mounted pass-through of a 1 MiB file, or `None` (after a SKIP line) where FUSE is missing.
pub fn mounted(test: &str) -> Option<(tempfile::TempDir, FaultMount)> {
    mounted_with(test, MountOptions::default())
}

/// [`mounted`], served as `options` say.
pub fn mounted_with(test: &str, options: MountOptions) -> Option<(tempfile::TempDir, FaultMount)> {
    if let Some(why) = pora_faultfs::fuse_unavailable() {
        // Past libtest's output capture, so the skip shows in every run (and in CI's table).
        let _ =
            std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("SKIP {test}: {why}\n"));
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("shard.dat");
    std::fs::write(&source, content()).unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let m = FaultMount::mount_with(&source, &mnt, &dir.path().join("rules"), options).unwrap();
    Some((dir, m))
}

pub fn pread(f: &File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let n = f.read_at(&mut buf, offset)?;
    buf.truncate(n);
    Ok(buf)
}

/// The errors a read on an unplugged disk may get: the file system's ENXIO, EIO, ENODEV; the
/// kernel's ENOTCONN for a request on an aborted FUSE connection, and ECONNABORTED for one the
/// server held when the connection was aborted (the disk vanished under a read in flight).
pub fn is_vanished_error(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENXIO | libc::EIO | libc::ENODEV | libc::ENOTCONN | libc::ECONNABORTED)
    )
}
