//! The synchronous Windows methods: `pread` (handle per worker), `pread-shared` (one handle for
//! all workers) and `mmap`. Reads run inside `submit` and complete through [`InlineQueue`], the
//! same interface the overlapped methods use.

use crate::inline::InlineQueue;
use crate::{
    Backend, BackendFactory, BlockSize, Completion, IoConfig, IoError, Method, QueueFull, Read,
    ReadError, ReadErrorKind, Sample, SAMPLE_LEN,
};
use memmap2::Mmap;
use std::fs::File;
use std::os::windows::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_RANDOM_ACCESS;

/// Opens `path` read-only with extra `CreateFileW` flags. Other processes may keep reading and
/// writing the file (std's default share mode), as es-node does while it syncs new blobs.
pub(crate) fn open_read_only(path: &PathBuf, flags: u32) -> Result<File, IoError> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|source| IoError::Open {
            path: path.clone(),
            source,
        })
}

fn block_size_natural(method: Method, config: &IoConfig) -> Result<(), IoError> {
    match config.block_size {
        BlockSize::Natural => Ok(()),
        BlockSize::Bytes(_) => Err(IoError::Config(format!(
            "method {method} reads exactly one sample; --block-size needs iocp or iocp-unbuffered"
        ))),
    }
}

/// Reads one sample with positional reads (`ReadFile` at an offset), retrying interruptions.
/// End of file arrives from std as `Ok(0)` (`ERROR_HANDLE_EOF`) and becomes a short read.
fn seek_read_sample(file: &File, file_idx: u32, offset: u64) -> Result<Sample, ReadError> {
    let mut buf = [0u8; SAMPLE_LEN];
    let mut got = 0usize;
    while got < SAMPLE_LEN {
        match file.seek_read(&mut buf[got..], offset + got as u64) {
            Ok(0) => {
                let kind = ReadErrorKind::ShortRead {
                    got: got as u32,
                    wanted: SAMPLE_LEN as u32,
                };
                return Err(ReadError {
                    file: file_idx,
                    offset,
                    kind,
                });
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let kind = ReadErrorKind::Os(e.raw_os_error().unwrap_or(0));
                return Err(ReadError {
                    file: file_idx,
                    offset,
                    kind,
                });
            }
        }
    }
    Ok(buf)
}

pub(crate) fn open_pread(
    method: Method,
    paths: &[PathBuf],
    config: &IoConfig,
) -> Result<Arc<dyn BackendFactory>, IoError> {
    block_size_natural(method, config)?;
    // The shared arm copies es-node: plain handles, no access hints.
    let shared = match method {
        Method::PreadShared => Some(open_all(paths, 0)?),
        _ => {
            open_all(paths, FILE_FLAG_RANDOM_ACCESS)?; // fail now, not in the first worker
            None
        }
    };
    Ok(Arc::new(PreadFactory {
        method,
        paths: paths.to_vec(),
        shared,
    }))
}

fn open_all(paths: &[PathBuf], flags: u32) -> Result<Arc<Vec<File>>, IoError> {
    Ok(Arc::new(
        paths
            .iter()
            .map(|p| open_read_only(p, flags))
            .collect::<Result<Vec<_>, _>>()?,
    ))
}

struct PreadFactory {
    method: Method,
    paths: Vec<PathBuf>,
    /// `Some` for pread-shared: every worker reads through these handles.
    shared: Option<Arc<Vec<File>>>,
}

impl BackendFactory for PreadFactory {
    fn method(&self) -> Method {
        self.method
    }
    fn describe(&self) -> String {
        match self.shared {
            Some(_) => "pread-shared: one synchronous handle per file shared by all workers (es-node's way; Windows serialises its reads)".into(),
            None => "pread: one synchronous handle per file per worker, FILE_FLAG_RANDOM_ACCESS, seek_read".into(),
        }
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let files = match &self.shared {
            Some(files) => files.clone(),
            None => open_all(&self.paths, FILE_FLAG_RANDOM_ACCESS)?,
        };
        Ok(Box::new(PreadBackend {
            method: self.method,
            files,
            queue: InlineQueue::new(depth.max(1)),
        }))
    }
}

struct PreadBackend {
    method: Method,
    files: Arc<Vec<File>>,
    queue: InlineQueue,
}

