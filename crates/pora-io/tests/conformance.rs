//! One conformance test body run against every real access method available on this machine, for
//! both `BlockSize::Natural` and `BlockSize::Bytes(4096)`: the bytes each method returns must equal
//! a plain positional read, at random offsets (first and last sample, block-straddling offsets,
//! offsets above 4 GiB in a sparse file), with many reads in flight and completions matched by
//! tag; plus the contract's bookkeeping (capacity, in_flight, QueueFull, deadlines) and per-read
//! errors past the end of a file. Unavailable methods are skipped visibly ("SKIP ...").
//!
//! Test files live under `$PORA_TEST_DIR` if set, else Cargo's target tmpdir (on the repository's
//! disk, where O_DIRECT normally works; /tmp may be tmpfs).

/// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
#[allow(unused_macros)] // some platforms skip nothing
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

#[cfg(unix)]
use pora_io::ReadErrorKind;
use pora_io::{BlockSize, Completion, IoConfig, IoError, Method, QueueFull, SampleRead};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
#[cfg(unix)]
use std::path::Path;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const GIB: u64 = 1 << 30;
/// Size of the random file: a few MiB, deliberately not a multiple of 4096 (the last block is
/// partial, as in real shard files whose meta region ends on a 32-byte boundary).
const RANDOM_FILE_BYTES: u64 = 3 * (1 << 20) + 32 * 37;
/// Size of the sparse file: above 4 GiB, also ending inside a block.
const SPARSE_FILE_BYTES: u64 = 5 * GIB + 4096 * 3 + 32 * 5;
const DEPTH: usize = 16;

fn test_root() -> PathBuf {
    std::env::var_os("PORA_TEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")))
}

/// The two test files (index 0: random bytes, index 1: sparse with data above 4 GiB) and the
/// offsets to read.
struct Fixture {
    _dir: tempfile::TempDir,
    paths: Vec<PathBuf>,
    lens: Vec<u64>,
    reads: Vec<(u32, u64)>,
}

fn fill_random(rng: &mut Xoshiro256PlusPlus, len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// Regions of the sparse file that hold data (the rest is holes, reading as zeros).
fn sparse_regions() -> [u64; 4] {
    [
        4 * GIB,
        4 * GIB + 123 * 4096 + 512,
        4 * GIB + 777_777 * 32,
        SPARSE_FILE_BYTES - 65536,
    ]
}

fn fixture() -> Fixture {
    let root = test_root();
    std::fs::create_dir_all(&root).unwrap();
    let dir = tempfile::Builder::new()
        .prefix("pora-io-conformance")
        .tempdir_in(&root)
        .unwrap();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x5eed);

    let random_path = dir.path().join("random.bin");
    let mut f = File::create(&random_path).unwrap();
    f.write_all(&fill_random(&mut rng, RANDOM_FILE_BYTES as usize))
        .unwrap();

    let sparse_path = dir.path().join("sparse.bin");
    let mut f = File::create(&sparse_path).unwrap();
    f.set_len(SPARSE_FILE_BYTES).unwrap();
    for start in sparse_regions() {
        use std::io::{Seek, SeekFrom};
        f.seek(SeekFrom::Start(start)).unwrap();
        f.write_all(&fill_random(&mut rng, 65536)).unwrap();
    }
    drop(f);

    Fixture {
        _dir: dir,
        paths: vec![random_path, sparse_path],
        lens: vec![RANDOM_FILE_BYTES, SPARSE_FILE_BYTES],
        reads: offsets(&mut rng),
    }
}

