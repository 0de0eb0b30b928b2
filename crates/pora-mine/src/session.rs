//! Opening shards by path the way every front end does — the `pora` CLI, the C ABI and the
//! service share this one path: group files into shards and shards by device, find each
//! device's tune profile, resolve `auto`, choose threads and depth, open one backend factory per
//! device and say what was chosen for each and why.
//!
//! Without a profile the choice comes from cheap facts (issue 13): a shard whose files are
//! almost all in the page cache is read through `mmap` with few threads and deep batches (reads
//! are memory copies, so the CPUs are the limit); a cold shard gets the documented `auto` rule
//! (io_uring with O_DIRECT, then IOCP unbuffered, then pread) and each method's cold defaults.

use crate::devices::{self, DeviceGroup};
use crate::profile::{self, Lookup};
use crate::records::{HashRecord, SessionRecord};
use crate::{MineConfig, MineError, Miner, OnIoError, Pool, SlotReport, SlotRequest};
use pora_core::{Address, NonceProof, ShardSet, H256, U256};
use pora_io::{IoConfig, Method};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Reads in flight per thread for methods that batch (asynchronous ones, and synchronous ones on
/// a shard held in memory).
pub const DEEP_DEPTH: usize = 256;
/// Threads of a synchronous method on a cold shard: each thread has one read in flight, so it
/// takes many to keep a device queue busy.
pub const SYNC_COLD_THREADS: usize = 64;
/// Share of a shard's bytes in the page cache from which it is treated as held in memory.
pub const RESIDENT_FRACTION: f64 = 0.9;

/// Where to look for a tune profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProfileSource {
    /// `<first file>.pora-profile.toml` when it exists.
    #[default]
    BesideFirstFile,
    /// This file, which must exist and load.
    At(PathBuf),
    /// Do not use a profile.
    Ignore,
}

/// How to open a set of shards for mining.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Access method (`auto` by default) and, for `sim`, the simulated disk.
    pub io: IoConfig,
    /// Worker threads; `None`: the profile's, else the method's default.
    pub threads: Option<usize>,
    /// Reads in flight per thread; `None`: the profile's, else the method's default.
    pub depth: Option<usize>,
    pub random_checks: u32,
    pub on_io_error: OnIoError,
    /// Overrides the files' miner address in hash0.
    pub miner: Option<Address>,
    /// Shard size as log2(KVs); inferred from the files when `None`.
    pub kv_entries_bits: Option<u32>,
    pub profile: ProfileSource,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            io: IoConfig::default(),
            threads: None,
            depth: None,
            random_checks: crate::RANDOM_CHECKS,
            on_io_error: OnIoError::Retry,
            miner: None,
            kv_entries_bits: None,
            profile: ProfileSource::default(),
        }
    }
}

impl OpenOptions {
    pub fn with_method(mut self, method: Method) -> Self {
        self.io.method = method;
        self
    }
    with_fields! {
        with_threads => threads: Option<usize>,
        with_depth => depth: Option<usize>,
        with_random_checks => random_checks: u32,
        with_on_io_error => on_io_error: OnIoError,
        with_miner => miner: Option<Address>,
        with_kv_entries_bits => kv_entries_bits: Option<u32>,
        with_profile => profile: ProfileSource,
    }
}

/// The method and knobs one device's shards run with, and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Choice {
    pub method: Method,
    pub threads: usize,
    pub depth: usize,
    /// The profile used, if any.
    pub profile: Option<PathBuf>,
    /// One phrase: where the method and knobs came from.
    pub why: String,
    /// The device these shards sit on (`vda`, or `major:minor` for tmpfs), when known.
    pub device: Option<String>,
    /// The shards mined with this choice.
    pub shards: Vec<u64>,
    /// The backend factory's one-line description (method, alignment, ring features).
    pub io: String,
}

/// Shards opened for mining: the miner, what was chosen for each device, and notes for the user
/// (a profile that was found stale, say).
pub struct Session {
    miner: Miner,
    choices: Vec<Choice>,
    notes: Vec<String>,
}

