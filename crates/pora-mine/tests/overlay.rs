//! The slot overlay (es-node.md): KVs whose current bytes are in memory, as es-node's blob cache
//! holds downloaded blobs before they are finalized into the file. Samples inside them must come
//! from memory, everything else from the file: checked against a naive miner that reads the same
//! way, on the simulated disk with random latencies and on plain pread, with the read-order
//! checker watching that overlay samples never reach the backend.

mod common;

use common::*;
use pora_core::{hashimoto, ShardSet, H256, U256};
use pora_io::{IoConfig, Method, SimConfig};
use pora_mine::{Find, MineError, Miner, Overlay};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const KV_ENTRIES_BITS: u32 = 5;

/// KV index -> bytes that differ from the file's.
fn cache_kvs(seed: u64, kvs: &[u64]) -> BTreeMap<u64, Vec<u8>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    kvs.iter()
        .map(|&kv| {
            let mut bytes = vec![0u8; 1 << KV_SIZE_BITS];
            rng.fill_bytes(&mut bytes);
            (kv, bytes)
        })
        .collect()
}

fn overlay_of(kvs: &BTreeMap<u64, Vec<u8>>) -> Overlay {
    let mut overlay = Overlay::new();
    for (&kv, bytes) in kvs {
        overlay.insert(kv, bytes.clone());
    }
    overlay
}

/// Every nonce of `nonces` computed one at a time, reading a sample from `cache` when its KV is
/// there and from the file otherwise (es-node's `BlobReader.ReadSample`): the valid ones with
/// their proofs' samples.
fn naive_with_cache(
    shard: &ShardSet,
    randao: &H256,
    nonces: std::ops::Range<u64>,
    required: &U256,
    cache: &BTreeMap<u64, Vec<u8>>,
) -> Vec<(u64, H256, Vec<H256>)> {
    let file = File::open(&shard.files[0].path).unwrap();
    let geometry = shard.geometry;
    nonces
        .filter_map(|nonce| {
            let proof = hashimoto::<()>(&geometry, 2, &shard.miner, randao, nonce, |idx| {
                let mut buf = [0u8; 32];
                match cache.get(&geometry.kv_idx(idx)) {
                    Some(kv) => {
                        let at = geometry.sample_idx_in_kv(idx) as usize * 32;
                        buf.copy_from_slice(&kv[at..at + 32]);
                    }
                    None => read_exact_at(&file, &mut buf, shard.locate(idx).unwrap().offset),
                }
                Ok(buf)
            })
            .unwrap();
            (U256::from_be_bytes(proof.hash1.0) <= *required).then_some((
                nonce,
                proof.hash1,
                proof.encoded_samples,
            ))
        })
        .collect()
}

fn two_shards(dir: &std::path::Path) -> Vec<PathBuf> {
    vec![
        write_shard(dir, 0, KV_ENTRIES_BITS, 71),
        write_shard(dir, 3, KV_ENTRIES_BITS, 72),
    ]
}

