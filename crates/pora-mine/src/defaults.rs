//! Every default and limit the doors share — the CLI, the C ABI (its header's `PORA_DEFAULT_*`
//! and `PORA_MAX_*`, checked equal to these when the library builds), the Go package (which
//! reads the header) and the service — stated once. es-node's values are its consensus
//! parameters; the limits are pora's, so absurd inputs are refused before anything is allocated.

use std::time::Duration;

/// es-node's nonces per shard and slot (`nonceLimit`).
pub const NONCES_PER_SLOT: u64 = 1 << 20;
/// es-node's slot length, milliseconds.
pub const SLOT_LENGTH_MS: u64 = 12_000;
/// es-node's slot length.
pub const SLOT_LENGTH: Duration = Duration::from_millis(SLOT_LENGTH_MS);
/// Longest slot pora mines in one call: one day, far beyond any real slot.
pub const MAX_SLOT_LENGTH_MS: u64 = 86_400_000;
/// es-node's samples per nonce (`randomChecks`).
pub const RANDOM_CHECKS: u32 = 2;
/// Most samples per nonce.
pub const MAX_RANDOM_CHECKS: u32 = 64;
/// Most worker threads.
pub const MAX_THREADS: usize = 1024;
/// Most chains (reads in flight) per worker.
pub const MAX_DEPTH: usize = 65_536;
/// Most chains over all workers: about 100 bytes each plus a completion slot, so at most a few
/// hundred MiB, and far beyond any device's useful queue depth.
pub const MAX_TOTAL_CHAINS: usize = 4 << 20;

/// CPUs this process may use (1 when the OS does not say).
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
