//! Windows volume facts for `pora doctor` and for the unbuffered backend: the sector sizes that
//! `FILE_FLAG_NO_BUFFERING` reads must be aligned to, the file system, and BitLocker status as
//! far as it can be learned without administrator rights.

use super::{from_wide, wide};
use crate::host::sector_size::{plausible_sector_size, FALLBACK_SECTOR_BYTES};
use std::fs::File;
use std::os::windows::io::AsRawHandle;
use std::path::Path;
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::Storage::FileSystem::{
    FileStorageInfo, GetDiskFreeSpaceW, GetFileInformationByHandleEx,
    GetVolumeInformationByHandleW, GetVolumePathNameW, FILE_STORAGE_INFO,
};

/// Whether the volume is BitLocker-encrypted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "status", content = "reason")]
pub enum BitLocker {
    On,
    Off,
    /// Could not be determined; the reason says why and how to check by hand.
    Unknown(String),
}

/// What `pora doctor` reports about the volume holding a file.
#[derive(Clone, Debug, serde::Serialize)]
pub struct VolumeFacts {
    /// The volume's mount point (e.g. `C:\`), from `GetVolumePathNameW`.
    pub volume_root: Option<String>,
    /// File system name (NTFS, ReFS, exFAT, ...), from `GetVolumeInformationByHandleW`.
    pub file_system: Option<String>,
    /// Logical sector size: the alignment `FILE_FLAG_NO_BUFFERING` requires.
    pub logical_sector_bytes: Option<u32>,
    /// Physical sector size the device reports for best performance.
    pub physical_sector_bytes: Option<u32>,
    /// The sector size the `iocp-unbuffered` method uses for this file.
    pub unbuffered_sector_bytes: u32,
    /// Where `unbuffered_sector_bytes` came from.
    pub sector_source: &'static str,
    pub bitlocker: BitLocker,
    /// Queries that failed, with the OS error, so the report is honest about gaps.
    pub notes: Vec<String>,
}

/// Facts about the volume holding `path` (which must exist). Never fails: what cannot be
/// learned is `None`/unknown and explained in `notes`.
pub fn windows_volume_facts(path: &Path) -> VolumeFacts {
    let mut notes = Vec::new();
    let volume_root = volume_root(path)
        .map_err(|e| notes.push(format!("GetVolumePathNameW: {e}")))
        .ok();
    let mut facts = VolumeFacts {
        volume_root,
        file_system: None,
        logical_sector_bytes: None,
        physical_sector_bytes: None,
        unbuffered_sector_bytes: FALLBACK_SECTOR_BYTES,
        sector_source: "fallback (no query succeeded)",
        bitlocker: bitlocker_status(),
        notes,
    };
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            facts.notes.push(format!("{}: {e}", path.display()));
            return facts;
        }
    };
    match file_system_name(&file) {
        Ok(name) => facts.file_system = Some(name),
        Err(e) => facts
            .notes
            .push(format!("GetVolumeInformationByHandleW: {e}")),
    }
    match storage_info(&file) {
        Ok(info) => {
            facts.logical_sector_bytes = Some(info.LogicalBytesPerSector);
            facts.physical_sector_bytes = Some(info.PhysicalBytesPerSectorForPerformance);
        }
        Err(e) => facts.notes.push(format!(
            "GetFileInformationByHandleEx(FileStorageInfo): {e}"
        )),
    }
    let (sector, source) = unbuffered_sector_size(&file, path);
    facts.unbuffered_sector_bytes = sector;
    facts.sector_source = source;
    facts
}

/// The sector size unbuffered reads of `file` must be aligned to, and where it came from:
/// `FileStorageInfo`'s logical sector size, else `GetDiskFreeSpaceW` on the volume root, else
/// 4096 (a multiple of every common sector size, so reads stay aligned either way).
pub(crate) fn unbuffered_sector_size(file: &File, path: &Path) -> (u32, &'static str) {
    if let Ok(info) = storage_info(file) {
        let s = info.LogicalBytesPerSector;
        if plausible_sector_size(s).is_some() {
            return (s, "FileStorageInfo");
        }
    }
    if let Some(s) = volume_root(path)
        .ok()
        .and_then(|root| disk_free_space_sector(&root).ok())
    {
        if plausible_sector_size(s).is_some() {
            return (s, "GetDiskFreeSpaceW");
        }
    }
    (
        FALLBACK_SECTOR_BYTES,
        "fallback: the volume could not be asked",
    )
}

fn storage_info(file: &File) -> std::io::Result<FILE_STORAGE_INFO> {
    // SAFETY: all-zero is a valid FILE_STORAGE_INFO (plain integers).
    let mut info: FILE_STORAGE_INFO = unsafe { std::mem::zeroed() };
    // SAFETY: valid handle; the buffer is a FILE_STORAGE_INFO of the size passed.
    let ok = unsafe {
        GetFileInformationByHandleEx(
            file.as_raw_handle() as HANDLE,
            FileStorageInfo,
            (&mut info as *mut FILE_STORAGE_INFO).cast(),
            std::mem::size_of::<FILE_STORAGE_INFO>() as u32,
        )
    };
    if ok == 0 {
        return Err(super::last_os_error());
    }
    Ok(info)
}

/// The mount point of the volume holding `path`, e.g. `C:\` or `D:\mnt\shards\`.
fn volume_root(path: &Path) -> std::io::Result<String> {
    let absolute = std::path::absolute(path)?;
    let name = wide(absolute.as_os_str());
    let mut buf = vec![0u16; name.len().max(261) + 1];
    // SAFETY: `name` is NUL-terminated; `buf` has the length passed.
    let ok = unsafe { GetVolumePathNameW(name.as_ptr(), buf.as_mut_ptr(), buf.len() as u32) };
    if ok == 0 {
        return Err(super::last_os_error());
    }
    Ok(from_wide(&buf))
}

fn disk_free_space_sector(root: &str) -> std::io::Result<u32> {
    let root = wide(std::ffi::OsStr::new(root));
    let (mut sectors_per_cluster, mut bytes_per_sector, mut free, mut total) =
        (0u32, 0u32, 0u32, 0u32);
    // SAFETY: `root` is NUL-terminated; every out pointer is a valid u32.
    let ok = unsafe {
        GetDiskFreeSpaceW(
            root.as_ptr(),
            &mut sectors_per_cluster,
            &mut bytes_per_sector,
            &mut free,
            &mut total,
        )
    };
    if ok == 0 {
        return Err(super::last_os_error());
    }
    Ok(bytes_per_sector)
}

fn file_system_name(file: &File) -> std::io::Result<String> {
    let mut name = [0u16; 64];
    // SAFETY: valid handle; the only buffer requested is `name`, of the length passed; the
    // other out parameters are optional and null.
    let ok = unsafe {
        GetVolumeInformationByHandleW(
            file.as_raw_handle() as HANDLE,
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            name.as_mut_ptr(),
            name.len() as u32,
        )
    };
    if ok == 0 {
        return Err(super::last_os_error());
    }
    Ok(from_wide(&name))
}

/// BitLocker status is not queried: every documented interface (`manage-bde`, WMI
/// `Win32_EncryptableVolume`) needs an elevated process, and the unelevated Shell property
/// `System.Volume.BitLockerProtection` needs COM, which pora does not take on for one line of
/// its report. Saying "unknown" beats guessing.
fn bitlocker_status() -> BitLocker {
    BitLocker::Unknown(
        "unknown (needs admin): run `manage-bde -status` in an elevated prompt; \
         BitLocker can cost about half of 4 KiB random-read IOPS"
            .into(),
    )
}
