//! Every Windows access method read against a plain read of the same file: random offsets
//! including the first and last sample and offsets past 4 GiB in a sparse file, several workers
//! at once, `QueueFull`, the deadline, end-of-file errors, `--block-size`, and the volume probe.
//! Runs on Windows (under Wine in CI: correctness only, never speed).
#![cfg(windows)]

use pora_io::{
    Backend, BackendFactory, BlockSize, Completion, IoConfig, Method, QueueFull, ReadErrorKind,
    Sample, SampleRead, SAMPLE_LEN,
};
use std::fs::{File, OpenOptions};
use std::os::windows::fs::FileExt;
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const GIB: u64 = 1 << 30;
const WINDOWS_METHODS: [Method; 5] = [
    Method::Pread,
    Method::PreadShared,
    Method::Mmap,
    Method::Iocp,
    Method::IocpUnbuffered,
];

/// 32 bytes that identify `offset` (never all zero, so a sparse hole cannot pass for them).
fn stamp(offset: u64) -> Sample {
    let mut x = offset ^ 0x9E37_79B9_7F4A_7C15;
    std::array::from_fn(|i| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407 + i as u64);
        (x >> 56) as u8 | 1
    })
}

/// Marks the file sparse so extending it to 4 GiB does not zero-fill on NTFS (best effort:
/// Wine's Unix file systems are sparse anyway).
fn make_sparse(file: &File) {
    use windows_sys::Win32::System::Ioctl::FSCTL_SET_SPARSE;
    use windows_sys::Win32::System::IO::DeviceIoControl;
    let mut returned = 0u32;
    // SAFETY: valid handle; FSCTL_SET_SPARSE takes no input or output buffer.
    let ok = unsafe {
        DeviceIoControl(
            file.as_raw_handle() as _,
            FSCTL_SET_SPARSE,
            std::ptr::null(),
            0,
            std::ptr::null_mut(),
            0,
            &mut returned,
            std::ptr::null_mut(),
        )
    };
    if ok == 0 {
        eprintln!(
            "note: FSCTL_SET_SPARSE failed ({}); continuing",
            std::io::Error::last_os_error()
        );
    }
}

/// A sparse file of `len` bytes with `stamp(o)` written at each offset in `offsets`.
fn build(dir: &Path, name: &str, len: u64, offsets: &[u64]) -> PathBuf {
    let path = dir.join(name);
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    make_sparse(&file);
    file.set_len(len).unwrap();
    for &o in offsets {
        file.seek_write(&stamp(o), o).unwrap();
    }
    file.sync_all().unwrap();
    path
}

/// The offsets every method is checked at: first and last sample, both sides of 4 GiB, samples
/// straddling 4 GiB and a 4 KiB boundary, and seeded random 32-byte-aligned ones. No two
/// overlap, so every offset holds its own stamp.
fn offsets(len: u64) -> Vec<u64> {
    let four_gib = 4u64 << 30;
    let mut v = vec![
        0,
        32,
        4096 - 16,
        len - 32,
        four_gib - 64,
        four_gib - 16,
        four_gib + 32,
        four_gib + 4096 * 3 + 96,
    ];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    while v.len() < 56 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let o = (x % (len / 32 - 1)) * 32;
        if v.iter().all(|&p| o + 32 <= p || p + 32 <= o) {
            v.push(o);
        }
    }
    v
}

/// The bytes at `offset` by a plain synchronous read.
fn plain_read(path: &Path, offset: u64) -> Sample {
    let file = File::open(path).unwrap();
    let mut buf = [0u8; SAMPLE_LEN];
    let mut got = 0;
    while got < SAMPLE_LEN {
        let n = file
            .seek_read(&mut buf[got..], offset + got as u64)
            .unwrap();
        assert!(n > 0, "plain read hit EOF at {offset}");
        got += n;
    }
    buf
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
    len: u64,
    offsets: Vec<u64>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let len = 4 * GIB + (1 << 20) + 4096; // past 4 GiB, not a multiple of 1 MiB
    let offsets = offsets(len);
    let path = build(dir.path(), "shard.dat", len, &offsets);
    Fixture {
        _dir: dir,
        path,
        len,
        offsets,
    }
}

