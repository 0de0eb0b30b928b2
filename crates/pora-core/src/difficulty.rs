//! es-node's difficulty rules on 256-bit integers (docs/spec/algorithm.md, "Difficulty and validity").

use crate::error::{Error, Result};
use crate::{Input, U256};

/// es-node's default `cutoff` (seconds), used by every door when the caller gives none.
pub const DEFAULT_CUTOFF: u64 = 7200;
/// es-node's default `diffAdjDivisor`.
pub const DEFAULT_DIFF_ADJ_DIVISOR: u64 = 32;
/// es-node's default `minimumDiff`.
pub const DEFAULT_MINIMUM_DIFF: u64 = 10_485_760;

/// The storage contract's difficulty inputs for one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiffParams {
    pub difficulty: U256,
    /// `blockTime - lastMineTime`, seconds.
    pub interval: u64,
    pub cutoff: u64,
    pub diff_adj_divisor: u64,
    pub minimum_diff: U256,
}

/// `expectedDiff(interval, difficulty, cutoff, diffAdjDivisor, minimumDiff)`.
pub fn expected_diff(p: &DiffParams) -> Result<U256> {
    if p.cutoff == 0 {
        return Err(Error::bad_value(Input::Cutoff, "0", "must be positive"));
    }
    if p.diff_adj_divisor == 0 {
        return Err(Error::bad_value(
            Input::DiffAdjDivisor,
            "0",
            "must be positive",
        ));
    }
    let x = p.interval / p.cutoff;
    let divisor = U256::from(p.diff_adj_divisor);
    if x == 0 {
        // difficulty + difficulty/divisor cannot overflow 2^256 for divisor >= 1 except near the
        // top of the range; es-node's big.Int would not wrap, so saturate and report.
        let diff = p
            .difficulty
            .checked_add(p.difficulty / divisor)
            .ok_or_else(|| {
                Error::bad_value(
                    Input::Difficulty,
                    p.difficulty.to_string(),
                    "difficulty + difficulty/divisor exceeds 256 bits",
                )
            })?;
        return Ok(diff.max(p.minimum_diff));
    }
    let adjust = U256::from(x - 1).checked_mul(p.difficulty).ok_or_else(|| {
        Error::bad_value(
            Input::Difficulty,
            p.difficulty.to_string(),
            "(interval/cutoff - 1) x difficulty exceeds 256 bits",
        )
    })? / divisor;
    match adjust.checked_add(p.minimum_diff) {
        Some(sum) if sum <= p.difficulty => Ok(p.difficulty - adjust),
        _ => Ok(p.minimum_diff),
    }
}

/// `(2^256 - 1) / expectedDiff`: a nonce is valid when `uint256(hash1) <= requiredDiff`.
pub fn required_diff(expected: U256) -> Result<U256> {
    if expected.is_zero() {
        return Err(Error::bad_value(
            "expected difficulty",
            "0",
            format!(
                "is zero (set {} or {} above 0)",
                Input::MinimumDiff,
                Input::Difficulty
            ),
        ));
    }
    Ok(U256::MAX / expected)
}

/// Whether `hash1` meets `required`.
#[inline]
pub fn meets(hash1: &[u8; 32], required: &U256) -> bool {
    U256::from_be_bytes(*hash1) <= *required
}

/// Parses a 256-bit value given in decimal or `0x` hex; `what` names the input as the caller's door does.
pub fn parse_u256(what: &'static str, input: &str) -> Result<U256> {
    let parsed = if let Some(hex) = input
        .strip_prefix("0x")
        .or_else(|| input.strip_prefix("0X"))
    {
        U256::from_str_radix(hex, 16)
    } else {
        U256::from_str_radix(input, 10)
    };
    parsed.map_err(|e| {
        Error::bad_value(
            what,
            input,
            format!("not a 256-bit decimal or 0x-hex integer ({e})"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_divisor_and_cutoff_are_errors() {
        let p = DiffParams {
            difficulty: U256::from(5),
            interval: 1,
            cutoff: 0,
            diff_adj_divisor: 32,
            minimum_diff: U256::from(1),
        };
        assert!(expected_diff(&p)
            .unwrap_err()
            .to_string()
            .contains("cutoff"));
        assert!(required_diff(U256::ZERO).is_err());
    }

    #[test]
    fn parses_decimal_and_hex() {
        assert_eq!(parse_u256("x", "255").unwrap(), U256::from(255));
        assert_eq!(parse_u256("x", "0xff").unwrap(), U256::from(255));
        assert!(parse_u256("required_diff", "12a")
            .unwrap_err()
            .to_string()
            .contains("required_diff"));
    }
}
