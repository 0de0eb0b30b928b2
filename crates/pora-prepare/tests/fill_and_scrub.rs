//! The library path of `pora create --fill empty` and `pora scrub`: a small encodeType-3 shard
//! filled in two KV ranges (the second by resume), scrubbed clean, then one corrupted word found.

use pora_core::header::HEADER_SIZE;
use pora_core::Address;
use pora_prepare::create::{plan_header, CreateSpec, Fill};
use pora_prepare::empty::{parse_kv_range, EmptyFill, EmptyFillOptions};
use pora_prepare::{scrub, EncodedFile, PrepareError};
use std::io::{Seek, SeekFrom, Write};

fn spec(path: &std::path::Path) -> CreateSpec {
    CreateSpec {
        file: path.to_path_buf(),
        shard: 1,
        kv_entries_bits: 2,
        kv_size_bits: 17,
        chunk_size: None,
        miner: Address([7; 20]),
        encode_type: 3,
        fill: Fill::Empty,
        seed: 1,
        force: false,
    }
}

fn fill(spec: &CreateSpec, resume: bool, kv_range: &str) -> usize {
    let header = plan_header(spec).unwrap();
    let opts = EmptyFillOptions {
        threads: 2,
        resume,
        kv_range: Some(parse_kv_range(kv_range).unwrap()),
    };
    let fill = EmptyFill::open(spec, &header, &opts).unwrap();
    let done = std::sync::atomic::AtomicU64::new(0);
    let summary = fill
        .run(&|n| {
            done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
    assert_eq!(done.into_inner(), summary.kvs as u64);
    summary.kvs
}

#[test]
fn fill_in_two_ranges_then_scrub() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shard1.dat");
    let spec = spec(&path);
    // Shard 1 of 4 KVs holds KVs 4..8.
    assert_eq!(fill(&spec, false, "4..6"), 2);
    assert_eq!(fill(&spec, true, "4..8"), 2, "resume fills only the rest");

    let files = vec![EncodedFile::open(&path, Some(&spec.miner)).unwrap()];
    let chosen = scrub::select(&files, 1, 1.0).unwrap();
    assert_eq!(chosen.work.len(), 4);
    assert_eq!(chosen.not_empty_filled, 0);
    assert!(scrub::check(&files, &chosen.work, 2, &|_| {})
        .unwrap()
        .is_empty());

    // Corrupt word 3 of KV 6.
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.seek(SeekFrom::Start(HEADER_SIZE + 2 * 131_072 + 3 * 32))
        .unwrap();
    f.write_all(&[0xff; 32]).unwrap();
    drop(f);
    let files = vec![EncodedFile::open(&path, None).unwrap()];
    let bad = scrub::check(&files, &chosen.work, 2, &|_| {}).unwrap();
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0].kv_idx, bad[0].first_word), (6, 3));

    // Bad input is an error, not a panic or a silent pass.
    let mut kv = vec![0u8; 131_072];
    assert!(files[0].read_kv(3, &mut kv).is_err() && files[0].read_metas(7..9).is_err());
    assert!(scrub::check(&files, &chosen.work, 0, &|_| {}).is_err());
}

#[test]
fn refusals_name_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shard1.dat");
    let spec = spec(&path);
    let header = plan_header(&spec).unwrap();
    let outside = EmptyFillOptions {
        threads: 1,
        resume: false,
        kv_range: Some(0..2),
    };
    let e = EmptyFill::open(&spec, &header, &outside).err().unwrap();
    assert!(matches!(e, PrepareError::Invalid(_)));
    assert_eq!(
        e.to_string(),
        "kv_range 0..2 is outside shard 1, which holds KVs 4..8"
    );
    assert!(parse_kv_range("3..3").is_err() && parse_kv_range("3").is_err());
    assert!(pora_prepare::mask::mask_record(&[0; 32], Some(4096)).is_err());
    assert!(scrub::check_sample_rate(0.0).is_err() && scrub::check_sample_rate(0.5).is_ok());
}
