//! Fuzz target: the es-node data file header parser (`Header::parse`) and the offsets a parsed
//! header gives (data and meta of the first and last KV). Any input must give a header or a
//! typed error, never a panic (overflow checks are on); a parsed header must encode back to bytes
//! that parse to the same header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pora_core::Header;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.dat");
    let Ok(header) = Header::parse(path, data) else {
        return;
    };
    let again = Header::parse(path, &header.encode()).expect("an encoded header parses");
    assert_eq!(
        format!("{again:?}"),
        format!("{header:?}"),
        "encode/parse round trip"
    );
    let _ = (
        header.data_len(),
        header.min_file_len(),
        header.allocated_len(),
    );
    let _ = (
        header.start_byte(),
        header.end_byte(),
        header.kv_size_bits(),
    );
    if header.chunk_idx_len > 0 {
        let last = header.chunk_idx_start + header.chunk_idx_len - 1;
        for kv in [header.chunk_idx_start, last] {
            let _ = (header.kv_data_offset(kv), header.kv_meta_offset(kv));
        }
    }
});
