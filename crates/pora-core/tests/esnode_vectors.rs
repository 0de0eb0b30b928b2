//! Every es-node vector reproduced through the real file path: a sparse shard file is built
//! with the logged encoded samples at their offsets, opened as a shard set, and hashed with the
//! library. Vectors come from `testdata/esnode-sample.json` (docs/spec/algorithm.md).

mod fixtures;

use fixtures::{v1_header, vector_files};
use pora_core::difficulty::{expected_diff, meets, parse_u256, required_diff, DiffParams};
use pora_core::{hashimoto, Address, EncodeType, ShardSet, H256, U256};
use serde_json::Value;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

fn load(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn u256(v: &Value) -> U256 {
    match v {
        Value::String(s) => parse_u256("test", s).unwrap(),
        Value::Number(n) => U256::from(n.as_u64().unwrap()),
        _ => panic!("not a number: {v}"),
    }
}

/// A sparse es-node v1 file for the vector's shard with its samples written in place.
fn build_shard(dir: &Path, v: &Value) -> PathBuf {
    let shard = v["shard"].as_u64().unwrap();
    let eb = v["kvEntriesBits"].as_u64().unwrap() as u32;
    let kb = v["kvSizeBits"].as_u64().unwrap() as u32;
    let kv = 1u64 << kb;
    let chunks = 1u64 << eb;
    let miner = Address::parse(v["miner"].as_str().unwrap()).unwrap();
    let h = v1_header(shard * chunks, chunks, EncodeType::BlobPoseidon, kv, miner);
    let path = dir.join(format!("shard{shard}-{}.dat", v["nonce"]));
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .unwrap();
    f.write_all(&h.encode()).unwrap();
    f.set_len(h.allocated_len().unwrap()).unwrap();
    for (idx, sample) in v["sampleIdxs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(v["encodedSamples"].as_array().unwrap())
    {
        let offset = 4096 + idx.as_u64().unwrap() * 32 - h.start_byte();
        let bytes = H256::parse("sample", sample.as_str().unwrap()).unwrap();
        f.seek(SeekFrom::Start(offset)).unwrap();
        f.write_all(&bytes.0).unwrap();
    }
    path
}

#[test]
fn every_vector_reproduces_through_a_real_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for file in vector_files() {
        for v in load(&file)["vectors"].as_array().into_iter().flatten() {
            let path = build_shard(dir.path(), v);
            let shard = ShardSet::open(
                std::slice::from_ref(&path),
                Some(v["kvEntriesBits"].as_u64().unwrap() as u32),
            )
            .unwrap();
            assert_eq!(shard.geometry.shard_idx, v["shard"].as_u64().unwrap());
            let mut f = std::fs::File::open(&path).unwrap();
            let randao = H256::parse("randao", v["randao"].as_str().unwrap()).unwrap();
            let checks = v["randomChecks"].as_u64().unwrap() as u32;
            let proof = hashimoto(
                &shard.geometry,
                checks,
                &shard.miner,
                &randao,
                v["nonce"].as_u64().unwrap(),
                |idx| {
                    let loc = shard.locate(idx).unwrap();
                    let mut buf = [0u8; 32];
                    f.seek(SeekFrom::Start(loc.offset))?;
                    f.read_exact(&mut buf).map(|_| buf)
                },
            )
            .unwrap();
            let ctx = format!("{} nonce {}", file.display(), v["nonce"]);
            assert_eq!(
                proof.hash0.to_string(),
                v["hash0"].as_str().unwrap().to_lowercase(),
                "{ctx}"
            );
            let idxs: Vec<u64> = v["sampleIdxs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            assert_eq!(proof.sample_idxs, idxs, "{ctx}");
            assert_eq!(
                proof.hash1.to_string(),
                v["hash1"].as_str().unwrap().to_lowercase(),
                "{ctx}"
            );
            if let Some(req) = v.get("requiredDiff") {
                let p = DiffParams {
                    difficulty: u256(&v["difficulty"]),
                    interval: v["interval"].as_u64().unwrap(),
                    cutoff: v["cutoff"].as_u64().unwrap(),
                    diff_adj_divisor: v["diffAdjDivisor"].as_u64().unwrap(),
                    minimum_diff: u256(&v["minimumDiff"]),
                };
                let expected = expected_diff(&p).unwrap();
                assert_eq!(expected, u256(&v["expectedDiff"]), "{ctx}");
                let required = required_diff(expected).unwrap();
                assert_eq!(required, u256(req), "{ctx}");
                assert_eq!(
                    meets(&proof.hash1.0, &required),
                    v["hash1MeetsRequiredDiff"].as_bool().unwrap(),
                    "{ctx}"
                );
            }
            drop(f);
            std::fs::remove_file(&path).unwrap();
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} vectors found");
    eprintln!("checked {checked} es-node vectors");
}

#[test]
fn expected_diff_cases_match_es_node() {
    let mut checked = 0;
    for file in vector_files() {
        for c in load(&file)["expectedDiffCases"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let interval = c
                .get("interval")
                .and_then(Value::as_u64)
                .unwrap_or_else(|| {
                    c["blockTime"].as_u64().unwrap() - c["lastMineTime"].as_u64().unwrap()
                });
            let p = DiffParams {
                difficulty: u256(&c["difficulty"]),
                interval,
                cutoff: c["cutoff"].as_u64().unwrap(),
                diff_adj_divisor: c["diffAdjDivisor"].as_u64().unwrap(),
                minimum_diff: u256(&c["minimumDiff"]),
            };
            assert_eq!(
                expected_diff(&p).unwrap(),
                u256(&c["expectedDiff"]),
                "{}",
                c["name"]
            );
            checked += 1;
        }
    }
    assert!(checked >= 4, "only {checked} cases found");
}