/// First and last sample of each file, offsets straddling 512 B / 4 KiB boundaries, random
/// aligned and unaligned offsets, offsets in the sparse file's data above 4 GiB and in its holes.
fn offsets(rng: &mut Xoshiro256PlusPlus) -> Vec<(u32, u64)> {
    let mut reads = vec![
        (0, 0),
        (0, RANDOM_FILE_BYTES - 32),
        (0, 512 - 16),
        (0, 4096 - 1),
        (0, 8192 - 31),
        (0, 65536 - 8),
        (1, 0),
        (1, SPARSE_FILE_BYTES - 32),
        (1, 4 * GIB - 16),
        (1, 4 * GIB + 4096 - 16),
    ];
    for start in sparse_regions() {
        for _ in 0..40 {
            reads.push((1, start + rng.next_u64() % (65536 - 32)));
        }
    }
    for _ in 0..60 {
        reads.push((1, rng.next_u64() % (SPARSE_FILE_BYTES - 32)));
    }
    for i in 0..500 {
        let offset = rng.next_u64() % (RANDOM_FILE_BYTES - 32);
        // Half of them sample-aligned, as mining reads are.
        reads.push((0, if i % 2 == 0 { offset & !31 } else { offset }));
    }
    reads
}

fn expected(fx: &Fixture, file: u32, offset: u64) -> [u8; 32] {
    use std::io::{Read as _, Seek, SeekFrom};
    let mut buf = [0u8; 32];
    let mut f = File::open(&fx.paths[file as usize]).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.read_exact(&mut buf).unwrap();
    buf
}

/// Opens `method`; `None` (after printing SKIP and the reason) when it is unavailable here.
fn open_or_skip(
    fx: &Fixture,
    method: Method,
    block_size: BlockSize,
) -> Option<std::sync::Arc<dyn pora_io::BackendFactory>> {
    let config = IoConfig {
        method,
        block_size,
        ..IoConfig::default()
    };
    match pora_io::open(&fx.paths, &config) {
        Ok(factory) => Some(factory),
        Err(IoError::Unavailable { reason, .. }) => {
            skip_note!("SKIP {method} ({block_size:?}): {reason}");
            None
        }
        Err(e) => panic!("{method} ({block_size:?}): open failed: {e}"),
    }
}

/// The one conformance body.
fn conformance(fx: &Fixture, method: Method, block_size: BlockSize) {
    let Some(factory) = open_or_skip(fx, method, block_size) else {
        return;
    };
    assert_eq!(factory.method(), method);
    eprintln!("RUN {method} ({block_size:?}): {}", factory.describe());
    let mut backend = factory.worker(DEPTH).unwrap();
    assert_eq!(backend.method(), method);
    assert_eq!(backend.capacity(), DEPTH);
    assert_eq!(backend.in_flight(), 0);

    check_reap_before_submit(backend.as_mut(), fx);
    check_capacity_and_deadlines(backend.as_mut(), fx);
    check_random_reads(backend.as_mut(), fx, method);
    check_errors(backend.as_mut(), fx);
    assert_eq!(backend.in_flight(), 0);
    check_cancel_all(backend.as_mut(), fx);
}

/// `cancel_all` forgets submitted and queued reads within its bound on a healthy disk: the
/// backend is idle, no stale completion comes back later, and it reads correctly again.
fn check_cancel_all(backend: &mut dyn pora_io::Backend, fx: &Fixture) {
    let push = |backend: &mut dyn pora_io::Backend, tags: std::ops::Range<u32>| {
        for tag in tags {
            let read = SampleRead {
                tag,
                file: 0,
                offset: u64::from(tag) * 50_000,
            };
            backend.push(read).unwrap();
        }
    };
    let half = DEPTH as u32 / 2;
    push(backend, 0..half);
    backend.submit().unwrap();
    push(backend, half..DEPTH as u32); // queued, never submitted
    let outcome = backend.cancel_all(pora_io::TEARDOWN_WAIT);
    assert!(outcome.is_idle(), "{outcome:?}");
    assert_eq!(outcome.discarded, DEPTH);
    assert_eq!(backend.in_flight(), 0);
    let mut out: Vec<Completion> = Vec::with_capacity(DEPTH);
    assert_eq!(
        backend
            .reap(
                &mut out,
                1,
                Some(Instant::now() + Duration::from_millis(20))
            )
            .unwrap(),
        0,
        "no completion of a cancelled read may come back"
    );
    assert_eq!(
        pora_io::read_one(backend, 0, 4096 + 64).unwrap(),
        expected(fx, 0, 4096 + 64)
    );
}

