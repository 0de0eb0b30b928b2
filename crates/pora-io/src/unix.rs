//! Synchronous Unix methods: `pread` (a buffered handle per worker, POSIX_FADV_RANDOM),
//! `pread-shared` (one handle for all workers, es-node's way), `direct` (O_DIRECT, logical-block
//! reads into an aligned buffer, per-worker handles) and `mmap` (see `unix/mmap.rs`).
//!
//! The three positional-read methods share one backend: they differ only in how the files are
//! opened and in the unit one read moves (the 32-byte sample, or an aligned block).

mod mmap;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod sigbus;

pub use mmap::LENGTH_CHECK_READS as MMAP_LENGTH_CHECK_READS;
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub use sigbus::faults_contained as mmap_faults_contained;

use crate::align::{self, AlignedBuf};
use crate::host::file_system::fs_type_of_file;
use crate::host::sector_size::logical_block_size;
use crate::inline::{InlineBackend, InlineReader};
pub(crate) use crate::positional::no_such_file;
use crate::positional::{BlockRead, PositionalReader};
use crate::{
    Backend, BackendFactory, BlockSize, FactoryResult, IoConfig, IoError, Method, ReadError,
    ReadErrorKind, Sample, SampleRead, Unavailable, SAMPLE_LEN,
};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Opens `path` read-only; `O_DIRECT` when `direct`.
pub(crate) fn open_read_only(path: &Path, direct: bool) -> Result<File, IoError> {
    #[cfg(target_os = "linux")]
    use std::os::unix::fs::OpenOptionsExt;
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(target_os = "linux")]
    if direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    let file = opts.open(path).map_err(|source| IoError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    #[cfg(target_os = "macos")]
    if direct {
        // SAFETY: fcntl on a valid, owned descriptor with integer arguments.
        unsafe {
            libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&file), libc::F_NOCACHE, 1);
            libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&file), libc::F_RDAHEAD, 0);
        }
    }
    #[cfg(target_os = "linux")]
    advise_random(&file);
    Ok(file)
}

/// Opens `path` read-only with O_DIRECT. A file system that refuses O_DIRECT (EINVAL) gives
/// `IoError::Unavailable` naming the file system.
pub(crate) fn open_direct(path: &Path, method: &'static str) -> Result<File, IoError> {
    match open_read_only(path, true) {
        Err(IoError::Open { source, .. }) if source.raw_os_error() == Some(libc::EINVAL) => {
            let fs = open_read_only(path, false)
                .map(|f| fs_type_of_file(&f))
                .unwrap_or_else(|_| "unknown".into());
            Err(IoError::Unavailable {
                method,
                reason: format!(
                    "{}: the {fs} file system does not support O_DIRECT (open returned EINVAL); \
                     put the file on a disk-backed file system or use a buffered method",
                    path.display()
                ),
            })
        }
        other => other,
    }
}

/// Tells the kernel not to read ahead: every read is one random sample.
#[cfg(target_os = "linux")]
fn advise_random(file: &File) {
    // SAFETY: posix_fadvise on a valid descriptor; failure only loses a hint.
    unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(file),
            0,
            0,
            libc::POSIX_FADV_RANDOM,
        );
    }
}

fn is_retryable(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
    )
}

fn os_error(file: u32, offset: u64, e: &std::io::Error) -> ReadError {
    ReadError {
        file,
        offset,
        kind: ReadErrorKind::Os(e.raw_os_error().unwrap_or(libc::EIO)),
    }
}

/// Reads the `unit`-aligned block(s) around the sample at `offset` into `buf` and returns the
/// sample. `resume_align` is the granularity at which a partial read may be continued (the
/// logical block for O_DIRECT, 1 for buffered files; a power of two); a read that stops elsewhere, or returns 0,
/// has hit the end of the file. Succeeds when the bytes read cover the sample.
pub(crate) fn pread_block(
    file: &File,
    file_idx: u32,
    offset: u64,
    unit: u32,
    resume_align: usize,
    buf: &mut AlignedBuf,
) -> Result<Sample, ReadError> {
    let range = align::block_range(offset, unit).ok_or(ReadError {
        file: file_idx,
        offset,
        kind: ReadErrorKind::Os(libc::EINVAL),
    })?;
    let span = &mut buf.as_mut_slice()[..range.len as usize];
    let mut got = 0usize;
    while got < span.len() {
        match file.read_at(&mut span[got..], range.start + got as u64) {
            Ok(0) => break,
            Ok(n) => {
                got += n;
                if got & (resume_align - 1) != 0 {
                    break;
                }
            }
            Err(e) if is_retryable(&e) => {}
            Err(e) => return Err(os_error(file_idx, offset, &e)),
        }
    }
    if !range.covers_sample(got) {
        return Err(ReadError {
            file: file_idx,
            offset,
            kind: ReadErrorKind::ShortRead {
                got: got as u32,
                wanted: range.len,
            },
        });
    }
    let pos = range.sample_pos as usize;
    Ok(span[pos..pos + SAMPLE_LEN]
        .try_into()
        .expect("32-byte slice"))
}

