//! Tune profiles: the chosen method/threads/depth with the measured figures and a fingerprint of
//! the files, their device and file system, persisted as TOML and written atomically (temp file
//! in the same directory, then rename) so that Ctrl-C never leaves half a profile.
//!
//! Every front end (CLI, C ABI, service) finds a profile with [`lookup`] and trusts it only while
//! [`Profile::matches`]`(&`[`fingerprint`]`(files))` holds. The fingerprint comes from cheap calls
//! only (stat, statfs, and the devices' sysfs facts of [`FileDevices`]: a session's one reading
//! of them, [`lookup_on`]), so a mining start with a profile present never walks the file.

use pora_io::host::file_devices::FileDevices;
use pora_io::Method;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Why a profile could not be read or written; each names the profile's path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    #[error("reading profile {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("parsing profile {}: {why}", path.display())]
    Parse { path: PathBuf, why: String },
    #[error("{}: profile format {found} is not {PROFILE_FORMAT}; run `pora tune` again", path.display())]
    Format { path: PathBuf, found: u32 },
    #[error("writing profile {}: {why}", path.display())]
    Write { path: PathBuf, why: String },
}

/// Version of the profile layout; bumped when fields change meaning.
pub const PROFILE_FORMAT: u32 = 1;

/// What `pora tune` measured and chose.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    pub format: u32,
    /// When it was measured: RFC 3339 UTC and seconds since the Unix epoch.
    pub created: String,
    pub created_unix_sec: u64,
    pub method: Method,
    pub threads: usize,
    pub depth: usize,
    /// Shards assumed to share the device in the prediction.
    pub shards: usize,
    pub measured: Measured,
    pub fingerprint: Fingerprint,
}

/// Figures measured at the chosen configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Measured {
    /// Mean sustainable samples/s of the production mining path, cold.
    pub samples_per_sec: f64,
    /// Coefficient of variation of the trials (stddev / mean).
    pub samples_per_sec_cv: f64,
    pub trials: usize,
    /// Raw random-read latency at the chosen reads in flight, when measured.
    pub latency_us_p99: Option<f64>,
    /// Raw random-read ceiling of the device measured in the same run.
    pub device_ceiling_iops: Option<f64>,
    /// Expected mining power per shard (0..1), cold.
    pub predicted_mining_power: f64,
    /// The best cold samples/s each method reached in the sweep: what `auto`'s model starts
    /// from for each read path (`auto`, docs/mining.md). Absent in profiles written before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_method: Vec<MethodRate>,
    /// Per read path, the cold samples/s (every sample a device read) of the arm it mines with,
    /// read for longer after the sweep: the rates the first slot is forecast from, ahead of the
    /// sweep's (`pora tune`'s sustained read, docs/mining.md). Absent in profiles written before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sustained: Vec<MethodRate>,
    /// `auto`'s forecast once the page cache has settled, with the memory there was at tuning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_steady_mining_power: Option<f64>,
}

/// The cold rates a session and the forecasts start from, in the order they are trusted: the
/// chosen method first (its sustained rate where there is one, so that the first entry always
/// names the method the profile mines with), the other sustained reads, the chosen method's sweep
/// rate, then each method's best in the sweep. The first rate of each read path is the one used.
pub fn ordered_rates(
    chosen: (Method, f64),
    sustained: &[(Method, f64)],
    by_method: &[(Method, f64)],
) -> Vec<(Method, f64)> {
    let first = sustained
        .iter()
        .copied()
        .find(|&(m, _)| m == chosen.0)
        .unwrap_or(chosen);
    std::iter::once(first)
        .chain(sustained.iter().copied().filter(|&(m, _)| m != chosen.0))
        .chain(std::iter::once(chosen))
        .chain(by_method.iter().copied())
        .collect()
}

/// One method's best cold samples/s in a tune sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MethodRate {
    pub method: Method,
    pub samples_per_sec: f64,
}