impl Fixture {
    /// `method` over the fixture's file, reading exactly the 32 sample bytes.
    fn open(&self, method: Method) -> Arc<dyn BackendFactory> {
        pora_io::open(
            std::slice::from_ref(&self.path),
            &config(method, BlockSize::Natural),
        )
        .unwrap()
    }

    /// Pushes reads of the first `n` offsets, tagged `0..n` (not submitted).
    fn push_first(&self, worker: &mut dyn Backend, n: usize) {
        for (i, &o) in self.offsets.iter().take(n).enumerate() {
            worker.push(first_file_at(i as u32, o)).unwrap();
        }
    }
}

/// A read of file #0 at `offset`.
fn first_file_at(tag: u32, offset: u64) -> SampleRead {
    SampleRead {
        tag,
        file: 0,
        offset,
    }
}

fn config(method: Method, block_size: BlockSize) -> IoConfig {
    IoConfig {
        method,
        block_size,
        ..Default::default()
    }
}

/// Reads every `(file, offset)` through one worker, `depth` at a time; returns results by index.
fn read_all(backend: &mut dyn pora_io::Backend, reads: &[(u32, u64)]) -> Vec<Completion> {
    let mut done: Vec<Option<Completion>> = vec![None; reads.len()];
    let mut out = Vec::with_capacity(backend.capacity());
    let mut next = 0;
    let mut finished = 0;
    while finished < reads.len() {
        while next < reads.len() && backend.in_flight() < backend.capacity() {
            let (file, offset) = reads[next];
            backend
                .push(SampleRead {
                    tag: next as u32,
                    file,
                    offset,
                })
                .unwrap();
            next += 1;
        }
        backend.submit().unwrap();
        out.clear();
        backend.reap(&mut out, 1, None).unwrap();
        for c in out.drain(..) {
            let tag = c.tag as usize;
            assert!(done[tag].is_none(), "tag {tag} completed twice");
            done[tag] = Some(c);
            finished += 1;
        }
    }
    done.into_iter().map(Option::unwrap).collect()
}

#[test]
fn every_windows_method_is_available() {
    assert_eq!(Method::available_real(), WINDOWS_METHODS.to_vec());
}

#[test]
fn every_method_reads_the_same_bytes_as_a_plain_read() {
    let fx = fixture();
    let reads: Vec<(u32, u64)> = fx.offsets.iter().map(|&o| (0, o)).collect();
    for method in WINDOWS_METHODS {
        let factory = fx.open(method);
        assert_eq!(factory.method(), method);
        eprintln!("{}", factory.describe());
        for depth in [1, 7, 64] {
            let mut worker = factory.worker(depth).unwrap();
            assert_eq!(worker.capacity(), depth);
            let results = read_all(worker.as_mut(), &reads);
            for (c, &(_, o)) in results.iter().zip(&reads) {
                let got = c
                    .result
                    .as_ref()
                    .unwrap_or_else(|e| panic!("{method} depth {depth}: {e}"));
                assert_eq!(
                    got,
                    &plain_read(&fx.path, o),
                    "{method} depth {depth} offset {o}"
                );
                assert_eq!(got, &stamp(o), "{method} depth {depth} offset {o}");
            }
            assert_eq!(worker.in_flight(), 0);
        }
    }
}