impl Backend for PreadBackend {
    fn method(&self) -> Method {
        self.method
    }
    fn capacity(&self) -> usize {
        self.queue.capacity()
    }
    fn in_flight(&self) -> usize {
        self.queue.in_flight()
    }
    fn push(&mut self, read: Read) -> Result<(), QueueFull> {
        self.queue.push(read)
    }
    fn submit(&mut self) -> Result<(), IoError> {
        let files = &self.files;
        self.queue
            .submit_with(|r| match files.get(r.file as usize) {
                Some(file) => seek_read_sample(file, r.file, r.offset),
                None => Err(ReadError {
                    file: r.file,
                    offset: r.offset,
                    kind: ReadErrorKind::OutOfBounds { file_len: 0 },
                }),
            })
    }
    fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        _min: usize,
        _deadline: Option<Instant>,
    ) -> Result<usize, IoError> {
        Ok(self.queue.reap(out))
    }
}

/// Maps every file read-only once; workers share the maps.
///
/// Windows refuses to truncate or shrink a file while a view of it is mapped
/// (`ERROR_USER_MAPPED_FILE`), so the Unix hazard of a fault on a truncated map cannot happen
/// here; instead another process's attempt to shrink the file fails while pora mines. A disk
/// error under a mapped page raises `EXCEPTION_IN_PAGE_ERROR`, which ends the process.
pub(crate) fn open_mmap(
    paths: &[PathBuf],
    config: &IoConfig,
) -> Result<Arc<dyn BackendFactory>, IoError> {
    block_size_natural(Method::Mmap, config)?;
    let mut maps = Vec::with_capacity(paths.len());
    for path in paths {
        let file = open_read_only(path, FILE_FLAG_RANDOM_ACCESS)?;
        // SAFETY: the map is read-only and Windows forbids truncating a mapped file, so the
        // mapped range stays backed; concurrent writers can change bytes, which only changes
        // sample values (u8 has no invalid bit patterns).
        let map = unsafe { Mmap::map(&file) }.map_err(|source| IoError::Open {
            path: path.clone(),
            source,
        })?;
        maps.push(map);
    }
    Ok(Arc::new(MmapFactory {
        maps: Arc::new(maps),
    }))
}

struct MmapFactory {
    maps: Arc<Vec<Mmap>>,
}

impl BackendFactory for MmapFactory {
    fn method(&self) -> Method {
        Method::Mmap
    }
    fn describe(&self) -> String {
        "mmap: one read-only mapping per file shared by all workers (page faults do the I/O)".into()
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        Ok(Box::new(MmapBackend {
            maps: self.maps.clone(),
            queue: InlineQueue::new(depth.max(1)),
        }))
    }
}

struct MmapBackend {
    maps: Arc<Vec<Mmap>>,
    queue: InlineQueue,
}

/// Copies the sample at `offset` out of `map`, or reports that it lies past the end.
fn mapped_sample(map: &[u8], file: u32, offset: u64) -> Result<Sample, ReadError> {
    let out_of_bounds = || ReadError {
        file,
        offset,
        kind: ReadErrorKind::OutOfBounds {
            file_len: map.len() as u64,
        },
    };
    let start = usize::try_from(offset).map_err(|_| out_of_bounds())?;
    let bytes = map
        .get(start..start.checked_add(SAMPLE_LEN).ok_or_else(out_of_bounds)?)
        .ok_or_else(out_of_bounds)?;
    let mut sample = [0u8; SAMPLE_LEN];
    sample.copy_from_slice(bytes);
    Ok(sample)
}

impl Backend for MmapBackend {
    fn method(&self) -> Method {
        Method::Mmap
    }
    fn capacity(&self) -> usize {
        self.queue.capacity()
    }
    fn in_flight(&self) -> usize {
        self.queue.in_flight()
    }
    fn push(&mut self, read: Read) -> Result<(), QueueFull> {
        self.queue.push(read)
    }
    fn submit(&mut self) -> Result<(), IoError> {
        let maps = &self.maps;
        self.queue.submit_with(|r| {
            let map = maps.get(r.file as usize).map_or(&[][..], |m| &m[..]);
            mapped_sample(map, r.file, r.offset)
        })
    }
    fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        _min: usize,
        _deadline: Option<Instant>,
    ) -> Result<usize, IoError> {
        Ok(self.queue.reap(out))
    }
}