/// Identity of the files and of what they sit on; a profile is valid only for the same.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub files: Vec<FileFingerprint>,
}

/// One file's identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileFingerprint {
    pub path: String,
    pub size_bytes: u64,
    /// Inode number (unix); changes when the file is re-created or copied.
    pub inode: Option<u64>,
    /// Recorded for the reader only: es-node writes new blobs into live shards, so a changed
    /// mtime does not mean a different disk and is not compared.
    pub mtime_unix_sec: Option<i64>,
    /// `major:minor` of the file system's device.
    pub device: Option<String>,
    /// The device model from sysfs, when it has one.
    pub model: Option<String>,
    pub fs_type: Option<String>,
}

impl Profile {
    /// The cold samples/s per method a session and the forecasts start from: the sustained
    /// reads first (one per read path), then the chosen method's sweep rate, then each
    /// method's best in the sweep (the first rate of each read path is the one used).
    pub fn rates(&self) -> Vec<(Method, f64)> {
        let m = &self.measured;
        let pair = |r: &MethodRate| (r.method, r.samples_per_sec);
        ordered_rates(
            (self.method, m.samples_per_sec),
            &m.sustained.iter().map(pair).collect::<Vec<_>>(),
            &m.by_method.iter().map(pair).collect::<Vec<_>>(),
        )
    }

    /// Whether the profile was measured on these same files, device and file system.
    pub fn matches(&self, now: &Fingerprint) -> bool {
        self.mismatch(now).is_none()
    }

    /// The first difference between the profile's fingerprint and `now`, for the user.
    pub fn mismatch(&self, now: &Fingerprint) -> Option<String> {
        let old = &self.fingerprint.files;
        if old.len() != now.files.len() {
            return Some(format!(
                "profile was tuned for {} files, now {} are given",
                old.len(),
                now.files.len()
            ));
        }
        for (a, b) in old.iter().zip(&now.files) {
            let same = a.path == b.path
                && a.size_bytes == b.size_bytes
                && a.inode == b.inode
                && a.device == b.device
                && a.model == b.model
                && a.fs_type == b.fs_type;
            if !same {
                return Some(format!(
                    "{} changed since tuning (file, device or file system)",
                    b.path
                ));
            }
        }
        None
    }

    /// Writes the profile as TOML, atomically: a temp file in the same directory, fsync, rename.
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let failed = |why: String| ProfileError::Write {
            path: path.to_path_buf(),
            why,
        };
        let text = toml::to_string_pretty(self).map_err(|e| failed(e.to_string()))?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .ok_or_else(|| failed("not a file path".into()))?;
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            failed(e.to_string())
        })
    }
}

/// Reads a profile written by `pora tune`.
pub fn load(path: &Path) -> Result<Profile, ProfileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let profile: Profile = toml::from_str(&text).map_err(|e| ProfileError::Parse {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    if profile.format != PROFILE_FORMAT {
        return Err(ProfileError::Format {
            path: path.to_path_buf(),
            found: profile.format,
        });
    }
    Ok(profile)
}

/// `<first file>.pora-profile.toml`, next to the shard.
pub fn default_path(first_file: &Path) -> PathBuf {
    let mut name = first_file
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".pora-profile.toml");
    first_file.with_file_name(name)
}

/// The fingerprint of `files` as they are now (missing facts stay `None`), sorted by path so
/// that the order files are given in does not matter.
pub fn fingerprint(files: &[PathBuf]) -> Fingerprint {
    let roots = pora_io::host::Roots::default();
    fingerprint_on(
        files,
        &FileDevices::read(files.iter().map(PathBuf::as_path), &roots),
    )
}

/// [`fingerprint`] with the devices under `files` already read (a session's one reading).
pub fn fingerprint_on(files: &[PathBuf], devices: &FileDevices) -> Fingerprint {
    let devices = devices.covering(files, &pora_io::host::Roots::default());
    let mut files: Vec<FileFingerprint> = files
        .iter()
        .map(|p| file_fingerprint(p, &devices))
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Fingerprint { files }
}

