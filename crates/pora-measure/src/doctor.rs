//! The findings of `pora doctor`: what the files, their device and the OS mean for mining power.
//! Each finding has an id, a severity (ok / info / warn / bad), a message and a one-line remedy.
//! The facts come from `pora_io::probe` (over `pora_io::host`); turning facts into findings is
//! the pure function [`findings`], unit-tested on canned sysfs/procfs trees. Printing stays in
//! the binary.

use crate::shards::{open_files_as_shards, ShardsError};
use pora_core::HEADER_SIZE;
use pora_io::host::block_device::Layer;
use pora_io::host::Roots;
use pora_io::probe::{self, Fact, FileFacts};
use pora_mine::{devices, profile};
use serde::Serialize;
use std::path::PathBuf;

/// How much a finding matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    Ok,
    Info,
    Warn,
    Bad,
}

impl Severity {
    /// The word printed in the text report (warnings and worse in capitals).
    pub fn tag(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warn => "WARN",
            Severity::Bad => "BAD",
        }
    }
}

/// One explained check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub id: &'static str,
    pub severity: Severity,
    pub message: String,
    /// What to do; `None` when nothing needs doing.
    pub remedy: Option<String>,
    /// The file the finding is about; `None` for the shard as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The device the finding is about (its profile, when the files sit on several devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

fn finding(
    id: &'static str,
    severity: Severity,
    message: impl Into<String>,
    remedy: Option<String>,
) -> Finding {
    Finding {
        id,
        severity,
        message: message.into(),
        remedy,
        file: None,
        device: None,
    }
}

/// What `pora doctor` found: the facts probed per file and every finding, per file and then
/// for the shard as a whole (the JSON shape of `pora doctor --json`).
#[derive(Debug, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub files: Vec<FileFacts>,
}

/// Why the files could not be examined.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DoctorError {
    /// Probing a file failed (it is missing, say); the message names it.
    #[error("{0}")]
    Probe(String),
}

impl Report {
    /// Probes every file and explains the facts.
    pub fn examine(files: &[PathBuf], kv_entries_bits: Option<u32>) -> Result<Report, DoctorError> {
        let roots = Roots::default();
        let mut facts = Vec::new();
        for f in files {
            facts.push(probe::probe_file(f, &roots).map_err(DoctorError::Probe)?);
        }
        let mut all = Vec::new();
        for fact in &facts {
            for mut f in findings(fact) {
                f.file = Some(fact.path.display().to_string());
                all.push(f);
            }
        }
        #[cfg(windows)]
        all.extend(files.iter().flat_map(|f| windows_findings(f)));
        all.push(shard_finding(files, kv_entries_bits));
        all.extend(profile_findings(files));
        all.push(steady_state_finding(files, kv_entries_bits));
        Ok(Report {
            findings: all,
            files: facts,
        })
    }

    /// The most serious severity found.
    pub fn worst(&self) -> Severity {
        self.findings
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(Severity::Ok)
    }
}

