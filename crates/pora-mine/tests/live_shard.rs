//! Live shards: es-node writes blobs into the shards pora mines. Here the workers read an older
//! copy of the shard while the verifier reads the file as it is now (some KVs rewritten), which
//! is exactly what a write between the mining read and the verification read looks like. No
//! slot may fail; every reported nonce must be valid with the bytes on disk now; changed
//! candidates are counted.

mod common;

use common::*;
use pora_core::U256;
use pora_io::{IoConfig, Method};
use pora_mine::{Find, Miner};
use std::io::{Seek, SeekFrom, Write};
use std::sync::atomic::AtomicBool;

/// Rewrites KVs `kvs` of the shard file at `path` with bytes derived from `seed`.
fn rewrite_kvs(path: &std::path::Path, kvs: &[u64], seed: u8) {
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let kv_bytes = 1u64 << KV_SIZE_BITS;
    for &kv in kvs {
        let data: Vec<u8> = (0..kv_bytes).map(|i| (i as u8) ^ seed ^ kv as u8).collect();
        file.seek(SeekFrom::Start(4096 + kv * kv_bytes)).unwrap();
        file.write_all(&data).unwrap();
    }
}

#[test]
fn candidates_changed_under_the_slot_are_reverified_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let now = write_shard(dir.path(), 0, 4, 77);
    let before = dir.path().join("before.dat");
    std::fs::copy(&now, &before).unwrap();
    // Half of the 16 KVs change after the workers' copy was taken.
    rewrite_kvs(&now, &[1, 3, 5, 7, 9, 11, 13, 15], 0xa5);
    let shard = open_shard(&now);
    let stale_reads = pora_io::open(
        std::slice::from_ref(&before),
        &IoConfig {
            method: Method::Pread,
            ..Default::default()
        },
    )
    .unwrap();
    let required = U256::MAX / U256::from(4u64);
    let mut cfg = config(2, 8, 0..2000);
    cfg.required_diff = Some(required);
    cfg.find = Find::All;
    let miner = Miner::new(vec![shard.clone()], stale_reads, cfg.mine()).unwrap();
    let report = miner
        .mine_slot(&cfg.request(randao(5)), &AtomicBool::new(false))
        .expect("a changed shard never fails the slot");
    let got = &report.shards[0];
    assert_eq!(got.nonces_tried, 2000);
    assert!(
        got.changed_during_slot > 100,
        "about 3/4 of the ~500 candidates touch a rewritten KV: {}",
        got.changed_during_slot
    );
    // What is reported is exactly what is valid with the bytes on disk now, among the nonces the
    // workers saw as candidates: check every reported nonce against the file as it is.
    let valid_now = naive_scan(&shard, &randao(5), 0..2000, 2, &required);
    for proof in &got.found {
        assert!(
            valid_now.contains(&(proof.nonce, proof.hash1)),
            "nonce {} reported but not valid with the bytes on disk",
            proof.nonce
        );
    }
    assert!(!got.found.is_empty());
}
