//! The fault file system itself, through the kernel: each fault as `pread`, `O_DIRECT` and a
//! mapped page see it. Needs root and /dev/fuse; prints a visible SKIP otherwise.
#![cfg(target_os = "linux")]

use pora_faultfs::FaultMount;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::{Duration, Instant};

const LEN: usize = 1 << 20;

fn content() -> Vec<u8> {
    (0..LEN).map(|i| (i * 7 + i / 4096) as u8).collect()
}

/// A mounted pass-through of a 1 MiB file, or `None` (after a SKIP line) where FUSE is missing.
fn mounted(test: &str) -> Option<(tempfile::TempDir, FaultMount)> {
    if let Some(why) = pora_faultfs::fuse_unavailable() {
        eprintln!("SKIP {test}: {why}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("shard.dat");
    std::fs::write(&source, content()).unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let m = FaultMount::mount(&source, &mnt, &dir.path().join("rules")).unwrap();
    Some((dir, m))
}

fn pread(f: &File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let n = f.read_at(&mut buf, offset)?;
    buf.truncate(n);
    Ok(buf)
}

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
        let t = Instant::now();
        (pread(&f, 262144, 32).unwrap(), t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !held.is_finished(),
        "a held read returned before its release"
    );
    m.set_rules("").unwrap();
    let (bytes, waited) = held.join().unwrap();
    assert_eq!(bytes, want[262144..262144 + 32]);
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
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
    std::thread::sleep(Duration::from_millis(100));
    m.set_rules("vanish").unwrap();
    let t = Instant::now();
    while !m.vanished() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let e = held.join().unwrap().unwrap_err();
    assert!(
        matches!(
            e.raw_os_error(),
            Some(libc::ENXIO | libc::ENOTCONN | libc::EIO)
        ),
        "held read: {e}"
    );
    let e = pread(&f, 8192, 32).unwrap_err();
    assert!(
        matches!(
            e.raw_os_error(),
            Some(libc::ENXIO | libc::ENOTCONN | libc::EIO)
        ),
        "later read: {e}"
    );
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let mnt = dir.path().join("mnt");
    assert!(
        !mounts.contains(mnt.to_str().unwrap()),
        "still mounted: {mounts}"
    );
}
