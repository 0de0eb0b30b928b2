//! The fault file system itself, through the kernel: each fault as `pread`, `O_DIRECT` and a
//! mapped page see it. Needs root and /dev/fuse; prints a visible SKIP otherwise.
#![cfg(target_os = "linux")]

mod common;

use common::*;
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

#[test]
fn reads_pass_through_by_pread_o_direct_and_mmap() {
    let Some((_dir, m)) = mounted("reads_pass_through") else {
        return;
    };
    let want = content();
    let f = File::open(m.path()).unwrap();
    assert_eq!(f.metadata().unwrap().len(), LEN as u64);
    assert_eq!(pread(&f, 12345, 32).unwrap(), want[12345..12345 + 32]);
    let direct = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(m.path())
        .unwrap();
    assert_eq!(pread(&direct, 8192, 32).unwrap(), want[8192..8192 + 32]);
    // SAFETY: a read-only private map of a file nobody writes.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            LEN,
            libc::PROT_READ,
            libc::MAP_SHARED,
            std::os::fd::AsRawFd::as_raw_fd(&f),
            0,
        )
    };
    assert_ne!(
        map,
        libc::MAP_FAILED,
        "mmap through FUSE: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: inside the map.
    let mapped = unsafe { std::slice::from_raw_parts(map as *const u8, LEN) };
    assert_eq!(&mapped[700_000..700_032], &want[700_000..700_032]);
    // SAFETY: the map made above.
    unsafe { libc::munmap(map, LEN) };
}

#[test]
fn eio_short_delay_and_hold_follow_the_rules_at_run_time() {
    let Some((_dir, m)) = mounted("eio_short_delay_and_hold") else {
        return;
    };
    let want = content();
    let f = File::open(m.path()).unwrap();
    m.set_rules("eio 4096 8192\nshort 65536 69632\ndelay 131072 135168 300\nhold 262144 266240\n")
        .unwrap();
    let e = pread(&f, 5000, 32).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    assert_eq!(pread(&f, 0, 32).unwrap(), want[..32], "outside the range");
    assert_eq!(pread(&f, 65536, 32).unwrap().len(), 16, "a short read");
    let t = Instant::now();
    assert_eq!(pread(&f, 131072, 32).unwrap(), want[131072..131072 + 32]);
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    let path = m.path().to_path_buf();
    let held = std::thread::spawn(move || {
        let f = File::open(path).unwrap();
        let bytes = pread(&f, 262144, 32);
        (bytes, Instant::now())
    });
    // The read is in the file system's hands and held there: nothing else can answer it.
    let c = m.wait_for(|c| c.held_now == 1, PATIENCE).unwrap();
    assert_eq!(c.held, 1, "{c:?}");
    assert!(
        !held.is_finished(),
        "a held read returned before its release"
    );
    let released = Instant::now();
    m.set_rules("").unwrap();
    let (bytes, done) = held.join().unwrap();
    assert_eq!(bytes.unwrap(), want[262144..262144 + 32]);
    assert!(
        done >= released,
        "the held read returned before its release"
    );
    let c = m.wait_for(|c| c.held_now == 0, PATIENCE).unwrap();
    assert_eq!(c.answered, c.reads, "every read answered: {c:?}");
    assert_eq!(
        pread(&f, 5000, 32).unwrap(),
        want[5000..5032],
        "the fault cleared"
    );
    let c = m.counts();
    assert!(
        c.eio >= 1 && c.short >= 1 && c.delayed >= 1 && c.held >= 1,
        "{c:?}"
    );
}

#[test]
fn a_vanished_disk_fails_reads_and_its_mount_goes_away() {
    let Some((dir, m)) = mounted("a_vanished_disk") else {
        return;
    };
    let f = File::open(m.path()).unwrap();
    let path = m.path().to_path_buf();
    m.set_rules("hold 0 4096").unwrap();
    let held = std::thread::spawn(move || {
        let f = File::open(path).unwrap();
        pread(&f, 0, 32)
    });
    // Unplugged under a read in flight: the read must be held by the file system first.
    m.wait_for(|c| c.held_now == 1, PATIENCE).unwrap();
    m.set_rules("vanish").unwrap();
    let t = Instant::now();
    while !m.vanished() {
        assert!(
            t.elapsed() < PATIENCE,
            "the vanish rule did not unplug the disk"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // Answered ENXIO by the file system or, if the connection was aborted first, ECONNABORTED
    // by the kernel: both are what a read in flight on an unplugged disk may get.
    let e = held.join().unwrap().unwrap_err();
    assert!(is_vanished_error(&e), "held read: {e}");
    let e = pread(&f, 8192, 32).unwrap_err();
    assert!(is_vanished_error(&e), "later read: {e}");
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let mnt = dir.path().join("mnt");
    assert!(
        !mounts.contains(mnt.to_str().unwrap()),
        "still mounted: {mounts}"
    );
}
