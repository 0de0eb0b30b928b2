//! The synchronous Windows methods: `pread` (handle per worker), `pread-shared` (one handle for
//! all workers) and `mmap`. Reads run inside `submit` and complete through [`InlineQueue`], the
//! same interface the overlapped methods use.

use crate::align::{describe_read_unit, power_of_two_read_unit, SpanPlan};
use crate::inline::{InlineBackend, InlineReader};
use crate::overlapped_engine::WIN32_ERROR_INVALID_HANDLE;
use crate::{
    Backend, BackendFactory, BlockSize, IoConfig, IoError, Method, ReadError, ReadErrorKind,
    Sample, SampleRead, SAMPLE_LEN,
};
use memmap2::Mmap;
use std::fs::File;
use std::os::windows::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;
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

/// `None` to read exactly the sample; `Some(plan)` for `--block-size`: read the aligned block(s)
/// around it into a worker buffer, as fio's `bs` does.
fn block_plan(config: &IoConfig) -> Result<Option<SpanPlan>, IoError> {
    match config.block_size {
        BlockSize::Natural => Ok(None),
        block => Ok(Some(SpanPlan::new(power_of_two_read_unit(block, None)?)?)),
    }
}

/// A worker's block buffer, allocated once at the largest span.
struct BlockBuf {
    plan: SpanPlan,
    buf: Box<[u8]>,
}

impl BlockBuf {
    fn new(plan: Option<SpanPlan>) -> Option<BlockBuf> {
        plan.map(|plan| BlockBuf {
            plan,
            buf: vec![0u8; plan.max_span_len() as usize].into_boxed_slice(),
        })
    }
}

fn read_error(r: &SampleRead, kind: ReadErrorKind) -> ReadError {
    ReadError {
        file: r.file,
        offset: r.offset,
        kind,
    }
}

fn no_such_file(r: &SampleRead) -> ReadError {
    read_error(r, ReadErrorKind::Os(WIN32_ERROR_INVALID_HANDLE))
}

/// The sample inside `bytes` (what a block read returned), or a short read when the file ended
/// before the sample did.
fn sample_in(bytes: &[u8], sample_at: u32, r: &SampleRead) -> Result<Sample, ReadError> {
    let at = sample_at as usize;
    match bytes.get(at..at + SAMPLE_LEN) {
        Some(s) => Ok(s.try_into().expect("32 bytes")),
        None => {
            let got = bytes.len().saturating_sub(at).min(SAMPLE_LEN) as u32;
            Err(read_error(
                r,
                ReadErrorKind::ShortRead {
                    got,
                    wanted: SAMPLE_LEN as u32,
                },
            ))
        }
    }
}

/// Reads the aligned block(s) around the sample with positional reads, stopping early at the end
/// of the file.
fn seek_read_block(file: &File, r: &SampleRead, block: &mut BlockBuf) -> Result<Sample, ReadError> {
    let Some(span) = block.plan.span(r.offset) else {
        return Err(read_error(
            r,
            ReadErrorKind::ShortRead {
                got: 0,
                wanted: SAMPLE_LEN as u32,
            },
        ));
    };
    let buf = &mut block.buf[..span.len as usize];
    let mut got = 0usize;
    while got < buf.len() {
        match file.seek_read(&mut buf[got..], span.start + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(read_error(
                    r,
                    ReadErrorKind::Os(e.raw_os_error().unwrap_or(0)),
                ))
            }
        }
    }
    sample_in(&buf[..got], span.sample_pos, r)
}

pub(crate) fn open_pread(
    method: Method,
    paths: &[PathBuf],
    config: &IoConfig,
) -> Result<Arc<dyn BackendFactory>, IoError> {
    let plan = block_plan(config)?;
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
        plan,
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
    plan: Option<SpanPlan>,
}

impl BackendFactory for PreadFactory {
    fn method(&self) -> Method {
        self.method
    }
    fn describe(&self) -> String {
        let reads = describe_read_unit(self.plan.map(|plan| plan.unit()), "reads");
        match self.shared {
            Some(_) => format!(
                "pread-shared: one synchronous handle per file shared by all workers \
                 (es-node's way; Windows serialises its reads), {reads}"
            ),
            None => format!(
                "pread: one synchronous handle per file per worker, FILE_FLAG_RANDOM_ACCESS, \
                 seek_read, {reads}"
            ),
        }
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let files = match &self.shared {
            Some(files) => files.clone(),
            None => open_all(&self.paths, FILE_FLAG_RANDOM_ACCESS)?,
        };
        let reader = PreadReader {
            method: self.method,
            files,
            block: BlockBuf::new(self.plan),
        };
        Ok(Box::new(InlineBackend::new(reader, depth)))
    }
}

struct PreadReader {
    method: Method,
    files: Arc<Vec<File>>,
    block: Option<BlockBuf>,
}

impl InlineReader for PreadReader {
    fn method(&self) -> Method {
        self.method
    }
    fn read(&mut self, r: &SampleRead) -> Result<Sample, ReadError> {
        let file = self
            .files
            .get(r.file as usize)
            .ok_or_else(|| no_such_file(r))?;
        match &mut self.block {
            None => crate::positional::read_sample(file, r.file, r.offset),
            Some(block) => seek_read_block(file, r, block),
        }
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
    let plan = block_plan(config)?;
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
        plan,
    }))
}

struct MmapFactory {
    maps: Arc<Vec<Mmap>>,
    plan: Option<SpanPlan>,
}

impl BackendFactory for MmapFactory {
    fn method(&self) -> Method {
        Method::Mmap
    }
    fn describe(&self) -> String {
        let copies = describe_read_unit(self.plan.map(|plan| plan.unit()), "copies");
        format!("mmap: one read-only mapping per file shared by all workers, {copies}")
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let reader = MmapReader {
            maps: self.maps.clone(),
            block: BlockBuf::new(self.plan),
        };
        Ok(Box::new(InlineBackend::new(reader, depth)))
    }
}

struct MmapReader {
    maps: Arc<Vec<Mmap>>,
    block: Option<BlockBuf>,
}

/// Copies the aligned block(s) around the sample out of `map` (cut at the end of the file, like
/// a read), then the sample out of the copy.
fn mapped_block(map: &[u8], r: &SampleRead, block: &mut BlockBuf) -> Result<Sample, ReadError> {
    let past_end = || {
        read_error(
            r,
            ReadErrorKind::OutOfBounds {
                file_len: map.len() as u64,
            },
        )
    };
    let span = block.plan.span(r.offset).ok_or_else(past_end)?;
    let start = usize::try_from(span.start).map_err(|_| past_end())?;
    let end = map.len().min(start.saturating_add(span.len as usize));
    let bytes = map.get(start..end).ok_or_else(past_end)?;
    block.buf[..bytes.len()].copy_from_slice(bytes);
    sample_in(&block.buf[..bytes.len()], span.sample_pos, r).map_err(|_| past_end())
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

impl InlineReader for MmapReader {
    fn method(&self) -> Method {
        Method::Mmap
    }
    fn read(&mut self, r: &SampleRead) -> Result<Sample, ReadError> {
        let map = self
            .maps
            .get(r.file as usize)
            .ok_or_else(|| no_such_file(r))?;
        match &mut self.block {
            None => mapped_sample(map, r.file, r.offset),
            Some(block) => mapped_block(map, r, block),
        }
    }
}