/// Which methods every Unix has: the synchronous ones (Linux adds io_uring: `linux.rs`).
pub(crate) fn availability(method: Method) -> Result<(), Unavailable> {
    match method {
        Method::Pread | Method::PreadShared | Method::Direct | Method::Mmap => Ok(()),
        other => Err(Unavailable::elsewhere(other)),
    }
}

/// Opens `method`'s factory over `paths` (available, checked by the caller).
pub(crate) fn open(method: Method, paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
    match method {
        Method::Pread | Method::PreadShared => {
            let unit = match config.block_size {
                BlockSize::Natural => None,
                bs => Some(align::read_unit(bs, None)?),
            };
            let shared = if method == Method::PreadShared {
                Some(open_all(paths, false)?)
            } else {
                None
            };
            let unit = unit.map(|u| ReadUnit {
                unit: u,
                resume_align: 1,
                buf_align: 64,
            });
            Ok(Arc::new(PreadFactory {
                method,
                paths: paths.to_vec(),
                shared,
                unit,
            }))
        }
        Method::Direct => open_direct_factory(paths, config),
        Method::Mmap => mmap::open(paths, config),
        _ => Err(IoError::Unavailable {
            method: method.name(),
            reason: "not a Unix method".into(),
        }),
    }
}

/// Opens every file with O_DIRECT once to learn (and check) the logical block size; workers
/// open their own handles.
fn open_direct_factory(paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
    let mut logical = 0u32;
    for path in paths {
        let file = open_direct(path, Method::Direct.name())?;
        logical = logical.max(logical_block_size(&file).bytes);
    }
    let unit = align::read_unit(config.block_size, Some(logical))?;
    let unit = ReadUnit {
        unit,
        resume_align: logical as usize,
        buf_align: (logical as usize).max(4096),
    };
    Ok(Arc::new(PreadFactory {
        method: Method::Direct,
        paths: paths.to_vec(),
        shared: None,
        unit: Some(unit),
    }))
}

fn open_all(paths: &[PathBuf], direct: bool) -> Result<Arc<Vec<File>>, IoError> {
    let files = paths
        .iter()
        .map(|p| {
            if direct {
                open_direct(p, Method::Direct.name())
            } else {
                open_read_only(p, false)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(files))
}

/// How one positional read moves bytes when it reads blocks rather than exactly the sample.
#[derive(Clone, Copy, Debug)]
struct ReadUnit {
    /// Bytes per block.
    unit: u32,
    /// Where a partial read may be continued (the logical block for O_DIRECT).
    resume_align: usize,
    /// Alignment of the worker's buffer in memory.
    buf_align: usize,
}

struct PreadFactory {
    method: Method,
    paths: Vec<PathBuf>,
    /// `Some` for pread-shared: every worker uses these handles.
    shared: Option<Arc<Vec<File>>>,
    /// `None`: read exactly the 32 sample bytes.
    unit: Option<ReadUnit>,
}

impl BackendFactory for PreadFactory {
    fn method(&self) -> Method {
        self.method
    }
    fn describe(&self) -> String {
        let unit = align::describe_read_unit(self.unit.map(|u| u.unit), "reads");
        match (self.method, &self.shared) {
            (Method::Direct, _) => format!(
                "direct: O_DIRECT, one handle per file per worker, {unit} (logical block {} bytes)",
                self.unit.map_or(0, |u| u.resume_align)
            ),
            (_, Some(_)) => {
                format!("pread-shared: one buffered handle per file shared by all workers, {unit}")
            }
            (_, None) => {
                format!("pread: one buffered handle per file per worker, POSIX_FADV_RANDOM, {unit}")
            }
        }
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let files = match &self.shared {
            Some(files) => files.clone(),
            None => open_all(&self.paths, self.method == Method::Direct)?,
        };
        // Reads complete one at a time inside `submit`, so one buffer serves the whole depth.
        let block = match self.unit {
            Some(u) => Some(UnitBuf(
                u,
                AlignedBuf::new(align::max_span(u.unit), u.buf_align)?,
            )),
            None => None,
        };
        let reader = PositionalReader {
            method: self.method,
            files,
            block,
        };
        Ok(Box::new(InlineBackend::new(reader, depth)))
    }
}

/// A worker's block unit and buffer, for block reads (`direct`, or a `--block-size`).
struct UnitBuf(ReadUnit, AlignedBuf);

impl BlockRead for UnitBuf {
    fn read_block(&mut self, file: &File, r: &SampleRead) -> Result<Sample, ReadError> {
        let UnitBuf(u, buf) = self;
        pread_block(file, r.file, r.offset, u.unit, u.resume_align, buf)
    }
}

impl InlineReader for PositionalReader<UnitBuf> {
    fn method(&self) -> Method {
        self.method
    }
    fn read(&mut self, r: &SampleRead) -> Result<Sample, ReadError> {
        PositionalReader::read(self, r)
    }
}