/// Windows: the volume's file system, the sector size `iocp-unbuffered` aligns to, and BitLocker
/// (which cost the seed's laptop half its 4 KiB IOPS).
#[cfg(windows)]
pub fn windows_findings(path: &std::path::Path) -> Vec<Finding> {
    use pora_io::windows::{windows_volume_facts, BitLocker};
    let v = windows_volume_facts(path);
    let volume = v
        .volume_root
        .clone()
        .unwrap_or_else(|| "unknown volume".into());
    let mut out = vec![finding(
        "win-volume",
        Severity::Info,
        format!(
            "{volume}: {}, logical sector {}, physical sector {}; iocp-unbuffered aligns to {} bytes ({}){}",
            v.file_system.as_deref().unwrap_or("unknown file system"),
            v.logical_sector_bytes.map_or("unknown".into(), |b| b.to_string()),
            v.physical_sector_bytes.map_or("unknown".into(), |b| b.to_string()),
            v.unbuffered_sector_bytes,
            v.sector_source,
            if v.notes.is_empty() { String::new() } else { format!("; {}", v.notes.join("; ")) }
        ),
        None,
    )];
    out.push(match &v.bitlocker {
        BitLocker::On => finding(
            "bitlocker",
            Severity::Warn,
            format!("{volume} is BitLocker-encrypted: every read is decrypted on the CPU"),
            Some("keep shards on an unencrypted volume, or compare `pora bench` on both".into()),
        ),
        BitLocker::Off => finding(
            "bitlocker",
            Severity::Ok,
            format!("{volume} is not BitLocker-encrypted"),
            None,
        ),
        BitLocker::Unknown(why) => finding(
            "bitlocker",
            Severity::Info,
            format!("BitLocker status of {volume} unknown: {why}"),
            Some("check with `manage-bde -status` in an administrator prompt".into()),
        ),
    });
    for f in &mut out {
        f.file = Some(path.display().to_string());
    }
    out
}

