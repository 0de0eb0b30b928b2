//! Helpers of the tests that mine through the fault-injecting FUSE file system
//! (`reliability_faultfs`, `reliability_stalls`): whether FUSE can be used here, the intact shard
//! they serve, a fresh mount of it, and a guard that kills a child a failed assertion left. Each
//! such test declares `common` and `reliability_common` before this module.
#![allow(dead_code)]

use pora_faultfs::{FaultMount, MountOptions};
use std::path::{Path, PathBuf};

/// Root and /dev/fuse, or why not (after a SKIP line).
pub fn fuse_ready(test: &str) -> bool {
    match pora_faultfs::fuse_unavailable() {
        None => true,
        Some(why) => {
            skip_note!("SKIP {test}: {why}");
            false
        }
    }
}

/// An intact shard of 2^`kv_entries_bits` KVs filled from `seed`, and its data region's first
/// byte.
pub fn intact_shard(dir: &Path, kv_entries_bits: u32, seed: u64) -> (PathBuf, u64) {
    let intact = crate::reliability_common::create(dir, "shard.dat", kv_entries_bits, seed);
    let shard = pora_core::ShardSet::open(std::slice::from_ref(&intact), None).unwrap();
    let data_start = shard.locate(0).unwrap().offset;
    (intact, data_start)
}

/// A fresh mount of `intact` under `dir/mnt-<tag>`, its rules in `dir/rules-<tag>`.
pub fn mount(dir: &Path, intact: &Path, tag: &str, options: MountOptions) -> FaultMount {
    let mnt = dir.join(format!("mnt-{tag}"));
    std::fs::create_dir_all(&mnt).unwrap();
    FaultMount::mount_with(intact, &mnt, &dir.join(format!("rules-{tag}")), options)
        .expect("mount faultfs")
}

/// Kills a child left running by a failed assertion (without waiting for it).
pub struct KillOnDrop(pub i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill has no memory preconditions; the pid is our child's (at worst a zombie).
        unsafe { libc::kill(self.0, libc::SIGKILL) };
    }
}