#[test]
fn block_sizes_read_whole_aligned_blocks_around_the_sample() {
    let fx = fixture();
    let path = std::slice::from_ref(&fx.path);
    let reads: Vec<(u32, u64)> = fx.offsets.iter().map(|&o| (0, o)).collect();
    for method in WINDOWS_METHODS {
        // 64 bytes is below any sector size, so only the buffered methods take it.
        let blocks: &[u32] = match method {
            Method::IocpUnbuffered => &[4096, 65536],
            _ => &[64, 4096, 65536],
        };
        for &block in blocks {
            let factory = pora_io::open(path, &config(method, BlockSize::Bytes(block))).unwrap();
            let mut worker = factory.worker(16).unwrap();
            for (c, &(_, o)) in read_all(worker.as_mut(), &reads).iter().zip(&reads) {
                let got = c.result.as_ref();
                assert_eq!(got.unwrap(), &stamp(o), "{method} block {block} offset {o}");
            }
        }
        for bad in [0u32, 16, 3000, 1 << 30] {
            let err = pora_io::open(path, &config(method, BlockSize::Bytes(bad)));
            let err = err.err().expect("refused").to_string();
            assert!(
                err.contains(&bad.to_string()),
                "{method} block {bad}: {err}"
            );
        }
    }
    // Unbuffered blocks must be whole sectors (512 under Wine, 4096 on most Windows volumes).
    let err = pora_io::open(path, &config(Method::IocpUnbuffered, BlockSize::Bytes(64)));
    let err = err.err().expect("refused").to_string();
    assert!(err.contains("sector"), "{err}");
}

#[test]
fn a_read_of_a_file_that_is_not_open_fails_alone() {
    let fx = fixture();
    for method in WINDOWS_METHODS {
        let factory = fx.open(method);
        let mut worker = factory.worker(4).unwrap();
        let results = read_all(worker.as_mut(), &[(3, 64), (0, fx.offsets[2])]);
        let err = results[0].result.as_ref().expect_err("file #3 is not open");
        assert_eq!((err.file, err.offset), (3, 64), "{method}");
        assert!(err.to_string().contains("file #3"), "{method}: {err}");
        assert_eq!(
            results[1].result.as_ref().unwrap(),
            &stamp(fx.offsets[2]),
            "{method}"
        );
    }
}

#[test]
fn several_workers_read_at_once_and_across_files() {
    let fx = fixture();
    let second_offsets: Vec<u64> = (0..40u64).map(|i| i * 1_048_608 + 64).collect();
    let second = build(
        fx.path.parent().unwrap(),
        "second.dat",
        64 << 20,
        &second_offsets,
    );
    let paths = vec![fx.path.clone(), second];
    let mut reads: Vec<(u32, u64)> = fx.offsets.iter().map(|&o| (0, o)).collect();
    reads.extend(second_offsets.iter().map(|&o| (1, o)));
    for method in WINDOWS_METHODS {
        let factory = pora_io::open(&paths, &config(method, BlockSize::Natural)).unwrap();
        std::thread::scope(|s| {
            for t in 0..4 {
                let factory = &factory;
                let reads = &reads;
                s.spawn(move || {
                    let mut worker = factory.worker(8 + t).unwrap();
                    for (c, &(_, o)) in read_all(worker.as_mut(), reads).iter().zip(reads) {
                        assert_eq!(
                            c.result.as_ref().unwrap(),
                            &stamp(o),
                            "{method} worker {t} offset {o}"
                        );
                    }
                });
            }
        });
    }
}

#[test]
fn queue_full_at_the_depth_until_reaped() {
    let fx = fixture();
    for method in WINDOWS_METHODS {
        let factory = fx.open(method);
        let mut worker = factory.worker(4).unwrap();
        fx.push_first(worker.as_mut(), 4);
        assert_eq!(worker.push(first_file_at(9, 0)), Err(QueueFull), "{method}");
        worker.submit().unwrap();
        assert_eq!(
            worker.push(first_file_at(9, 0)),
            Err(QueueFull),
            "{method}: unreaped"
        );
        let mut out = Vec::with_capacity(4);
        while out.len() < 4 {
            worker.reap(&mut out, 4, None).unwrap();
        }
        assert_eq!(worker.in_flight(), 0);
        worker.push(first_file_at(9, 0)).unwrap();
    }
}

