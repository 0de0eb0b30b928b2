//! Shared test fixtures: small v1 shard files with random bytes, a naive sequential miner over
//! the plain single-nonce path, and a factory wrapper that checks the scheduler's read order.
#![allow(dead_code)]

#[path = "../../../pora-core/tests/fixtures/mod.rs"]
mod fixtures;

use pora_core::header::HEADER_SIZE;
use pora_core::{hashimoto, Address, EncodeType, ShardSet, H256, U256};
use pora_io::{
    Backend, BackendFactory, Completion, IoConfig, IoError, Method, QueueFull, SampleRead,
};
use pora_mine::{Find, MineConfig, OnIoError, SlotRequest};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const MINER: Address = Address([0x5c; 20]);
/// 4 KiB KVs keep shards small while exercising every index computation.
pub const KV_SIZE_BITS: u32 = 12;

/// Writes one complete shard (`2^kv_entries_bits` KVs) as a v1 data file of random bytes.
pub fn write_shard(dir: &Path, shard: u64, kv_entries_bits: u32, seed: u64) -> PathBuf {
    let chunks = 1u64 << kv_entries_bits;
    let header = v1_header(
        shard * chunks,
        chunks,
        EncodeType::None,
        1 << KV_SIZE_BITS,
        MINER,
    );
    let path = dir.join(format!("shard{shard}-{seed}.dat"));
    let mut file = File::create(&path).unwrap();
    file.write_all(&header.encode()).unwrap();
    let mut data = vec![0u8; (header.allocated_len().unwrap() - HEADER_SIZE) as usize];
    Xoshiro256PlusPlus::seed_from_u64(seed).fill_bytes(&mut data);
    file.write_all(&data).unwrap();
    path
}

pub fn open_shard(path: &Path) -> ShardSet {
    ShardSet::open(&[path.to_path_buf()], None).unwrap()
}

pub fn randao(seed: u8) -> H256 {
    H256([seed; 32])
}

/// `(nonce, hash1)` of every nonce in `nonces` with hash1 <= `required`, computed one nonce at a
/// time through `hashimoto` with plain file reads, and the nonces that touch `bad` byte ranges
/// `(file path, start, end)` (excluded from the valid list).
pub fn naive_scan(
    shard: &ShardSet,
    randao: &H256,
    nonces: std::ops::Range<u64>,
    checks: u32,
    required: &U256,
) -> Vec<(u64, H256)> {
    naive_scan_avoiding(shard, randao, nonces, checks, required, &[]).0
}

pub fn naive_scan_avoiding(
    shard: &ShardSet,
    randao: &H256,
    nonces: std::ops::Range<u64>,
    checks: u32,
    required: &U256,
    bad: &[(u64, u64)],
) -> (Vec<(u64, H256)>, Vec<u64>) {
    let files: Vec<File> = shard
        .files
        .iter()
        .map(|f| File::open(&f.path).unwrap())
        .collect();
    let (mut valid, mut touched) = (Vec::new(), Vec::new());
    for nonce in nonces {
        let proof = hashimoto(
            &shard.geometry,
            checks,
            &shard.miner,
            randao,
            nonce,
            |idx| {
                let loc = shard.locate(idx).unwrap();
                if bad
                    .iter()
                    .any(|&(s, e)| loc.offset < e && s < loc.offset + 32)
                {
                    return Err(());
                }
                let mut buf = [0u8; 32];
                read_exact_at(&files[loc.file], &mut buf, loc.offset);
                Ok(buf)
            },
        );
        match proof {
            Ok(p) if U256::from_be_bytes(p.hash1.0) <= *required => valid.push((nonce, p.hash1)),
            Ok(_) => {}
            Err(()) => touched.push(nonce),
        }
    }
    (valid, touched)
}

pub use fixtures::{read_exact_at, v1_header};

/// A miner's knobs and one slot's request together, as the tests vary them.
#[derive(Clone, Debug)]
pub struct TestConfig {
    pub threads: usize,
    pub depth: usize,
    pub random_checks: u32,
    pub nonces: std::ops::Range<u64>,
    pub slot: Duration,
    pub find: Find,
    pub required_diff: Option<pora_core::U256>,
    pub on_io_error: OnIoError,
    pub miner: Option<pora_core::Address>,
}

