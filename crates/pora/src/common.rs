//! Flags shared by several commands (`hash`, `mine`, `tune`) and their parsers, so that a flag
//! means the same thing everywhere.

use anyhow::Context;
use pora_core::difficulty::{expected_diff, parse_u256, required_diff, DiffParams};
use pora_core::{Address, H256, U256};

/// Exit status of a command stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it),
/// after it printed its partial results.
pub const EXIT_INTERRUPTED: i32 = 130;

/// clap parser for `--randao 0x<32 bytes>`.
pub fn parse_randao(s: &str) -> Result<H256, String> {
    H256::parse("--randao", s).map_err(|e| e.to_string())
}

/// clap parser for `--miner 0x<20 bytes>`.
pub fn parse_miner(s: &str) -> Result<Address, String> {
    Address::parse(s).map_err(|e| e.to_string())
}

/// clap parser for 256-bit decimal or 0x-hex values.
pub fn parse_u256_flag(s: &str) -> Result<U256, String> {
    parse_u256("value", s).map_err(|e| e.to_string())
}

/// The difficulty inputs: either `--required-diff` or the contract's parameters.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct DiffArgs {
    /// The threshold hash1 must not exceed (decimal or 0x hex); instead of --difficulty.
    #[arg(long, value_parser = parse_u256_flag, conflicts_with_all = ["difficulty", "interval"])]
    pub required_diff: Option<U256>,
    /// The storage contract's current difficulty (decimal or 0x hex).
    #[arg(long, value_parser = parse_u256_flag, requires = "interval")]
    pub difficulty: Option<U256>,
    /// Seconds since the shard was last mined (blockTime - lastMineTime).
    #[arg(long, requires = "difficulty")]
    pub interval: Option<u64>,
    /// Difficulty adjustment cutoff, seconds.
    #[arg(long, default_value_t = 7200)]
    pub cutoff: u64,
    /// Difficulty adjustment divisor.
    #[arg(long, default_value_t = 32)]
    pub diff_adj_divisor: u64,
    /// Minimum difficulty (decimal or 0x hex).
    #[arg(long, value_parser = parse_u256_flag, default_value = "10485760")]
    pub minimum_diff: U256,
}

impl DiffArgs {
    /// `requiredDiff` when any difficulty input was given.
    pub fn required(&self) -> anyhow::Result<Option<U256>> {
        if let Some(r) = self.required_diff {
            return Ok(Some(r));
        }
        let (Some(difficulty), Some(interval)) = (self.difficulty, self.interval) else {
            return Ok(None);
        };
        let params = DiffParams {
            difficulty,
            interval,
            cutoff: self.cutoff,
            diff_adj_divisor: self.diff_adj_divisor,
            minimum_diff: self.minimum_diff,
        };
        let expected = expected_diff(&params)?;
        Ok(Some(
            required_diff(expected).context("computing requiredDiff")?,
        ))
    }
}