/// Reads pushed but not submitted are not waited for: reap returns at once without them.
fn check_reap_before_submit(backend: &mut dyn pora_io::Backend, fx: &Fixture) {
    let mut out: Vec<Completion> = Vec::with_capacity(DEPTH);
    backend
        .push(SampleRead {
            tag: 1,
            file: 0,
            offset: 96,
        })
        .unwrap();
    assert_eq!(backend.reap(&mut out, 1, None).unwrap(), 0);
    assert_eq!(backend.in_flight(), 1);
    backend.submit().unwrap();
    while out.is_empty() {
        backend.reap(&mut out, 1, None).unwrap();
    }
    assert_eq!(out[0].result.as_ref().unwrap(), &expected(fx, 0, 96));
    assert_eq!(backend.in_flight(), 0);
}

/// Fills the queue, checks QueueFull and in_flight, and that past deadlines return promptly.
fn check_capacity_and_deadlines(backend: &mut dyn pora_io::Backend, fx: &Fixture) {
    let mut out: Vec<Completion> = Vec::with_capacity(DEPTH);
    let started = Instant::now();
    assert_eq!(
        backend
            .reap(&mut out, 1, Some(started - Duration::from_millis(1)))
            .unwrap(),
        0
    );
    for tag in 0..DEPTH as u32 {
        backend
            .push(SampleRead {
                tag,
                file: 0,
                offset: u64::from(tag) * 40_000,
            })
            .unwrap();
        assert_eq!(backend.in_flight(), tag as usize + 1);
    }
    assert_eq!(
        backend.push(SampleRead {
            tag: 99,
            file: 0,
            offset: 0
        }),
        Err(QueueFull)
    );
    backend.submit().unwrap();
    assert_eq!(backend.in_flight(), DEPTH);
    // A deadline in the past: whatever is ready, without waiting for all of them.
    let n = backend
        .reap(
            &mut out,
            DEPTH,
            Some(Instant::now() - Duration::from_millis(1)),
        )
        .unwrap();
    assert_eq!(n, out.len());
    assert_eq!(backend.in_flight(), DEPTH - n);
    while out.len() < DEPTH && backend.in_flight() > 0 {
        backend.reap(&mut out, 1, None).unwrap();
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "deadline waits must not hang"
    );
    assert_eq!(out.len(), DEPTH);
    assert_eq!(backend.in_flight(), 0);
    for c in &out {
        let offset = u64::from(c.tag) * 40_000;
        assert_eq!(
            c.result.as_ref().unwrap(),
            &expected(fx, 0, offset),
            "offset {offset}"
        );
    }
}

/// Keeps up to DEPTH reads in flight over every fixture offset; each completion must match its
/// tag's expected bytes exactly once.
fn check_random_reads(backend: &mut dyn pora_io::Backend, fx: &Fixture, method: Method) {
    let mut pending: HashMap<u32, (u32, u64)> = HashMap::new();
    let mut next = 0usize;
    let mut out: Vec<Completion> = Vec::with_capacity(DEPTH);
    let mut done = 0usize;
    let mut max_in_flight = 0usize;
    while done < fx.reads.len() {
        while next < fx.reads.len() {
            let (file, offset) = fx.reads[next];
            let tag = next as u32 + 1000;
            match backend.push(SampleRead { tag, file, offset }) {
                Ok(()) => {
                    pending.insert(tag, (file, offset));
                    next += 1;
                }
                Err(QueueFull) => break,
            }
        }
        max_in_flight = max_in_flight.max(backend.in_flight());
        backend.submit().unwrap();
        out.clear();
        let deadline = Instant::now() + Duration::from_secs(10);
        let n = backend.reap(&mut out, 1, Some(deadline)).unwrap();
        assert_eq!(n, out.len());
        assert!(n >= 1, "{method}: nothing completed within 10 s");
        for c in out.drain(..) {
            let (file, offset) = pending
                .remove(&c.tag)
                .expect("a completion for a pending tag, once");
            let got = c.result.unwrap_or_else(|e| panic!("{method}: {e}"));
            assert_eq!(
                got,
                expected(fx, file, offset),
                "{method}: file {file} offset {offset}"
            );
            done += 1;
        }
    }
    assert!(pending.is_empty());
    assert_eq!(max_in_flight, DEPTH, "{method}: the queue was kept full");
}

