//! Shards grouped by the device their reads queue on (mining.md): each group is mined by its own
//! pool (factory, threads, depth, profile), tuned alone and reported on its own, so a fast NVMe
//! and a slow disk neither share knobs nor pace each other. One function decides the grouping
//! for the session, `pora tune` and `pora doctor`, from the devices' one reading
//! (`FileDevices`) that the session hands on to its other rules.

use pora_io::host::file_devices::FileDevices;
use std::path::Path;

/// Items (shards or files) that sit on one device, in the order they were given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceGroup {
    /// The whole disk (`vda`), else the file system's `major:minor`; `None` where the OS does
    /// not tell (then every item is in one group).
    pub device: Option<String>,
    /// Indices of the items, ascending.
    pub members: Vec<usize>,
}

impl DeviceGroup {
    /// `device vda` / `device 0:45` / `device unknown`, for messages.
    pub fn label(&self) -> String {
        format!("device {}", self.device.as_deref().unwrap_or("unknown"))
    }
}

/// Groups `paths` (one per item: a shard's first file, or each file) by device, groups in order
/// of their first item. Only cheap calls (stat, a few sysfs reads once per device).
pub fn by_device<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Vec<DeviceGroup> {
    let paths: Vec<&Path> = paths.into_iter().collect();
    let roots = pora_io::host::Roots::default();
    by_known(
        paths.iter().copied(),
        &FileDevices::read(paths.iter().copied(), &roots),
    )
}

/// [`by_device`] with the devices already read (`devices` covers `paths`; a path it does not
/// cover is a device of its own kind, unknown).
pub fn by_known<'a>(
    paths: impl IntoIterator<Item = &'a Path>,
    devices: &FileDevices,
) -> Vec<DeviceGroup> {
    group_keys(paths.into_iter().map(|p| devices.device_key(p)))
}

/// Moves `items` into their groups (`groups` from [`by_device`] over the same items): one list
/// per group, in the group's order.
pub fn split<T>(items: Vec<T>, groups: &[DeviceGroup]) -> Vec<Vec<T>> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    groups
        .iter()
        .map(|g| {
            g.members
                .iter()
                .filter_map(|&i| slots.get_mut(i)?.take())
                .collect()
        })
        .collect()
}

/// Groups items by key, groups in order of their first item.
pub fn group_keys(keys: impl IntoIterator<Item = Option<String>>) -> Vec<DeviceGroup> {
    let mut groups: Vec<DeviceGroup> = Vec::new();
    for (index, key) in keys.into_iter().enumerate() {
        match groups.iter_mut().find(|g| g.device == key) {
            Some(group) => group.members.push(index),
            None => groups.push(DeviceGroup {
                device: key,
                members: vec![index],
            }),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_keep_first_appearance_order() {
        let key = |s: &str| Some(s.to_string());
        let groups = group_keys([key("vda"), key("nvme0n1"), key("vda"), None, key("nvme0n1")]);
        let shape: Vec<_> = groups
            .iter()
            .map(|g| (g.label(), g.members.clone()))
            .collect();
        assert_eq!(
            shape,
            vec![
                ("device vda".to_string(), vec![0, 2]),
                ("device nvme0n1".to_string(), vec![1, 4]),
                ("device unknown".to_string(), vec![3]),
            ]
        );
        let split = split(vec!['a', 'b', 'c', 'd', 'e'], &groups);
        assert_eq!(split, vec![vec!['a', 'c'], vec!['b', 'e'], vec!['d']]);
    }

    #[test]
    fn files_in_one_directory_are_one_group() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<_> = (0..3).map(|i| dir.path().join(format!("f{i}"))).collect();
        for p in &paths {
            std::fs::write(p, b"x").unwrap();
        }
        let groups = by_device(paths.iter().map(|p| p.as_path()));
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].members, vec![0, 1, 2]);
    }
}
