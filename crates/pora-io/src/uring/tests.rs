//! The rings on real files, a FIFO that never answers (a device that stopped), and the
//! submission rhythm against canned device facts.

/// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
#[allow(unused_macros)] // some platforms skip nothing
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use super::*;
use crate::host::block_device::DeviceFacts;
use crate::host::file_devices::FileDevices;
use std::io::Write;

fn backend_over(bytes: &[u8], depth: usize) -> Option<(tempfile::NamedTempFile, UringBackend)> {
    if let Err(reason) = probe() {
        skip_note!("SKIP uring: {reason}");
        return None;
    }
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(bytes).unwrap();
    let factory = buffered_factory(file.path().to_path_buf());
    let backend = UringBackend::new(&factory, depth).unwrap();
    Some((file, backend))
}

/// A buffered `uring` factory over one file, reading exactly the sample's 32 bytes.
fn buffered_factory(path: std::path::PathBuf) -> UringFactory {
    UringFactory {
        method: Method::Uring,
        paths: vec![path],
        unit: None,
        resume_align: 1,
        buf_align: 64,
        fixed_buffers: AtomicU8::new(FIXED_UNKNOWN),
        fixed_files: AtomicU8::new(FIXED_UNKNOWN),
        cancels_reads: kernel_cancels_reads(),
        submit_each_max_depth: 0,
    }
}

/// Device facts with one leaf disk, served by the host or with hardware behind it.
fn one_disk(name: &str, host_served: bool) -> DeviceFacts {
    DeviceFacts {
        major: 7,
        minor: 0,
        name: name.into(),
        disk: name.into(),
        model: None,
        queue: Default::default(),
        layers: Vec::new(),
        leaves: vec![crate::host::block_device::LeafDisk {
            name: name.into(),
            model: None,
            queue: Default::default(),
            host_served,
        }],
        reads: Default::default(),
    }
}

