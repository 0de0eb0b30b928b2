//! Opening shards by path the way every front end does: group files into shards and shards by
//! device, find each device's tune profile, resolve `auto` (the steering's first decision),
//! choose threads and depth (by the rule in `knobs.rs`), and open one backend factory per
//! device. This is the one place that blocks on opening files; slots never do (`crate::pool`).

use super::knobs::{knobs, DeviceQueues};
// Where `forecast.rs` finds them beside the other facts of opening.
pub(crate) use super::knobs::{candidates, Tuned};
use super::options::{OpenOptions, ProfileSource};
use super::steering::{cached_fraction, observe, PoolSide};
use crate::devices::DeviceGroup;
use crate::errand::Errands;
use crate::profile::{self, Lookup};
use crate::records::{Choice, SteeringRecord};
use crate::steer::model::ReadPath;
use crate::steer::{Candidate, Decision, Observation, Steering};
use crate::{MineError, Miner, Pool};
use pora_core::ShardSet;
use pora_io::host::memory::CacheRoom;
use pora_io::{BackendFactory, IoConfig, IoError, Method};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::defaults::available_cpus;

/// One device's shards, opened: its pool for the miner, its side of the session and the notes.
pub(crate) struct OpenedDevice {
    pub pool: Pool,
    pub side: PoolSide,
    pub notes: Vec<String>,
}

/// Finds the device's profile (beside its first file), resolves the method (for `auto`, the
/// steering's first decision), opens the factory over its shards' files and picks threads and
/// depth.
pub(crate) fn open_device(
    shards: &[ShardSet],
    user_files: &[PathBuf],
    device: &DeviceGroup,
    options: &OpenOptions,
    room: Option<&CacheRoom>,
    session_bytes: u64,
) -> Result<OpenedDevice, MineError> {
    let paths = Miner::paths(shards);
    let (tuned, notes) = find_profile(user_files, options)?;
    let bytes = total_file_bytes(&paths);
    // The session's one reading of the devices, the one the rings' rhythm follows too.
    let queues = DeviceQueues::on(&options.io.devices, &paths);
    let mut steering = (options.io.method == Method::Auto).then(|| {
        let profiled = path_rates(tuned.as_ref().map_or(&[][..], |t| &t.rates));
        let candidates = candidates(tuned.as_ref(), &queues, options.threads);
        Steering::new(candidates, &profiled)
    });
    let observation = first_observation(&paths, bytes, shards.len(), options, room, session_bytes);
    let (factory, why, first_decision) =
        open_first(&paths, options, steering.as_mut(), &observation)?;
    let method = factory.method();
    let (threads, depth, why) = match &first_decision {
        Some(d) if d.candidate.method == method => (
            options.threads.unwrap_or(d.candidate.threads),
            options.depth.unwrap_or(d.candidate.depth),
            why,
        ),
        _ => knobs(method, why, tuned.as_ref(), &paths, &queues, options),
    };
    if let Some(st) = steering.as_mut() {
        // Knobs the caller fixed, or a method the files forced, leave one candidate: the one
        // opened. Otherwise the steering starts from the candidate opened.
        let opened = Candidate {
            method,
            threads,
            depth,
            path: read_path(method),
        };
        if options.threads.is_some() || options.depth.is_some() || first_decision.is_none() {
            st.pin(opened);
        }
    }
    let choice = Choice {
        method,
        threads,
        depth,
        profile: tuned.filter(|t| t.method == method).map(|t| t.path),
        why,
        device: device.device.clone(),
        shards: shards.iter().map(|s| s.geometry.shard_idx).collect(),
        io: factory.describe(),
        steering: first_decision
            .as_ref()
            .map(|d| SteeringRecord::new(d, room, (0.0, 0.0))),
    };
    let pool = Pool {
        shards: shards.len(),
        factory,
        threads,
        depth,
    };
    let side = PoolSide {
        choice,
        steering: steering.map(|st| st.restart()),
        parked: Vec::new(),
        device: pora_io::host::block_device::block_device_of(&paths[0]).ok(),
        paths,
        bytes,
        io: options.io.clone(),
        errands: Errands::new("pora-steering"),
    };
    Ok(OpenedDevice { pool, side, notes })
}

/// What the first slot's decision sees of a device's `shards` shards: their files' bytes and
/// how much of them is cached, the memory's room, and the samples a slot of es-node's length
/// needs from them.
fn first_observation(
    paths: &[PathBuf],
    bytes: u64,
    shards: usize,
    options: &OpenOptions,
    room: Option<&CacheRoom>,
    session_bytes: u64,
) -> Observation {
    let samples_needed =
        (crate::NONCES_PER_SLOT * u64::from(options.random_checks) * shards as u64) as f64;
    observe(
        bytes,
        cached_fraction(paths, bytes),
        room,
        session_bytes,
        samples_needed,
        crate::SLOT_LENGTH.as_secs_f64(),
    )
}

/// A device's first factory, why it was chosen, and the decision that chose it (`auto` only).
type FirstOpened = (Arc<dyn BackendFactory>, String, Option<Decision>);