#[test]
fn a_passed_deadline_returns_and_nothing_is_lost() {
    let fx = fixture();
    for method in WINDOWS_METHODS {
        let factory = fx.open(method);
        let mut worker = factory.worker(32).unwrap();
        fx.push_first(worker.as_mut(), 32);
        worker.submit().unwrap();
        let mut out = Vec::with_capacity(32);
        // Must return (not block) even though 32 completions were asked for.
        worker.reap(&mut out, 32, Some(Instant::now())).unwrap();
        worker.reap(&mut out, 0, None).unwrap();
        while out.len() < 32 {
            worker
                .reap(
                    &mut out,
                    32,
                    Some(Instant::now() + std::time::Duration::from_millis(50)),
                )
                .unwrap();
        }
        assert_eq!(worker.in_flight(), 0, "{method}");
        out.sort_by_key(|c| c.tag);
        for (c, &o) in out.iter().zip(&fx.offsets) {
            assert_eq!(c.result.as_ref().unwrap(), &stamp(o), "{method} offset {o}");
        }
    }
}

#[test]
fn reads_at_or_past_the_end_are_read_errors_naming_the_offset() {
    let fx = fixture();
    let bad = [fx.len - 16, fx.len, fx.len + 4096, fx.len + 5 * GIB];
    let mut reads: Vec<(u32, u64)> = bad.iter().map(|&o| (0, o)).collect();
    reads.push((0, fx.len - 32)); // the good last sample still reads fine among failures
    for method in WINDOWS_METHODS {
        let factory = fx.open(method);
        let mut worker = factory.worker(8).unwrap();
        let results = read_all(worker.as_mut(), &reads);
        for (c, &(_, o)) in results.iter().zip(&reads).take(bad.len()) {
            let err = c
                .result
                .as_ref()
                .expect_err(&format!("{method}: read at {o} of a {} byte file", fx.len));
            assert_eq!((err.file, err.offset), (0, o), "{method}");
            let expected = matches!(
                err.kind,
                ReadErrorKind::ShortRead { .. } | ReadErrorKind::OutOfBounds { .. }
            );
            assert!(expected, "{method} offset {o}: {err}");
        }
        assert_eq!(
            results[bad.len()].result.as_ref().unwrap(),
            &stamp(fx.len - 32),
            "{method}"
        );
    }
}

#[test]
fn a_missing_file_is_an_open_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.dat");
    for method in WINDOWS_METHODS {
        let err = pora_io::open(
            std::slice::from_ref(&missing),
            &config(method, BlockSize::Natural),
        )
        .err()
        .expect("must fail");
        assert!(err.to_string().contains("nope.dat"), "{method}: {err}");
    }
}

#[test]
fn dropping_a_worker_with_reads_in_flight_is_safe() {
    let fx = fixture();
    for method in [Method::Iocp, Method::IocpUnbuffered] {
        let factory = fx.open(method);
        for _ in 0..10 {
            let mut worker = factory.worker(32).unwrap();
            fx.push_first(worker.as_mut(), 32);
            worker.submit().unwrap();
            drop(worker); // cancels and drains before the buffers are freed
        }
        let mut worker = factory.worker(4).unwrap();
        let c = read_all(worker.as_mut(), &[(0, fx.offsets[3])]);
        assert_eq!(c[0].result.as_ref().unwrap(), &stamp(fx.offsets[3]));
    }
}

#[test]
fn volume_facts_report_a_usable_sector_size() {
    let fx = fixture();
    let facts = pora_io::windows::windows_volume_facts(&fx.path);
    eprintln!("{facts:#?}");
    assert!(
        facts.unbuffered_sector_bytes.is_power_of_two() && facts.unbuffered_sector_bytes >= 512
    );
    assert!(facts.volume_root.is_some(), "{facts:?}");
    assert!(matches!(
        facts.bitlocker,
        pora_io::windows::BitLocker::Unknown(_)
            | pora_io::windows::BitLocker::On
            | pora_io::windows::BitLocker::Off
    ));
    let missing = pora_io::windows::windows_volume_facts(Path::new("Z:\\no\\such\\file.dat"));
    assert!(
        !missing.notes.is_empty(),
        "a failed query must be explained: {missing:?}"
    );
}
