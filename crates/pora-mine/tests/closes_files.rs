//! A session closes every file it opened before its drop returns, on a healthy device: Windows
//! refuses to delete a directory while a handle to a file in it is open (Go's `t.TempDir()`
//! cleanup right after `Close` fails then), and a process that opens and closes sessions for days
//! must not run out of descriptors. Checked after every cycle: on Linux by counting
//! /proc/self/fd, on Windows (under Wine in CI) by opening the shard with no sharing allowed,
//! which fails while any handle to it is open.

mod common;

use common::*;
use pora_mine::session::{OpenOptions, ProfileSource, Session};
use pora_mine::{Find, SlotRequest};
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// Handles of this process open on `path`, as far as this platform tells: `None` where it
/// cannot.
#[cfg(target_os = "linux")]
fn open_on(path: &Path) -> Option<usize> {
    let want = std::fs::canonicalize(path).unwrap();
    let count = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| *target == want)
        .count();
    Some(count)
}

/// 0 when the file opens with no sharing allowed (no other handle is open), else 1.
#[cfg(windows)]
fn open_on(path: &Path) -> Option<usize> {
    use std::os::windows::fs::OpenOptionsExt;
    let exclusive = std::fs::OpenOptions::new()
        .read(true)
        .share_mode(0)
        .open(path);
    Some(usize::from(exclusive.is_err()))
}

#[cfg(not(any(target_os = "linux", windows)))]
fn open_on(_: &Path) -> Option<usize> {
    None
}

fn methods() -> Vec<pora_io::Method> {
    let mut methods = vec![pora_io::Method::Pread, pora_io::Method::PreadShared];
    if pora_io::Method::Mmap.capabilities().read_faults_contained {
        methods.push(pora_io::Method::Mmap);
    }
    methods.push(pora_io::Method::Auto);
    methods
}

#[test]
fn a_dropped_session_has_closed_every_file_it_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_shard(dir.path(), 0, 6, 5);
    if open_on(&path).is_none() {
        // Past libtest's output capture, so the skip shows in every run.
        let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("SKIP a_dropped_session_has_closed_every_file_it_opened: this platform cannot count open handles\n"));
        return;
    }
    let held = std::fs::File::open(&path).unwrap();
    assert_eq!(
        open_on(&path),
        Some(1),
        "the check sees a handle this test holds"
    );
    drop(held);
    assert_eq!(
        open_on(&path),
        Some(0),
        "the check sees no handle once it is closed"
    );
    for method in methods() {
        for (threads, depth) in [(1, 1), (2, 4)] {
            for cycle in 0..40 {
                let options = OpenOptions::default()
                    .with_method(method)
                    .with_threads(Some(threads))
                    .with_depth(Some(depth))
                    .with_profile(ProfileSource::Ignore);
                let session = Session::open(&[vec![path.clone()]], &options).unwrap();
                let request = SlotRequest::new(randao(3))
                    .with_nonces(0..16)
                    .with_find(Find::All)
                    .with_required_diff(Some(pora_core::U256::MAX >> 3));
                session
                    .mine_slot(&request, &AtomicBool::new(false))
                    .unwrap();
                drop(session);
                assert_eq!(
                    open_on(&path),
                    Some(0),
                    "{method} with {threads} threads of depth {depth}: a handle to the shard is still open after cycle {cycle}'s session was dropped"
                );
            }
        }
    }
}