/// The first factory: for `auto` the steering's first decision, a candidate the files refuse
/// (O_DIRECT on a file system without it) forgotten and the next best taken; else the method
/// given. Returns it with why, and the decision that chose it.
fn open_first(
    paths: &[PathBuf],
    options: &OpenOptions,
    mut steering: Option<&mut Steering>,
    observation: &Observation,
) -> Result<FirstOpened, MineError> {
    let open = |method: Method| {
        let io = IoConfig {
            method,
            ..options.io.clone()
        };
        pora_io::open(paths, &io).map_err(|source| MineError::Open { method, source })
    };
    loop {
        let Some(st) = steering
            .as_deref_mut()
            .filter(|st| !st.candidates().is_empty())
        else {
            let method = options.io.method;
            let why = match method {
                Method::Auto => "auto: no candidate opens here, the documented rule".to_string(),
                m => format!("{} {m}", pora_core::Input::Method),
            };
            return Ok((open(method)?, why, None));
        };
        let decision = st.decide(observation);
        match open(decision.candidate.method) {
            Ok(factory) => return Ok((factory, decision.why.clone(), Some(decision))),
            Err(MineError::Open {
                source: IoError::Unavailable { .. },
                ..
            }) if st.candidates().len() > 1 => st.forget(decision.candidate.method),
            Err(e) => return Err(e),
        }
    }
}

/// One [`ShardSet`] per group; a shard given twice is refused.
pub fn open_shards(
    groups: &[Vec<PathBuf>],
    kv_entries_bits: Option<u32>,
) -> Result<Vec<ShardSet>, MineError> {
    let mut shards: Vec<ShardSet> = Vec::with_capacity(groups.len());
    for (group, files) in groups.iter().enumerate() {
        let shard = ShardSet::open(files, kv_entries_bits).map_err(|source| MineError::Shard {
            group: group + 1,
            source,
        })?;
        let shard_idx = shard.geometry.shard_idx;
        if let Some(first) = shards
            .iter()
            .position(|s| s.geometry.shard_idx == shard_idx)
        {
            return Err(MineError::DuplicateShard {
                first: first + 1,
                second: group + 1,
                shard: shard_idx,
            });
        }
        shards.push(shard);
    }
    Ok(shards)
}

/// A profile that matches the files now, and the notes to print about what was found.
fn find_profile(
    files: &[PathBuf],
    options: &OpenOptions,
) -> Result<(Option<Tuned>, Vec<String>), MineError> {
    let explicit = match &options.profile {
        ProfileSource::Ignore => return Ok((None, Vec::new())),
        ProfileSource::At(path) => Some(path.as_path()),
        ProfileSource::BesideFirstFile => None,
    };
    match profile::lookup_on(files, explicit, &options.io.devices)? {
        Lookup::Absent => Ok((None, Vec::new())),
        Lookup::Stale { path, why } => Ok((
            None,
            vec![format!(
                "not using profile {}: {why}; re-run `pora tune`",
                path.display()
            )],
        )),
        Lookup::Use { path, profile: p } => {
            let note = format!(
                "using profile {} ({}, {} threads, depth {}, tuned {})",
                path.display(),
                p.method,
                p.threads,
                p.depth,
                p.created
            );
            let tuned = Tuned {
                path,
                method: p.method,
                threads: p.threads,
                depth: p.depth,
                rates: p.rates(),
            };
            Ok((Some(tuned), vec![note]))
        }
    }
}

/// The path of the profile `pora tune` writes for `first_file`.
pub fn default_profile_path(first_file: &Path) -> PathBuf {
    profile::default_path(first_file)
}

pub(crate) fn total_file_bytes(paths: &[PathBuf]) -> u64 {
    paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// Per read path the first rate `rates` gives for one of its methods.
pub(crate) fn path_rates(rates: &[(Method, f64)]) -> Vec<(ReadPath, f64)> {
    rates.iter().map(|&(m, r)| (read_path(m), r)).collect()
}

/// The read path a method takes.
pub(crate) fn read_path(method: Method) -> ReadPath {
    method.read_path()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One `auto`: what pora-io opens for `auto` with nothing known ([`Method::resolve_auto`],
    /// its own rule) is the steering's decision for a cold shard with no profile and nothing
    /// measured, whatever the memory, with the knobs worked out by hand for 8 CPUs and an
    /// unknown device: a ring 8 x 256, a synchronous read 64 x 1.
    #[test]
    fn steering_and_resolve_auto_agree_when_nothing_is_known() {
        const GIB: u64 = 1 << 30;
        let room = |bytes: u64| CacheRoom {
            mem_available_bytes: bytes,
            mem_total_bytes: bytes,
            cgroup_limit_bytes: None,
            cgroup_room_bytes: None,
            room_bytes: bytes,
        };
        let queues = DeviceQueues::unknown(8);
        for memory in [None, Some(room(GIB)), Some(room(64 * GIB))] {
            let mut steering = Steering::new(candidates(None, &queues, None), &[]);
            let d = steering.decide(&observe(
                8 * GIB,
                Some(0.0),
                memory.as_ref(),
                8 * GIB,
                (2u64 << 20) as f64,
                12.0,
            ));
            assert_eq!(d.candidate.method, Method::resolve_auto(), "{}", d.why);
            let by_hand = match d.candidate.method {
                Method::Uring | Method::Iocp => (8, 256),
                Method::Pread => (64, 1),
                m => panic!("auto opened {m} for a cold shard with nothing known"),
            };
            assert_eq!((d.candidate.threads, d.candidate.depth), by_hand);
        }
    }

    /// `auto` weighs a buffered path, a direct one and a map wherever a failing disk under the
    /// map fails a read instead of ending the process: Unix (SIGBUS) and Windows x86_64 (the
    /// in-page error).
    #[test]
    fn auto_weighs_a_map_where_its_faults_are_contained() {
        let paths: Vec<ReadPath> = candidates(None, &DeviceQueues::unknown(2), None)
            .iter()
            .map(|c| c.path)
            .collect();
        assert!(paths.contains(&ReadPath::Buffered), "{paths:?}");
        let contained = cfg!(unix) || cfg!(all(windows, target_arch = "x86_64"));
        assert_eq!(paths.contains(&ReadPath::Mapped), contained, "{paths:?}");
    }
}