/// Reads past the end of a file, straddling it, and of a file index that does not exist come
/// back as per-read errors naming the file and offset.
fn check_errors(backend: &mut dyn pora_io::Backend, fx: &Fixture) {
    let bad = [
        (0, fx.lens[0]),
        (0, fx.lens[0] - 16),
        (1, fx.lens[1] + 4096),
        (1, 10 * GIB),
        (7, 0),
    ];
    for (tag, &(file, offset)) in bad.iter().enumerate() {
        backend
            .push(SampleRead {
                tag: tag as u32,
                file,
                offset,
            })
            .unwrap();
    }
    // A good read among the bad ones still succeeds.
    backend
        .push(SampleRead {
            tag: 50,
            file: 0,
            offset: 4096,
        })
        .unwrap();
    backend.submit().unwrap();
    let mut out = Vec::with_capacity(DEPTH);
    while backend.in_flight() > 0 {
        backend.reap(&mut out, backend.in_flight(), None).unwrap();
    }
    assert_eq!(out.len(), bad.len() + 1);
    for c in out {
        if c.tag == 50 {
            assert_eq!(c.result.unwrap(), expected(fx, 0, 4096));
            continue;
        }
        let (file, offset) = bad[c.tag as usize];
        let e = c.result.expect_err("a read past the end must fail");
        assert_eq!((e.file, e.offset), (file, offset), "{e}");
        let message = e.to_string();
        assert!(
            message.contains(&format!("file #{file}")) && message.contains(&offset.to_string())
        );
    }
}

#[test]
fn every_available_method_conforms() {
    let fx = fixture();
    for method in Method::ALL {
        if matches!(method, Method::Sim | Method::Auto) {
            continue;
        }
        if let Err(reason) = method.availability() {
            skip_note!("SKIP {method}: {}", reason.0);
            continue;
        }
        for block_size in [BlockSize::Natural, BlockSize::Bytes(4096)] {
            conformance(&fx, method, block_size);
        }
    }
}

/// `drop_queued` forgets reads pushed since the last submit on every method: they never
/// complete, the submitted ones do with the right bytes, and the backend reads on afterwards.
#[test]
fn every_available_method_drops_queued_reads_unread() {
    let fx = fixture();
    for method in Method::available_real() {
        let Some(factory) = open_or_skip(&fx, method, BlockSize::Natural) else {
            continue;
        };
        let mut backend = factory.worker(DEPTH).unwrap();
        let offset_of = |tag: u32| u64::from(tag) * 40_000 + 32;
        let half = DEPTH as u32 / 2;
        for tag in 0..DEPTH as u32 {
            if tag == half {
                backend.submit().unwrap();
            }
            let read = SampleRead {
                tag,
                file: 0,
                offset: offset_of(tag),
            };
            backend.push(read).unwrap();
        }
        assert_eq!(backend.drop_queued(), DEPTH - half as usize, "{method}");
        assert_eq!(backend.in_flight(), half as usize, "{method}");
        backend.submit().unwrap();
        let mut out: Vec<Completion> = Vec::with_capacity(DEPTH);
        while backend.in_flight() > 0 {
            backend.reap(&mut out, 1, None).unwrap();
        }
        let mut tags: Vec<u32> = out.iter().map(|c| c.tag).collect();
        tags.sort_unstable();
        assert_eq!(tags, (0..half).collect::<Vec<_>>(), "{method}");
        for c in &out {
            let got = c.result.as_ref().unwrap();
            assert_eq!(got, &expected(&fx, 0, offset_of(c.tag)), "{method}");
        }
        assert_eq!(backend.drop_queued(), 0, "{method}");
        assert_eq!(
            pora_io::read_one(backend.as_mut(), 0, 4096 + 64).unwrap(),
            expected(&fx, 0, 4096 + 64),
            "{method}"
        );
    }
}

