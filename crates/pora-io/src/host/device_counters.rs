//! A block device's completed-read counter (sysfs `stat`, else `/proc/diskstats`): bench compares
//! it before and after a run to count the reads that reached the device.

use super::block_device::BlockDevice;
use super::Unknown;

/// Reads completed, from one line of `/sys/block/<dev>/stat` (the first field).
pub fn parse_sys_stat_reads(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// Reads completed for device `major:minor`, from the text of `/proc/diskstats`
/// (`major minor name reads_completed ...` per line).
pub fn parse_diskstats_reads(text: &str, major: u32, minor: u32) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let maj: u32 = fields.next()?.parse().ok()?;
        let min: u32 = fields.next()?.parse().ok()?;
        if (maj, min) != (major, minor) {
            return None;
        }
        let _name = fields.next()?;
        fields.next()?.parse().ok()
    })
}

impl BlockDevice {
    /// Reads the device has completed since boot: sysfs `stat`, else `/proc/diskstats` (Linux
    /// only).
    pub fn reads_completed(&self) -> Result<u64, Unknown> {
        #[cfg(target_os = "linux")]
        {
            let stat_path = self.sys_dir.join("stat");
            if let Some(reads) = std::fs::read_to_string(&stat_path)
                .ok()
                .as_deref()
                .and_then(parse_sys_stat_reads)
            {
                return Ok(reads);
            }
            let text = std::fs::read_to_string("/proc/diskstats").map_err(|e| {
                Unknown(format!(
                    "neither {} nor /proc/diskstats is readable: {e}",
                    stat_path.display()
                ))
            })?;
            parse_diskstats_reads(&text, self.major, self.minor).ok_or_else(|| {
                Unknown(format!(
                    "device {}:{} is not in /proc/diskstats",
                    self.major, self.minor
                ))
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err(Unknown(super::NOT_LINUX.into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISKSTATS: &str = "\
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 259       0 nvme0n1 123456 10 9876543 4000 77 0 616 12 0 3000 4012 0 0 0 0 0 0
 259       1 nvme0n1p1 4242 0 33936 100 0 0 0 0 0 90 100 0 0 0 0 0 0
 254       0 vda 40791 6183 3760234 32422 22405 32850 9302872 41145 0 9684 74671
   8      16 sdb 5 0 40 1 0 0 0 0 0 1 1
";

    #[test]
    fn diskstats_finds_the_device_by_numbers() {
        assert_eq!(parse_diskstats_reads(DISKSTATS, 259, 0), Some(123456));
        assert_eq!(parse_diskstats_reads(DISKSTATS, 259, 1), Some(4242));
        assert_eq!(parse_diskstats_reads(DISKSTATS, 254, 0), Some(40791));
        assert_eq!(parse_diskstats_reads(DISKSTATS, 8, 16), Some(5));
        assert_eq!(parse_diskstats_reads(DISKSTATS, 7, 0), Some(0));
    }

    #[test]
    fn diskstats_missing_or_garbled_device_is_none() {
        assert_eq!(parse_diskstats_reads(DISKSTATS, 8, 0), None);
        assert_eq!(parse_diskstats_reads("", 8, 0), None);
        assert_eq!(parse_diskstats_reads(" 8 0 sda notanumber 1 2", 8, 0), None);
        assert_eq!(parse_diskstats_reads(" 8 0 sda", 8, 0), None);
    }

    #[test]
    fn sys_stat_first_field_is_reads_completed() {
        let line = "   40791     6183  3760234    32422    22405    32850  9302872    41145        0     9684    74671\n";
        assert_eq!(parse_sys_stat_reads(line), Some(40791));
        assert_eq!(parse_sys_stat_reads(""), None);
        assert_eq!(parse_sys_stat_reads("x 1 2"), None);
    }
}
