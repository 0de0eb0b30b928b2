//! The whole mount stalling, a server with a small request pool, many reads stuck at once, the
//! kernel's page cache, and rules rewritten in place: each through the kernel, each waiting for
//! the condition it needs (the request is held, the rule is in force) rather than for a fixed
//! time. Needs root and /dev/fuse; prints a visible SKIP otherwise.
#![cfg(target_os = "linux")]

mod common;

use common::*;
use pora_faultfs::MountOptions;
use std::fs::File;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One test at a time: the 256-read test counts this process's threads, which another test's
/// mount and readers would change.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn a_stalled_open_waits_and_then_succeeds() {
    let _serial = serial();
    let Some((_dir, m)) = mounted("a_stalled_open") else {
        return;
    };
    let want = content();
    // Frozen: the open (its lookup first) waits until the line goes.
    m.set_rules("freeze").unwrap();
    let before = m.counts();
    let path = m.path().to_path_buf();
    let opener = std::thread::spawn(move || {
        let f = File::open(&path).unwrap();
        let bytes = pread(&f, 4096, 32).unwrap();
        (bytes, Instant::now())
    });
    let c = m
        .wait_for(
            |c| c.stalled_now >= 1 && c.stalled > before.stalled,
            PATIENCE,
        )
        .unwrap();
    assert_eq!(c.reads, before.reads, "a read passed a frozen mount: {c:?}");
    assert!(
        !opener.is_finished(),
        "an open returned from a frozen mount"
    );
    let thawed = Instant::now();
    m.set_rules("").unwrap();
    let (bytes, done) = opener.join().unwrap();
    assert_eq!(bytes, want[4096..4096 + 32]);
    assert!(done >= thawed, "the open returned before the thaw");
    let c = m.wait_for(|c| c.stalled_now == 0, PATIENCE).unwrap();
    assert!(c.opens > before.opens && c.reads > before.reads, "{c:?}");

    // A timed stall: open, read and close each wait their 200 ms, then succeed.
    m.set_rules("stall 200").unwrap();
    let t = Instant::now();
    let f = File::open(m.path()).unwrap();
    let opened = t.elapsed();
    assert_eq!(pread(&f, 8192, 32).unwrap(), want[8192..8192 + 32]);
    drop(f);
    let all = t.elapsed();
    assert!(opened >= Duration::from_millis(200), "open took {opened:?}");
    // The path's lookup, the open, the read: at least 3 stalls of 200 ms one after another.
    assert!(
        all >= Duration::from_millis(600),
        "open+read+close took {all:?}"
    );
    m.set_rules("").unwrap();
    let f = File::open(m.path()).unwrap();
    assert_eq!(pread(&f, 8192, 32).unwrap(), want[8192..8192 + 32]);
    assert!(m.counts().stalled >= c.stalled + 3, "{:?}", m.counts());
}

