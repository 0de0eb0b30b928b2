//! The synchronous Windows methods: `pread` (handle per worker), `pread-shared` (one handle for
//! all workers) and `mmap`. Reads run inside `submit` and complete through [`InlineQueue`], the
//! same interface the overlapped methods use.
//!
//! Each counts the reads the page cache served by their latency (`crate::cache_reads`): Windows
//! tells no file's residency, and `auto` needs the hit ratio to model the cache between slots.

use super::guarded_copy;
use crate::align::{describe_read_unit, power_of_two_read_unit, SpanPlan};
use crate::cache_reads::{CacheReadCounter, CacheReadTally, CacheReads, TIMED_SAMPLE_EVERY};
use crate::inline::{InlineBackend, InlineReader};
use crate::positional::{no_such_file, BlockRead, PositionalReader};
use crate::{
    Backend, BackendFactory, BlockSize, FactoryResult, IoConfig, IoError, Method, ReadError,
    ReadErrorKind, Sample, SampleRead, SAMPLE_LEN,
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

pub(crate) fn open_pread(method: Method, paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
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
        cache_reads: Arc::default(),
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
    cache_reads: Arc<CacheReadCounter>,
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
            reader: PositionalReader {
                method: self.method,
                files,
                block: BlockBuf::new(self.plan),
            },
            tally: CacheReadTally::new(self.cache_reads.clone(), TIMED_SAMPLE_EVERY),
        };
        Ok(Box::new(InlineBackend::new(reader, depth)))
    }
    fn cache_reads(&self) -> Option<CacheReads> {
        Some(self.cache_reads.load())
    }
}

impl BlockRead for BlockBuf {
    fn read_block(&mut self, file: &File, r: &SampleRead) -> Result<Sample, ReadError> {
        seek_read_block(file, r, self)
    }
}

/// The positional reader with each read's latency counted for the cache-hit tally.
struct PreadReader {
    reader: PositionalReader<BlockBuf>,
    tally: CacheReadTally,
}

impl InlineReader for PreadReader {
    fn method(&self) -> Method {
        self.reader.method
    }
    fn read(&mut self, r: &SampleRead) -> Result<Sample, ReadError> {
        let reader = &mut self.reader;
        self.tally.timed(|| reader.read(r))
    }
}

/// Maps every file read-only once; workers share the maps.
///
/// Windows refuses to truncate or shrink a file while a view of it is mapped
/// (`ERROR_USER_MAPPED_FILE`), so the Unix hazard of a fault on a truncated map cannot happen
/// here; instead another process's attempt to shrink the file fails while pora mines. A disk
/// error under a mapped page raises `EXCEPTION_IN_PAGE_ERROR`: every copy out of a map goes
/// through [`guarded_copy`], so such a read fails with the page-in's error, like a `pread`,
/// instead of ending the process.
pub(crate) fn open_mmap(paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
    let plan = block_plan(config)?;
    guarded_copy::install().map_err(|reason| IoError::Unavailable {
        method: Method::Mmap.name(),
        reason,
    })?;
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
        cache_reads: Arc::default(),
    }))
}

struct MmapFactory {
    maps: Arc<Vec<Mmap>>,
    plan: Option<SpanPlan>,
    cache_reads: Arc<CacheReadCounter>,
}

impl BackendFactory for MmapFactory {
    fn method(&self) -> Method {
        Method::Mmap
    }
    fn describe(&self) -> String {
        let copies = describe_read_unit(self.plan.map(|plan| plan.unit()), "copies");
        format!(
            "mmap: one read-only mapping per file shared by all workers, {copies}, \
             in-page errors contained"
        )
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let reader = MmapReader {
            maps: self.maps.clone(),
            block: BlockBuf::new(self.plan),
            tally: CacheReadTally::new(self.cache_reads.clone(), TIMED_SAMPLE_EVERY),
        };
        Ok(Box::new(InlineBackend::new(reader, depth)))
    }
    fn cache_reads(&self) -> Option<CacheReads> {
        Some(self.cache_reads.load())
    }
}

struct MmapReader {
    maps: Arc<Vec<Mmap>>,
    block: Option<BlockBuf>,
    tally: CacheReadTally,
}

/// Copies `map[start..start + dst.len()]` into `dst`; a failed page-in is the read's OS error.
fn copy_from_map(
    map: &[u8],
    start: usize,
    dst: &mut [u8],
    r: &SampleRead,
) -> Result<(), ReadError> {
    if start
        .checked_add(dst.len())
        .is_none_or(|end| end > map.len())
    {
        let file_len = map.len() as u64;
        return Err(read_error(r, ReadErrorKind::OutOfBounds { file_len }));
    }
    // SAFETY: the range lies inside the map (checked above), a live read-only view the reader
    // holds an Arc to; `open_mmap` installed the handler before any map existed.
    unsafe { guarded_copy::copy(dst, map.as_ptr().add(start)) }
        .map_err(|code| read_error(r, ReadErrorKind::Os(code)))
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
    let len = end.checked_sub(start).ok_or_else(past_end)?;
    copy_from_map(map, start, &mut block.buf[..len], r)?;
    sample_in(&block.buf[..len], span.sample_pos, r).map_err(|_| past_end())
}

/// Copies the sample at `r.offset` out of `map`, or reports that it lies past the end.
fn mapped_sample(map: &[u8], r: &SampleRead) -> Result<Sample, ReadError> {
    // An offset beyond usize fails copy_from_map's bounds check like any other past the end.
    let start = usize::try_from(r.offset).unwrap_or(usize::MAX);
    let mut sample = [0u8; SAMPLE_LEN];
    copy_from_map(map, start, &mut sample, r)?;
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
        let block = &mut self.block;
        self.tally.timed(|| match block {
            None => mapped_sample(map, r),
            Some(block) => mapped_block(map, r, block),
        })
    }
}
