//! On real files, with every access method this machine offers (`Method::available_real()`,
//! iterated dynamically so methods added later are covered): the valid nonces over a range equal
//! a sequential scan with the single-nonce path. Methods that cannot open here print a SKIP line
//! with the reason.

/// Prints a SKIP line past libtest's output capture, so a skipped case shows in every run.
#[allow(unused_macros)] // some platforms skip nothing
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod common;

use common::*;
use pora_core::U256;
use pora_io::{IoConfig, IoError, Method};
use pora_mine::{Find, Miner};
use std::sync::atomic::AtomicBool;

#[test]
fn every_available_method_finds_the_sequential_scans_nonces() {
    let dir = tempfile::tempdir_in(
        std::env::var_os("PORA_TEST_DIR").unwrap_or_else(|| std::env::temp_dir().into()),
    )
    .unwrap();
    let paths = vec![
        write_shard(dir.path(), 1, 8, 51),
        write_shard(dir.path(), 6, 9, 52),
    ];
    let shards: Vec<_> = paths.iter().map(|p| open_shard(p)).collect();
    let required = U256::MAX / U256::from(64u64);
    let wants: Vec<_> = shards
        .iter()
        .map(|s| naive_scan(s, &randao(7), 0..5000, 2, &required))
        .collect();
    for method in Method::ALL
        .into_iter()
        .filter(|m| !matches!(m, Method::Sim | Method::Auto))
    {
        if let Err(why) = method.availability() {
            skip_note!("SKIP {method}: {}", why.0);
            continue;
        }
        assert!(Method::available_real().contains(&method));
        let factory = match pora_io::open(
            &paths,
            &IoConfig {
                method,
                ..Default::default()
            },
        ) {
            Ok(f) => f,
            Err(IoError::Unavailable { reason, .. }) => {
                skip_note!("SKIP {method}: {reason}");
                continue;
            }
            Err(IoError::Open { source, path })
                if method.is_unbuffered() && source.raw_os_error() == Some(22) =>
            {
                skip_note!("SKIP {method}: {} does not support unbuffered I/O ({source}); set PORA_TEST_DIR to a disk", path.display());
                continue;
            }
            Err(e) => panic!("{method}: {e}"),
        };
        let depth = if matches!(
            method,
            Method::Pread | Method::PreadShared | Method::Direct | Method::Mmap
        ) {
            4
        } else {
            64
        };
        let mut cfg = config(2, depth, 0..5000);
        cfg.required_diff = Some(required);
        cfg.find = Find::All;
        let miner = Miner::new(shards.clone(), factory, cfg.mine()).unwrap();
        let report = miner
            .mine_slot(&cfg.request(randao(7)), &AtomicBool::new(false))
            .unwrap();
        for (got, want) in report.shards.iter().zip(&wants) {
            assert!(want.len() > 30);
            let got: Vec<_> = got.found.iter().map(|p| (p.nonce, p.hash1)).collect();
            assert_eq!(&got, want, "method {method}");
        }
        eprintln!(
            "ok {method}: {} valid nonces over 2 shards",
            wants.iter().map(Vec::len).sum::<usize>()
        );
    }
}
