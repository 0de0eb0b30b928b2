//! Facts `pora doctor` and `pora tune` need about a file's device, file system and OS (sector
//! sizes, scheduler, read-ahead, page-cache residency, extents, dm-crypt/RAID, BitLocker).
