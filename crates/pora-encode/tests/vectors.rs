//! Bit-exactness against every vector in testdata/esnode-encode.json (docs/encoding.md, "Test
//! vectors"): the permutation of [0,1,2], raw-key words and digests, full-mask digests, real
//! es-node samples from empty-filled KVs, and an encode key with a non-zero commit. Both the
//! fast and the reference path are checked, and the fast path on every kernel this CPU runs.

use ark_ff::PrimeField;
use pora_encode::{encode_key, field::Fr, mask, mask_word, reference};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn vectors() -> Value {
    let text = include_str!("../../../testdata/esnode-encode.json");
    serde_json::from_str(text).expect("valid JSON")
}

fn hex(s: &str) -> Vec<u8> {
    let digits = s.strip_prefix("0x").expect("0x prefix");
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("hex"))
        .collect()
}

fn hex32(v: &Value) -> [u8; 32] {
    hex(v.as_str().expect("string"))
        .try_into()
        .expect("32 bytes")
}

fn miner(v: &Value) -> [u8; 20] {
    hex(v.as_str().expect("string"))
        .try_into()
        .expect("20 bytes")
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[test]
fn permutation_of_0_1_2() {
    let v = vectors();
    let want: Vec<[u8; 32]> = v["poseidonPerm012"]
        .as_array()
        .unwrap()
        .iter()
        .map(hex32)
        .collect();
    let kernel = pora_encode::Kernel::selected().unwrap();
    let fast = kernel.permute([Fr::from_u64(0), Fr::from_u64(1), Fr::from_u64(2)]);
    let fast: Vec<[u8; 32]> = fast.iter().map(|x| x.to_be_bytes()).collect();
    assert_eq!(fast, want, "fast permutation");
    let slow = reference::permute([0u64.into(), 1u64.into(), 2u64.into()]);
    let slow: Vec<[u8; 32]> = slow.iter().map(reference::to_be_bytes).collect();
    assert_eq!(slow, want, "reference permutation");
}

#[test]
fn domain_generator_is_the_spec_omega() {
    let want = hex32(&Value::from(
        "0x0931d596de2fd10f01ddd073fd5a90a976f169c76f039bb91c4775720042d43a",
    ));
    assert_eq!(pora_encode::ntt::omega().to_be_bytes(), want);
    use ark_poly::EvaluationDomain;
    let gen = reference::domain().group_gen();
    assert_eq!(reference::to_be_bytes(&gen), want);
    assert_eq!(
        gen.into_bigint(),
        ark_bn254::Fr::from(5u64).pow_r_minus_1_over(4096)
    );
}

trait PowRMinus1Over {
    fn pow_r_minus_1_over(self, n: u64) -> <ark_bn254::Fr as PrimeField>::BigInt;
}

impl PowRMinus1Over for ark_bn254::Fr {
    /// self^((r-1)/n), computed from the modulus so the domain's generator is checked
    /// independently of ark-poly.
    fn pow_r_minus_1_over(self, n: u64) -> <ark_bn254::Fr as PrimeField>::BigInt {
        use ark_ff::{BigInteger, Field};
        let mut e = ark_bn254::Fr::MODULUS;
        e.sub_with_borrow(&1u64.into());
        for _ in 0..n.trailing_zeros() {
            e.div2();
        }
        self.pow(e).into_bigint()
    }
}

#[test]
fn raw_keys_words_and_digests() {
    let v = vectors();
    for case in v["rawKeys"].as_array().unwrap() {
        let key = hex32(&case["key"]);
        let j = case["sample"].as_u64().unwrap() as usize;
        let want = hex32(&case["word"]);
        let full = mask(&key);
        assert_eq!(full[32 * j..32 * j + 32], want, "fast mask word {j}");
        assert_eq!(mask_word(&key, j).unwrap(), want, "fast mask_word {j}");
        assert_eq!(reference::mask_word(&key, j), want, "reference word {j}");
        if let Some(digest) = case.get("sha256") {
            assert_eq!(sha256(&full[..]), hex32(digest), "fast mask sha256");
            assert_eq!(
                sha256(&reference::mask(&key)),
                hex32(digest),
                "reference mask sha256"
            );
        }
    }
}

#[test]
fn full_masks_of_shard_1() {
    let v = vectors();
    let m = miner(&v["miner"]);
    for case in v["fullMask"].as_array().unwrap() {
        let kv = case["kvIdx"].as_u64().unwrap();
        let key = encode_key(&[], &m, kv).unwrap();
        assert_eq!(key, hex32(&case["encodeKey"]), "encode key of kv {kv}");
        let full = mask(&key);
        assert_eq!(full[..32], hex32(&case["mask0"]), "mask word 0 of kv {kv}");
        assert_eq!(sha256(&full[..]), hex32(&case["sha256"]), "sha256 kv {kv}");
    }
}

#[test]
fn real_esnode_samples() {
    let v = vectors();
    let m = miner(&v["miner"]);
    for case in v["samples"].as_array().unwrap() {
        let kv = case["kvIdx"].as_u64().unwrap();
        let j = case["sample"].as_u64().unwrap() as usize;
        let key = encode_key(&[0u8; 24], &m, kv).unwrap();
        let want = hex32(&case["word"]);
        assert_eq!(mask_word(&key, j).unwrap(), want, "kv {kv} word {j}");
        assert_eq!(mask(&key)[32 * j..32 * j + 32], want, "kv {kv} word {j}");
    }
}

#[test]
fn key_with_commit() {
    let v = vectors();
    let case = &v["commitKey"];
    let commit = hex(case["commit"].as_str().unwrap());
    assert_eq!(commit.len(), 24);
    let kv = case["kvIdx"].as_u64().unwrap();
    let key = encode_key(&commit, &miner(&case["miner"]), kv).unwrap();
    assert_eq!(key, hex32(&case["encodeKey"]));
    assert_eq!(sha256(&mask(&key)[..]), hex32(&case["maskSha256"]));
}

/// The full-mask digests through every kernel this CPU runs (SKIP lines name the others).
#[test]
fn full_masks_on_every_kernel() {
    use pora_encode::{mask_with_kernel, Kernel};
    let v = vectors();
    let m = miner(&v["miner"]);
    for k in Kernel::ALL {
        if !k.supported() {
            // Past libtest's capture, so CI's skip table sees it (see tests/kernels.rs).
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "SKIP: full_masks_on_every_kernel [{k}]: CPU lacks {}",
                k.needs()
            );
            continue;
        }
        for case in v["fullMask"].as_array().unwrap() {
            let kv = case["kvIdx"].as_u64().unwrap();
            let key = encode_key(&[], &m, kv).unwrap();
            let full = mask_with_kernel(k, &key).unwrap();
            assert_eq!(sha256(&full[..]), hex32(&case["sha256"]), "{k}: kv {kv}");
        }
        for case in v["rawKeys"].as_array().unwrap() {
            let key = hex32(&case["key"]);
            let j = case["sample"].as_u64().unwrap() as usize;
            let full = mask_with_kernel(k, &key).unwrap();
            assert_eq!(
                full[32 * j..32 * j + 32],
                hex32(&case["word"]),
                "{k}: word {j}"
            );
            if let Some(digest) = case.get("sha256") {
                assert_eq!(sha256(&full[..]), hex32(digest), "{k}: raw key sha256");
            }
        }
        for case in v["samples"].as_array().unwrap() {
            let kv = case["kvIdx"].as_u64().unwrap();
            let j = case["sample"].as_u64().unwrap() as usize;
            let key = encode_key(&[0u8; 24], &m, kv).unwrap();
            let full = mask_with_kernel(k, &key).unwrap();
            assert_eq!(
                full[32 * j..32 * j + 32],
                hex32(&case["word"]),
                "{k}: kv {kv}"
            );
        }
        let case = &v["commitKey"];
        let commit = hex(case["commit"].as_str().unwrap());
        let kv = case["kvIdx"].as_u64().unwrap();
        let key = encode_key(&commit, &miner(&case["miner"]), kv).unwrap();
        let full = mask_with_kernel(k, &key).unwrap();
        assert_eq!(
            sha256(&full[..]),
            hex32(&case["maskSha256"]),
            "{k}: commit key"
        );
    }
}

#[test]
fn commit_longer_than_24_bytes_is_an_error() {
    let err = encode_key(&[1u8; 25], &[0u8; 20], 0).unwrap_err();
    assert!(err.to_string().contains("commit"), "{err}");
}