/// With `answer_inline` and 2 server threads, 2 held reads occupy the whole server: a third
/// read (of an unheld range) and a getattr queue in the kernel until the holds go. The default
/// server answers the same third read at once.
#[test]
fn two_held_reads_on_two_inline_server_threads_block_a_third_read_and_a_getattr() {
    let _serial = serial();
    let options = MountOptions {
        server_threads: 2,
        answer_inline: true,
        ..MountOptions::default()
    };
    let Some((_dir, m)) = mounted_with("a_small_request_pool", options) else {
        return;
    };
    let want = Arc::new(content());
    let f = Arc::new(File::open(m.path()).unwrap());
    m.set_rules("hold 0 4096").unwrap();
    let held: Vec<_> = [0u64, 100]
        .into_iter()
        .map(|off| {
            let f = f.clone();
            std::thread::spawn(move || pread(&f, off, 32).unwrap())
        })
        .collect();
    let before = m.wait_for(|c| c.held_now == 2, PATIENCE).unwrap();
    let third = {
        let f = f.clone();
        std::thread::spawn(move || (pread(&f, 65536, 32).unwrap(), Instant::now()))
    };
    let getattr = {
        let f = f.clone();
        std::thread::spawn(move || (f.metadata().unwrap().len(), Instant::now()))
    };
    // Both are in the kernel's queue (2 held + 2 queued), and no server thread took them.
    let t = Instant::now();
    loop {
        let waiting = m.kernel_waiting().unwrap();
        if waiting >= 4 {
            break;
        }
        assert!(
            t.elapsed() < PATIENCE,
            "the kernel holds {waiting} requests, not the 2 held and 2 queued"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let c = m.counts();
    assert_eq!(
        (c.reads, c.requests),
        (before.reads, before.requests),
        "the server took a request while both its threads were held: {c:?}"
    );
    assert!(!third.is_finished() && !getattr.is_finished());
    let released = Instant::now();
    m.set_rules("").unwrap();
    for (h, off) in held.into_iter().zip([0usize, 100]) {
        assert_eq!(h.join().unwrap(), want[off..off + 32]);
    }
    let (bytes, read_done) = third.join().unwrap();
    assert_eq!(bytes, want[65536..65536 + 32]);
    let (len, attr_done) = getattr.join().unwrap();
    assert_eq!(len, LEN as u64);
    assert!(read_done >= released && attr_done >= released);
    assert_eq!(m.counts().reads, before.reads + 1);
    drop(m);

    // The default server (4 threads, waits parked): the same reads pass the holds at once.
    let Some((_dir, m)) = mounted("a_parked_request_pool") else {
        return;
    };
    let f = Arc::new(File::open(m.path()).unwrap());
    m.set_rules("hold 0 4096").unwrap();
    let held: Vec<_> = (0..8u64)
        .map(|i| {
            let f = f.clone();
            std::thread::spawn(move || pread(&f, i * 100, 32))
        })
        .collect();
    m.wait_for(|c| c.held_now == 8, PATIENCE).unwrap();
    let g = f.clone();
    assert_eq!(
        within(PATIENCE, move || pread(&g, 65536, 32).unwrap()),
        want[65536..65536 + 32]
    );
    let g = f.clone();
    assert_eq!(
        within(PATIENCE, move || g.metadata().unwrap().len()),
        LEN as u64
    );
    assert_eq!(m.counts().held_now, 8, "{:?}", m.counts());
    m.set_rules("").unwrap();
    for h in held {
        assert_eq!(h.join().unwrap().unwrap().len(), 32);
    }
}

#[test]
fn two_hundred_fifty_six_held_reads_are_counted_and_released_without_a_thread_each() {
    let _serial = serial();
    let Some((_dir, m)) = mounted("256 held reads") else {
        return;
    };
    const N: usize = 256;
    let want = Arc::new(content());
    let f = Arc::new(File::open(m.path()).unwrap());
    m.set_rules("hold 0 end").unwrap();
    let threads_before = threads();
    let readers: Vec<_> = (0..N)
        .map(|i| {
            let f = f.clone();
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    let off = (i * 4096 + i) as u64;
                    (off, pread(&f, off, 32).unwrap())
                })
                .unwrap()
        })
        .collect();
    let c = m.wait_for(|c| c.held_now == N as u64, PATIENCE).unwrap();
    assert_eq!(c.held, N as u64, "{c:?}");
    assert_eq!(c.answered, 0, "{c:?}");
    // The readers are N threads of this process; the server added none per held read.
    let grown = threads().saturating_sub(threads_before);
    assert!(
        grown <= N + 8,
        "{grown} more threads with {N} reads held: the server spends a thread per read"
    );
    assert!(readers.iter().all(|r| !r.is_finished()));
    m.set_rules("").unwrap();
    for r in readers {
        let (off, bytes) = r.join().unwrap();
        assert_eq!(bytes, want[off as usize..off as usize + 32], "at {off}");
    }
    let c = m.wait_for(|c| c.held_now == 0, PATIENCE).unwrap();
    assert_eq!(c.answered, N as u64, "{c:?}");
}