/// What [`lookup`] found for a set of files.
#[derive(Debug)]
pub enum Lookup {
    /// No profile at the default path (and none was asked for).
    Absent,
    /// A profile exists but was measured on other files, device or file system.
    Stale { path: PathBuf, why: String },
    /// A profile that matches the files now.
    Use { path: PathBuf, profile: Profile },
}

/// Finds the profile for `files`: `explicit` (`--profile PATH`, which must load) or the default
/// path next to the first file, and checks its fingerprint.
pub fn lookup(files: &[PathBuf], explicit: Option<&Path>) -> Result<Lookup, ProfileError> {
    lookup_on(files, explicit, &FileDevices::default())
}

/// [`lookup`] with the devices under `files` already read (those `devices` does not cover are
/// read now).
pub fn lookup_on(
    files: &[PathBuf],
    explicit: Option<&Path>,
    devices: &FileDevices,
) -> Result<Lookup, ProfileError> {
    let Some(first) = files.first() else {
        return Ok(Lookup::Absent);
    };
    let path = explicit
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_path(first));
    if explicit.is_none() && !path.exists() {
        return Ok(Lookup::Absent);
    }
    let profile = load(&path)?;
    let now = fingerprint_on(files, devices);
    if profile.matches(&now) {
        return Ok(Lookup::Use { path, profile });
    }
    let why = profile.mismatch(&now).unwrap_or_default();
    Ok(Lookup::Stale { path, why })
}
fn file_fingerprint(path: &Path, devices: &FileDevices) -> FileFingerprint {
    let shown = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let meta = std::fs::metadata(path).ok();
    let device = devices
        .stat_dev(path)
        .map(|(major, minor)| format!("{major}:{minor}"));
    let model = devices.facts(path).and_then(|f| f.model.clone());
    let fs_type = pora_io::host::file_system::fs_type(path).ok();
    FileFingerprint {
        path: shown.display().to_string(),
        size_bytes: meta.as_ref().map_or(0, |m| m.len()),
        inode: meta.as_ref().and_then(inode),
        mtime_unix_sec: meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(unix_sec)
            .map(|s| s as i64),
        device,
        model,
        fs_type,
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> Option<u64> {
    Some(std::os::unix::fs::MetadataExt::ino(meta))
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> Option<u64> {
    None
}

fn unix_sec(t: SystemTime) -> Option<u64> {
    t.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// Now as (RFC 3339 UTC, seconds since the epoch).
pub fn now_rfc3339() -> (String, u64) {
    let secs = unix_sec(SystemTime::now()).unwrap_or(0);
    (rfc3339(secs), secs)
}

/// Seconds since the epoch as `YYYY-MM-DDThh:mm:ssZ` (civil-from-days, proleptic Gregorian).
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(dir: &Path) -> (Profile, PathBuf) {
        let file = dir.join("shard0.dat");
        std::fs::write(&file, vec![1u8; 8192]).unwrap();
        let (created, created_unix_sec) = now_rfc3339();
        let profile = Profile {
            format: PROFILE_FORMAT,
            created,
            created_unix_sec,
            method: Method::UringDirect,
            threads: 2,
            depth: 64,
            shards: 1,
            measured: Measured {
                samples_per_sec: 123_456.5,
                samples_per_sec_cv: 0.031,
                trials: 3,
                latency_us_p99: Some(812.25),
                device_ceiling_iops: None,
                predicted_mining_power: 0.70642,
                by_method: vec![
                    MethodRate {
                        method: Method::UringDirect,
                        samples_per_sec: 123_456.5,
                    },
                    MethodRate {
                        method: Method::Uring,
                        samples_per_sec: 101_000.0,
                    },
                ],
                predicted_steady_mining_power: Some(1.0),
                sustained: vec![MethodRate {
                    method: Method::UringDirect,
                    samples_per_sec: 99_000.5,
                }],
            },
            fingerprint: fingerprint(std::slice::from_ref(&file)),
        };
        (profile, file)
    }

    /// The chosen method comes first whatever the sustained reads hold, its sustained rate where
    /// there is one, else its sweep rate; the first rate of each read path is the sustained one.
    #[test]
    fn rates_name_the_chosen_method_first() {
        let sustained = [(Method::Uring, 80_000.0), (Method::UringDirect, 81_000.0)];
        let by_method = [(Method::UringDirect, 109_000.0), (Method::Uring, 106_000.0)];
        assert_eq!(
            ordered_rates((Method::UringDirect, 109_000.0), &sustained, &by_method),
            [
                (Method::UringDirect, 81_000.0),
                (Method::Uring, 80_000.0),
                (Method::UringDirect, 109_000.0),
                (Method::UringDirect, 109_000.0),
                (Method::Uring, 106_000.0),
            ]
        );
        // The chosen method's longer read failed: its sweep rate leads.
        let rates = ordered_rates((Method::Direct, 90_000.0), &sustained, &[]);
        assert_eq!(rates[0], (Method::Direct, 90_000.0));
        assert_eq!(rates[1], (Method::Uring, 80_000.0));
    }

    #[test]
    fn round_trips_through_toml() {
        let dir = tempfile::tempdir().unwrap();
        let (profile, file) = sample(dir.path());
        let path = default_path(&file);
        assert_eq!(path.file_name().unwrap(), "shard0.dat.pora-profile.toml");
        profile.save(&path).unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(loaded, profile);
        assert!(loaded.matches(&fingerprint(&[file])));
        // No temp file left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn fingerprint_mismatch_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let (profile, file) = sample(dir.path());
        // Same path, different size: a re-created file.
        std::fs::write(&file, vec![1u8; 4096]).unwrap();
        let now = fingerprint(std::slice::from_ref(&file));
        assert!(!profile.matches(&now));
        assert!(profile.mismatch(&now).unwrap().contains("shard0.dat"));
        // Another device.
        let mut moved = profile.fingerprint.clone();
        moved.files[0].device = Some("8:16".into());
        assert!(!profile.matches(&moved));
        // More files than tuned for.
        let mut two = profile.fingerprint.clone();
        two.files.push(two.files[0].clone());
        assert!(!profile.matches(&two));
        // mtime alone (es-node wrote a blob) keeps the profile.
        let mut touched = profile.fingerprint.clone();
        touched.files[0].mtime_unix_sec = Some(1);
        assert!(profile.matches(&touched));
    }

    #[test]
    fn lookup_finds_default_profile_in_any_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let (_, first) = sample(dir.path());
        let second = dir.path().join("shard1.dat");
        std::fs::write(&second, vec![2u8; 4096]).unwrap();
        let files = vec![first.clone(), second.clone()];
        assert!(matches!(lookup(&files, None).unwrap(), Lookup::Absent));
        let mut profile = sample(dir.path()).0;
        profile.fingerprint = fingerprint(&files);
        profile.save(&default_path(&first)).unwrap();
        assert!(matches!(lookup(&files, None).unwrap(), Lookup::Use { .. }));
        // Same files in another order: still the same fingerprint (default path follows the
        // first file, so give the profile explicitly).
        let swapped = vec![second.clone(), first.clone()];
        assert!(matches!(
            lookup(&swapped, Some(&default_path(&first))).unwrap(),
            Lookup::Use { .. }
        ));
        // One file only: stale.
        assert!(matches!(
            lookup(&files[..1], None).unwrap(),
            Lookup::Stale { .. }
        ));
        // An explicit profile that does not exist is an error.
        assert!(lookup(&files, Some(&dir.path().join("none.toml"))).is_err());
    }

    #[test]
    fn load_reports_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "method = 3").unwrap();
        let e = load(&path).unwrap_err();
        assert!(e.to_string().contains("p.toml"), "{e}");
        assert!(load(&dir.path().join("missing.toml")).is_err());
    }

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