impl TestConfig {
    /// What `Miner::new` takes.
    pub fn mine(&self) -> MineConfig {
        MineConfig::new(self.threads, self.depth)
            .with_random_checks(self.random_checks)
            .with_on_io_error(self.on_io_error)
            .with_miner(self.miner)
    }

    /// One slot with `randao`.
    pub fn request(&self, randao: H256) -> SlotRequest {
        SlotRequest::new(randao)
            .with_nonces(self.nonces.clone())
            .with_slot_length(self.slot)
            .with_find(self.find)
            .with_required_diff(self.required_diff)
    }
}

pub fn config(threads: usize, depth: usize, nonces: std::ops::Range<u64>) -> TestConfig {
    TestConfig {
        threads,
        depth,
        random_checks: 2,
        nonces,
        slot: Duration::from_secs(60),
        find: Find::All,
        required_diff: None,
        on_io_error: OnIoError::Retry,
        miner: None,
    }
}

pub fn sim_factory(paths: &[PathBuf], sim: pora_io::SimConfig) -> Arc<dyn BackendFactory> {
    pora_io::open(
        paths,
        &IoConfig {
            method: Method::Sim,
            sim,
            ..Default::default()
        },
    )
    .unwrap()
}

/// Wraps a factory so every backend checks, per tag, that a new read is only pushed after the
/// previous read of that tag was reaped (sample k+1 of a chain after sample k), and counts the
/// reads outstanding per worker.
pub struct Checked {
    pub inner: Arc<dyn BackendFactory>,
    pub violations: Arc<AtomicU64>,
    pub max_outstanding: Arc<AtomicU64>,
}

impl Checked {
    pub fn new(inner: Arc<dyn BackendFactory>) -> Arc<Checked> {
        Arc::new(Checked {
            inner,
            violations: Arc::default(),
            max_outstanding: Arc::default(),
        })
    }
}

impl BackendFactory for Checked {
    fn method(&self) -> Method {
        self.inner.method()
    }
    fn describe(&self) -> String {
        format!("checked {}", self.inner.describe())
    }
    fn capabilities(&self) -> pora_io::Capabilities {
        self.inner.capabilities()
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        Ok(Box::new(CheckedBackend {
            inner: self.inner.worker(depth)?,
            outstanding: vec![false; depth],
            queued: Vec::with_capacity(depth),
            count: 0,
            violations: self.violations.clone(),
            max_outstanding: self.max_outstanding.clone(),
        }))
    }
}

struct CheckedBackend {
    inner: Box<dyn Backend>,
    outstanding: Vec<bool>,
    /// Tags pushed since the last submit: what `drop_queued` forgets.
    queued: Vec<u32>,
    count: u64,
    violations: Arc<AtomicU64>,
    max_outstanding: Arc<AtomicU64>,
}

impl Backend for CheckedBackend {
    fn method(&self) -> Method {
        self.inner.method()
    }
    fn capacity(&self) -> usize {
        self.inner.capacity()
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    fn push(&mut self, read: SampleRead) -> Result<(), QueueFull> {
        let slot = self.outstanding.get_mut(read.tag as usize);
        match slot {
            Some(flag) if !*flag => *flag = true,
            _ => {
                self.violations.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count += 1;
        self.max_outstanding
            .fetch_max(self.count, Ordering::Relaxed);
        let pushed = self.inner.push(read);
        if pushed.is_ok() {
            self.queued.push(read.tag);
        }
        pushed
    }
    fn submit(&mut self) -> Result<(), IoError> {
        self.queued.clear();
        self.inner.submit()
    }
    fn drop_queued(&mut self) -> usize {
        // Dropped reads never complete: they are no longer outstanding.
        for tag in self.queued.drain(..) {
            if let Some(flag) = self.outstanding.get_mut(tag as usize) {
                *flag = false;
            }
            self.count -= 1;
        }
        self.inner.drop_queued()
    }
    fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        min: usize,
        deadline: Option<Instant>,
    ) -> Result<usize, IoError> {
        let before = out.len();
        let n = self.inner.reap(out, min, deadline)?;
        for c in &out[before..] {
            match self.outstanding.get_mut(c.tag as usize) {
                Some(flag) if *flag => *flag = false,
                _ => {
                    self.violations.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.count -= 1;
        }
        Ok(n)
    }
}
