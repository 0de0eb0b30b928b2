//! One KV (or one word of it) of an encodeType-3 data file, decoded with the mask of (commit,
//! header miner, KV index): what `pora decode` reports. Read-only.

use crate::encoded::EncodedFile;
use crate::error::Result;
use crate::mask::sha256;
use pora_core::hex::to_hex;
use pora_encode::{encode_key, MASK_BYTES};

/// The `pora decode --json` record: the KV, its commit and encode key, then either one word
/// (`sampleIdx`, `stored`, `decoded`) or the whole KV (`decodedSha256`, and `decoded` when the
/// caller puts the blob in).
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecodeRecord {
    pub kv_idx: u64,
    pub commit: String,
    pub encode_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_idx: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decoded_sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decoded: Option<String>,
}

/// A decoded KV: the record, and the whole decoded blob (empty when one word was asked for).
pub struct Decoded {
    pub record: DecodeRecord,
    pub blob: Vec<u8>,
}

/// Decodes KV `kv_idx` of `f` (checked to be in it) under `commit`, or only word `sample`.
pub fn decode_kv(
    f: &EncodedFile,
    kv_idx: u64,
    commit: &[u8],
    sample: Option<u16>,
) -> Result<Decoded> {
    let key = encode_key(commit, &f.data.header.miner.0, kv_idx)?;
    let mut stored = vec![0u8; MASK_BYTES];
    f.read_kv(kv_idx, &mut stored)?;
    let mut record = DecodeRecord {
        kv_idx,
        commit: to_hex(commit),
        encode_key: to_hex(&key),
        sample_idx: None,
        stored: None,
        decoded_sha256: None,
        decoded: None,
    };
    if let Some(j) = sample {
        let j = j as usize;
        let mask_word = pora_encode::mask_word(&key, j)?;
        let stored_word = &stored[32 * j..32 * j + 32];
        let word: Vec<u8> = stored_word
            .iter()
            .zip(mask_word.iter())
            .map(|(s, m)| s ^ m)
            .collect();
        record.sample_idx = Some(j);
        record.stored = Some(to_hex(stored_word));
        record.decoded = Some(to_hex(&word));
        return Ok(Decoded {
            record,
            blob: Vec::new(),
        });
    }
    pora_encode::decode(&mut stored, &key)?;
    record.decoded_sha256 = Some(to_hex(&sha256(&stored)));
    Ok(Decoded {
        record,
        blob: stored,
    })
}
