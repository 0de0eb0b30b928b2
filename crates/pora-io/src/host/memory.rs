//! How much memory the machine has and how much the page cache can grow into: `/proc/meminfo`
//! and the memory cgroup the process runs in (v1 `memory.limit_in_bytes`, v2 `memory.max`:
//! es-node runs in containers with limits). Whether a shard fits in the page cache decides
//! which methods tune trusts, what doctor warns about and which method `auto` takes each slot.

use super::Roots;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Memory figures from `/proc/meminfo`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemInfo {
    pub total_bytes: u64,
    pub available_bytes: u64,
}

/// `MemTotal` and `MemAvailable` from `<proc>/meminfo`.
pub fn meminfo(roots: &Roots) -> Result<MemInfo, String> {
    let path = roots.proc.join("meminfo");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_meminfo(&text).ok_or_else(|| format!("{}: no MemTotal / MemAvailable", path.display()))
}

fn parse_meminfo(text: &str) -> Option<MemInfo> {
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix(key)?.strip_prefix(':')?;
            let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kb * 1024)
        })
    };
    Some(MemInfo {
        total_bytes: field("MemTotal")?,
        available_bytes: field("MemAvailable")?,
    })
}

/// The memory cgroup this process is charged to, when it has a limit.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CgroupMemory {
    /// `v1` or `v2`.
    pub version: &'static str,
    /// The cgroup's directory.
    pub path: PathBuf,
    /// The tightest limit of the cgroup and its ancestors.
    pub limit_bytes: u64,
    /// Everything charged to it now (page cache included).
    pub usage_bytes: u64,
    /// Of `usage_bytes`, file pages on the file LRU lists (active + inactive): page cache the
    /// kernel can reclaim for other file pages. Not shmem/tmpfs, which the "cache"/"file"
    /// counters include but which lives on the anonymous lists and is not reclaimed for files.
    pub file_bytes: u64,
}

impl CgroupMemory {
    /// What the page cache can hold inside the limit: the limit less what is not file cache.
    pub fn cache_room_bytes(&self) -> u64 {
        let not_cache = self.usage_bytes.saturating_sub(self.file_bytes);
        self.limit_bytes.saturating_sub(not_cache)
    }
}

/// Limits above this are "no limit" (v1 writes 2^63 rounded down to a page for "unlimited").
const NO_LIMIT_BYTES: u64 = 1 << 60;

/// The memory cgroup of this process with its limit, `None` when it has none (or the OS has no
/// cgroups); an error only when the cgroup files exist but cannot be read.
pub fn cgroup_memory(roots: &Roots) -> Result<Option<CgroupMemory>, String> {
    let own = roots.proc.join("self/cgroup");
    let Ok(text) = std::fs::read_to_string(&own) else {
        return Ok(None);
    };
    let mount = roots.sys.join("fs/cgroup");
    if let Some(rel) = cgroup_path(&text, true) {
        let base = mount.join("memory");
        if base.join("memory.limit_in_bytes").exists() {
            return v1(&base, &rel);
        }
    }
    match cgroup_path(&text, false) {
        Some(rel) if mount.join("cgroup.controllers").exists() => v2(&mount, &rel),
        _ => Ok(None),
    }
}

/// The cgroup's path relative to its hierarchy's root: v1's `memory` controller line, or v2's
/// `0::` line.
fn cgroup_path(text: &str, v1: bool) -> Option<String> {
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = if v1 {
            controllers.split(',').any(|c| c == "memory")
        } else {
            id == "0" && controllers.is_empty()
        };
        wanted.then(|| path.trim_start_matches('/').to_string())
    })
}

/// The cgroup directory, or the hierarchy's root when the path is not visible there (inside a
/// container the process sees its own cgroup as the root).
fn visible_dir(base: &Path, rel: &str) -> PathBuf {
    let dir = base.join(rel);
    if dir.is_dir() {
        dir
    } else {
        base.to_path_buf()
    }
}

fn v1(base: &Path, rel: &str) -> Result<Option<CgroupMemory>, String> {
    let dir = visible_dir(base, rel);
    let stat = read_stat(&dir.join("memory.stat"))?;
    // hierarchical_memory_limit already takes the ancestors' limits into account.
    let limit = stat_field(&stat, "hierarchical_memory_limit")
        .map_or_else(|| read_u64(&dir.join("memory.limit_in_bytes")), Ok)?;
    if limit >= NO_LIMIT_BYTES {
        return Ok(None);
    }
    Ok(Some(CgroupMemory {
        version: "v1",
        limit_bytes: limit,
        usage_bytes: read_u64(&dir.join("memory.usage_in_bytes"))?,
        file_bytes: file_lru_bytes(&stat, "total_")
            .or_else(|| file_lru_bytes(&stat, ""))
            .unwrap_or(0),
        path: dir,
    }))
}