#[test]
fn samples_in_overlay_kvs_come_from_memory_and_the_rest_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let paths = two_shards(dir.path());
    let shards: Vec<_> = paths.iter().map(|p| open_shard(p)).collect();
    // Shard 0 holds KVs 0..32, shard 3 holds 96..128; KV 40 is shard 1's, not mined here.
    let cache = cache_kvs(9, &[2, 7, 8, 30, 40, 96, 100, 127]);
    let required = U256::MAX / U256::from(32u64);
    let mut cfg = config(2, 16, 0..4000);
    cfg.required_diff = Some(required);
    let checked = Checked::new(sim_factory(
        &paths,
        SimConfig {
            seed: 5,
            latency_us: (0, 200),
            ..Default::default()
        },
    ));
    let miner = Miner::new(shards.clone(), checked.clone(), cfg.mine()).unwrap();
    let request = cfg
        .request(randao(6))
        .with_overlay(Some(Arc::new(overlay_of(&cache))));
    let report = miner.mine_slot(&request, &AtomicBool::new(false)).unwrap();
    for (shard, got) in shards.iter().zip(&report.shards) {
        let want = naive_with_cache(shard, &randao(6), 0..4000, &required, &cache);
        let got: Vec<_> = got
            .found
            .iter()
            .map(|p| (p.nonce, p.hash1, p.encoded_samples.clone()))
            .collect();
        assert_eq!(got, want, "shard {}", shard.geometry.shard_idx);
        let file_only = naive_scan(shard, &randao(6), 0..4000, 2, &required);
        let got_pairs: Vec<_> = got.iter().map(|(n, h, _)| (*n, *h)).collect();
        assert_ne!(
            got_pairs, file_only,
            "the overlay must change what is found"
        );
    }
    for got in &report.shards {
        assert_eq!(got.nonces_tried, 4000);
        assert_eq!(got.samples_read, 8000);
        // 4 of 32 KVs per shard: about 1/8 of the first samples and more of the second.
        assert!(
            (500..2500).contains(&got.samples_from_overlay),
            "{}",
            got.samples_from_overlay
        );
        assert_eq!(got.changed_during_slot, 0);
    }
    assert_eq!(checked.violations.load(Ordering::Relaxed), 0);
}

#[test]
fn find_first_and_hash_agree_with_the_overlay_on_pread() {
    let dir = tempfile::tempdir().unwrap();
    let paths = two_shards(dir.path());
    let shards: Vec<_> = paths.iter().map(|p| open_shard(p)).collect();
    let cache = cache_kvs(11, &[1, 5, 6, 19, 97, 120]);
    let overlay = overlay_of(&cache);
    let required = U256::MAX / U256::from(200u64);
    let mut cfg = config(1, 8, 0..3000);
    cfg.required_diff = Some(required);
    cfg.find = Find::First;
    let factory = pora_io::open(
        &Miner::paths(&shards),
        &IoConfig {
            method: Method::Pread,
            ..Default::default()
        },
    )
    .unwrap();
    let miner = Miner::new(shards.clone(), factory, cfg.mine()).unwrap();
    let request = cfg
        .request(randao(8))
        .with_overlay(Some(Arc::new(overlay.clone())));
    let report = miner.mine_slot(&request, &AtomicBool::new(false)).unwrap();
    for (shard, got) in shards.iter().zip(&report.shards) {
        let want = naive_with_cache(shard, &randao(8), 0..3000, &required, &cache);
        let first = &got.found[..];
        assert_eq!(first.len(), 1, "shard {}", shard.geometry.shard_idx);
        assert_eq!(first[0].nonce, want[0].0);
        assert_eq!(first[0].encoded_samples, want[0].2);
        let idx = shard.geometry.shard_idx;
        let hashed = miner
            .hash_with(idx, &randao(8), want[0].0, &overlay)
            .unwrap();
        assert_eq!(hashed.hash1, want[0].1);
        let from_file = miner.hash(idx, &randao(8), want[0].0).unwrap();
        if from_file.kv_idxs.iter().any(|kv| cache.contains_key(kv)) {
            assert_ne!(from_file.hash1, hashed.hash1);
        }
    }
}

#[test]
fn an_overlay_kv_of_the_wrong_size_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let paths = two_shards(dir.path());
    let shards: Vec<_> = paths.iter().map(|p| open_shard(p)).collect();
    let cfg = config(1, 4, 0..100);
    let miner = Miner::new(
        shards,
        sim_factory(&paths, SimConfig::default()),
        cfg.mine(),
    )
    .unwrap();
    let mut overlay = Overlay::new();
    overlay.insert(100, vec![0u8; 4095]);
    let request = cfg.request(randao(1)).with_overlay(Some(Arc::new(overlay)));
    match miner.mine_slot(&request, &AtomicBool::new(false)) {
        Err(e @ MineError::Config { .. }) => {
            assert!(e.to_string().contains("overlay KV 100: 4095 bytes"), "{e}")
        }
        other => panic!("expected a config error, got {other:?}"),
    }
}
