//! The devices under a set of files, read once: each file's device number (one `stat`), then
//! each distinct device's facts from sysfs ([`device_facts`]: queues, poll and write queues,
//! whether hardware is behind it, rotational, mirrors and stripes) one time, however many files
//! sit on it. A session reads them when it opens and hands the one reading to every rule that
//! needs it: the grouping of shards by device, the depth rule (pora-mine), the submission rhythm
//! of O_DIRECT rings (through [`crate::IoConfig::devices`]). So the rules cannot disagree about
//! a file's device, and tests point the reading at a canned sysfs tree.

use super::block_device::{device_facts, device_numbers, DeviceFacts};
use super::Roots;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A device number, `(major, minor)`.
pub type DevNumber = (u32, u32);

/// The device numbers of one file: its file system's (`st_dev`) and the block device behind it
/// (the mount source's for the anonymous `0:N` devices of btrfs; none for tmpfs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileNumbers {
    pub stat_dev: Option<DevNumber>,
    pub block_device: Option<DevNumber>,
}

impl FileNumbers {
    /// A file on a file system straight on block device `dev`.
    pub fn on(dev: DevNumber) -> Self {
        FileNumbers {
            stat_dev: Some(dev),
            block_device: Some(dev),
        }
    }
}

/// What was read of one file's device.
#[derive(Clone, Debug)]
struct FileDevice {
    path: PathBuf,
    /// The file system's device number (`st_dev`), when `stat` worked.
    stat_dev: Option<DevNumber>,
    /// The block device's facts; `None` when it is unknown (tmpfs, a network file system, not
    /// Linux). Shared by every file on the device.
    facts: Option<Arc<DeviceFacts>>,
}

/// The device facts of a set of files, each device read once. Empty by default: nothing read.
/// Cloning shares the reading.
#[derive(Clone, Debug, Default)]
pub struct FileDevices {
    files: Arc<Vec<FileDevice>>,
}

impl FileDevices {
    /// Reads the devices under `paths` through `roots`: a `stat` per file, the sysfs facts once
    /// per distinct device. A path that is itself a block device (`/dev/nvme0n1`) is that device.
    pub fn read<'a>(paths: impl IntoIterator<Item = &'a Path>, roots: &Roots) -> FileDevices {
        let numbered: Vec<(PathBuf, FileNumbers)> = paths
            .into_iter()
            .map(|path| (path.to_path_buf(), numbers_of(path, roots)))
            .collect();
        Self::from_numbers(roots, numbered)
    }

    /// Files whose device numbers are known, their devices' facts read through `roots`, once
    /// per distinct device: how a canned sysfs tree is tried with real files.
    pub fn from_numbers(
        roots: &Roots,
        files: impl IntoIterator<Item = (PathBuf, FileNumbers)>,
    ) -> FileDevices {
        let mut read: Vec<(DevNumber, Option<Arc<DeviceFacts>>)> = Vec::new();
        let files = files
            .into_iter()
            .map(|(path, numbers)| {
                let stat_dev = numbers.stat_dev;
                let facts = numbers.block_device.and_then(|(major, minor)| {
                    match read.iter().find(|(number, _)| *number == (major, minor)) {
                        Some((_, facts)) => facts.clone(),
                        None => {
                            let facts = device_facts(roots, major, minor).map(Arc::new);
                            read.push(((major, minor), facts.clone()));
                            facts
                        }
                    }
                });
                FileDevice {
                    path,
                    stat_dev,
                    facts,
                }
            })
            .collect();
        FileDevices {
            files: Arc::new(files),
        }
    }

    /// Files with facts given whole (a test's device, or facts read elsewhere).
    pub fn from_facts(files: impl IntoIterator<Item = (PathBuf, Option<DeviceFacts>)>) -> Self {
        let files = files
            .into_iter()
            .map(|(path, facts)| FileDevice {
                path,
                stat_dev: facts.as_ref().map(|f| (f.major, f.minor)),
                facts: facts.map(Arc::new),
            })
            .collect();
        FileDevices {
            files: Arc::new(files),
        }
    }

    fn entry(&self, path: &Path) -> Option<&FileDevice> {
        self.files.iter().find(|f| f.path == path)
    }

    /// Whether `path`'s device was read (known or found unknown).
    pub fn covers(&self, path: &Path) -> bool {
        self.entry(path).is_some()
    }

    /// The facts of `path`'s device; `None` when it is unknown or `path` was not read.
    pub fn facts(&self, path: &Path) -> Option<&DeviceFacts> {
        self.entry(path)?.facts.as_deref()
    }

    /// The file system's device number of `path` (its `st_dev`), when `stat` worked.
    pub fn stat_dev(&self, path: &Path) -> Option<DevNumber> {
        self.entry(path)?.stat_dev
    }

    /// What `path`'s reads queue on, as a key to group files by: the whole disk when known,
    /// else the file system's device number (`0:45` for tmpfs), else `None`.
    pub fn device_key(&self, path: &Path) -> Option<String> {
        let entry = self.entry(path)?;
        match (&entry.facts, entry.stat_dev) {
            (Some(facts), _) => Some(facts.disk.clone()),
            (None, Some((major, minor))) => Some(format!("{major}:{minor}")),
            (None, None) => None,
        }
    }

    /// How many devices' facts were read: files on one device share one reading (for the
    /// canned-tree tests, which run on Unix).
    #[cfg(all(test, unix))]
    pub(crate) fn readings(&self) -> usize {
        let mut seen: Vec<*const DeviceFacts> = Vec::new();
        for facts in self.files.iter().filter_map(|f| f.facts.as_ref()) {
            if !seen.contains(&Arc::as_ptr(facts)) {
                seen.push(Arc::as_ptr(facts));
            }
        }
        seen.len()
    }

    /// These devices and those of the `paths` not yet read, read now through `roots` (once per
    /// distinct device): what a method that needs the devices uses when its caller read none.
    pub fn covering(&self, paths: &[PathBuf], roots: &Roots) -> FileDevices {
        let missing: Vec<&Path> = paths
            .iter()
            .map(PathBuf::as_path)
            .filter(|p| !self.covers(p))
            .collect();
        if missing.is_empty() {
            return self.clone();
        }
        let more = FileDevices::read(missing, roots);
        let files = self
            .files
            .iter()
            .chain(more.files.iter())
            .cloned()
            .collect();
        FileDevices {
            files: Arc::new(files),
        }
    }
}

/// The device numbers of `path`: a block device node is its own device.
fn numbers_of(path: &Path, roots: &Roots) -> FileNumbers {
    #[cfg(target_os = "linux")]
    {
        use super::block_device::major_minor;
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.file_type().is_block_device() {
                return FileNumbers {
                    stat_dev: Some(major_minor(meta.dev())),
                    block_device: Some(major_minor(meta.rdev())),
                };
            }
        }
    }
    let numbers = device_numbers(path, roots);
    FileNumbers {
        stat_dev: numbers.stat_dev,
        block_device: numbers.dev,
    }
}