/// An opened factory reports the capabilities its method promises (the only difference allowed
/// is a kernel that cannot cancel reads), and `auto`'s are those of what it opened.
#[test]
fn every_factory_reports_its_methods_capabilities() {
    let fx = fixture();
    for method in Method::available_real().into_iter().chain([Method::Auto]) {
        let Some(factory) = open_or_skip(&fx, method, BlockSize::Natural) else {
            continue;
        };
        let mut promised = factory.method().capabilities();
        let opened = factory.capabilities();
        promised.cancels_in_flight = opened.cancels_in_flight;
        assert_eq!(opened, promised, "{method} opened as {}", factory.method());
        if opened.completes_inline {
            assert!(!opened.cancels_in_flight, "{method}");
        }
    }
}

#[test]
fn auto_resolves_to_a_concrete_available_method() {
    let fx = fixture();
    let Some(factory) = open_or_skip(&fx, Method::Auto, BlockSize::Natural) else {
        return;
    };
    assert_ne!(factory.method(), Method::Auto);
    assert!(Method::available_real().contains(&factory.method()));
    let mut backend = factory.worker(1).unwrap();
    assert_eq!(
        pora_io::read_one(backend.as_mut(), 0, 100).unwrap(),
        expected(&fx, 0, 100)
    );
}

/// Block sizes the device cannot honour are refused with a clear configuration error.
#[test]
fn bad_block_sizes_are_config_errors() {
    let fx = fixture();
    for method in Method::available_real() {
        for bytes in [0u32, 16, 1 << 30] {
            let config = IoConfig {
                method,
                block_size: BlockSize::Bytes(bytes),
                ..IoConfig::default()
            };
            match pora_io::open(&fx.paths, &config) {
                Err(IoError::Config(message)) => assert!(message.contains(&bytes.to_string())),
                Err(IoError::Unavailable { .. }) => {}
                Err(e) => panic!("{method} bs {bytes}: unexpected {e}"),
                Ok(_) => panic!("{method} accepted block size {bytes}"),
            }
        }
    }
    for method in [Method::Direct, Method::UringDirect] {
        let config = IoConfig {
            method,
            block_size: BlockSize::Bytes(4096 + 256),
            ..IoConfig::default()
        };
        if method.availability().is_ok() {
            assert!(
                pora_io::open(&fx.paths, &config).is_err(),
                "{method} accepted an unaligned block size"
            );
        }
    }
}

/// Several workers of one factory read concurrently (the mmap maps and pread-shared handles are
/// shared between them).
#[test]
fn workers_of_one_factory_read_concurrently() {
    let fx = fixture();
    for method in Method::available_real() {
        let Some(factory) = open_or_skip(&fx, method, BlockSize::Natural) else {
            continue;
        };
        std::thread::scope(|scope| {
            for worker in 0..2u64 {
                let factory = factory.clone();
                let fx = &fx;
                scope.spawn(move || {
                    let mut backend = factory.worker(4).unwrap();
                    for i in 0..64u64 {
                        let offset = (worker * 1_000_003 + i * 4_099) % (RANDOM_FILE_BYTES - 32);
                        let got = pora_io::read_one(backend.as_mut(), 0, offset).unwrap();
                        assert_eq!(got, expected(fx, 0, offset), "{method} offset {offset}");
                    }
                });
            }
        });
    }
}

#[cfg(unix)]
fn write_file(path: &Path, len: usize) -> Vec<u8> {
    let bytes: Vec<u8> = (0..len)
        .map(|i| (i % 253) as u8 ^ (i >> 12) as u8)
        .collect();
    std::fs::write(path, &bytes).unwrap();
    bytes
}

