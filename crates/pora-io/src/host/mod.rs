//! Facts about the machine under pora, one module per fact, each written once and used by every
//! command that needs it (bench, tune, doctor, mine's profiles and smart defaults, the O_DIRECT
//! and unbuffered backends, and later the service's metrics):
//! - [`block_device`]: which block device holds a file, through sysfs (partition -> disk,
//!   dm / md layers, queue settings);
//! - [`file_devices`]: the devices under a set of files, each read once, for every rule that
//!   needs them (the grouping by device, the depth rule, the rhythm of O_DIRECT rings);
//! - [`file_system`]: the file system's name from its `statfs` magic number;
//! - [`sector_size`]: the alignment unbuffered reads need and the rule a reported size must pass;
//! - [`page_cache`]: how much of a file is cached (mincore) and evicting it (fadvise);
//! - [`device_counters`]: a device's completed-read counter;
//! - [`memory`]: total and available memory;
//! - [`cpu_time`]: process and thread CPU time.
//!
//! Readers of sysfs and procfs take a [`Roots`] so tests run on canned trees. The OS calls exist
//! on Linux (and CPU time on every OS); elsewhere a fact is [`Unknown`] with the reason, so the
//! crate builds for Windows and macOS unchanged.

pub mod block_device;
pub mod cpu_time;
pub mod device_counters;
#[cfg(all(test, unix))]
mod fake_tree;
pub mod file_devices;
pub mod file_system;
pub mod memory;
pub mod page_cache;
pub mod sector_size;
#[cfg(all(test, unix))]
mod tests;

use std::path::{Path, PathBuf};

/// Why a fact (a CPU time, a device counter) is not known on this machine or for this file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unknown(pub String);

/// Where sysfs and procfs are mounted (`/sys`, `/proc` on a real system).
#[derive(Clone, Debug)]
pub struct Roots {
    pub sys: PathBuf,
    pub proc: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            sys: PathBuf::from("/sys"),
            proc: PathBuf::from("/proc"),
        }
    }
}

/// The trimmed text of a small sysfs / procfs file.
pub(crate) fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// A number from a small sysfs / procfs file.
pub(crate) fn read_num<T: std::str::FromStr>(path: &Path) -> Option<T> {
    read_trim(path)?.parse().ok()
}

/// Why a fact that only Linux exposes is unknown elsewhere.
#[cfg(not(target_os = "linux"))]
pub(crate) const NOT_LINUX: &str =
    "block-device statistics and page-cache eviction are implemented for Linux only";
