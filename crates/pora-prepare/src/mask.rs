//! One KV's BLOB_POSEIDON mask as `pora mask` reports it (encode key, SHA-256 of the 131072
//! mask bytes, optionally one word), the hex parsers of the encoder commands' flags, and writing
//! a result file that is never overwritten by accident.

use crate::create::create_or_truncate;
use crate::error::{PrepareError, Result};
use pora_core::hex::to_hex;
use pora_core::Input;
use pora_encode::{EncodeKey, COMMIT_LEN, MASK_BYTES, WORDS_PER_KV};
use std::io::Write;
use std::path::Path;

/// Parses 0x-prefixed hex of at most `max` bytes, naming `flag` in every error.
pub fn parse_hex_bytes(
    flag: impl std::fmt::Display,
    input: &str,
    max: usize,
) -> Result<Vec<u8>, String> {
    let digits = input
        .strip_prefix("0x")
        .or_else(|| input.strip_prefix("0X"))
        .ok_or_else(|| format!("{flag} `{input}`: expected 0x-prefixed hex"))?;
    if digits.len() % 2 != 0 {
        return Err(format!(
            "{flag} `{input}`: odd number of hex digits ({}); each byte is two digits",
            digits.len()
        ));
    }
    if digits.len() > 2 * max {
        return Err(format!(
            "{flag} `{input}`: {} bytes is longer than the {max} bytes allowed",
            digits.len() / 2
        ));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| format!("{flag} `{input}`: non-hex character at position {}", i + 2))
        })
        .collect()
}

/// Parses `--key`: up to 32 bytes, right-aligned (a big-endian number).
pub fn parse_key(s: &str) -> Result<EncodeKey, String> {
    let bytes = parse_hex_bytes(Input::Key, s, 32)?;
    let mut key = [0u8; 32];
    key[32 - bytes.len()..].copy_from_slice(&bytes);
    Ok(key)
}

/// A KV commitment from `--commit` (at most 24 bytes, left-aligned as in a meta entry).
#[derive(Clone, Debug)]
pub struct Commit(pub Vec<u8>);

/// Parses `--commit`.
pub fn parse_commit(s: &str) -> Result<Commit, String> {
    parse_hex_bytes(Input::Commit, s, COMMIT_LEN).map(Commit)
}

/// The `pora mask --json` record.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MaskRecord {
    pub encode_key: String,
    pub mask_sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_idx: Option<u16>,
    /// Word `sample_idx` of the mask.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<String>,
}

/// The mask of `key` and its record, with word `sample` (0..4095) when asked.
pub fn mask_record(
    key: &EncodeKey,
    sample: Option<u16>,
) -> Result<(MaskRecord, Box<[u8; MASK_BYTES]>)> {
    // A bad PORA_ENCODE_ARITH is an error here, not a panic in `mask`.
    pora_encode::Kernel::selected()?;
    if let Some(j) = sample.filter(|&j| j as usize >= WORDS_PER_KV) {
        return Err(pora_encode::Error::WordIndex {
            index: j as usize,
            words: WORDS_PER_KV,
        }
        .into());
    }
    let mask = pora_encode::mask(key);
    let word = sample.map(|j| to_hex(&mask[32 * j as usize..32 * (j as usize + 1)]));
    let record = MaskRecord {
        encode_key: to_hex(key),
        mask_sha256: to_hex(&sha256(&mask[..])),
        sample_idx: sample,
        sample: word,
    };
    Ok((record, mask))
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// Writes `bytes` to a new file (`--out`); an existing one only with `force`.
pub fn write_new_file(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    let mut file = create_or_truncate(path, force).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            PrepareError::Invalid(format!(
                "{} {}: file exists; give {} to overwrite it",
                Input::Out,
                path.display(),
                Input::Force
            ))
        } else {
            PrepareError::io(format!("{} {}", Input::Out, path.display()), e)
        }
    })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| PrepareError::io(format!("writing {}", path.display()), e))
}
