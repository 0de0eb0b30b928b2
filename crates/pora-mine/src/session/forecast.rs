//! What `auto` expects of a shard's files on this machine now, for `pora doctor` and `pora
//! tune`: the same facts, candidates and model a session's first slot decides from
//! ([`crate::steer`]'s model follows the first slot through time, its own reads filling the page
//! cache), so what they print is what `pora mine` will do and print.

use super::knobs::{default_knobs, DeviceQueues};
use super::open::{candidates, path_rates, total_file_bytes, Tuned};
use super::steering::{cache_room, cached_fraction, observe};
use crate::steer::{Decision, RateSource, Steering};
use pora_io::host::file_devices::FileDevices;
use pora_io::host::memory::CacheRoom;
use pora_io::Method;
use serde::Serialize;
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
    files_outlook_on(paths, &FileDevices::default(), shards, profiled)
}

/// [`files_outlook`] with the devices under `paths` already read (a tune run's one reading;
/// those `devices` does not cover are read now).
pub fn files_outlook_on(
    paths: &[PathBuf],
    devices: &FileDevices,
    shards: usize,
    profiled: &[(Method, f64)],
) -> FilesOutlook {
    let file_bytes = total_file_bytes(paths);
    let room = cache_room();
    let cached_fraction = cached_fraction(paths, file_bytes);
    let devices = devices.covering(paths, &pora_io::host::Roots::default());
    let queues = DeviceQueues::on(&devices, paths);
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

/// The first slot's forecast and what the model worked it from, for a miner (or a test) to see
/// why: the chosen method's cold rate, the memory counted, and the cache's share when the slot
/// starts and the chance that a read hits when it ends.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FirstSlot {
    pub method: Method,
    /// Per shard, 0..1.
    pub mining_power: f64,
    /// The device's reads/s when every read misses, for the chosen path.
    pub cold_reads_per_sec: f64,
    pub rate_source: RateSource,
    pub shard_bytes: u64,
    /// The memory the page cache can grow into (`MemAvailable` within the cgroup's limit), as
    /// counted; `None` where the OS does not tell (then nothing is counted as cacheable).
    pub memory_counted_bytes: Option<u64>,
    pub cgroup_limit_bytes: Option<u64>,
    /// Share of the files in the page cache when the slot starts.
    pub cached_fraction: f64,
    /// Share of them the memory counted can hold, 0..1.
    pub cacheable_fraction: Option<f64>,
    /// The hit ratio over the slot's reads.
    pub hit_ratio: f64,
    /// The chance that a read hits at the slot's end: 0 on a direct path; on a buffered one the
    /// share of the shard cached by then, at most the cacheable fraction.
    pub hit_ratio_at_slot_end: f64,
}

impl FilesOutlook {
    /// The forecast as `pora tune` prints it: what `pora mine` starts with and its first slot
    /// and settled figures, each candidate's, and what the first slot's figure was worked from.
    pub fn lines(&self) -> Vec<String> {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let room = self
            .room
            .as_ref()
            .map_or("unknown memory".to_string(), |r| {
                format!("{:.1} GiB the page cache can grow into", gib(r.room_bytes))
            });
        let d = &self.decision;
        let mut lines = vec![format!(
            "forecast: `pora mine` starts with {} (auto, decided again before every slot): {:.1}% mining power in the first slot, {:.1}% once the page cache has settled (shard {:.1} GiB, {room})",
            d.candidate.method,
            d.predicted.next * 100.0,
            d.predicted.steady * 100.0,
            gib(self.file_bytes),
        )];
        lines.extend(d.forecasts.iter().map(|f| {
            format!(
                "  {}: {:.1}% the first slot, {:.1}% settled",
                f.method,
                f.predicted_mining_power * 100.0,
                f.predicted_steady_mining_power * 100.0
            )
        }));
        lines.push(format!("  {}", self.first_slot().line()));
        lines
    }

    /// The chosen candidate's first slot and its inputs.
    pub fn first_slot(&self) -> FirstSlot {
        let d = &self.decision;
        let chosen = d.forecasts.iter().find(|f| f.method == d.candidate.method);
        FirstSlot {
            method: d.candidate.method,
            mining_power: d.predicted.next,
            cold_reads_per_sec: chosen.map_or(0.0, |f| f.device_reads_per_sec),
            rate_source: chosen.map_or(RateSource::Assumed, |f| f.rate_source),
            shard_bytes: self.file_bytes,
            memory_counted_bytes: self.room.as_ref().map(|r| r.room_bytes),
            cgroup_limit_bytes: self.room.as_ref().and_then(|r| r.cgroup_limit_bytes),
            cached_fraction: d.cached_fraction,
            cacheable_fraction: d.cacheable_fraction,
            hit_ratio: d.predicted.next_hit_ratio,
            hit_ratio_at_slot_end: d.predicted.next_hit_ratio_end,
        }
    }
}

impl FirstSlot {
    /// One line: the figure and how it was worked.
    pub fn line(&self) -> String {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let memory = match (self.memory_counted_bytes, self.cgroup_limit_bytes) {
            (Some(m), Some(limit)) => format!(
                "{:.1} GiB counted (the memory cgroup's limit {:.1} GiB)",
                gib(m),
                gib(limit)
            ),
            (Some(m), None) => format!("{:.1} GiB counted", gib(m)),
            (None, _) => "memory unknown, nothing counted as cacheable".to_string(),
        };
        format!(
            "first slot: {} at {:.0} cold reads/s ({}), {:.0}% of the {:.1} GiB cached at its start, {memory}: {:.0}% of its reads hit, {:.0}% by its end, so {:.1}% mining power",
            self.method,
            self.cold_reads_per_sec,
            format!("{:?}", self.rate_source).to_lowercase(),
            self.cached_fraction * 100.0,
            gib(self.shard_bytes),
            self.hit_ratio * 100.0,
            self.hit_ratio_at_slot_end * 100.0,
            self.mining_power * 100.0
        )
    }
}
