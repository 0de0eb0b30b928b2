//! Deterministic simulated disk (`--method sim`): seeded latency, reordering and injected faults
//! over the real files' bytes, for tests of everything above the backend.
//!
//! The bytes are real: each read is a positional read of the file opened (read-only) when the
//! factory was created, performed when the read is submitted. What is simulated is *when* the
//! completion is delivered: every read draws a latency (uniform over `latency_us`, or over
//! `slow_latency_us` with probability `slow_probability`) when it is pushed, and becomes due at
//! submit time + latency; [`crate::Backend::reap`] delivers due completions in due-time order
//! (ties in push order), so completions are reordered against submission exactly as the draws
//! say. Latency is real time (the device sleeps until a read is due), not a virtual clock: the
//! miner, bench and tune keep their deadlines and rates on `Instant`, so a clock of the device's
//! own would disagree with every deadline above it.
//! Faults ([`SimFault`]) turn reads touching chosen byte ranges into EIO or short reads, always
//! or with `fault_probability`.
//!
//! Every random choice comes from one xoshiro generator per worker backend, seeded from
//! `seed` and the worker's creation number, so a run is deterministic given the seed and the
//! order of pushes. Storage for `capacity()` reads is allocated when the worker is created;
//! nothing is allocated per read. [`SimStats`] is a shared handle of counters (including the
//! most reads any one worker ever had in flight) that tests keep a clone of.
//!
//! Two more behaviours, for tests of bounded waits:
//! - a dead device (`dead_after_reads`): after that many reads, counted over every worker of
//!   the factory, the device stops answering: later reads never complete and cannot be
//!   cancelled, as on a disk that hung. A `reap` waits for them until its deadline (forever
//!   without one), `cancel_all` gives up after its time, and dropping such a backend counts it
//!   in [`crate::leaked_backends`], like a real one that had to leak its buffers;
//! - a synchronous mode (`synchronous`): the worker is an inline backend, like `pread`, whose
//!   reads block for their drawn latency (forever on a dead device), to test that synchronous
//!   batches honour deadlines. In this mode `reads_submitted` counts reads performed, and the
//!   push/reap counters stay 0.
//!
//! The device itself (its factory and backends, and the random generator it draws from) is
//! compiled only with pora-io's `sim` cargo feature: release builds of the `pora` binary and of
//! the C library leave it out, and the tests get it from dev-dependencies that turn the feature
//! on (`sim` features of pora-mine, pora-measure, pora-ffi and pora forward it). Without the
//! feature `sim` still parses as a method name but is unavailable, with a reason that names the
//! cargo command. The description of a simulated disk ([`SimConfig`], [`SimFault`], the
//! [`SimStats`] handle) is in every build, inert without the device: it is a field of structs
//! other crates build by literal ([`crate::IoConfig`], the C ABI's open options), and a cargo
//! feature may only add code, never change the fields of a public struct.

use crate::method::Unavailable;
use crate::{FactoryResult, IoConfig};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

#[cfg(feature = "sim")]
mod device;

/// How the simulated disk behaves.
#[derive(Clone, Debug, Default)]
pub struct SimConfig {
    /// Seed of every random choice (latency, order, probabilistic faults).
    pub seed: u64,
    /// Each read completes after a latency drawn uniformly from this range, microseconds.
    pub latency_us: (u32, u32),
    /// Injected faults.
    pub faults: Vec<SimFault>,
    /// Probability (0..=1) that a read draws its latency from `slow_latency_us` instead: a slow
    /// tail like a disk's occasional long read. 0 disables it.
    pub slow_probability: f64,
    /// Latency range of the slow tail, microseconds.
    pub slow_latency_us: (u32, u32),
    /// Probability (0..=1) that a read touching a fault's range fails; `None` means always.
    pub fault_probability: Option<f64>,
    /// Counters shared by every worker of the factory; keep a clone to read them.
    pub stats: SimStats,
    /// The device stops answering after this many reads (over all workers): every later read
    /// never completes. `None`: it never dies.
    pub dead_after_reads: Option<u64>,
    /// Workers perform each read synchronously (sleeping its latency), like `pread`.
    pub synchronous: bool,
}

