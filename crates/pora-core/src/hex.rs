//! Fixed-size hex values from the command line and JSON: a 20-byte miner address and 32-byte
//! hashes. Parsing is strict (exact length, hex digits only) so a typo is an error, not a
//! silently different hash.

use crate::error::{Error, Result};
use std::fmt;

/// A 20-byte Ethereum address (the miner).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Address(pub [u8; 20]);

/// A 32-byte value: a hash, a randao mix, a sample.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct H256(pub [u8; 32]);

/// Parses `0x`-prefixed (or bare) hex of exactly `N` bytes.
pub fn parse_fixed<const N: usize>(what: &'static str, input: &str) -> Result<[u8; N]> {
    let digits = input
        .strip_prefix("0x")
        .or_else(|| input.strip_prefix("0X"))
        .unwrap_or(input);
    if digits.len() != 2 * N {
        return Err(Error::bad_value(
            what,
            input,
            format!(
                "expected {} hex digits ({} bytes), got {}",
                2 * N,
                N,
                digits.len()
            ),
        ));
    }
    let mut out = [0u8; N];
    for (i, pair) in digits.as_bytes().chunks_exact(2).enumerate() {
        let hi = hex_digit(pair[0]);
        let lo = hex_digit(pair[1]);
        match (hi, lo) {
            (Some(h), Some(l)) => out[i] = (h << 4) | l,
            _ => {
                return Err(Error::bad_value(
                    what,
                    input,
                    format!(
                        "non-hex character at position {}",
                        digits_offset(input) + 2 * i
                    ),
                ))
            }
        }
    }
    Ok(out)
}

fn digits_offset(input: &str) -> usize {
    if input.starts_with("0x") || input.starts_with("0X") {
        2
    } else {
        0
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Lower-case `0x`-prefixed hex of any byte string.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 + 2 * bytes.len());
    s.push_str("0x");
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

impl Address {
    /// Parses a miner address such as `0x5C93…830d` (checksum case is accepted, not verified).
    pub fn parse(input: &str) -> Result<Self> {
        parse_fixed::<20>("miner address", input).map(Address)
    }
}

impl H256 {
    /// Parses a 32-byte value; `what` names the flag or field in the error.
    pub fn parse(what: &'static str, input: &str) -> Result<Self> {
        parse_fixed::<32>(what, input).map(H256)
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&to_hex(&self.0))
    }
}
impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for H256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&to_hex(&self.0))
    }
}
impl fmt::Debug for H256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for Address {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&to_hex(&self.0))
    }
}
impl serde::Serialize for H256 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&to_hex(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_round_trip() {
        let a = Address::parse("0x5C935469C5592Aeeac3372e922d9bCEabDF8830d").unwrap();
        assert_eq!(a.to_string(), "0x5c935469c5592aeeac3372e922d9bceabdf8830d");
    }

    #[test]
    fn rejects_wrong_length_and_bad_digits() {
        let e = Address::parse("0x1234").unwrap_err().to_string();
        assert!(
            e.contains("miner address") && e.contains("40 hex digits"),
            "{e}"
        );
        let bad = format!("0x{}zz", "00".repeat(31));
        let e = H256::parse("randao", &bad).unwrap_err().to_string();
        assert!(e.contains("randao") && e.contains("position 64"), "{e}");
    }
}
