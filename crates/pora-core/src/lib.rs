//! pora-core: the EthStorage data-file format (version 1) and the proof-of-random-access math,
//! bit-exact with es-node. Pure logic plus read-only header parsing: no OS-specific code lives
//! here (the I/O crate owns every access method).
//!
//! The contract is docs/spec/algorithm.md; every public function here is one of its definitions.

pub mod difficulty;
pub mod error;
pub mod header;
pub mod hex;
pub mod input;
pub mod keccak;
pub mod sampling;
pub mod shard;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;

pub use difficulty::{expected_diff, required_diff, DiffParams};
pub use error::{Error, Result};
pub use header::{EncodeType, Header, HEADER_SIZE, MAGIC};
pub use hex::{Address, H256};
pub use input::Input;
pub use sampling::{
    hash0, hash_step, hashimoto, NonceProof, SampleGeometry, SAMPLE_SIZE, SAMPLE_SIZE_BITS,
};
pub use shard::{DataFile, SampleLocation, ShardSet};

/// One 256-bit unsigned integer, as es-node's `uint256` / `big.Int` arithmetic uses.
pub type U256 = ruint::aliases::U256;
