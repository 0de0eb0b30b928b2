//! The inputs the library checks, as typed values, and how each door names them in messages.
//!
//! A library error about a bad input carries an [`Input`], never a door's spelling of it: the
//! `pora` binary says `--threads`, the C ABI `threads` (the field of its struct), the Go package
//! `Threads`. The door sets its vocabulary once, at start, with [`name_inputs`]; until then (and
//! in the library's own tests) an input is named by its [`Input::key`]. The vocabulary is
//! process-wide, like a locale, because an error is rendered wherever it is displayed — deep in
//! an `anyhow` chain or at the C boundary — and one process has one door.

use std::borrow::Cow;
use std::fmt;
use std::sync::RwLock;

/// One input a caller gives the library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Input {
    /// The data files of the shards (one group per shard).
    Files,
    Threads,
    Depth,
    RandomChecks,
    /// The nonce range of a slot.
    Nonces,
    /// The length of a slot.
    SlotLength,
    OnIoError,
    Method,
    BlockSize,
    Cutoff,
    DiffAdjDivisor,
    Difficulty,
    MinimumDiff,
    RequiredDiff,
    Randao,
    Shard,
    KvEntriesBits,
    KvSizeBits,
    ChunkSize,
    EncodeType,
    Fill,
    Force,
    KvRange,
    Resume,
    Miner,
    KvIdx,
    Key,
    Commit,
    Out,
    SampleRate,
    /// KVs a slot samples from memory (es-node's blob cache).
    Overlay,
    /// The miner's worker pools (one per device).
    Pools,
}

impl Input {
    /// The library's own name: snake_case, the C ABI's field name where it has one.
    pub const fn key(self) -> &'static str {
        match self {
            Input::Files => "files",
            Input::Threads => "threads",
            Input::Depth => "depth",
            Input::RandomChecks => "random_checks",
            Input::Nonces => "nonces",
            Input::SlotLength => "deadline_remaining_ns",
            Input::OnIoError => "on_io_error",
            Input::Method => "method",
            Input::BlockSize => "block_size",
            Input::Cutoff => "cutoff",
            Input::DiffAdjDivisor => "diff_adj_divisor",
            Input::Difficulty => "difficulty",
            Input::MinimumDiff => "minimum_diff",
            Input::RequiredDiff => "required_diff",
            Input::Randao => "randao",
            Input::Shard => "shard",
            Input::KvEntriesBits => "kv_entries_bits",
            Input::KvSizeBits => "kv_size_bits",
            Input::ChunkSize => "chunk_size",
            Input::EncodeType => "encode_type",
            Input::Fill => "fill",
            Input::Force => "force",
            Input::KvRange => "kv_range",
            Input::Resume => "resume",
            Input::Miner => "miner",
            Input::KvIdx => "kv_idx",
            Input::Key => "key",
            Input::Commit => "commit",
            Input::Out => "out",
            Input::SampleRate => "sample_rate",
            Input::Overlay => "overlay",
            Input::Pools => "pools",
        }
    }
}

/// How a door names an input in messages.
pub type Namer = fn(Input) -> Cow<'static, str>;

fn by_key(input: Input) -> Cow<'static, str> {
    Cow::Borrowed(input.key())
}

static NAMER: RwLock<Namer> = RwLock::new(by_key);

/// Sets how every message of this process names inputs (the door calls it once, at start).
pub fn name_inputs(namer: Namer) {
    *NAMER.write().unwrap_or_else(|e| e.into_inner()) = namer;
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let namer = *NAMER.read().unwrap_or_else(|e| e.into_inner());
        f.write_str(&namer(*self))
    }
}
