//! Opening shards by path the way every front end does: group files into shards and shards by
//! device, find each device's tune profile, resolve `auto` (the steering's first decision),
//! choose threads and depth, and open one backend factory per device. This is the one place
//! that blocks on opening files; slots never do (`crate::pool`).

use super::options::{OpenOptions, ProfileSource};
use super::steering::{cached_fraction, observe, PoolSide};
use crate::devices::DeviceGroup;
use crate::errand::Errands;
use crate::profile::{self, Lookup};
use crate::records::{Choice, SteeringRecord};
use crate::steer::model::ReadPath;
use crate::steer::{Candidate, Decision, Steering};
use crate::{MineError, Miner, Pool};
use pora_core::ShardSet;
use pora_io::host::memory::CacheRoom;
use pora_io::{BackendFactory, IoConfig, IoError, Method};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::defaults::available_cpus;

/// Reads in flight per thread for methods that batch (asynchronous ones, and synchronous ones on
/// a shard held in memory).
pub const DEEP_DEPTH: usize = 256;
/// Threads of a synchronous method on a cold shard: each thread has one read in flight, so it
/// takes many to keep a device queue busy.
pub const SYNC_COLD_THREADS: usize = 64;
/// Share of a shard's bytes in the page cache from which it is treated as held in memory.
pub const RESIDENT_FRACTION: f64 = 0.9;

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
    let (tuned, notes) = find_profile(user_files, &options.profile)?;
    let bytes = total_file_bytes(&paths);
    let slots = request_slots(&paths);
    let mut steering = (options.io.method == Method::Auto).then(|| {
        let profiled = path_rates(tuned.as_ref().map_or(&[][..], |t| &t.rates));
        Steering::new(candidates(tuned.as_ref(), slots), &profiled)
    });
    let samples_needed =
        (crate::NONCES_PER_SLOT * u64::from(options.random_checks) * shards.len() as u64) as f64;
    let observation = observe(
        bytes,
        cached_fraction(&paths, bytes),
        room,
        session_bytes,
        samples_needed,
        crate::SLOT_LENGTH.as_secs_f64(),
    );
    let (factory, why, first_decision) =
        open_first(&paths, options, steering.as_mut(), &observation)?;
    let method = factory.method();
    let (threads, depth, why) = match &first_decision {
        Some(d) if d.candidate.method == method => (
            options.threads.unwrap_or(d.candidate.threads),
            options.depth.unwrap_or(d.candidate.depth),
            why,
        ),
        _ => knobs(method, why, tuned.as_ref(), &paths, slots, options),
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

/// A device's first factory, why it was chosen, and the decision that chose it (`auto` only).
type FirstOpened = (Arc<dyn BackendFactory>, String, Option<Decision>);

/// The first factory: for `auto` the steering's first decision, a candidate the files refuse
/// (O_DIRECT on a file system without it) forgotten and the next best taken; else the method
/// given. Returns it with why, and the decision that chose it.
fn open_first(
    paths: &[PathBuf],
    options: &OpenOptions,
    mut steering: Option<&mut Steering>,
    observation: &crate::steer::Observation,
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
pub(crate) struct Tuned {
    pub path: PathBuf,
    pub method: Method,
    pub threads: usize,
    pub depth: usize,
    /// The profile's cold samples/s per method: its own first, then the sweep's best of the
    /// others.
    pub rates: Vec<(Method, f64)>,
}

fn find_profile(
    files: &[PathBuf],
    source: &ProfileSource,
) -> Result<(Option<Tuned>, Vec<String>), MineError> {
    let explicit = match source {
        ProfileSource::Ignore => return Ok((None, Vec::new())),
        ProfileSource::At(path) => Some(path.as_path()),
        ProfileSource::BesideFirstFile => None,
    };
    match profile::lookup(files, explicit)? {
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
                rates: std::iter::once((p.method, p.measured.samples_per_sec))
                    .chain(
                        p.measured
                            .by_method
                            .iter()
                            .map(|r| (r.method, r.samples_per_sec)),
                    )
                    .collect(),
            };
            Ok((Some(tuned), vec![note]))
        }
    }
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

/// Threads and depth: explicit values win, then the profile's (for its own method), then the
/// method's defaults for a resident or a cold shard.
fn knobs(
    method: Method,
    why: String,
    tuned: Option<&Tuned>,
    paths: &[PathBuf],
    request_slots: Option<usize>,
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
            let (t, mut d) = default_knobs(method, resident, request_slots);
            if capabilities.bypasses_page_cache && !capabilities.completes_inline {
                // The device's queue is shared by the threads the caller asked for.
                d = depth_within_queue(request_slots, options.threads.unwrap_or(t));
            }
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

/// The default (threads, depth) of a concrete method; `request_slots` is what the device queues
/// at once ([`request_slots`]), which bounds the reads in flight of a method that reads around
/// the page cache asynchronously (each of them reaches the device).
pub fn default_knobs(
    method: Method,
    resident: bool,
    request_slots: Option<usize>,
) -> (usize, usize) {
    let cpus = available_cpus();
    let capabilities = method.capabilities();
    if capabilities.completes_inline && !resident {
        (cpus.max(SYNC_COLD_THREADS), 1)
    } else if capabilities.bypasses_page_cache && !capabilities.completes_inline {
        (cpus, depth_within_queue(request_slots, cpus))
    } else {
        (cpus, DEEP_DEPTH)
    }
}

/// Reads in flight per thread for `threads` threads that send every read to a device queuing
/// `request_slots` at once: [`DEEP_DEPTH`], or the device's share per thread when that is less.
/// Reads past the device's queue only wait in the block layer, and io_uring hands each of them
/// to a kernel worker thread that sleeps for a free request (docs/BENCHMARKS.md 30: on a device
/// queuing 128, 2 x 64 read 1.4–1.8x what 2 x 256 read, at 0.4x the CPU per read).
pub fn depth_within_queue(request_slots: Option<usize>, threads: usize) -> usize {
    request_slots.map_or(DEEP_DEPTH, |slots| {
        (slots / threads.max(1)).clamp(1, DEEP_DEPTH)
    })
}

/// What the device under `paths` queues at once for the default threads (the first file's
/// device: a pool's files share one); `None` when unknown.
pub fn request_slots(paths: &[PathBuf]) -> Option<usize> {
    let roots = pora_io::host::Roots::default();
    paths
        .first()
        .and_then(|p| pora_io::host::block_device::request_slots_of(p, &roots, available_cpus()))
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
pub fn read_path(method: Method) -> ReadPath {
    method.read_path()
}

/// The methods `auto` chooses among here ([`Method::auto_candidates`]: one per read path, each
/// the method pora-io ranks first on this platform); a profile's method replaces the
/// platform's choice of its path, with the profile's knobs.
pub(crate) fn candidates(tuned: Option<&Tuned>, request_slots: Option<usize>) -> Vec<Candidate> {
    Method::auto_candidates()
        .into_iter()
        .map(|method| {
            let path = read_path(method);
            match tuned.filter(|t| read_path(t.method) == path) {
                Some(t) => Candidate {
                    method: t.method,
                    threads: t.threads,
                    depth: t.depth,
                    path,
                },
                None => {
                    let (threads, depth) =
                        default_knobs(method, path == ReadPath::Mapped, request_slots);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// One `auto`: what pora-io opens for `auto` with nothing known
    /// ([`Method::resolve_auto`], which `Method::Auto`'s capabilities answer for) is the
    /// steering's decision for a cold shard with no profile and nothing measured, whatever the
    /// memory; and its candidates are pora-io's list.
    #[test]
    fn steering_and_resolve_auto_agree_when_nothing_is_known() {
        let methods: Vec<Method> = candidates(None, None).iter().map(|c| c.method).collect();
        assert_eq!(methods, Method::auto_candidates());
        const GIB: u64 = 1 << 30;
        let room = |bytes: u64| CacheRoom {
            mem_available_bytes: bytes,
            mem_total_bytes: bytes,
            cgroup_limit_bytes: None,
            cgroup_room_bytes: None,
            room_bytes: bytes,
        };
        for memory in [None, Some(room(GIB)), Some(room(64 * GIB))] {
            let mut steering = Steering::new(candidates(None, None), &[]);
            let d = steering.decide(&observe(
                8 * GIB,
                Some(0.0),
                memory.as_ref(),
                8 * GIB,
                (2u64 << 20) as f64,
                12.0,
            ));
            assert_eq!(d.candidate.method, Method::resolve_auto(), "{}", d.why);
        }
        assert_eq!(
            Method::Auto.capabilities(),
            Method::resolve_auto().capabilities()
        );
    }

    /// Reads around the page cache are kept within what the device queues, shared by the
    /// threads; reads through the page cache, synchronous methods and unknown devices keep
    /// their defaults.
    #[test]
    fn direct_asynchronous_depth_stays_within_the_device_queue() {
        assert_eq!(depth_within_queue(None, 2), DEEP_DEPTH);
        assert_eq!(depth_within_queue(Some(128), 2), 64);
        assert_eq!(depth_within_queue(Some(128), 1), 128);
        assert_eq!(depth_within_queue(Some(4 * 1023), 2), DEEP_DEPTH);
        assert_eq!(depth_within_queue(Some(3), 4), 1, "never below one read");
        assert_eq!(
            depth_within_queue(Some(128), 0),
            128,
            "no threads counts as one"
        );
        let cpus = available_cpus();
        assert_eq!(
            default_knobs(Method::UringDirect, false, Some(128)),
            (cpus, (128 / cpus).clamp(1, DEEP_DEPTH))
        );
        assert_eq!(
            default_knobs(Method::IocpUnbuffered, false, Some(128)),
            (cpus, (128 / cpus).clamp(1, DEEP_DEPTH))
        );
        assert_eq!(
            default_knobs(Method::UringDirect, false, None),
            (cpus, DEEP_DEPTH)
        );
        assert_eq!(
            default_knobs(Method::Uring, false, Some(128)),
            (cpus, DEEP_DEPTH)
        );
        assert_eq!(
            default_knobs(Method::Direct, false, Some(128)),
            (cpus.max(SYNC_COLD_THREADS), 1)
        );
        // `auto`'s direct candidate carries the same depth as an opened `uring-direct`.
        for c in candidates(None, Some(128)) {
            let expected = default_knobs(c.method, c.path == ReadPath::Mapped, Some(128));
            assert_eq!((c.threads, c.depth), expected, "{:?}", c.method);
        }
    }

    /// `auto` weighs a buffered path, a direct one and a map wherever a failing disk under the
    /// map fails a read instead of ending the process: Unix (SIGBUS) and Windows x86_64 (the
    /// in-page error).
    #[test]
    fn auto_weighs_a_map_where_its_faults_are_contained() {
        let paths: Vec<ReadPath> = candidates(None, None).iter().map(|c| c.path).collect();
        assert!(paths.contains(&ReadPath::Buffered), "{paths:?}");
        let contained = cfg!(unix) || cfg!(all(windows, target_arch = "x86_64"));
        assert_eq!(paths.contains(&ReadPath::Mapped), contained, "{paths:?}");
    }
}
