//! Threads and reads in flight per thread for one device's pool: the one rule, with the device
//! queue's share in it. pora-io reports what the kernel has (each disk's requests per queue,
//! the queues a read is sent on, how a stacked device sends a read to its disks:
//! `pora_io::host::block_device`); what pora does with those facts is decided here, once, for
//! every caller: a session opening a pool ([`knobs`]), `auto`'s candidates ([`candidates`])
//! and the forecast that `pora doctor` and `pora tune` print ([`default_knobs`]). It sits in
//! pora-mine because the knobs are the miner's: its threads and its chains per thread. The
//! devices' facts come from the session's one reading of them
//! (`pora_io::host::file_devices::FileDevices`), the same the rings' submission rhythm follows.

use super::options::OpenOptions;
use crate::defaults::available_cpus;
use crate::steer::model::ReadPath;
use crate::steer::Candidate;
use pora_io::host::block_device::{DeviceFacts, LeafDisk, ReadSpread};
use pora_io::host::file_devices::FileDevices;
use pora_io::Method;
use std::path::PathBuf;

/// A profile that matches the files now (found by `open.rs`), with the knobs it was tuned to.
pub(crate) struct Tuned {
    pub path: PathBuf,
    pub method: Method,
    pub threads: usize,
    pub depth: usize,
    /// The profile's cold samples/s per method: its own first, then the sweep's best of the
    /// others.
    pub rates: Vec<(Method, f64)>,
}

/// Reads in flight per thread for methods that batch (asynchronous ones, and synchronous ones on
/// a shard held in memory).
pub(crate) const DEEP_DEPTH: usize = 256;
/// Threads of a synchronous method on a cold shard: each thread has one read in flight, so it
/// takes many to keep a device queue busy.
pub(crate) const SYNC_COLD_THREADS: usize = 64;
/// Share of a shard's bytes in the page cache from which it is treated as held in memory.
pub(crate) const RESIDENT_FRACTION: f64 = 0.9;

/// The queues of the devices under one pool's files, and the CPUs its threads run on.
#[derive(Clone, Debug)]
pub(crate) struct DeviceQueues {
    /// Each distinct known device under the files (none: tmpfs, a network file system, not
    /// Linux). A shard's files may sit on several.
    devices: Vec<DeviceFacts>,
    cpus: usize,
}

impl DeviceQueues {
    /// The devices under every one of `paths` as `devices` read them (a session's one reading),
    /// threads running on this machine's CPUs.
    pub(crate) fn on(devices: &FileDevices, paths: &[PathBuf]) -> Self {
        let mut distinct: Vec<DeviceFacts> = Vec::new();
        for facts in paths.iter().filter_map(|p| devices.facts(p)) {
            if !distinct
                .iter()
                .any(|d| (d.major, d.minor) == (facts.major, facts.minor))
            {
                distinct.push(facts.clone());
            }
        }
        DeviceQueues {
            devices: distinct,
            cpus: available_cpus(),
        }
    }

    /// A device whose queues are unknown, threads running on `cpus` CPUs.
    #[cfg(test)]
    pub(crate) fn unknown(cpus: usize) -> Self {
        DeviceQueues {
            devices: Vec::new(),
            cpus,
        }
    }

    /// `facts`' device, threads running on `cpus` CPUs (for the tests' canned sysfs trees).
    #[cfg(all(test, unix))]
    pub(crate) fn new(facts: DeviceFacts, cpus: usize) -> Self {
        DeviceQueues {
            devices: vec![facts],
            cpus,
        }
    }

    /// Reads the disks at the bottom hold queued at once when `threads` threads submit: per
    /// disk `nr_requests` on each queue a read is sent on that a thread reaches. A thread
    /// submits on the queue of the CPU it runs on, so the threads reach at most as many queues
    /// as there are threads, and as CPUs they run on; an NVMe drive's poll and write queues take
    /// no read. Disks a read may go to add up (stripes); of mirrors each read goes to one, so
    /// they count as the least of them, the room md's read balancing cannot fail to give.
    /// More reads than this do not reach the device sooner: they wait for a free request in the
    /// block layer, and an io_uring read that finds none is handed to a kernel worker thread
    /// that sleeps for it (docs/BENCHMARKS.md 30). Files on several devices take the least of
    /// theirs: no device is sent more than it queues. `None` when no device is known, or no
    /// known device's `nr_requests`.
    pub(crate) fn request_slots(&self, threads: usize) -> Option<usize> {
        let reach = threads.clamp(1, self.cpus.max(1));
        self.devices
            .iter()
            .filter_map(|facts| spread_slots(&facts.reads, &facts.leaves, reach))
            .min()
    }

    /// Reads in flight per thread for `threads` threads that send every read to the device:
    /// [`DEEP_DEPTH`], or each thread's share of [`Self::request_slots`] when that is less, and
    /// never below one (docs/BENCHMARKS.md 30: on a device queuing 128, 2 x 64 read 1.4–1.8x
    /// what 2 x 256 read, at 0.4x the CPU per read).
    pub(crate) fn depth_per_thread(&self, threads: usize) -> usize {
        self.request_slots(threads).map_or(DEEP_DEPTH, |slots| {
            (slots / threads.max(1)).clamp(1, DEEP_DEPTH)
        })
    }
}

