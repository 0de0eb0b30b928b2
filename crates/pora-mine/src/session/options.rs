//! How a caller asks for shards to be opened: the access method, knobs it fixes and where the
//! tune profile is. The knobs of the miner itself ([`crate::MineConfig`]) are made from these
//! once, when the session opens.

use crate::OnIoError;
use pora_core::Address;
use pora_io::{IoConfig, Method};
use std::path::PathBuf;

/// Where to look for a tune profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProfileSource {
    /// `<first file>.pora-profile.toml` when it exists.
    #[default]
    BesideFirstFile,
    /// This file, which must exist and load.
    At(PathBuf),
    /// Do not use a profile.
    Ignore,
}

/// How to open a set of shards for mining.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Access method (`auto` by default) and, for `sim`, the simulated disk.
    pub io: IoConfig,
    /// Worker threads; `None`: the profile's, else the method's default.
    pub threads: Option<usize>,
    /// Reads in flight per thread; `None`: the profile's, else the method's default.
    pub depth: Option<usize>,
    pub random_checks: u32,
    pub on_io_error: OnIoError,
    /// Overrides the files' miner address in hash0.
    pub miner: Option<Address>,
    /// Shard size as log2(KVs); inferred from the files when `None`.
    pub kv_entries_bits: Option<u32>,
    pub profile: ProfileSource,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            io: IoConfig::default(),
            threads: None,
            depth: None,
            random_checks: crate::RANDOM_CHECKS,
            on_io_error: OnIoError::Retry,
            miner: None,
            kv_entries_bits: None,
            profile: ProfileSource::default(),
        }
    }
}

impl OpenOptions {
    pub fn with_method(mut self, method: Method) -> Self {
        self.io.method = method;
        self
    }
    with_fields! {
        with_threads => threads: Option<usize>,
        with_depth => depth: Option<usize>,
        with_random_checks => random_checks: u32,
        with_on_io_error => on_io_error: OnIoError,
        with_miner => miner: Option<Address>,
        with_kv_entries_bits => kv_entries_bits: Option<u32>,
        with_profile => profile: ProfileSource,
    }
}