/// 1073741824 -> "1.0 GiB".
pub fn bytes(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// The findings about one file from its probed facts.
pub fn findings(f: &FileFacts) -> Vec<Finding> {
    let mut out = vec![
        sector_finding(f),
        fs_finding(f),
        o_direct_finding(f),
        io_uring_finding(f),
    ];
    out.extend(device_findings(f));
    out.push(cache_finding(f));
    out.push(sparse_finding(f));
    out.push(extent_finding(f));
    out
}

fn sector_finding(f: &FileFacts) -> Finding {
    let Some(d) = f.device.known() else {
        return finding(
            "sector-size",
            Severity::Info,
            "sector size unknown (no block device found for the file)",
            None,
        );
    };
    let (Some(logical), Some(physical)) =
        (d.queue.logical_block_bytes, d.queue.physical_block_bytes)
    else {
        return finding(
            "sector-size",
            Severity::Info,
            format!("{}: sector size not reported", d.disk),
            None,
        );
    };
    let msg = format!(
        "logical {logical} B, physical {physical} B sectors on {}",
        d.disk
    );
    if !HEADER_SIZE.is_multiple_of(u64::from(physical.max(1))) {
        return finding(
            "sector-size",
            Severity::Warn,
            format!("{msg}: the data region at byte {HEADER_SIZE} is not aligned to the physical sector"),
            Some("direct reads straddle sectors; prefer --method uring or pread on this device".into()),
        );
    }
    let misaligned = f
        .extents
        .known()
        .and_then(|e| e.first_physical_offset)
        .filter(|o| o % u64::from(physical.max(1)) != 0);
    match misaligned {
        Some(o) => finding(
            "sector-size",
            Severity::Warn,
            format!("{msg}: the file starts at device byte {o}, not on a physical sector"),
            Some(
                "re-create the file on a file system with 4 KiB blocks (the default for ext4/xfs)"
                    .into(),
            ),
        ),
        None => finding(
            "sector-size",
            Severity::Ok,
            format!("{msg}; the data region (byte {HEADER_SIZE}) is aligned to both"),
            None,
        ),
    }
}

fn fs_finding(f: &FileFacts) -> Finding {
    let Some(fs) = f.fs_type.known() else {
        return finding(
            "filesystem",
            Severity::Info,
            "file system type unknown",
            None,
        );
    };
    match fs.as_str() {
        "tmpfs" | "ramfs" => finding(
            "filesystem",
            Severity::Warn,
            format!("{fs}: the file lives in RAM, so reads never touch a disk"),
            Some("fine for tests; real shards belong on an SSD/NVMe file system (ext4, xfs)".into()),
        ),
        "nfs" | "cifs" | "smb2" | "9p" | "fuse" | "overlayfs" => finding(
            "filesystem",
            Severity::Warn,
            format!("{fs}: network, FUSE or overlay file system; each random read pays extra round-trips or copies"),
            Some("keep shards on a local ext4/xfs volume (in containers, bind-mount it instead of using the overlay)".into()),
        ),
        _ => finding("filesystem", Severity::Ok, format!("file system {fs}"), None),
    }
}

fn o_direct_finding(f: &FileFacts) -> Finding {
    match f.o_direct.works {
        Some(true) => finding("o-direct", Severity::Ok, "O_DIRECT works on this file (methods direct, uring-direct)", None),
        Some(false) => finding(
            "o-direct",
            Severity::Warn,
            format!("O_DIRECT does not work here: {}", f.o_direct.detail),
            Some("use buffered methods: --method uring or --method pread (pora tune skips direct ones)".into()),
        ),
        None => finding("o-direct", Severity::Info, format!("O_DIRECT not checked: {}", f.o_direct.detail), None),
    }
}

fn io_uring_finding(f: &FileFacts) -> Finding {
    let detail = &f.io_uring.detail;
    match (f.io_uring.works, f.io_uring_disabled_sysctl) {
        (Some(true), _) => finding("io-uring", Severity::Ok, "io_uring is available (methods uring, uring-direct)", None),
        (Some(false), Some(2)) => finding(
            "io-uring",
            Severity::Warn,
            "io_uring is disabled by kernel.io_uring_disabled=2",
            Some("sudo sysctl -w kernel.io_uring_disabled=0 (persist it in /etc/sysctl.d/)".into()),
        ),
        (Some(false), Some(1)) => finding(
            "io-uring",
            Severity::Warn,
            format!("io_uring is limited to root and kernel.io_uring_group (kernel.io_uring_disabled=1): {detail}"),
            Some("run pora as root, or sudo sysctl -w kernel.io_uring_group=<your gid>".into()),
        ),
        (Some(false), _) => finding(
            "io-uring",
            Severity::Warn,
            format!("io_uring is unavailable: {detail}"),
            Some("needs Linux >= 5.6; in containers allow io_uring_setup in seccomp (docker --security-opt seccomp=...); pora falls back to pread/direct".into()),
        ),
        (None, _) => finding("io-uring", Severity::Info, format!("io_uring: {detail}"), None),
    }
}

fn device_findings(f: &FileFacts) -> Vec<Finding> {
    let Some(d) = f.device.known() else {
        let why = match &f.device {
            Fact::Unknown { unknown } => unknown.clone(),
            Fact::Known(_) => String::new(),
        };
        return vec![finding(
            "device",
            Severity::Info,
            format!("block device not found: {why}"),
            None,
        )];
    };
    let mut out = Vec::new();
    let queue_dir = |name: &str, knob: &str| format!("/sys/block/{name}/queue/{knob}");
    match d.queue.read_ahead_kb {
        Some(kb) if kb > 16 => out.push(finding(
            "read-ahead",
            Severity::Warn,
            format!("read_ahead_kb {kb} on {}: a buffered random read without FADV_RANDOM may pull up to {kb} KiB; pora disables read-ahead per file, es-node's reads pay it", d.disk),
            Some(format!("set read_ahead_kb to 0-16: echo 0 | sudo tee {}", queue_dir(&d.disk, "read_ahead_kb"))),
        )),
        Some(kb) => out.push(finding("read-ahead", Severity::Ok, format!("read_ahead_kb {kb} on {}", d.disk), None)),
        None => {}
    }
    for leaf in &d.leaves {
        let q = &leaf.queue;
        let model = leaf
            .model
            .as_deref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        if q.rotational == Some(true) {
            out.push(finding(
                "rotational",
                Severity::Warn,
                format!("{}{model} reports rotational=1: a spinning disk does ~100-300 random reads/s against the 174,763/s one shard needs (virtual disks sometimes report 1 without spinning)", leaf.name),
                Some("mine from an SSD/NVMe; if this is a virtual disk on flash, ignore this".into()),
            ));
        }
        match q.scheduler.as_deref() {
            Some(s) if s != "none" && q.rotational == Some(false) => out.push(finding(
                "scheduler",
                Severity::Info,
                format!(
                    "{}: I/O scheduler {s} on a non-rotational device adds CPU per read",
                    leaf.name
                ),
                Some(format!(
                    "echo none | sudo tee {}",
                    queue_dir(&leaf.name, "scheduler")
                )),
            )),
            Some(s) => out.push(finding(
                "scheduler",
                Severity::Ok,
                format!("{}: I/O scheduler {s}", leaf.name),
                None,
            )),
            None => {}
        }
        match q.nr_requests {
            Some(n) if n < 64 => out.push(finding(
                "nr-requests",
                Severity::Warn,
                format!("{}: nr_requests {n} caps the reads the device queue holds; deep queues wait in the block layer", leaf.name),
                Some(format!("echo 1024 | sudo tee {} (or the device maximum)", queue_dir(&leaf.name, "nr_requests"))),
            )),
            Some(n) => out.push(finding("nr-requests", Severity::Ok, format!("{}: nr_requests {n}", leaf.name), None)),
            None => {}
        }
    }
    for layer in &d.layers {
        out.push(layer_finding(layer, d.leaves.len()));
    }
    out
}

fn layer_finding(layer: &Layer, leaves: usize) -> Finding {
    match layer {
        Layer::DmCrypt { name, dm_name } => finding(
            "dm-crypt",
            Severity::Warn,
            format!("{name}{} is dm-crypt (LUKS): every read is decrypted on the CPU, adding latency and CPU load per read", dm_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()),
            Some(format!("keep shards on an unencrypted volume, or cut the queueing: sudo cryptsetup refresh --perf-no_read_workqueue {}", dm_name.as_deref().unwrap_or(name))),
        ),
        Layer::Raid { name, level } => finding(
            "raid",
            Severity::Info,
            format!("{name} is md {level} over {leaves} disk(s): random reads spread over the members only with enough in flight"),
            Some("let pora tune find the depth; es-node needs threads-per-shard of several times the disk count".into()),
        ),
        Layer::DeviceMapper { name, subsystem } => finding("device-mapper", Severity::Info, format!("{name} is a device-mapper device ({subsystem}); a small per-read cost"), None),
    }
}

fn cache_finding(f: &FileFacts) -> Finding {
    let (Some(r), Some(m)) = (f.page_cache.known(), f.memory.known()) else {
        return finding(
            "page-cache",
            Severity::Info,
            "page-cache residency or memory unknown",
            None,
        );
    };
    let pct = if r.file_bytes == 0 {
        0.0
    } else {
        100.0 * r.cached_bytes as f64 / r.file_bytes as f64
    };
    let msg = format!(
        "{:.0}% of the file ({}) is in the page cache; {} of RAM available of {}",
        pct,
        bytes(r.cached_bytes),
        bytes(m.available_bytes),
        bytes(m.total_bytes)
    );
    if r.file_bytes > m.total_bytes && pct >= 10.0 {
        return finding("page-cache", Severity::Warn, format!("{msg}: the file is larger than RAM, so cached reads now flatter the numbers"), Some("mining numbers will drop once the cache is cold; measure with `pora tune` (evicts before each trial)".into()));
    }
    if r.file_bytes <= m.available_bytes + r.cached_bytes {
        return finding("page-cache", Severity::Info, format!("{msg}: the file fits in RAM"), Some("once cached, reads come from memory and the disk hardly matters; cold-start and production shards (larger than RAM) behave differently".into()));
    }
    finding("page-cache", Severity::Ok, msg, None)
}

fn sparse_finding(f: &FileFacts) -> Finding {
    let Some(allocated) = f.allocated_bytes.known().copied() else {
        return finding("sparse", Severity::Info, "allocation unknown", None);
    };
    let holes = f.size_bytes.saturating_sub(allocated);
    // An unwritten meta region or last block is normal; holes in the data are not.
    if holes * 100 > f.size_bytes {
        return finding(
            "sparse",
            Severity::Warn,
            format!("the file is sparse: {:.0}% holes ({} allocated of {}); holes read as zeros without touching the disk", 100.0 * holes as f64 / f.size_bytes.max(1) as f64, bytes(allocated), bytes(f.size_bytes)),
            Some("this is a test file, not real data (or a shard not yet synced): benchmarks on it measure the CPU, not the disk".into()),
        );
    }
    finding(
        "sparse",
        Severity::Ok,
        format!("the file is allocated ({} of holes)", bytes(holes)),
        None,
    )
}

fn extent_finding(f: &FileFacts) -> Finding {
    let e = match &f.extents {
        Fact::Known(e) => e,
        Fact::Unknown { unknown } => {
            return finding(
                "extents",
                Severity::Info,
                format!("extent count unknown: {unknown}"),
                None,
            )
        }
    };
    let avg = f.size_bytes / e.count.max(1);
    let msg = format!(
        "{} extent(s), {} per extent on average",
        e.count,
        bytes(avg)
    );
    if e.count > 1000 && avg < 1 << 20 {
        return finding(
            "extents",
            Severity::Warn,
            format!("{msg}: fragmented (random 32-byte reads hardly notice, but extent lookups cost CPU and copies are slow)"),
            Some(format!("defragment: sudo e4defrag {} (ext4) or xfs_fsr (xfs), or copy it to a fresh file", f.path.display())),
        );
    }
    finding("extents", Severity::Ok, msg, None)
}

/// Whether the files form a complete shard (or one complete shard each).
pub fn shard_finding(files: &[PathBuf], kv_entries_bits: Option<u32>) -> Finding {
    match open_files_as_shards(files, kv_entries_bits) {
        Ok(s) if s.len() == 1 => finding(
            "shard",
            Severity::Ok,
            format!(
                "complete shard {} ({} file(s), kvEntriesBits {})",
                s[0].geometry.shard_idx,
                s[0].files.len(),
                s[0].geometry.kv_entries_bits
            ),
            None,
        ),
        Ok(s) => finding("shard", Severity::Ok, format!("{} complete shards, one per file", s.len()), None),
        Err(ShardsError::Single(together) | ShardsError::Neither { together, .. }) => finding("shard", Severity::Bad, format!("not a complete shard: {together}"), Some("give every data file of the shard (pora info FILE... shows the ranges), or the right --kv-entries-bits".into())),
    }
}

/// The profile findings: one for the files, or, when they sit on several devices, a note that
/// each device is mined, tuned and profiled on its own, and one profile finding per device
/// (grouped by [`pora_mine::devices::by_device`], as `pora mine` and `pora tune` do).
pub fn profile_findings(files: &[PathBuf]) -> Vec<Finding> {
    let groups = devices::by_device(files.iter().map(|f| f.as_path()));
    if groups.len() < 2 {
        return vec![profile_finding(files)];
    }
    let names: Vec<String> = groups
        .iter()
        .map(|g| {
            let members: Vec<String> = g
                .members
                .iter()
                .map(|&i| files[i].display().to_string())
                .collect();
            format!("{} ({})", g.label(), members.join(", "))
        })
        .collect();
    let mut all = vec![finding(
        "devices",
        Severity::Info,
        format!(
            "the files sit on {} devices: {}; `pora mine` gives each device its own threads, reads in flight and profile, so a slow device does not pace the others",
            groups.len(),
            names.join("; ")
        ),
        None,
    )];
    for group in &groups {
        let theirs: Vec<PathBuf> = group.members.iter().map(|&i| files[i].clone()).collect();
        let mut f = profile_finding(&theirs);
        f.device = Some(group.label());
        all.push(f);
    }
    all
}

/// Whether a tune profile exists next to the first file and still matches.
pub fn profile_finding(files: &[PathBuf]) -> Finding {
    let rerun = Some(format!("run `pora tune {}`", join(files)));
    match profile::lookup(files, None) {
        Ok(profile::Lookup::Absent) => finding(
            "profile",
            Severity::Info,
            format!(
                "no tune profile at {}",
                profile::default_path(&files[0]).display()
            ),
            Some(format!(
                "run `pora tune {}` to measure and save the best method/threads/depth",
                join(files)
            )),
        ),
        Ok(profile::Lookup::Stale { path, why }) => finding(
            "profile",
            Severity::Warn,
            format!("profile {} is stale: {why}", path.display()),
            rerun,
        ),
        Ok(profile::Lookup::Use { path, profile: p }) => {
            let msg = format!(
                "profile {} matches: {} threads {} depth {} ({:.0} samples/s, {})",
                path.display(),
                p.method,
                p.threads,
                p.depth,
                p.measured.samples_per_sec,
                p.created
            );
            finding("profile", Severity::Ok, msg, None)
        }
        Err(e) => finding("profile", Severity::Warn, format!("{e:#}"), rerun),
    }
}

/// The shard's size against the memory its page cache can grow into (MemAvailable within the
/// cgroup's limit), and what `auto` expects of the first slot and of the steady state: the
/// same model and facts `pora mine` decides with before every slot.
/// The files count as the shards [`open_files_as_shards`] finds (one per file when each is one),
/// all sharing the device's reads.
pub fn steady_state_finding(files: &[PathBuf], kv_entries_bits: Option<u32>) -> Finding {
    let profiled = match profile::lookup(files, None) {
        Ok(profile::Lookup::Use { profile: p, .. }) => p.rates(),
        _ => Vec::new(),
    };
    let shards = open_files_as_shards(files, kv_entries_bits).map_or(1, |s| s.len());
    let o = pora_mine::session::files_outlook(files, shards, &profiled);
    let Some(room) = &o.room else {
        return finding(
            "steady-state",
            Severity::Info,
            format!(
                "shard {}; the memory the page cache can use is unknown here, so `auto` measures buffered and unbuffered reads for a slot each and keeps the faster",
                bytes(o.file_bytes)
            ),
            None,
        );
    };
    let limit = match room.cgroup_limit_bytes {
        Some(l) => format!("cgroup limit {}, ", bytes(l)),
        None => String::new(),
    };
    let cached = o
        .cached_fraction
        .map_or("unknown".to_string(), |c| format!("{:.0}%", c * 100.0));
    let forecasts: Vec<String> = o
        .decision
        .forecasts
        .iter()
        .map(|f| {
            format!(
                "{} {:.0}% first slot / {:.0}% steady",
                f.method,
                f.predicted_mining_power * 100.0,
                f.predicted_steady_mining_power * 100.0
            )
        })
        .collect();
    let ratio = o.file_bytes as f64 / room.room_bytes.max(1) as f64;
    let msg = format!(
        "shard {} against {} the page cache can grow into ({limit}{} {}): {} cached now; `auto` starts with {} and re-decides before every slot; forecast ({} device reads/s): {}",
        bytes(o.file_bytes),
        bytes(room.room_bytes),
        if cfg!(windows) { "available memory" } else { "MemAvailable" },
        bytes(room.mem_available_bytes),
        cached,
        o.decision.candidate.method,
        if profiled.is_empty() { "assumed until measured" } else { "the profile's" },
        forecasts.join(", ")
    );
    if ratio > 1.0 {
        let hit = 100.0 / ratio;
        return finding(
            "steady-state",
            Severity::Info,
            format!("{msg}; the shard is {ratio:.1}x that memory, so at most {hit:.0}% of reads can hit the cache"),
            Some("more memory (or a higher cgroup limit) raises the steady state; `auto` weighs buffered reads (the hits) against unbuffered ones slot by slot".into()),
        );
    }
    finding(
        "steady-state",
        Severity::Ok,
        format!("{msg}; the whole shard fits"),
        None,
    )
}

fn join(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(all(test, unix))]
mod tests;
