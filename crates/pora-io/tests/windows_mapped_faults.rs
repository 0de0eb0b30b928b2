//! Windows `mmap` on a failing disk (io-methods.md): a mapped page whose read fails must fail that
//! read, like `pread`, and leave the process running; once the sector reads again, so does the
//! map. Run under Wine by `.ci/windows.sh` against a file on pora-faultfs (FUSE on the Linux
//! host): the page fault is a real one, through Linux's FUSE read, Wine's SIGBUS and the vectored
//! handler in `pora_io::windows`. The script names the file, the bad range and the fault
//! schedule's control file in `PORA_WINE_FAULT_FILE`, `PORA_WINE_FAULT_RANGE` (`START-END`) and
//! `PORA_WINE_FAULT_CONTROL`; elsewhere the test says it is skipped and why.
#![cfg(windows)]

use pora_io::{open, read_one, BlockSize, IoConfig, IoError, Method};
use std::path::PathBuf;
use std::time::{Duration, Instant};

struct Faulty {
    file: PathBuf,
    bad: std::ops::Range<u64>,
    control: PathBuf,
}

fn faulty() -> Option<Faulty> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let (Some(file), Some(range), Some(control)) = (
        var("PORA_WINE_FAULT_FILE"),
        var("PORA_WINE_FAULT_RANGE"),
        var("PORA_WINE_FAULT_CONTROL"),
    ) else {
        eprintln!(
            "SKIP windows_mapped_faults: PORA_WINE_FAULT_FILE/RANGE/CONTROL are not set \
             (.ci/windows.sh sets them after mounting pora-faultfs; native Windows has no \
             fault-injecting file system here)"
        );
        return None;
    };
    let range = range.into_string().expect("PORA_WINE_FAULT_RANGE is ASCII");
    let (start, end) = range
        .split_once('-')
        .expect("PORA_WINE_FAULT_RANGE is START-END");
    Some(Faulty {
        file: file.into(),
        bad: start.parse().expect("START")..end.parse().expect("END"),
        control: control.into(),
    })
}

fn config(method: Method) -> IoConfig {
    IoConfig {
        method,
        block_size: BlockSize::Natural,
        ..IoConfig::default()
    }
}

#[test]
fn a_mapped_read_of_a_failing_sector_fails_alone_and_recovers() {
    let Some(f) = faulty() else { return };
    let paths = [f.file.clone()];
    let map = open(&paths, &config(Method::Mmap)).expect("mmap opens");
    let plain = open(&paths, &config(Method::Pread)).expect("pread opens");
    let mut mapped = map.worker(1).unwrap();
    let mut preads = plain.worker(1).unwrap();
    let good = f.bad.end + 4096;
    let bad = f.bad.start + 64;

    // Outside the bad range the map reads what pread reads.
    let want = read_one(preads.as_mut(), 0, good).expect("pread outside the bad range");
    assert_eq!(read_one(mapped.as_mut(), 0, good).unwrap(), want);

    // Inside it both fail, and the process goes on; again on the next read of the same page.
    let before = pora_io::windows::mapped_faults();
    for attempt in 0..3 {
        match read_one(mapped.as_mut(), 0, bad) {
            Err(IoError::Read(e)) => {
                assert_eq!((e.file, e.offset), (0, bad), "attempt {attempt}: {e}");
                eprintln!("attempt {attempt}: the mapped read failed as it should: {e}");
            }
            other => panic!("attempt {attempt}: a read of a failing sector gave {other:?}"),
        }
    }
    assert!(
        pora_io::windows::mapped_faults() >= before + 3,
        "every failed read was an in-page error the handler contained"
    );
    assert!(
        read_one(preads.as_mut(), 0, bad).is_err(),
        "pread fails there too"
    );
    assert_eq!(
        read_one(mapped.as_mut(), 0, good).unwrap(),
        want,
        "other pages unharmed"
    );

    // The sector recovers (the schedule loses its rule): the same page reads again.
    std::fs::write(&f.control, "# healed\n").expect("rewriting the fault schedule");
    let healed_at = Instant::now();
    let recovered = loop {
        match read_one(mapped.as_mut(), 0, bad) {
            Ok(sample) => break sample,
            Err(e) if healed_at.elapsed() < Duration::from_secs(10) => {
                eprintln!("not healed yet: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("the page never read again after the fault was removed: {e}"),
        }
    };
    assert_eq!(recovered, read_one(preads.as_mut(), 0, bad).unwrap());
}