/// A file truncated under a live map: reads past the new end fail instead of crashing the
/// process, reads before it still succeed, and the periodic length check catches the partial
/// last page that cannot fault.
/// Unix only: Windows refuses to truncate a mapped file at all (see windows.rs).
#[cfg(unix)]
#[test]
fn mmap_survives_truncation() {
    let root = test_root();
    std::fs::create_dir_all(&root).unwrap();
    let dir = tempfile::tempdir_in(&root).unwrap();
    let path = dir.path().join("shrinking.bin");
    let bytes = write_file(&path, 1 << 20);
    let factory = pora_io::open(
        std::slice::from_ref(&path),
        &IoConfig {
            method: Method::Mmap,
            ..IoConfig::default()
        },
    )
    .unwrap();
    let mut backend = factory.worker(4).unwrap();
    assert_eq!(
        pora_io::read_one(backend.as_mut(), 0, 900_000).unwrap(),
        bytes[900_000..900_032]
    );

    let new_len = 65536 + 100;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(new_len)
        .unwrap();
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    let faults_before = pora_io::unix::mmap_faults_contained();

    // Past the new end, in whole pages that are gone: the access faults and is contained.
    let e = pora_io::read_one(backend.as_mut(), 0, 900_000).unwrap_err();
    let message = e.to_string();
    match e {
        IoError::Read(r) => {
            assert_eq!((r.file, r.offset), (0, 900_000));
            assert_eq!(
                r.kind,
                ReadErrorKind::OutOfBounds { file_len: new_len },
                "{message}"
            );
        }
        other => panic!("expected a read error, got {other}"),
    }
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    assert!(
        pora_io::unix::mmap_faults_contained() > faults_before,
        "the SIGBUS path was exercised"
    );

    // Before the new end: still the file's bytes.
    assert_eq!(
        pora_io::read_one(backend.as_mut(), 0, 1000).unwrap(),
        bytes[1000..1032]
    );
    // After one length-check period, even the zero tail of the last page is refused.
    for i in 0..pora_io::unix::MMAP_LENGTH_CHECK_READS {
        let offset = (i * 64) % 60_000;
        let got = pora_io::read_one(backend.as_mut(), 0, offset).unwrap();
        assert_eq!(got, bytes[offset as usize..offset as usize + 32]);
    }
    let e = pora_io::read_one(backend.as_mut(), 0, new_len - 16).unwrap_err();
    assert!(e.to_string().contains(&format!("{}", new_len - 16)), "{e}");
    // A fresh worker of the same factory sees the bound at once.
    let mut fresh = factory.worker(1).unwrap();
    assert!(pora_io::read_one(fresh.as_mut(), 0, 70_000).is_err());
}

/// A file system that refuses O_DIRECT (procfs here; tmpfs before Linux 6.6, overlayfs) makes
/// the direct methods unavailable with a reason naming it, and `auto` falls back to a buffered
/// method.
#[cfg(unix)]
#[test]
fn direct_refusal_names_the_file_system() {
    let path = PathBuf::from("/proc/self/status");
    for method in [Method::Direct, Method::UringDirect] {
        if let Err(reason) = method.availability() {
            skip_note!("SKIP {method}: {}", reason.0);
            continue;
        }
        let config = IoConfig {
            method,
            ..IoConfig::default()
        };
        match pora_io::open(std::slice::from_ref(&path), &config) {
            Err(IoError::Unavailable { reason, .. }) => {
                assert!(
                    reason.contains("proc") && reason.contains("O_DIRECT"),
                    "{reason}"
                )
            }
            Err(e) => panic!("{method}: expected Unavailable, got {e}"),
            Ok(_) => skip_note!("SKIP {method} refusal: this kernel allows O_DIRECT on procfs"),
        }
    }
    let auto = pora_io::open(&[path], &IoConfig::default()).unwrap();
    assert!(
        !auto.method().is_unbuffered(),
        "auto fell back to {}",
        auto.method()
    );
}
