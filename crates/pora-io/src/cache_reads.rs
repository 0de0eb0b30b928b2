//! Reads served from the page cache, counted by the backends that can tell (for `auto`).
//!
//! `auto` corrects its model of the page cache with the hit ratio a buffered path really got.
//! Linux gives it from outside the reads: the device's completed-read counter against the samples
//! read, and `cachestat`/`mincore` for the resident share. Windows has neither for a file, so the
//! backends count from the reads themselves:
//! - `iocp`: a buffered overlapped `ReadFile` that the cache manager can serve completes inside
//!   the call (its fast-I/O path copies from the cache and returns TRUE); one that needs the disk
//!   returns `ERROR_IO_PENDING`. Every read is classified, exactly, at no cost.
//! - `pread` and `mmap`: a synchronous read or a mapped copy is a hit when it took less than
//!   [`HIT_LATENCY`]: a copy from the cache or a soft fault costs microseconds, a read from the
//!   device tens of them or more. One read in [`TIMED_SAMPLE_EVERY`] is timed: a cached mapped
//!   copy costs about as much as the two clock reads, and a slot's million reads sampled at that
//!   rate still give the ratio to a fraction of a percent.
//!
//! Each worker tallies in plain integers and adds them to its factory's shared counters every
//! [`FLUSH_EVERY`] classified reads and when it is dropped: one atomic add per batch, not per read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A synchronous read that finished faster than this came from memory. Device reads of the
/// SSDs miners use take 40–100 µs at queue depth one, more under load; a cache hit 1–5 µs, a
/// soft fault a little more. A device faster than this (Optane-class) would be counted as hits:
/// the estimate then errs towards the page cache, which such a device hardly needs.
pub const HIT_LATENCY: Duration = Duration::from_micros(20);
/// One synchronous read or mapped copy in this many is timed.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) const TIMED_SAMPLE_EVERY: u32 = 16;
/// Classified reads a worker tallies before adding them to the shared counters.
const FLUSH_EVERY: u64 = 64;

/// Reads a factory's backends classified so far, and how many of them the page cache served.
/// Cumulative since the factory opened: a caller takes the difference over a slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheReads {
    pub classified: u64,
    pub hits: u64,
}

impl CacheReads {
    /// The reads counted since `earlier`.
    pub fn since(self, earlier: CacheReads) -> CacheReads {
        CacheReads {
            classified: self.classified.saturating_sub(earlier.classified),
            hits: self.hits.saturating_sub(earlier.hits),
        }
    }

    /// Hits over classified reads; `None` when nothing was classified.
    pub fn hit_ratio(self) -> Option<f64> {
        (self.classified > 0)
            .then(|| self.hits.min(self.classified) as f64 / self.classified as f64)
    }
}

/// The counters a factory shares with its workers.
#[derive(Debug, Default)]
pub(crate) struct CacheReadCounter {
    classified: AtomicU64,
    hits: AtomicU64,
}

#[cfg_attr(not(windows), allow(dead_code))]
impl CacheReadCounter {
    pub(crate) fn load(&self) -> CacheReads {
        CacheReads {
            classified: self.classified.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
        }
    }
}

/// One worker's tally, flushed into the factory's counter. Only the Windows backends keep one
/// (Linux counts at the device); its logic is unit-tested on every platform.
#[derive(Debug)]
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) struct CacheReadTally {
    shared: Arc<CacheReadCounter>,
    pending: CacheReads,
    sample_every: u32,
    until_timed: u32,
}

#[cfg_attr(not(windows), allow(dead_code))]
impl CacheReadTally {
    /// A tally that times one read in `sample_every` (at least 1) with [`CacheReadTally::timed`].
    pub(crate) fn new(shared: Arc<CacheReadCounter>, sample_every: u32) -> Self {
        CacheReadTally {
            shared,
            pending: CacheReads::default(),
            sample_every: sample_every.max(1),
            until_timed: 0,
        }
    }

    /// Counts one read whose source is known.
    pub(crate) fn record(&mut self, hit: bool) {
        self.pending.classified += 1;
        self.pending.hits += u64::from(hit);
        if self.pending.classified >= FLUSH_EVERY {
            self.flush();
        }
    }

    /// Runs `read`, timing it when it is this worker's turn to sample; a timed read that took
    /// less than [`HIT_LATENCY`] counts as a hit. Failed reads are not counted either way.
    pub(crate) fn timed<T, E>(&mut self, read: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        if self.until_timed > 0 {
            self.until_timed -= 1;
            return read();
        }
        self.until_timed = self.sample_every - 1;
        let started = Instant::now();
        let result = read();
        if result.is_ok() {
            self.record(started.elapsed() < HIT_LATENCY);
        }
        result
    }

    pub(crate) fn flush(&mut self) {
        if self.pending.classified > 0 {
            self.shared
                .classified
                .fetch_add(self.pending.classified, Ordering::Relaxed);
            self.shared
                .hits
                .fetch_add(self.pending.hits, Ordering::Relaxed);
            self.pending = CacheReads::default();
        }
    }
}

impl Drop for CacheReadTally {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_reach_the_shared_counter_in_batches_and_on_drop() {
        let shared = Arc::new(CacheReadCounter::default());
        let mut tally = CacheReadTally::new(shared.clone(), 1);
        for i in 0..FLUSH_EVERY {
            tally.record(i % 4 != 0);
        }
        assert_eq!(
            shared.load().classified,
            FLUSH_EVERY,
            "flushed at the batch"
        );
        tally.record(true);
        assert_eq!(shared.load().classified, FLUSH_EVERY, "one read waits");
        drop(tally);
        let got = shared.load();
        assert_eq!(got.classified, FLUSH_EVERY + 1);
        assert_eq!(got.hits, FLUSH_EVERY - FLUSH_EVERY / 4 + 1);
    }

    #[test]
    fn timed_reads_are_classified_by_latency_and_sampled() {
        let shared = Arc::new(CacheReadCounter::default());
        let mut tally = CacheReadTally::new(shared.clone(), 4);
        for _ in 0..8 {
            let got: Result<u8, ()> = tally.timed(|| Ok(7));
            assert_eq!(got, Ok(7));
        }
        let slow: Result<(), ()> = tally.timed(|| {
            std::thread::sleep(HIT_LATENCY * 50);
            Ok(())
        });
        slow.unwrap();
        let failed: Result<(), &str> = tally.timed(|| Err("eio"));
        assert!(failed.is_err());
        drop(tally);
        // Reads 0 and 4 were timed (fast: hits), read 8 (slow: a miss); the rest not sampled.
        assert_eq!(
            shared.load(),
            CacheReads {
                classified: 3,
                hits: 2
            }
        );
    }

    #[test]
    fn ratio_over_a_slot_is_the_difference() {
        let before = CacheReads {
            classified: 100,
            hits: 40,
        };
        let after = CacheReads {
            classified: 300,
            hits: 190,
        };
        assert_eq!(after.since(before).hit_ratio(), Some(0.75));
        assert_eq!(before.since(before).hit_ratio(), None);
    }
}
