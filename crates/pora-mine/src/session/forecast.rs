//! What `auto` expects of a shard's files on this machine now, for `pora doctor` and `pora
//! tune`: the same facts, candidates and model a session's first slot decides from, so what
//! they print is what `pora mine` will do.

use super::knobs::{default_knobs, DeviceQueues};
use super::open::{candidates, path_rates, total_file_bytes, Tuned};
use super::steering::{cache_room, cached_fraction, observe};
use crate::steer::{Decision, Steering};
use pora_io::host::memory::CacheRoom;
use pora_io::Method;
use std::path::PathBuf;

/// The facts `auto` decides from for a shard's files and its forecast for the first slot and the
/// steady state.
#[derive(Clone, Debug)]
pub struct FilesOutlook {
    pub file_bytes: u64,
    /// Share of the files in the page cache now, where the OS tells.
    pub cached_fraction: Option<f64>,
    pub room: Option<CacheRoom>,
    /// The decision `auto` would take for a first slot of 2^20 nonces per shard, 12 s.
    pub decision: Decision,
}

/// [`FilesOutlook`] for `paths`, the files of `shards` shards that share one device (one pool, as
/// a session mines them: every shard's nonces in the slot, the page cache's room shared by all
/// their bytes), with a tune profile's cold samples/s per method for the whole device (its
/// chosen method first). The mining power is per shard: each shard's share of its own nonces.
pub fn files_outlook(paths: &[PathBuf], shards: usize, profiled: &[(Method, f64)]) -> FilesOutlook {
    let file_bytes = total_file_bytes(paths);
    let room = cache_room();
    let cached_fraction = cached_fraction(paths, file_bytes);
    let queues = DeviceQueues::of(paths);
    // The profile's method stands for its read path, as in a session opened with it.
    let tuned = profiled.first().map(|&(method, _)| {
        let (threads, depth) = default_knobs(method, false, &queues, None);
        Tuned {
            path: PathBuf::new(),
            method,
            threads,
            depth,
            rates: profiled.to_vec(),
        }
    });
    let mut steering = Steering::new(
        candidates(tuned.as_ref(), &queues, None),
        &path_rates(profiled),
    );
    let decision = steering.decide(&observe(
        file_bytes,
        cached_fraction,
        room.as_ref(),
        file_bytes,
        (crate::NONCES_PER_SLOT * u64::from(crate::RANDOM_CHECKS) * shards.max(1) as u64) as f64,
        crate::SLOT_LENGTH.as_secs_f64(),
    ));
    FilesOutlook {
        file_bytes,
        cached_fraction,
        room,
        decision,
    }
}