/// A fault injected for reads that touch `[offset_start, offset_end)` of file `file`.
#[derive(Clone, Debug)]
pub struct SimFault {
    pub file: u32,
    pub offset_start: u64,
    pub offset_end: u64,
    /// `true`: a short read; `false`: EIO.
    pub short_read: bool,
}

/// Counters of a simulated disk, shared by all its workers (cloning shares them).
#[derive(Clone, Debug, Default)]
pub struct SimStats {
    inner: Arc<StatsInner>,
}

#[derive(Debug, Default)]
struct StatsInner {
    reads_pushed: AtomicU64,
    reads_submitted: AtomicU64,
    completions_reaped: AtomicU64,
    faults_injected: AtomicU64,
    max_in_flight_seen: AtomicUsize,
    workers_created: AtomicU64,
    reads_unanswered: AtomicU64,
}

impl SimStats {
    /// Reads accepted by `push` on any worker.
    pub fn reads_pushed(&self) -> u64 {
        self.inner.reads_pushed.load(Ordering::Relaxed)
    }
    /// Reads handed to the simulated device by `submit`.
    pub fn reads_submitted(&self) -> u64 {
        self.inner.reads_submitted.load(Ordering::Relaxed)
    }
    /// Completions delivered by `reap`.
    pub fn completions_reaped(&self) -> u64 {
        self.inner.completions_reaped.load(Ordering::Relaxed)
    }
    /// Reads that failed because of a [`SimFault`].
    pub fn faults_injected(&self) -> u64 {
        self.inner.faults_injected.load(Ordering::Relaxed)
    }
    /// The most reads (pushed and not yet reaped) any single worker ever had at once.
    pub fn max_in_flight_seen(&self) -> usize {
        self.inner.max_in_flight_seen.load(Ordering::Relaxed)
    }
    /// Worker backends created so far.
    pub fn workers_created(&self) -> u64 {
        self.inner.workers_created.load(Ordering::Relaxed)
    }
    /// Reads the dead device took and will never answer.
    pub fn reads_unanswered(&self) -> u64 {
        self.inner.reads_unanswered.load(Ordering::Relaxed)
    }
    /// Adds `n` to the counter `which` picks; the value before (how the simulated device counts).
    #[cfg(feature = "sim")]
    fn bump(&self, which: fn(&StatsInner) -> &AtomicU64, n: u64) -> u64 {
        which(&self.inner).fetch_add(n, Ordering::Relaxed)
    }
}

/// Why `sim` cannot be opened in a build without the feature, and how to get one that can.
const NOT_BUILT: &str =
    "the simulated disk is only in builds with the `sim` cargo feature (build pora with it)";

/// Whether this build has the simulated disk.
pub(crate) fn availability() -> Result<(), Unavailable> {
    if cfg!(feature = "sim") {
        Ok(())
    } else {
        Err(Unavailable(NOT_BUILT.into()))
    }
}

/// The error opening `sim` gives in a build without the feature: the one `method::open` makes
/// from [`availability`] before it would get to [`open`].
#[cfg(any(test, not(feature = "sim")))]
fn not_built() -> crate::IoError {
    crate::IoError::Unavailable {
        method: crate::Method::Sim.name(),
        reason: NOT_BUILT.into(),
    }
}

/// Opens the simulated disk over `paths`.
#[cfg(feature = "sim")]
pub(crate) fn open(paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
    device::open(paths, config)
}

/// Without the device there is nothing to open.
#[cfg(not(feature = "sim"))]
pub(crate) fn open(_paths: &[PathBuf], _config: &IoConfig) -> FactoryResult {
    Err(not_built())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Method;

    /// The refusal a build without the feature gives is the one documented (docs/io-methods.md),
    /// and availability follows the build. CI builds tests with the feature, so the refusal's
    /// text is checked here through the same function that build uses.
    #[test]
    fn sim_is_available_exactly_in_builds_with_the_feature() {
        assert_eq!(Method::Sim.availability().is_ok(), cfg!(feature = "sim"));
        assert_eq!(
            not_built().to_string(),
            "method `sim` is unavailable: the simulated disk is only in builds with the `sim` \
             cargo feature (build pora with it)"
        );
        let parsed: Method = "sim".parse().unwrap();
        assert_eq!(parsed, Method::Sim, "the name parses in every build");
    }
}
