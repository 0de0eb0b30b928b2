//! Hot-path measurement: how close the scheduler gets to pure hashing when reads are free.
//!
//! `cargo run --release -p pora-mine --example hot_path -- FILE [THREADS] [NONCES]` measures, in
//! one run and on the same threads:
//! 1. the bound: the batch Keccak kernel the miner runs (`pora_core::keccak::keccak_batch_kernel`, e.g.
//!    x8-avx512), fed batches of 64 nonces' padded blocks, exactly a nonce's three permutations
//!    (hash0 + 2 steps) and nothing else: no reads, no scheduling;
//! 2. the scheduler over an in-memory backend (the shard's bytes loaded into RAM, reads
//!    completed inside submit like mmap): everything but the OS read;
//! 3. the scheduler over `pread` with the file in the page cache (one syscall per sample).
//!
//! The ratio 2/1 is the share of the hashing bound the scheduler reaches. (A scalar
//! one-permutation-at-a-time loop would flatter it: the miner never hashes that way.)

use pora_core::keccak::keccak256_padded_blocks;
use pora_core::{ShardSet, H256};
use pora_io::{
    Backend, BackendFactory, Completion, IoConfig, IoError, Method, QueueFull, SampleRead,
};
use pora_mine::lanes::{step_block, Hash0Prefix};
use pora_mine::{Find, MineConfig, Miner, OnIoError, SlotRequest};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = PathBuf::from(
        args.get(1)
            .expect("usage: hot_path FILE [THREADS] [NONCES]"),
    );
    let threads: usize = args.get(2).map_or(2, |s| s.parse().unwrap());
    let nonces: u64 = args.get(3).map_or(4 << 20, |s| s.parse().unwrap());
    let shard = ShardSet::open(std::slice::from_ref(&path), None).unwrap();
    let keccak = keccak_batch_bound(threads, nonces);
    println!(
        "batch keccak kernel {} alone ({threads} threads): {keccak:.0} nonces/s",
        pora_core::keccak::keccak_batch_kernel()
    );
    let bytes = Arc::new(std::fs::read(&path).unwrap());
    let mem: Arc<dyn BackendFactory> = Arc::new(MemFactory { bytes });
    let rate = mine(&shard, mem, threads, 64, nonces);
    println!(
        "scheduler, in-memory reads ({threads}x64): {rate:.0} nonces/s = {:.2} x the kernel bound",
        rate / keccak
    );
    let pread = pora_io::open(
        &[path],
        &IoConfig {
            method: Method::Pread,
            ..Default::default()
        },
    )
    .unwrap();
    let rate = mine(&shard, pread, threads, 64, nonces);
    println!(
        "scheduler, pread hot page cache ({threads}x64): {rate:.0} nonces/s = {:.2} x the kernel bound",
        rate / keccak
    );
}

/// Nonces/s of the batch kernel alone: per thread, batches of 64 nonces through hash0 and two
/// chain steps, each step one batched call, the sample taken from the hash (no read).
fn keccak_batch_bound(threads: usize, nonces: u64) -> f64 {
    const BATCH: usize = 64;
    let prefix = Hash0Prefix::new(&pora_core::Address([1; 20]), &H256([2; 32]));
    let per_thread = nonces / threads as u64 / BATCH as u64 * BATCH as u64;
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads as u64 {
            s.spawn(move || {
                let mut blocks = vec![[0u64; 17]; BATCH];
                let mut hashes = vec![[0u64; 4]; BATCH];
                let mut acc = 0u64;
                let first = t * per_thread;
                for batch in (first..first + per_thread).step_by(BATCH) {
                    for (i, block) in blocks.iter_mut().enumerate() {
                        *block = prefix.hash0_block(batch + i as u64);
                    }
                    keccak256_padded_blocks(&blocks, &mut hashes);
                    for _ in 0..2 {
                        for (block, h) in blocks.iter_mut().zip(&hashes) {
                            *block = step_block(h, &[h[0] as u8; 32]);
                        }
                        keccak256_padded_blocks(&blocks, &mut hashes);
                    }
                    acc ^= hashes[0][0];
                }
                std::hint::black_box(acc);
            });
        }
    });
    (per_thread * threads as u64) as f64 / start.elapsed().as_secs_f64()
}

fn mine(
    shard: &ShardSet,
    factory: Arc<dyn BackendFactory>,
    threads: usize,
    depth: usize,
    nonces: u64,
) -> f64 {
    let config = MineConfig::new(threads, depth).with_on_io_error(OnIoError::Stop);
    let miner = Miner::new(vec![shard.clone()], factory, config).unwrap();
    let request = SlotRequest::new(H256([3; 32]))
        .with_nonces(0..nonces)
        .with_slot_length(Duration::from_secs(120))
        .with_find(Find::All);
    let report = miner.mine_slot(&request, &AtomicBool::new(false)).unwrap();
    assert_eq!(report.shards[0].nonces_tried, nonces);
    nonces as f64 / report.elapsed_sec
}

/// Reads served from a copy of the file in memory, completed inside `submit`.
struct MemFactory {
    bytes: Arc<Vec<u8>>,
}

impl BackendFactory for MemFactory {
    fn method(&self) -> Method {
        Method::Mmap
    }
    fn describe(&self) -> String {
        "in-memory copy".into()
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        Ok(Box::new(MemBackend {
            bytes: self.bytes.clone(),
            queued: Vec::with_capacity(depth),
            done: Vec::with_capacity(depth),
            depth,
        }))
    }
}

struct MemBackend {
    bytes: Arc<Vec<u8>>,
    queued: Vec<SampleRead>,
    done: Vec<Completion>,
    depth: usize,
}

impl Backend for MemBackend {
    fn method(&self) -> Method {
        Method::Mmap
    }
    fn capacity(&self) -> usize {
        self.depth
    }
    fn in_flight(&self) -> usize {
        self.queued.len() + self.done.len()
    }
    fn push(&mut self, read: SampleRead) -> Result<(), QueueFull> {
        if self.in_flight() >= self.depth {
            return Err(QueueFull);
        }
        self.queued.push(read);
        Ok(())
    }
    fn submit(&mut self) -> Result<(), IoError> {
        for r in self.queued.drain(..) {
            let at = r.offset as usize;
            let sample: [u8; 32] = self.bytes[at..at + 32].try_into().unwrap();
            self.done.push(Completion {
                tag: r.tag,
                result: Ok(sample),
            });
        }
        Ok(())
    }
    fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        _min: usize,
        _deadline: Option<Instant>,
    ) -> Result<usize, IoError> {
        let n = self.done.len();
        out.append(&mut self.done);
        Ok(n)
    }
    fn drop_queued(&mut self) -> usize {
        let dropped = self.queued.len();
        self.queued.clear();
        dropped
    }
}
