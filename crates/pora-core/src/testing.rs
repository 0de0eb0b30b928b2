//! Values for unit tests here and in the crates above (feature `test-support`, never in a
//! production build): a data file described in memory, with no file on disk.

use crate::header::Header;
use crate::{Address, DataFile, EncodeType};

/// An unencoded data file named `name` holding chunks `start..start + len`, with es-node's sizes
/// (128 KiB chunks and KVs, 32-byte meta) and miner `0x0101..01`: its header and length only.
pub fn data_file(name: &str, start: u64, len: u64) -> DataFile {
    let header = Header {
        version: 1,
        chunk_idx_start: start,
        chunk_idx_len: len,
        encode_type: EncodeType::None,
        max_kv_size: 1 << 17,
        chunk_size: 1 << 17,
        meta_size: 32,
        miner: Address([1; 20]),
        status: 0,
    };
    DataFile {
        path: name.into(),
        file_len: header
            .allocated_len()
            .expect("a small test file's length fits"),
        header,
    }
}