impl Session {
    /// Opens `groups` (one group of data files per shard) read-only and builds the miner: the
    /// shards are grouped by device (issue 13), and each device gets its own profile, method,
    /// threads, depth and worker pool. The miner's shards (and so every report) come device by
    /// device, in the order given within a device.
    pub fn open(groups: &[Vec<PathBuf>], options: &OpenOptions) -> Result<Session, MineError> {
        let shards = open_shards(groups, options.kv_entries_bits)?;
        let devices = devices::by_device(shards.iter().map(|s| s.files[0].path.as_path()));
        let several = devices.len() > 1;
        let (mut ordered, mut pools, mut choices, mut notes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (device, members) in devices.iter().zip(devices::split(shards, &devices)) {
            let user_files: Vec<PathBuf> = device
                .members
                .iter()
                .flat_map(|&i| groups[i].iter().cloned())
                .collect();
            let opened = open_device(&members, &user_files, device, options)?;
            let label = |note: String| {
                if several {
                    format!("{}: {note}", device.label())
                } else {
                    note
                }
            };
            notes.extend(opened.notes.into_iter().map(label));
            pools.push(opened.pool);
            choices.push(opened.choice);
            ordered.extend(members);
        }
        // With no shard there is no choice; the miner then refuses with "no shard to mine".
        let (threads, depth) = choices.first().map_or((1, 1), |c| (c.threads, c.depth));
        let config = MineConfig::new(threads, depth)
            .with_random_checks(options.random_checks)
            .with_on_io_error(options.on_io_error)
            .with_miner(options.miner);
        let miner = Miner::with_pools(ordered, pools, config)?;
        Ok(Session {
            miner,
            choices,
            notes,
        })
    }

    pub fn miner(&self) -> &Miner {
        &self.miner
    }

    /// One choice per device, in the miner's shard order.
    pub fn choices(&self) -> &[Choice] {
        &self.choices
    }

    /// What was opened, one line per device: `<io> | <threads> threads x depth <depth> (<why>)`,
    /// prefixed with the device and its shards when the shards sit on several devices.
    pub fn opening_lines(&self) -> Vec<String> {
        let several = self.choices.len() > 1;
        self.choices
            .iter()
            .map(|c| {
                let line = format!(
                    "{} | {} threads x depth {} ({})",
                    c.io, c.threads, c.depth, c.why
                );
                if !several {
                    return line;
                }
                let shards: Vec<String> = c.shards.iter().map(u64::to_string).collect();
                let device = c.device.as_deref().unwrap_or("unknown");
                format!("device {device} (shards {}): {line}", shards.join(", "))
            })
            .collect()
    }

    /// Things the user should know about how the session was opened (one line each).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Mines one slot; see [`Miner::mine_slot`].
    pub fn mine_slot(
        &self,
        request: &SlotRequest,
        stop: &AtomicBool,
    ) -> Result<SlotReport, MineError> {
        self.miner.mine_slot(request, stop)
    }

    /// One nonce of the shard with index `shard_idx` through the plain single-nonce path.
    pub fn hash(&self, shard_idx: u64, randao: &H256, nonce: u64) -> Result<NonceProof, MineError> {
        self.miner.hash(shard_idx, randao, nonce)
    }

    /// [`Session::hash`] as every door answers it: with the miner address hash0 used (the
    /// configured one, else the shard files') and, given `required`, whether the nonce is valid.
    pub fn hash_record(
        &self,
        shard_idx: u64,
        randao: &H256,
        nonce: u64,
        required: Option<U256>,
    ) -> Result<HashRecord, MineError> {
        let files_miner = self
            .miner
            .shards()
            .iter()
            .find(|s| s.geometry.shard_idx == shard_idx)
            .map(|s| s.miner)
            .ok_or(MineError::UnknownShard(shard_idx))?;
        let proof = self.hash(shard_idx, randao, nonce)?;
        let miner = self.miner.config().miner.unwrap_or(files_miner);
        Ok(HashRecord::new(proof, shard_idx, miner, *randao, required))
    }

    /// What was opened, as the C ABI's `pora_open` and the service's `pora_status` answer it.
    pub fn record(&self) -> SessionRecord<'_> {
        SessionRecord::new(self)
    }
}

/// The choice among `choices` that mines shard `shard`.
pub fn choice_for(choices: &[Choice], shard: u64) -> Option<&Choice> {
    choices.iter().find(|c| c.shards.contains(&shard))
}

/// One device's shards, opened: its pool for the miner, what was chosen and the notes.
struct OpenedDevice {
    pool: Pool,
    choice: Choice,
    notes: Vec<String>,
}

/// Finds the device's profile (beside its first file), resolves the method, opens the factory
/// over its shards' files and picks threads and depth.
fn open_device(
    shards: &[ShardSet],
    user_files: &[PathBuf],
    device: &DeviceGroup,
    options: &OpenOptions,
) -> Result<OpenedDevice, MineError> {
    let paths = Miner::paths(shards);
    let (tuned, notes) = find_profile(user_files, &options.profile)?;
    let (method, why) = match (options.io.method, &tuned) {
        (Method::Auto, Some(t)) => (t.method, "the tune profile's method".to_string()),
        (Method::Auto, None) => auto_method(&paths),
        (m, _) => (m, format!("{} {m}", pora_core::Input::Method)),
    };
    let io = IoConfig {
        method,
        ..options.io.clone()
    };
    let factory =
        pora_io::open(&paths, &io).map_err(|source| MineError::Open { method, source })?;
    let method = factory.method();
    let (threads, depth, why) = knobs(method, why, tuned.as_ref(), &paths, options);
    let choice = Choice {
        method,
        threads,
        depth,
        profile: tuned.filter(|t| t.method == method).map(|t| t.path),
        why,
        device: device.device.clone(),
        shards: shards.iter().map(|s| s.geometry.shard_idx).collect(),
        io: factory.describe(),
    };
    let pool = Pool {
        shards: shards.len(),
        factory,
        threads,
        depth,
    };
    Ok(OpenedDevice {
        pool,
        choice,
        notes,
    })
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
struct Tuned {
    path: PathBuf,
    method: Method,
    threads: usize,
    depth: usize,
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
            };
            Ok((Some(tuned), vec![note]))
        }
    }
}

/// `auto` without a profile: `mmap` for a shard held in memory, else the documented rule.
fn auto_method(paths: &[PathBuf]) -> (Method, String) {
    if let Some(pct) = resident_percent(paths) {
        if Method::Mmap.availability().is_ok() && pct >= RESIDENT_FRACTION * 100.0 {
            return (
                Method::Mmap,
                format!(
                    "auto: {pct:.0}% of the shard is in the page cache, so reads are memory copies"
                ),
            );
        }
    }
    let method = Method::resolve_auto();
    (
        method,
        format!("auto: no profile, the documented rule picks {method}"),
    )
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
            let (t, d) = default_knobs(method, resident);
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

/// The default (threads, depth) of a concrete method.
pub fn default_knobs(method: Method, resident: bool) -> (usize, usize) {
    let cpus = available_cpus();
    if method.capabilities().completes_inline && !resident {
        (cpus.max(SYNC_COLD_THREADS), 1)
    } else {
        (cpus, DEEP_DEPTH)
    }
}

/// CPUs this process may use (1 when the OS does not say).
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The path of the profile `pora tune` writes for `first_file`.
pub fn default_profile_path(first_file: &Path) -> PathBuf {
    profile::default_path(first_file)
}
