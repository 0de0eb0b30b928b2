//! Table tests of the alignment math used by the block-reading methods (`pora_io::align`):
//! offsets straddling 512 B / 4 KiB / 64 KiB boundaries, the first and last sample of a file,
//! buffer sizes and the validation of block sizes.

use pora_io::align::{block_range, max_span, read_unit, BlockRange};
use pora_io::{BlockSize, IoError};

fn range(start: u64, len: u32, sample_pos: u32) -> Option<BlockRange> {
    Some(BlockRange {
        start,
        len,
        sample_pos,
    })
}

#[test]
fn block_range_table() {
    const FILE_LEN: u64 = 4096 + 8192 * (131072 + 32); // an es-node shard file's size
    let last_sample = FILE_LEN - 32;
    let table: &[(u64, u32, Option<BlockRange>)] = &[
        // First byte of the file.
        (0, 512, range(0, 512, 0)),
        (0, 4096, range(0, 4096, 0)),
        (0, 65536, range(0, 65536, 0)),
        // Inside one block, ending exactly on its boundary.
        (480, 512, range(0, 512, 480)),
        (4064, 4096, range(0, 4096, 4064)),
        (65504, 65536, range(0, 65536, 65504)),
        // Straddling a 512 B boundary: two blocks of 512, one of 4096.
        (496, 512, range(0, 1024, 496)),
        (1000, 512, range(512, 1024, 488)),
        (496, 4096, range(0, 4096, 496)),
        // Straddling a 4 KiB boundary.
        (4080, 512, range(3584, 1024, 496)),
        (4080, 4096, range(0, 8192, 4080)),
        (4095, 4096, range(0, 8192, 4095)),
        (4080, 65536, range(0, 65536, 4080)),
        // Straddling a 64 KiB boundary.
        (65535, 65536, range(0, 131072, 65535)),
        (65530, 4096, range(61440, 8192, 4090)),
        // Starting exactly on a boundary.
        (4096, 512, range(4096, 512, 0)),
        (8192, 4096, range(8192, 4096, 0)),
        // Above 4 GiB (no 32-bit truncation).
        ((5 << 30) + 4090, 4096, range(5 << 30, 8192, 4090)),
        ((5 << 30) + 100, 512, range(5 << 30, 512, 100)),
        // The last sample of a shard file (its end is 32-aligned, not 4096-aligned).
        (
            last_sample,
            512,
            range(
                last_sample - last_sample % 512,
                512,
                (last_sample % 512) as u32,
            ),
        ),
        (
            last_sample,
            4096,
            range(
                last_sample - last_sample % 4096,
                4096,
                (last_sample % 4096) as u32,
            ),
        ),
        // Non-power-of-two block sizes use plain division (fio's bs allows them).
        (1000, 1000, range(1000, 1000, 0)),
        (1990, 1000, range(1000, 2000, 990)),
        // Invalid: zero block, or a range ending past u64::MAX.
        (0, 0, None),
        (u64::MAX - 16, 4096, None),
        (u64::MAX - 31, 512, None),
    ];
    for &(offset, block, ref want) in table {
        assert_eq!(
            &block_range(offset, block),
            want,
            "offset {offset}, block {block}"
        );
        if let Some(r) = want {
            assert_eq!(r.start % u64::from(block), 0, "aligned start");
            assert_eq!(r.len % block, 0, "whole blocks");
            assert!(r.len as usize <= max_span(block), "fits the worker buffer");
            assert_eq!(r.start + u64::from(r.sample_pos), offset);
            assert!(r.covers_sample(r.len as usize));
        }
    }
}

#[test]
fn covers_sample_at_end_of_file() {
    // The last block of a file may be short; the read still succeeds if the sample is in it.
    let r = block_range(4096 + 64, 4096).unwrap();
    assert!(r.covers_sample(96));
    assert!(!r.covers_sample(95));
    assert!(!r.covers_sample(0));
}

#[test]
fn max_span_is_two_blocks() {
    for block in [512u32, 4096, 65536] {
        assert_eq!(max_span(block), 2 * block as usize);
    }
}

#[test]
fn read_unit_table() {
    let ok: &[(BlockSize, Option<u32>, u32)] = &[
        (BlockSize::Natural, None, 32),
        (BlockSize::Natural, Some(512), 512),
        (BlockSize::Natural, Some(4096), 4096),
        (BlockSize::Bytes(4096), None, 4096),
        (BlockSize::Bytes(4096), Some(512), 4096),
        (BlockSize::Bytes(65536), Some(4096), 65536),
        (BlockSize::Bytes(100), None, 100),
    ];
    for &(bs, logical, want) in ok {
        assert_eq!(
            read_unit(bs, logical).unwrap(),
            want,
            "{bs:?} on {logical:?}"
        );
    }
    let bad: &[(BlockSize, Option<u32>)] = &[
        (BlockSize::Bytes(0), None),
        (BlockSize::Bytes(16), None),
        (BlockSize::Bytes(512), Some(4096)),
        (BlockSize::Bytes(4096 + 512), Some(4096)),
        (BlockSize::Bytes(1 << 30), None),
    ];
    for &(bs, logical) in bad {
        match read_unit(bs, logical) {
            Err(IoError::Config(message)) => assert!(message.contains("block size"), "{message}"),
            other => panic!("{bs:?} on {logical:?}: expected a config error, got {other:?}"),
        }
    }
}

#[test]
fn aligned_buffers() {
    for align in [512usize, 4096, 65536] {
        let buf = pora_io::align::AlignedBuf::new(max_span(align as u32), align).unwrap();
        assert_eq!(buf.as_ptr() as usize % align, 0);
        assert_eq!(buf.len(), 2 * align);
    }
}
