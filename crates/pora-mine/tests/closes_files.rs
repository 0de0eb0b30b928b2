//! A session closes every file it opened when it is dropped on a healthy device: Windows
//! refuses to delete a file a handle still holds, and a process that opens and closes sessions
//! for days must not run out of descriptors. Counted through /proc/self/fd (Linux).
#![cfg(target_os = "linux")]

mod common;

use common::*;
use pora_mine::session::{OpenOptions, ProfileSource, Session};
use pora_mine::{Find, SlotRequest};
use std::sync::atomic::AtomicBool;

/// Descriptors of this process open on `path`.
fn open_on(path: &std::path::Path) -> usize {
    let want = std::fs::canonicalize(path).unwrap();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| *target == want)
        .count()
}

#[test]
fn a_dropped_session_has_closed_every_file_it_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_shard(dir.path(), 0, 6, 5);
    for method in [
        pora_io::Method::Pread,
        pora_io::Method::PreadShared,
        pora_io::Method::Mmap,
    ] {
        for _ in 0..20 {
            let options = OpenOptions::default()
                .with_method(method)
                .with_threads(Some(2))
                .with_depth(Some(2))
                .with_profile(ProfileSource::Ignore);
            let session = Session::open(&[vec![path.clone()]], &options).unwrap();
            let request = SlotRequest::new(randao(3))
                .with_nonces(0..64)
                .with_find(Find::All)
                .with_required_diff(Some(pora_core::U256::MAX >> 3));
            session
                .mine_slot(&request, &AtomicBool::new(false))
                .unwrap();
            drop(session);
        }
        assert_eq!(
            open_on(&path),
            0,
            "{method}: descriptors left open on the shard"
        );
    }
}
