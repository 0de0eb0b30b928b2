//! Checks a [`MineConfig`] before anything is allocated, and each [`SlotRequest`] before its slot
//! starts, so absurd values are refused with an error naming the input instead of exhausting
//! memory, threads or file handles. The limits are in [`crate::defaults`].

use crate::defaults::{
    MAX_DEPTH, MAX_RANDOM_CHECKS, MAX_SLOT_LENGTH_MS, MAX_THREADS, MAX_TOTAL_CHAINS,
};
use crate::{MineConfig, MineError, SlotRequest};
use pora_core::Input;
use std::time::Instant;

/// Refuses every value outside the documented limits.
pub fn validate(config: &MineConfig, shard_count: usize) -> Result<(), MineError> {
    let MineConfig {
        threads,
        depth,
        random_checks,
        ..
    } = *config;
    let bad = |input, value: String, why: String| Err(MineError::config(input, value, why));
    if !(1..=MAX_THREADS).contains(&threads) {
        let why = format!("must be between 1 and {MAX_THREADS}");
        return bad(Input::Threads, threads.to_string(), why);
    }
    if !(1..=MAX_DEPTH).contains(&depth) {
        let why = format!("must be between 1 and {MAX_DEPTH} reads in flight per thread");
        return bad(Input::Depth, depth.to_string(), why);
    }
    let chains = format!("{threads} x {} {depth}", Input::Depth);
    if threads * depth > MAX_TOTAL_CHAINS {
        let why = format!("at most {MAX_TOTAL_CHAINS} reads in flight; lower the threads or depth");
        return bad(
            Input::Threads,
            format!("{chains} = {}", threads * depth),
            why,
        );
    }
    if !(1..=MAX_RANDOM_CHECKS).contains(&random_checks) {
        let why = format!("must be between 1 and {MAX_RANDOM_CHECKS}");
        return bad(Input::RandomChecks, random_checks.to_string(), why);
    }
    if shard_count == 0 {
        let why = "no shard to mine: give at least one group of shard files".into();
        return bad(Input::Files, String::new(), why);
    }
    if shard_count > u32::MAX as usize {
        return bad(
            Input::Files,
            format!("{shard_count} shards"),
            "too many".into(),
        );
    }
    if threads * depth < shard_count {
        let why = format!(
            "fewer reads in flight than the {shard_count} shards; every shard needs at least one"
        );
        return bad(Input::Threads, chains, why);
    }
    Ok(())
}

/// Refuses an empty nonce range or a deadline more than a day away. A deadline that has already
/// passed is not an error: that slot ends at once with nothing tried, and its `endLateMs` says
/// how late it was (the C ABI, the Go package and the service refuse a zero length themselves).
pub fn validate_request(request: &SlotRequest) -> Result<(), MineError> {
    let nonces = &request.nonces;
    if nonces.start >= nonces.end {
        let value = format!("{}..{}", nonces.start, nonces.end);
        return Err(MineError::config(
            Input::Nonces,
            value,
            "the range is empty",
        ));
    }
    let ms = request
        .deadline
        .saturating_duration_since(Instant::now())
        .as_secs_f64()
        * 1000.0;
    if ms > MAX_SLOT_LENGTH_MS as f64 {
        let why = format!("the deadline must be at most {MAX_SLOT_LENGTH_MS} ms away");
        return Err(MineError::config(
            Input::SlotLength,
            format!("{ms:.0} ms"),
            why,
        ));
    }
    Ok(())
}
