//! Fuzz target: every parser of a value a user or a caller types: randao and other 32-byte hex
//! (`H256`), miner addresses, 256-bit difficulties (`parse_u256`), fixed-length hex, es-node's
//! difficulty arithmetic on parsed values. Any input must give a value or a typed error, never a
//! panic (overflow checks are on).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pora_core::difficulty::{parse_u256, required_diff};
use pora_core::{expected_diff, Address, DiffParams, H256, U256};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = H256::parse("randao", text);
    let _ = Address::parse(text);
    let _ = pora_core::hex::parse_fixed::<20>("miner", text);
    // The first line a difficulty, the next ones numbers for es-node's formula.
    let mut lines = text.lines();
    let Ok(difficulty) = parse_u256("difficulty", lines.next().unwrap_or("")) else {
        return;
    };
    let mut num = || {
        lines
            .next()
            .and_then(|l| l.parse::<u64>().ok())
            .unwrap_or(1)
    };
    let params = DiffParams {
        difficulty,
        interval: num(),
        cutoff: num(),
        diff_adj_divisor: num(),
        minimum_diff: U256::from(num()),
    };
    if let Ok(expected) = expected_diff(&params) {
        let _ = required_diff(expected);
    }
});
