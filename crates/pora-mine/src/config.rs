//! Checks a [`MineConfig`] before anything is allocated, and each [`SlotRequest`] before its slot
//! starts, so absurd values are refused with a message naming the flag instead of exhausting
//! memory, threads or file handles.

use crate::{MineConfig, MineError, SlotRequest};

/// Most worker threads.
pub const MAX_THREADS: usize = 1024;
/// Most chains (reads in flight) per worker.
pub const MAX_DEPTH: usize = 65_536;
/// Most chains over all workers: about 100 bytes each plus a completion slot, so at most a few
/// hundred MiB, and far beyond any device's useful queue depth.
pub const MAX_TOTAL_CHAINS: usize = 4 << 20;
/// Most samples per nonce.
pub const MAX_RANDOM_CHECKS: u32 = 64;

fn bad(msg: String) -> Result<(), MineError> {
    Err(MineError::Config(msg))
}

/// Refuses every value outside the documented limits.
pub fn validate(config: &MineConfig, shard_count: usize) -> Result<(), MineError> {
    let MineConfig {
        threads,
        depth,
        random_checks,
        ..
    } = *config;
    if !(1..=MAX_THREADS).contains(&threads) {
        return bad(format!(
            "--threads {threads}: must be between 1 and {MAX_THREADS}"
        ));
    }
    if !(1..=MAX_DEPTH).contains(&depth) {
        return bad(format!(
            "--depth {depth}: must be between 1 and {MAX_DEPTH} reads in flight per thread"
        ));
    }
    if threads * depth > MAX_TOTAL_CHAINS {
        return bad(format!(
            "--threads {threads} x --depth {depth} = {} reads in flight: at most {MAX_TOTAL_CHAINS}; lower --threads or --depth",
            threads * depth
        ));
    }
    if !(1..=MAX_RANDOM_CHECKS).contains(&random_checks) {
        return bad(format!(
            "--random-checks {random_checks}: must be between 1 and {MAX_RANDOM_CHECKS}"
        ));
    }
    if shard_count == 0 {
        return bad("no shard to mine: pass at least one --file".into());
    }
    if shard_count > u32::MAX as usize {
        return bad(format!("{shard_count} shards: too many"));
    }
    if threads * depth < shard_count {
        return bad(format!(
            "--threads {threads} x --depth {depth}: fewer reads in flight than the {shard_count} shards; every shard needs at least one"
        ));
    }
    Ok(())
}

/// Refuses an empty nonce range or a zero-length slot.
pub fn validate_request(request: &SlotRequest) -> Result<(), MineError> {
    if request.nonces.start >= request.nonces.end {
        return bad(format!(
            "--nonces {}..{}: the range is empty",
            request.nonces.start, request.nonces.end
        ));
    }
    if request.slot.is_zero() {
        return bad("--slot: must be longer than zero".into());
    }
    Ok(())
}