/// Threads of this process now.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn rules_rewritten_in_place_take_effect_and_release_held_reads() {
    let _serial = serial();
    let Some((dir, m)) = mounted("rules rewritten in place") else {
        return;
    };
    let want = content();
    let control = dir.path().join("rules");
    // Same file, same size, possibly the same timestamp tick: only the text says it changed.
    // (Written over in place, never truncated: an empty file in between would be "no rules".)
    rewrite_in_place(&control, "hold 0 4096\n");
    let loaded = m.wait_for(|c| c.rules_loaded >= 2, PATIENCE).unwrap();
    let path = m.path().to_path_buf();
    let reader = std::thread::spawn(move || pread(&File::open(path).unwrap(), 10, 32).unwrap());
    m.wait_for(|c| c.held_now == 1, PATIENCE).unwrap();
    rewrite_in_place(&control, "hold 0 8192\n");
    m.wait_for(|c| c.rules_loaded > loaded.rules_loaded, PATIENCE)
        .unwrap();
    assert!(!reader.is_finished(), "still covered by the new hold");
    rewrite_in_place(&control, "eio  8192 end\n");
    assert_eq!(reader.join().unwrap(), want[10..42]);
    let f = File::open(m.path()).unwrap();
    let e = pread(&f, 9000, 32).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    // A bad file keeps the rules in force (each replaced whole, by a rename, so that no
    // half-written file is read; the next read sees the new file's identity).
    for bad in ["fry 0 1\n", "eio  8192 end\nbad\n"] {
        let tmp = dir.path().join("rules.tmp");
        std::fs::write(&tmp, bad).unwrap();
        std::fs::rename(&tmp, &control).unwrap();
        let e = pread(&f, 9000, 32).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "after {bad:?}: {e}");
    }
    assert!(
        m.set_rules("bad").is_err(),
        "set_rules refuses a bad schedule"
    );
}

/// Writes `text` over the start of `path` (no truncation first), then cuts what is left after.
fn rewrite_in_place(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(text.as_bytes(), 0).unwrap();
    f.set_len(text.len() as u64).unwrap();
}

/// With the page cache on, a page read once is not asked for again (the kernel keeps it): it is
/// read while every read the server sees is held. With the default `direct_io` the same read
/// reaches the server and is held.
#[test]
fn the_page_cache_option_keeps_pages_in_the_kernel() {
    let _serial = serial();
    let options = MountOptions {
        page_cache: true,
        ..MountOptions::default()
    };
    let Some((_dir, m)) = mounted_with("page cache", options) else {
        return;
    };
    let want = Arc::new(content());
    let f = Arc::new(File::open(m.path()).unwrap());
    assert_eq!(pread(&f, 4096, 32).unwrap(), want[4096..4128]);
    assert!(m.counts().reads >= 1, "{:?}", m.counts());
    m.set_rules("hold 0 end").unwrap();
    let g = f.clone();
    let bytes = within(PATIENCE, move || pread(&g, 4100, 32).unwrap());
    assert_eq!(bytes, want[4100..4132], "the cached page");
    drop(m);

    let Some((_dir, m)) = mounted("no page cache") else {
        return;
    };
    let f = Arc::new(File::open(m.path()).unwrap());
    assert_eq!(pread(&f, 4096, 32).unwrap(), want[4096..4128]);
    m.set_rules("hold 0 end").unwrap();
    let g = f.clone();
    let reader = std::thread::spawn(move || pread(&g, 4100, 32));
    let c = m.wait_for(|c| c.held_now == 1, PATIENCE).unwrap();
    assert_eq!(c.reads, 2, "{c:?}");
    m.set_rules("").unwrap();
    assert_eq!(reader.join().unwrap().unwrap(), want[4100..4132]);
}

/// Runs `f` on a thread and returns its result, failing the test if it takes longer than
/// `limit` (a call that should not wait must not hang the test run either).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|e| panic!("still waiting after {limit:?}: {e}"))
}