/// `io_uring_enter` calls one `submit` of `depth` reads makes on a `uring-direct` ring over
/// files whose devices are `facts` (one file per entry, each 1 MiB, reads spread over them),
/// the facts handed in as a session hands them; `None` where O_DIRECT or io_uring is refused.
fn enters_per_submit(facts: &[Option<DeviceFacts>], depth: usize) -> Option<u64> {
    if let Err(reason) = probe() {
        skip_note!("SKIP uring: {reason}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..facts.len())
        .map(|i| {
            let path = dir.path().join(format!("f{i}"));
            std::fs::write(&path, vec![i as u8 + 1; 1 << 20]).unwrap();
            path
        })
        .collect();
    let config = IoConfig {
        method: Method::UringDirect,
        devices: FileDevices::from_facts(paths.iter().cloned().zip(facts.iter().cloned())),
        ..IoConfig::default()
    };
    let factory = match factory(Method::UringDirect, &paths, &config) {
        Ok(f) => f,
        Err(IoError::Unavailable { reason, .. }) => {
            skip_note!("SKIP uring-direct rhythm: {reason}");
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    let mut backend = UringBackend::new(&factory, depth).unwrap();
    for tag in 0..depth as u32 {
        let file = tag % paths.len() as u32;
        let offset = u64::from(tag) * 4096 % (1 << 20);
        backend.push(SampleRead { tag, file, offset }).unwrap();
    }
    let before = backend.enters;
    backend.submit().unwrap();
    let enters = backend.enters - before;
    let mut out = Vec::with_capacity(depth);
    let deadline = Instant::now() + Duration::from_secs(10);
    while out.len() < depth && Instant::now() < deadline {
        backend.reap(&mut out, depth, Some(deadline)).unwrap();
    }
    assert_eq!(out.len(), depth);
    for c in out {
        let file = c.tag % paths.len() as u32;
        assert_eq!(c.result.unwrap(), [file as u8 + 1; 32]);
    }
    Some(enters)
}

/// The rhythm a ring keeps, counted in `io_uring_enter` calls of one submit: at depth 64 a ring
/// over a disk with hardware enters once per read (64: the virtio disk read 7–10% faster that
/// way, §32), over a RAM-backed loop device once for the batch (20% faster batched, §30); at
/// depth 32 both enter per read. A shard over both kinds, or with a device unknown, takes the
/// hardware's rhythm (64 enters): the slower device sets the pace.
#[test]
fn a_ring_enters_per_read_up_to_depth_64_only_over_hardware() {
    let loop0 = Some(one_disk("loop0", true));
    let vda = Some(one_disk("vda", false));
    let Some(hardware) = enters_per_submit(std::slice::from_ref(&vda), 64) else {
        return;
    };
    assert_eq!(hardware, 64, "one enter per read over hardware");
    let batched = enters_per_submit(std::slice::from_ref(&loop0), 64).unwrap();
    assert!(
        batched <= 2,
        "{batched} enters for one batch on a loop device"
    );
    assert_eq!(
        enters_per_submit(std::slice::from_ref(&loop0), 32),
        Some(32)
    );
    let both = [loop0.clone(), loop0.clone()];
    assert!(enters_per_submit(&both, 64).unwrap() <= 2);
    assert_eq!(enters_per_submit(&[loop0.clone(), vda], 64), Some(64));
    assert_eq!(enters_per_submit(&[loop0, None], 64), Some(64));
    assert_eq!(enters_per_submit(&[None], 64), Some(64));
}

/// A buffered ring batches at any depth, whatever the devices: one enter for 8 reads.
#[test]
fn a_buffered_ring_enters_once_per_batch() {
    let bytes = vec![3u8; 1 << 16];
    let Some((_file, mut backend)) = backend_over(&bytes, 8) else {
        return;
    };
    push_reads(&mut backend, 0..8, 4096);
    let before = backend.enters;
    backend.submit().unwrap();
    assert_eq!(backend.enters - before, 1);
}

/// The IORING_OP_TIMEOUT path (kernels before 5.11) reads correctly and honours deadlines.
#[test]
fn timeout_entries_path_works() {
    let bytes: Vec<u8> = (0..65536u32).map(|i| (i * 7 % 251) as u8).collect();
    let Some((_file, mut backend)) = backend_over(&bytes, 8) else {
        return;
    };
    backend.timeout_entries = true;
    let mut out = Vec::with_capacity(8);
    for tag in 0..8u32 {
        backend
            .push(SampleRead {
                tag,
                file: 0,
                offset: u64::from(tag) * 4000,
            })
            .unwrap();
    }
    backend.submit().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while out.len() < 8 && Instant::now() < deadline {
        backend.reap(&mut out, 8, Some(deadline)).unwrap();
    }
    assert_eq!(out.len(), 8);
    for c in out {
        let at = c.tag as usize * 4000;
        assert_eq!(c.result.unwrap(), bytes[at..at + 32]);
    }
    // Nothing in flight: a deadline wait returns at once with nothing.
    let mut none = Vec::new();
    assert_eq!(
        backend
            .reap(
                &mut none,
                1,
                Some(Instant::now() + Duration::from_millis(50))
            )
            .unwrap(),
        0
    );
}

/// Pushes one read per tag of `tags`, of the sample at `tag * stride` of file 0.
fn push_reads(backend: &mut UringBackend, tags: std::ops::Range<u32>, stride: u64) {
    for tag in tags {
        let offset = u64::from(tag) * stride;
        backend
            .push(SampleRead {
                tag,
                file: 0,
                offset,
            })
            .unwrap();
    }
}

/// Every combination of registered and plain buffers and files reads the right bytes: a
/// kernel that refuses either registration (RLIMIT_MEMLOCK for the buffers) still reads.
#[test]
fn reads_with_and_without_registration() {
    let bytes: Vec<u8> = (0..65536u32).map(|i| (i * 13 % 251) as u8).collect();
    for (fixed_files, fixed_buffers) in [(true, true), (true, false), (false, true), (false, false)]
    {
        let Some((_file, mut backend)) = backend_over(&bytes, 8) else {
            return;
        };
        // As root (CI) nothing is refused: both registrations hold unless turned off here.
        assert!(backend.fixed_files, "registering one file was refused");
        backend.fixed_files &= fixed_files;
        backend.fixed_buffers &= fixed_buffers;
        let mut out = Vec::with_capacity(8);
        push_reads(&mut backend, 0..8, 7001);
        backend.submit().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while out.len() < 8 && Instant::now() < deadline {
            backend.reap(&mut out, 8, Some(deadline)).unwrap();
        }
        assert_eq!(out.len(), 8, "files {fixed_files} buffers {fixed_buffers}");
        for c in out {
            let at = c.tag as usize * 7001;
            assert_eq!(c.result.unwrap(), bytes[at..at + 32]);
        }
    }
}

/// Reads pushed and not submitted are dropped without becoming SQEs: they never complete,
/// the submitted ones do, and afterwards the backend is idle with every slot reusable.
#[test]
fn drop_queued_reads_never_reach_the_kernel() {
    let bytes: Vec<u8> = (0..65536u32).map(|i| (i * 7 % 251) as u8).collect();
    let Some((_file, mut backend)) = backend_over(&bytes, 8) else {
        return;
    };
    let push = |backend: &mut UringBackend, tags| push_reads(backend, tags, 1000);
    push(&mut backend, 0..4);
    backend.submit().unwrap();
    push(&mut backend, 4..8);
    assert_eq!(backend.drop_queued(), 4);
    assert_eq!(backend.in_flight(), 4);
    backend.submit().unwrap();
    let mut out = Vec::with_capacity(8);
    let deadline = Instant::now() + Duration::from_secs(10);
    while backend.in_flight() > 0 && Instant::now() < deadline {
        backend.reap(&mut out, 1, Some(deadline)).unwrap();
    }
    let mut tags: Vec<u32> = out.iter().map(|c| c.tag).collect();
    tags.sort_unstable();
    assert_eq!(tags, [0, 1, 2, 3], "a dropped read completed");
    assert_eq!(backend.in_flight(), 0);
    assert_eq!(backend.outstanding(), 0);
    // Every slot is free again: a full batch fits and reads the right bytes.
    out.clear();
    push(&mut backend, 0..8);
    backend.submit().unwrap();
    while out.len() < 8 && Instant::now() < deadline {
        backend.reap(&mut out, 8, Some(deadline)).unwrap();
    }
    assert_eq!(out.len(), 8);
    for c in out {
        let at = c.tag as usize * 1000;
        assert_eq!(c.result.unwrap(), bytes[at..at + 32]);
    }
}

/// Dropping a backend with reads in flight waits for them (the kernel writes into the arena).
#[test]
fn drop_with_reads_in_flight() {
    let bytes = vec![7u8; 1 << 20];
    let Some((_file, mut backend)) = backend_over(&bytes, 32) else {
        return;
    };
    for tag in 0..32u32 {
        backend
            .push(SampleRead {
                tag,
                file: 0,
                offset: u64::from(tag) * 30_000,
            })
            .unwrap();
    }
    backend.submit().unwrap();
    drop(backend);
}

/// A backend over a FIFO that has a writer but no data: its reads never complete by
/// themselves, like reads on a device that stopped answering (but the kernel can cancel
/// them, as it can a read waiting for a pipe). The writer end is returned to keep it open.
fn backend_over_silent_fifo() -> Option<(tempfile::TempDir, File, UringBackend)> {
    if let Err(reason) = probe() {
        skip_note!("SKIP uring: {reason}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("silent.fifo");
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    // Read-write on Linux never blocks and keeps a writer present, so readers block for data.
    let writer = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let factory = buffered_factory(path);
    let backend = UringBackend::new(&factory, 4).unwrap();
    Some((dir, writer, backend))
}

fn push_silent_reads(backend: &mut UringBackend, n: u32) {
    for tag in 0..n {
        backend
            .push(SampleRead {
                tag,
                file: 0,
                offset: 0,
            })
            .unwrap();
    }
    backend.submit().unwrap();
}

/// Reads that never complete are cancelled by `cancel_all`, which leaves the backend idle
/// and reusable; timeouts on both deadline paths expire without a completion.
#[test]
fn cancel_all_cancels_reads_that_never_complete() {
    for timeout_entries in [false, true] {
        let Some((_dir, mut writer, mut backend)) = backend_over_silent_fifo() else {
            return;
        };
        backend.timeout_entries |= timeout_entries;
        push_silent_reads(&mut backend, 3);
        let mut out = Vec::new();
        for _ in 0..3 {
            let deadline = Instant::now() + Duration::from_millis(20);
            assert_eq!(backend.reap(&mut out, 1, Some(deadline)).unwrap(), 0);
        }
        // One more read pushed but never submitted: dropped without reaching the kernel.
        backend
            .push(SampleRead {
                tag: 9,
                file: 0,
                offset: 0,
            })
            .unwrap();
        let outcome = backend.cancel_all(TEARDOWN_WAIT);
        assert_eq!(
            outcome,
            CancelOutcome {
                discarded: 4,
                still_in_flight: 0
            }
        );
        assert_eq!(backend.in_flight(), 0);
        assert!(!backend.cancel_gave_up);
        // Reusable: a read now sees the bytes written into the FIFO.
        std::io::Write::write_all(&mut writer, &[5u8; 32]).unwrap();
        push_silent_reads(&mut backend, 1);
        let deadline = Instant::now() + Duration::from_secs(10);
        while out.is_empty() && Instant::now() < deadline {
            backend.reap(&mut out, 1, Some(deadline)).unwrap();
        }
        assert_eq!(out[0].result.as_ref().unwrap(), &[5u8; 32]);
    }
}

/// A backend whose reads the kernel does not give back (cancels withheld here, as a dead
/// device would not honour them) gives up after the bound and is leaked, not freed: dropping
/// it returns and counts it.
#[test]
fn drop_leaks_a_ring_whose_reads_are_never_given_back() {
    let Some((_dir, _writer, mut backend)) = backend_over_silent_fifo() else {
        return;
    };
    backend.send_cancels = false;
    push_silent_reads(&mut backend, 2);
    let outcome = backend.cancel_all(Duration::from_millis(50));
    assert_eq!(outcome.still_in_flight, 2);
    assert_eq!(backend.in_flight(), 2);
    assert!(backend.cancel_gave_up, "Drop must not wait again");
    let leaked_before = crate::leaked_backends();
    drop(backend);
    assert!(crate::leaked_backends() > leaked_before);
}

#[test]
fn probe_is_cached_and_consistent() {
    assert_eq!(probe(), probe());
}
