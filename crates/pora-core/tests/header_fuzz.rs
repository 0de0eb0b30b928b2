//! Malformed input never panics: thousands of random and mutated headers go through the header
//! parser and the shard-set validator, and each yields a value or a typed error.
//! (The proptest form of a fuzz target: docs/RELIABILITY.md, "Fuzzing".)

mod fixtures;

use fixtures::v1_header;
use pora_core::header::Header;
use pora_core::{Address, DataFile, EncodeType, ShardSet};
use proptest::prelude::*;
use std::path::Path;

fn valid_header(start: u64, len: u64) -> Header {
    v1_header(
        start,
        len,
        EncodeType::BlobPoseidon,
        1 << 17,
        Address([9; 20]),
    )
}

/// Interesting u64 values for header fields: edges of every overflow check.
fn field_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        Just(0u64),
        Just(1u64),
        Just(u64::MAX),
        Just(u64::MAX / 2 + 1),
        (0u32..64).prop_map(|b| 1u64 << b),
        (0u32..64).prop_map(|b| (1u64 << b).wrapping_sub(1)),
    ]
}

fn mutated_header() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec((0usize..8, field_value()), 0..6),
        prop::collection::vec((0usize..4096, any::<u8>()), 0..8),
        0usize..=4096,
    )
        .prop_map(|(fields, bytes, cut)| {
            let mut buf = valid_header(8192, 8192).encode();
            for (field, value) in fields {
                let at = field * 8;
                buf[at..at + 8].copy_from_slice(&value.to_be_bytes());
            }
            for (at, b) in bytes {
                buf[at] = b;
            }
            buf.truncate(cut);
            buf
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn parse_never_panics_on_mutations(buf in mutated_header(), file_len in field_value()) {
        let path = Path::new("fuzz.dat");
        if let Ok(header) = Header::parse(path, &buf) {
            // Every derived quantity of an accepted header is computable without overflow.
            let _ = (header.data_len(), header.min_file_len(), header.end_byte(), header.allocated_len());
            let file = DataFile { path: path.into(), header, file_len };
            let _ = ShardSet::from_files(vec![file], None);
        }
    }

    #[test]
    fn parse_never_panics_on_random_bytes(buf in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = Header::parse(Path::new("random.dat"), &buf);
    }

    #[test]
    fn shard_sets_of_random_ranges_never_panic(
        ranges in prop::collection::vec((field_value(), field_value()), 1..5),
        bits in prop::option::of(0u32..70),
    ) {
        let files: Vec<DataFile> = ranges
            .into_iter()
            .enumerate()
            .filter_map(|(i, (start, len))| {
                let h = valid_header(start, len);
                let name = format!("f{i}.dat");
                let parsed = Header::parse(Path::new(&name), &h.encode()).ok()?;
                Some(DataFile { path: name.into(), file_len: parsed.min_file_len(), header: parsed })
            })
            .collect();
        if let Ok(set) = ShardSet::from_files(files, bits) {
            let g = set.geometry;
            let last = g.first_sample() + g.samples_per_shard() - 1;
            prop_assert!(set.locate(g.first_sample()).is_ok());
            prop_assert!(set.locate(last).is_ok());
        }
    }
}

/// The case the fuzz above shrank to once: the last shard below 2^64 bytes overflowed the
/// computation of its end (start + size before subtracting one); now it is checked normally.
#[test]
fn last_shard_below_2_pow_64_is_checked_without_overflow() {
    let name = "f0.dat";
    let h = valid_header(1 << 46, 1);
    let parsed = Header::parse(Path::new(name), &h.encode()).unwrap();
    let file = DataFile {
        path: name.into(),
        file_len: parsed.min_file_len(),
        header: parsed,
    };
    let err = ShardSet::from_files(vec![file], Some(46)).unwrap_err();
    assert!(err.to_string().contains("files are missing"), "{err}");
}