fn v2(base: &Path, rel: &str) -> Result<Option<CgroupMemory>, String> {
    let dir = visible_dir(base, rel);
    let mut limit: Option<u64> = None;
    let mut walk = Some(dir.as_path());
    while let Some(d) = walk.filter(|d| d.starts_with(base)) {
        if let Ok(text) = std::fs::read_to_string(d.join("memory.max")) {
            if let Ok(v) = text.trim().parse::<u64>() {
                limit = Some(limit.map_or(v, |l| l.min(v)));
            }
        }
        walk = d.parent();
    }
    let Some(limit) = limit.filter(|&l| l < NO_LIMIT_BYTES) else {
        return Ok(None);
    };
    let stat = read_stat(&dir.join("memory.stat"))?;
    Ok(Some(CgroupMemory {
        version: "v2",
        limit_bytes: limit,
        usage_bytes: read_u64(&dir.join("memory.current"))?,
        file_bytes: file_lru_bytes(&stat, "").unwrap_or(0),
        path: dir,
    }))
}

fn read_stat(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_u64(path: &Path) -> Result<u64, String> {
    let text = read_stat(path)?;
    text.trim()
        .parse()
        .map_err(|e| format!("{}: {:?} is not a number: {e}", path.display(), text.trim()))
}

/// `<prefix>active_file + <prefix>inactive_file` of a memory.stat.
fn file_lru_bytes(stat: &str, prefix: &str) -> Option<u64> {
    let field = |name: &str| stat_field(stat, &format!("{prefix}{name}"));
    Some(field("active_file")? + field("inactive_file")?)
}

fn stat_field(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// Memory the page cache can grow into for the files of this process: `MemAvailable` (which
/// counts reclaimable cache, the shard's own pages included), within the cgroup's limit.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheRoom {
    pub mem_available_bytes: u64,
    pub mem_total_bytes: u64,
    /// The cgroup's limit, when there is one.
    pub cgroup_limit_bytes: Option<u64>,
    /// What the page cache can hold inside that limit.
    pub cgroup_room_bytes: Option<u64>,
    /// The smaller of `MemAvailable` and the cgroup's room.
    pub room_bytes: u64,
}

/// [`CacheRoom`] of this machine now: [`cache_room`] over the real `/proc` and `/sys` on Unix;
/// on Windows the physical memory `GlobalMemoryStatusEx` calls available (free, zeroed and
/// standby pages: the standby list is the file cache, so it is what `MemAvailable` is on Linux).
/// A Windows job object's memory limit (a process-isolated container) caps the job's committed
/// memory, which the file cache is not (the standby list is the system's, and a mapped view of a
/// data file commits nothing), so it does not bound the cache: the room is the machine's.
pub fn cache_room_here() -> Result<CacheRoom, String> {
    #[cfg(windows)]
    {
        use windows_sys::Win32::System::SystemInformation::{GlobalMemoryStatusEx, MEMORYSTATUSEX};
        // SAFETY: MEMORYSTATUSEX is a plain C struct for which all-zero is valid.
        let mut status: MEMORYSTATUSEX = unsafe { std::mem::zeroed() };
        status.dwLength = std::mem::size_of::<MEMORYSTATUSEX>() as u32;
        // SAFETY: `status` is a valid, writable MEMORYSTATUSEX with its length set.
        if unsafe { GlobalMemoryStatusEx(&mut status) } == 0 {
            return Err(format!(
                "GlobalMemoryStatusEx: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(CacheRoom {
            mem_available_bytes: status.ullAvailPhys,
            mem_total_bytes: status.ullTotalPhys,
            cgroup_limit_bytes: None,
            cgroup_room_bytes: None,
            room_bytes: status.ullAvailPhys,
        })
    }
    #[cfg(not(windows))]
    cache_room(&Roots::default())
}

/// [`CacheRoom`] now; an error when `/proc/meminfo` cannot be read (not Linux).
pub fn cache_room(roots: &Roots) -> Result<CacheRoom, String> {
    let mem = meminfo(roots)?;
    let cgroup = cgroup_memory(roots)?;
    let cgroup_room = cgroup.as_ref().map(CgroupMemory::cache_room_bytes);
    Ok(CacheRoom {
        mem_available_bytes: mem.available_bytes,
        mem_total_bytes: mem.total_bytes,
        cgroup_limit_bytes: cgroup.as_ref().map(|c| c.limit_bytes),
        cgroup_room_bytes: cgroup_room,
        room_bytes: cgroup_room.map_or(mem.available_bytes, |r| r.min(mem.available_bytes)),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(any(target_os = "linux", windows))]
    fn this_machine_tells_its_memory() {
        // Linux: /proc/meminfo (and the cgroup); Windows: GlobalMemoryStatusEx. Either way a
        // machine has some memory and cannot have more available than installed.
        let room = super::cache_room_here().expect("this OS tells its memory");
        assert!(room.mem_total_bytes > 0, "{room:?}");
        assert!(room.mem_available_bytes <= room.mem_total_bytes, "{room:?}");
        assert!(room.room_bytes <= room.mem_available_bytes, "{room:?}");
    }

    use super::*;
    use std::fs;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn roots(t: &tempfile::TempDir) -> Roots {
        Roots {
            sys: t.path().join("sys"),
            proc: t.path().join("proc"),
        }
    }

    const MEMINFO: &str =
        "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n";

    #[test]
    fn v1_limit_usage_and_cache_give_the_room() {
        let t = tempfile::tempdir().unwrap();
        let r = roots(&t);
        write(&r.proc.join("meminfo"), MEMINFO);
        write(
            &r.proc.join("self/cgroup"),
            "12:cpuset:/\n4:memory:/pora-bench\n1:name=systemd:/user\n0::/user\n",
        );
        let dir = r.sys.join("fs/cgroup/memory");
        write(&dir.join("memory.limit_in_bytes"), "9223372036854771712\n");
        let cg = dir.join("pora-bench");
        write(&cg.join("memory.limit_in_bytes"), "2147483648\n");
        write(&cg.join("memory.usage_in_bytes"), "2000000000\n");
        write(
            &cg.join("memory.stat"),
            "cache 1500000000\nrss 400000000\nshmem 100000000\nhierarchical_memory_limit 2147483648\ntotal_cache 1500000000\ntotal_shmem 100000000\ntotal_active_file 1000000000\ntotal_inactive_file 400000000\n",
        );
        let cgroup = cgroup_memory(&r).unwrap().expect("limited");
        assert_eq!((cgroup.version, cgroup.limit_bytes), ("v1", 2147483648));
        // Anonymous memory and shmem (counted in "cache", but not reclaimable for files) are
        // not room for the shard: 2,000,000,000 used less 1,400,000,000 on the file lists.
        assert_eq!(cgroup.cache_room_bytes(), 2147483648 - 600000000);
        let room = cache_room(&r).unwrap();
        assert_eq!(room.room_bytes, 2147483648 - 600000000);
        assert_eq!(room.mem_available_bytes, 20000000 * 1024);
    }

    #[test]
    fn v1_unlimited_is_none_and_room_is_mem_available() {
        let t = tempfile::tempdir().unwrap();
        let r = roots(&t);
        write(&r.proc.join("meminfo"), MEMINFO);
        write(&r.proc.join("self/cgroup"), "4:memory:/\n");
        let dir = r.sys.join("fs/cgroup/memory");
        write(&dir.join("memory.limit_in_bytes"), "9223372036854771712\n");
        write(&dir.join("memory.usage_in_bytes"), "1000\n");
        write(
            &dir.join("memory.stat"),
            "cache 10\nhierarchical_memory_limit 9223372036854771712\n",
        );
        assert_eq!(cgroup_memory(&r).unwrap(), None);
        assert_eq!(cache_room(&r).unwrap().room_bytes, 20000000 * 1024);
    }

    #[test]
    fn v2_takes_the_tightest_ancestor_limit() {
        let t = tempfile::tempdir().unwrap();
        let r = roots(&t);
        write(&r.proc.join("meminfo"), MEMINFO);
        write(&r.proc.join("self/cgroup"), "0::/docker/abc\n");
        let mount = r.sys.join("fs/cgroup");
        write(&mount.join("cgroup.controllers"), "cpu memory\n");
        write(&mount.join("docker/memory.max"), "4294967296\n");
        let cg = mount.join("docker/abc");
        write(&cg.join("memory.max"), "max\n");
        write(&cg.join("memory.current"), "3000000000\n");
        write(
            &cg.join("memory.stat"),
            "anon 1000000000\nfile 2000000000\nshmem 0\nactive_file 1500000000\ninactive_file 500000000\n",
        );
        let cgroup = cgroup_memory(&r).unwrap().expect("limited by its parent");
        assert_eq!((cgroup.version, cgroup.limit_bytes), ("v2", 4294967296));
        assert_eq!(cgroup.cache_room_bytes(), 4294967296 - 1000000000);
    }

    #[test]
    fn no_cgroup_file_means_no_limit() {
        let t = tempfile::tempdir().unwrap();
        let r = roots(&t);
        write(&r.proc.join("meminfo"), MEMINFO);
        assert_eq!(cgroup_memory(&r).unwrap(), None);
    }
}
