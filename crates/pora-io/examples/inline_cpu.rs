//! CPU time per read of one worker of a synchronous method (default `mmap`) over a cached file,
//! at depth 64: the cost of the inline backend's bookkeeping (batch budget, clock checks) on top
//! of the read itself. Thread CPU time, so other load on the machine does not inflate it.
//!
//! `cargo run --release -p pora-io --example inline_cpu -- [METHOD] [FILE]`; FILE (default
//! `target/inline_cpu.bin`, 64 MiB) is created if missing and read once to warm the cache.
//! Unix only (thread CPU clock).

#[cfg(unix)]
fn main() {
    use pora_io::{IoConfig, Method, SampleRead};
    use std::time::{Duration, Instant};

    const FILE_BYTES: u64 = 64 << 20;
    const DEPTH: usize = 64;
    const READS: u64 = 4_000_000;
    let mut args = std::env::args().skip(1);
    let method: Method = args
        .next()
        .unwrap_or_else(|| "mmap".into())
        .parse()
        .expect("a method name");
    let path = std::path::PathBuf::from(
        args.next()
            .unwrap_or_else(|| "target/inline_cpu.bin".into()),
    );
    if std::fs::metadata(&path).map_or(true, |m| m.len() != FILE_BYTES) {
        let bytes: Vec<u8> = (0..FILE_BYTES).map(|i| (i * 7) as u8).collect();
        std::fs::write(&path, bytes).expect("write the test file");
    }
    let _ = std::fs::read(&path); // warm the page cache
    let config = IoConfig {
        method,
        ..Default::default()
    };
    let factory = pora_io::open(&[path], &config).expect("open");
    let mut backend = factory.worker(DEPTH).expect("worker");
    let mut out = Vec::with_capacity(DEPTH);
    let mut state: u64 = 12345;
    let (mut done, mut checksum) = (0u64, 0u64);
    let started = thread_cpu();
    while done < READS {
        while backend.in_flight() < DEPTH {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let offset = (state % (FILE_BYTES / 32 - 1)) * 32;
            let read = SampleRead {
                tag: 0,
                file: 0,
                offset,
            };
            backend.push(read).expect("room");
        }
        backend.submit().expect("submit");
        let deadline = Instant::now() + Duration::from_millis(50);
        backend.reap(&mut out, 1, Some(deadline)).expect("reap");
        for c in out.drain(..) {
            checksum = checksum.wrapping_add(u64::from(c.result.expect("read")[0]));
            done += 1;
        }
    }
    let cpu = thread_cpu() - started;
    println!(
        "{method}: {:.1} ns CPU per read over {done} reads (checksum {checksum})",
        cpu.as_nanos() as f64 / done as f64
    );
}

/// CPU time of the calling thread.
#[cfg(unix)]
fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, owned `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(not(unix))]
fn main() {
    eprintln!("SKIP inline_cpu: needs a Unix thread CPU clock");
}
