//! A bench run's inputs: the file and byte range it reads, its seeds, and the text forms of
//! block size, counts, duration and range with their limits (what the CLI's flags give, and what
//! a service request would give the same way).

use pora_io::align::MAX_BLOCK_BYTES;
use pora_io::BlockSize;
use pora_mine::{MAX_DEPTH, MAX_THREADS};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest accepted duration of one combination: one day.
pub const MAX_DURATION_SECS: f64 = 86_400.0;

/// Why the file or range cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    #[error("{}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a regular file", .0.display())]
    NotAFile(PathBuf),
    #[error("{}: the file is empty", .0.display())]
    Empty(PathBuf),
    #[error("--range {}..{}: the end is past the end of {} ({file_len} bytes)", range.start, range.end, path.display())]
    RangePastEnd {
        range: Range<u64>,
        path: PathBuf,
        file_len: u64,
    },
}

/// The bytes of `path` to read and where they came from: `range` (checked against the file), or
/// an es-node data file's data region (header skipped), or any other file's whole length.
pub fn target_range(
    path: &Path,
    range: Option<&Range<u64>>,
) -> Result<(Range<u64>, &'static str), InputError> {
    let file_len = file_len(path)?;
    match range {
        Some(r) if r.end > file_len => Err(InputError::RangePastEnd {
            range: r.clone(),
            path: path.to_path_buf(),
            file_len,
        }),
        Some(r) => Ok((r.clone(), "--range")),
        None => Ok(match pora_core::DataFile::open(path) {
            Ok(f) => (
                pora_core::header::HEADER_SIZE..f.header.min_file_len().min(file_len),
                "data region of an es-node data file",
            ),
            Err(_) => (0..file_len, "whole file"),
        }),
    }
}

/// The file's length; a clear error when it is missing, not a regular file or empty.
fn file_len(path: &Path) -> Result<u64, InputError> {
    let meta = std::fs::metadata(path).map_err(|source| InputError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.is_file() {
        return Err(InputError::NotAFile(path.to_path_buf()));
    }
    if meta.len() == 0 {
        return Err(InputError::Empty(path.to_path_buf()));
    }
    Ok(meta.len())
}

/// Combination `n`'s seed: different offsets per combination, so one combination does not find
/// the pages an earlier one read, yet the whole run repeats with the same seed.
pub fn combination_seed(seed: u64, n: u64) -> u64 {
    seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// A run seed from the clock, for runs not given one.
pub fn seed_from_clock() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.as_nanos() as u64
}

/// A byte count with an optional binary suffix: `4096`, `4k`, `4KiB`, `1G`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, suffix) = s.split_at(digits_end);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a byte count"))?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => {
            return Err(format!(
                "`{s}`: unknown suffix `{suffix}` (use K, M, G or T)"
            ))
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{s}` is too large"))
}

/// Bytes per read: a power of two from 512 to the largest block, or `natural`.
pub fn parse_block_size(s: &str) -> Result<BlockSize, String> {
    if s.eq_ignore_ascii_case("natural") {
        return Ok(BlockSize::Natural);
    }
    let bytes = parse_bytes(s)?;
    if !bytes.is_power_of_two() || !(512..=u64::from(MAX_BLOCK_BYTES)).contains(&bytes) {
        return Err(format!(
            "{bytes} bytes: must be a power of two from 512 to {MAX_BLOCK_BYTES}, or `natural`"
        ));
    }
    Ok(BlockSize::Bytes(bytes as u32))
}

fn parse_count(s: &str, max: usize) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number"))?;
    if n == 0 || n > max {
        return Err(format!("must be from 1 to {max}"));
    }
    Ok(n)
}

/// Reads in flight per thread, 1 to the miner's limit.
pub fn parse_depth(s: &str) -> Result<usize, String> {
    parse_count(s, MAX_DEPTH)
}

/// Worker threads, 1 to the miner's limit.
pub fn parse_threads(s: &str) -> Result<usize, String> {
    parse_count(s, MAX_THREADS)
}

/// Seconds per combination (decimals allowed), more than 0 and at most a day.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= MAX_DURATION_SECS) {
        return Err(format!(
            "must be more than 0 and at most {MAX_DURATION_SECS} seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Bytes `START..END` of a file, each a byte count with an optional suffix.
pub fn parse_range(s: &str) -> Result<Range<u64>, String> {
    let (start, end) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: expected START..END"))?;
    let (start, end) = (parse_bytes(start)?, parse_bytes(end)?);
    if start >= end {
        return Err(format!("`{s}`: START must be below END"));
    }
    Ok(start..end)
}

/// A latency range `A..B` of the simulated disk, microseconds, `A <= B`.
pub fn parse_latency_range_us(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: expected A..B microseconds"))?;
    let a: u32 = a.trim().parse().map_err(|e| format!("`{s}`: {e}"))?;
    let b: u32 = b.trim().parse().map_err(|e| format!("`{s}`: {e}"))?;
    if a > b {
        return Err(format!("`{s}`: A must not exceed B"));
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_ranges() {
        assert_eq!(parse_latency_range_us("5..10"), Ok((5, 10)));
        assert_eq!(parse_latency_range_us("7..7"), Ok((7, 7)));
        assert!(parse_latency_range_us("10..5").is_err());
        assert!(parse_latency_range_us("x").is_err());
    }

    #[test]
    fn byte_counts_with_suffixes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("4k"), Ok(4096));
        assert_eq!(parse_bytes("4KiB"), Ok(4096));
        assert_eq!(parse_bytes("1G"), Ok(1 << 30));
        assert!(parse_bytes("4x").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }

    #[test]
    fn block_sizes() {
        assert_eq!(parse_block_size("natural"), Ok(BlockSize::Natural));
        assert_eq!(parse_block_size("4k"), Ok(BlockSize::Bytes(4096)));
        assert_eq!(parse_block_size("512"), Ok(BlockSize::Bytes(512)));
        assert!(parse_block_size("256").is_err());
        assert!(parse_block_size("3000").is_err());
        assert!(parse_block_size("1T").is_err());
    }

    #[test]
    fn counts_durations_ranges() {
        assert_eq!(parse_depth("65536"), Ok(65536));
        assert!(parse_depth("0").is_err() && parse_depth("65537").is_err());
        assert!(parse_threads("0").is_err() && parse_threads("1025").is_err());
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert!(
            parse_duration("0").is_err()
                && parse_duration("-1").is_err()
                && parse_duration("nan").is_err()
        );
        assert_eq!(parse_range("4k..1M"), Ok(4096..1 << 20));
        assert!(parse_range("10..10").is_err() && parse_range("10").is_err());
    }
}
