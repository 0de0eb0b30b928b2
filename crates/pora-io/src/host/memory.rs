//! How much memory the machine has and how much is available (`/proc/meminfo`): whether a shard
//! fits in the page cache decides which methods tune trusts and what doctor warns about.

use super::Roots;
use serde::Serialize;

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
