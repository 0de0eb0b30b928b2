//! pora's defaults and limits as the header states them (`PORA_DEFAULT_*`, `PORA_MAX_*`), so C
//! and Go read the library's values instead of restating them. cbindgen needs literals; each is
//! checked equal to its one home (`pora_mine::defaults`, `pora_core::difficulty`) when the
//! library builds, so a changed default cannot leave the header behind.

use pora_core::difficulty::{DEFAULT_CUTOFF, DEFAULT_DIFF_ADJ_DIVISOR, DEFAULT_MINIMUM_DIFF};
use pora_mine::defaults as mine;

/// es-node's nonces per shard and slot: `nonce_end` when a caller has no other range.
pub const PORA_DEFAULT_NONCES_PER_SLOT: u64 = 1048576;
/// es-node's slot length, milliseconds: a whole slot's `PoraSlotParams.deadline_remaining_ns`
/// is this x 1,000,000.
pub const PORA_DEFAULT_SLOT_LENGTH_MS: u64 = 12000;
/// Longest slot one call mines, milliseconds (one day).
pub const PORA_MAX_SLOT_LENGTH_MS: u64 = 86400000;
/// Samples per nonce when `PoraOpenOptions.random_checks` is 0.
pub const PORA_DEFAULT_RANDOM_CHECKS: u32 = 2;
/// Most samples per nonce.
pub const PORA_MAX_RANDOM_CHECKS: u32 = 64;
/// Most worker threads.
pub const PORA_MAX_THREADS: u32 = 1024;
/// Most reads in flight per thread.
pub const PORA_MAX_DEPTH: u32 = 65536;
/// es-node's cutoff, seconds: `PoraDifficulty.cutoff` when 0.
pub const PORA_DEFAULT_CUTOFF: u64 = 7200;
/// es-node's diffAdjDivisor: `PoraDifficulty.diff_adj_divisor` when 0.
pub const PORA_DEFAULT_DIFF_ADJ_DIVISOR: u64 = 32;
/// es-node's minimumDiff: `PoraDifficulty.minimum_diff` when all zero.
pub const PORA_DEFAULT_MINIMUM_DIFF: u64 = 10485760;

const _: () = {
    assert!(PORA_DEFAULT_NONCES_PER_SLOT == mine::NONCES_PER_SLOT);
    assert!(PORA_DEFAULT_SLOT_LENGTH_MS == mine::SLOT_LENGTH_MS);
    assert!(PORA_MAX_SLOT_LENGTH_MS == mine::MAX_SLOT_LENGTH_MS);
    assert!(PORA_DEFAULT_RANDOM_CHECKS == mine::RANDOM_CHECKS);
    assert!(PORA_MAX_RANDOM_CHECKS == mine::MAX_RANDOM_CHECKS);
    assert!(PORA_MAX_THREADS as usize == mine::MAX_THREADS);
    assert!(PORA_MAX_DEPTH as usize == mine::MAX_DEPTH);
    assert!(PORA_DEFAULT_CUTOFF == DEFAULT_CUTOFF);
    assert!(PORA_DEFAULT_DIFF_ADJ_DIVISOR == DEFAULT_DIFF_ADJ_DIVISOR);
    assert!(PORA_DEFAULT_MINIMUM_DIFF == DEFAULT_MINIMUM_DIFF);
};