/// [`DeviceQueues::request_slots`] over one part of a stack, `reach` queues per disk at most.
fn spread_slots(spread: &ReadSpread, leaves: &[LeafDisk], reach: usize) -> Option<usize> {
    match spread {
        ReadSpread::Disk(i) => {
            let queue = &leaves.get(*i)?.queue;
            let per_queue = queue.nr_requests? as usize;
            let queues = queue.read_queues.or(queue.hw_queues).unwrap_or(1).max(1) as usize;
            Some(per_queue * queues.min(reach))
        }
        ReadSpread::All(parts) => {
            // Partitions of one disk under one layer share the disk's queues: it counts once.
            let mut seen = Vec::with_capacity(parts.len());
            parts
                .iter()
                .filter(|p| match p {
                    ReadSpread::Disk(i) if seen.contains(i) => false,
                    ReadSpread::Disk(i) => {
                        seen.push(*i);
                        true
                    }
                    _ => true,
                })
                .map(|p| spread_slots(p, leaves, reach))
                .sum()
        }
        ReadSpread::AnyOne(parts) => parts
            .iter()
            .map(|p| spread_slots(p, leaves, reach))
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .min(),
    }
}

/// Whether `method`'s depth is held to the device queue's share: its reads bypass the page cache
/// (each reaches the device) and complete asynchronously (a thread keeps `depth` of them queued
/// at once).
pub(crate) fn fills_device_queue(method: Method) -> bool {
    let capabilities = method.capabilities();
    capabilities.bypasses_page_cache && !capabilities.completes_inline
}

/// The default (threads, depth) of a concrete method on `queues`' device, for `threads` threads
/// when the caller fixed them: a synchronous method on a cold shard takes many threads with one
/// read each; one that fills the device queue takes a thread per CPU, each with its share of
/// the queues those threads reach; the others a thread per CPU with [`DEEP_DEPTH`].
pub(crate) fn default_knobs(
    method: Method,
    resident: bool,
    queues: &DeviceQueues,
    threads: Option<usize>,
) -> (usize, usize) {
    let cpus = queues.cpus;
    if method.capabilities().completes_inline && !resident {
        (threads.unwrap_or(cpus.max(SYNC_COLD_THREADS)), 1)
    } else if fills_device_queue(method) {
        let threads = threads.unwrap_or(cpus);
        (threads, queues.depth_per_thread(threads))
    } else {
        (threads.unwrap_or(cpus), DEEP_DEPTH)
    }
}

/// Threads and depth of a pool opened with `method`: explicit values win, then the profile's
/// (for its own method), then [`default_knobs`] for a resident or a cold shard, the depth
/// fitted to the threads that run. Returns them with `why` and the shape of the choice.
pub(crate) fn knobs(
    method: Method,
    why: String,
    tuned: Option<&Tuned>,
    paths: &[PathBuf],
    queues: &DeviceQueues,
    options: &OpenOptions,
) -> (usize, usize, String) {
    let (threads, depth, why) = match tuned {
        Some(t) if t.method == method => (t.threads, t.depth, why),
        _ => {
            // O_DIRECT reads bypass the page cache: residency says nothing about them; and with
            // both knobs given it would not change anything.
            let both_given = options.threads.is_some() && options.depth.is_some();
            let capabilities = method.capabilities();
            let resident = capabilities.completes_inline
                && !capabilities.bypasses_page_cache
                && !both_given
                && resident_percent(paths).is_some_and(|p| p >= RESIDENT_FRACTION * 100.0);
            let (t, d) = default_knobs(method, resident, queues, options.threads);
            let shape = if !capabilities.completes_inline {
                "asynchronous: few threads, deep queues"
            } else if resident {
                "synchronous on a shard in memory: few threads, deep batches"
            } else {
                "synchronous on a cold shard: many threads, one read each"
            };
            (t, d, format!("{why}; {shape}"))
        }
    };
    (
        options.threads.unwrap_or(threads),
        options.depth.unwrap_or(depth),
        why,
    )
}

/// The methods `auto` chooses among here ([`Method::auto_candidates`]: one per read path, each
/// the method pora-io ranks first on this platform); a profile's method replaces the
/// platform's choice of its path, with the profile's knobs. The others take the default knobs
/// on `queues`' device for `threads` threads when the caller fixed them.
pub(crate) fn candidates(
    tuned: Option<&Tuned>,
    queues: &DeviceQueues,
    threads: Option<usize>,
) -> Vec<Candidate> {
    Method::auto_candidates()
        .into_iter()
        .map(|method| {
            let path = method.read_path();
            match tuned.filter(|t| t.method.read_path() == path) {
                Some(t) => Candidate {
                    method: t.method,
                    threads: t.threads,
                    depth: t.depth,
                    path,
                },
                None => {
                    let (threads, depth) =
                        default_knobs(method, path == ReadPath::Mapped, queues, threads);
                    Candidate {
                        method,
                        threads,
                        depth,
                        path,
                    }
                }
            }
        })
        .collect()
}

/// Share of the files' bytes in the page cache, when the OS tells: mincore over a fixed sample of
/// windows, so the check costs the same for a 1 GiB and a 1 TiB shard.
fn resident_percent(paths: &[PathBuf]) -> Option<f64> {
    let (mut cached, mut total) = (0u64, 0u64);
    for path in paths {
        let r = pora_io::host::page_cache::residency_sampled(path).ok()?;
        cached += r.cached_bytes;
        total += r.file_bytes;
    }
    (total > 0).then(|| cached as f64 * 100.0 / total as f64)
}

// The canned sysfs trees are written with symlinks.
#[cfg(all(test, unix))]
mod tests;
