//! `mmap`: one shared read-only map per file (memmap2) with `MADV_RANDOM`, owned by the factory
//! and shared by every worker; reads are memory copies performed inline in `submit`.
//!
//! Truncation safety (see docs/io-methods.md): every read is checked against the map's
//! `valid_len`, which starts at the mapped length and only goes down:
//! - each worker re-reads every file's length with `fstat` every [`LENGTH_CHECK_READS`] reads
//!   (and on its first submit) and lowers `valid_len` to it, so reads past a truncated end fail
//!   with `OutOfBounds` without touching the missing pages;
//! - on Linux and macOS a read that still faults (past a truncated end between two checks, or on
//!   a page the disk cannot read) raises SIGBUS, which the handler in `sigbus.rs` contains: it
//!   patches the page with zeros and records it; the faulting reader puts the file's page back
//!   and reports an error (`OutOfBounds`, lowering `valid_len`, if the file now ends before the
//!   sample; EIO otherwise), and no reader returns the zeros. Elsewhere (other Unixes) such a
//!   fault still kills the process; on Windows a mapped file cannot be truncated (see
//!   `windows/sync.rs`).
//!
//! Residual window: after a truncation to a length that is not page-aligned, the zero-filled tail
//! of the last page does not fault, so up to `LENGTH_CHECK_READS` reads per worker there can
//! return zeros before the next length check notices.

use super::{no_such_file, open_read_only};
use crate::align::{self, AlignedBuf};
use crate::inline::{InlineBackend, InlineReader};
use crate::{
    Backend, BackendFactory, BlockSize, FactoryResult, IoConfig, IoError, Method, ReadError,
    ReadErrorKind, Sample, SampleRead, SAMPLE_LEN,
};
use memmap2::{Advice, Mmap, MmapOptions};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};
use std::sync::Arc;

/// Reads per worker between two `fstat` checks of every file's length.
pub const LENGTH_CHECK_READS: u64 = 1024;

/// The bound reads must respect: registered with the SIGBUS handler on Linux, plain elsewhere.
enum Bound {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    Registered(super::sigbus::Registration),
    Local(AtomicU64),
}

impl Bound {
    fn valid_len(&self) -> &AtomicU64 {
        match self {
            #[cfg(any(target_os = "linux", target_os = "macos"))]
            Bound::Registered(r) => r.valid_len(),
            Bound::Local(len) => len,
        }
    }
}

/// One file and its map. Field order matters: `bound` (the SIGBUS registration) is dropped
/// before `map` is unmapped.
struct MappedFile {
    bound: Bound,
    map: Option<Mmap>,
    file: File,
    mapped_len: u64,
}

impl MappedFile {
    fn open(path: &Path) -> Result<MappedFile, IoError> {
        let file = open_read_only(path, false)?;
        let mapped_len = current_len(&file).map_err(|source| IoError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        if mapped_len == 0 {
            return Ok(MappedFile {
                bound: Bound::Local(AtomicU64::new(0)),
                map: None,
                file,
                mapped_len,
            });
        }
        let len = usize::try_from(mapped_len)
            .map_err(|_| IoError::Config(format!("{}: too large to map", path.display())))?;
        // SAFETY: the map is read-only and only ever read through raw-pointer copies whose
        // bounds are checked against `valid_len`; truncation by another process is contained
        // as described in the module documentation.
        let map =
            unsafe { MmapOptions::new().len(len).map(&file) }.map_err(|source| IoError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        // Random access: fault in exactly the touched page, no read-around.
        let _ = map.advise(Advice::Random);
        let bound = register(&map, path)?;
        Ok(MappedFile {
            bound,
            map: Some(map),
            file,
            mapped_len,
        })
    }
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
fn register(map: &Mmap, path: &Path) -> Result<Bound, IoError> {
    super::sigbus::register(map.as_ptr(), map.len())
        .map(Bound::Registered)
        .map_err(|reason| IoError::Unavailable {
            method: Method::Mmap.name(),
            reason: format!("{}: {reason}", path.display()),
        })
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn register(map: &Mmap, _path: &Path) -> Result<Bound, IoError> {
    Ok(Bound::Local(AtomicU64::new(map.len() as u64)))
}

/// The file's length; for a block device (whose metadata says 0) the position of its end.
fn current_len(file: &File) -> std::io::Result<u64> {
    let meta = file.metadata()?;
    if std::os::unix::fs::FileTypeExt::is_block_device(&meta.file_type()) {
        // The map never uses the file position, so moving it is harmless.
        return std::io::Seek::seek(&mut &*file, std::io::SeekFrom::End(0));
    }
    Ok(meta.len())
}

pub(crate) fn open(paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
    let unit = match config.block_size {
        BlockSize::Natural => None,
        bs => Some(align::read_unit(bs, None)?),
    };
    let files = paths
        .iter()
        .map(|p| MappedFile::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(MmapFactory {
        files: Arc::new(files),
        unit,
    }))
}

struct MmapFactory {
    files: Arc<Vec<MappedFile>>,
    /// `None`: copy exactly the sample; `Some(n)`: copy the n-byte aligned block(s) around it.
    unit: Option<u32>,
}

impl BackendFactory for MmapFactory {
    fn method(&self) -> Method {
        Method::Mmap
    }
    fn describe(&self) -> String {
        let unit = align::describe_read_unit(self.unit, "copies");
        format!(
            "mmap: one shared read-only map per file, MADV_RANDOM, {unit}, truncation checked every {LENGTH_CHECK_READS} reads{}",
            if cfg!(any(target_os = "linux", target_os = "macos")) { " and SIGBUS contained" } else { "" }
        )
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let buf = match self.unit {
            Some(u) => Some(AlignedBuf::new(align::max_span(u), 64)?),
            None => None,
        };
        let reader = MmapReader {
            files: self.files.clone(),
            unit: self.unit.zip(buf),
            reads_until_check: 0,
        };
        Ok(Box::new(InlineBackend::new(reader, depth)))
    }
}

struct MmapReader {
    files: Arc<Vec<MappedFile>>,
    unit: Option<(u32, AlignedBuf)>,
    /// Reads left before the next length check; 0 checks at the next submit.
    reads_until_check: u64,
}

impl MmapReader {
    /// Sets every file's bound to its current length (one fstat per file), within the map.
    /// Where the SIGBUS handler watches the map the bound may rise again: that is what lets a
    /// map recover once a fault clears (a bound lowered with the patch table full, or by a file
    /// that shrank and grew back), and a page that still fails is contained like any other.
    /// Elsewhere a fault would end the process, so the bound only ever goes down.
    fn check_lengths(&mut self) {
        for f in self.files.iter() {
            if let Ok(len) = current_len(&f.file) {
                let len = len.min(f.mapped_len);
                match &f.bound {
                    #[cfg(any(target_os = "linux", target_os = "macos"))]
                    Bound::Registered(reg) => reg.valid_len().store(len, Ordering::SeqCst),
                    Bound::Local(bound) => {
                        bound.fetch_min(len, Ordering::SeqCst);
                    }
                }
            }
        }
        self.reads_until_check = LENGTH_CHECK_READS;
    }
}

impl InlineReader for MmapReader {
    fn method(&self) -> Method {
        Method::Mmap
    }
    fn before_batch(&mut self, batch: &[SampleRead]) {
        if self.reads_until_check == 0 {
            self.check_lengths();
        }
        self.reads_until_check = self.reads_until_check.saturating_sub(batch.len() as u64);
    }
    fn on_push(&mut self, reads: &[SampleRead]) {
        for r in reads {
            if let Some(f) = self.files.get(r.file as usize) {
                prefetch(f, r.offset);
            }
        }
    }
    fn read(&mut self, r: &SampleRead) -> Result<Sample, ReadError> {
        let f = self
            .files
            .get(r.file as usize)
            .ok_or_else(|| no_such_file(r))?;
        match &mut self.unit {
            None => copy_sample(f, r),
            Some((u, buf)) => copy_block(f, r, *u, buf),
        }
    }
}

/// Asks the CPU to start loading the sample's cache line when the read is pushed, so that reads
/// from a cached shard wait for their DRAM misses in parallel rather than one after another
/// (memory-level parallelism), and while the miner still hashes (it pushes a group at a time):
/// the copies then mostly hit cache. Only offsets inside the bound are touched.
#[inline]
fn prefetch(f: &MappedFile, offset: u64) {
    #[cfg(target_arch = "x86_64")]
    if let Some(map) = f.map.as_ref() {
        if offset.saturating_add(SAMPLE_LEN as u64) <= f.bound.valid_len().load(Ordering::Relaxed) {
            // SAFETY: offset + 32 <= valid_len <= mapped length, so the pointer lies inside the
            // map; a prefetch is only a hint and never faults.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(map.as_ptr().add(offset as usize) as *const i8);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (f, offset);
}

/// Copies `[start, start + len)` of the map into `dst` if it lies within the bound. Where the
/// SIGBUS handler watches the map, the copy is made stable (`sigbus::Registration::read_stable`):
/// a copy that faulted, or that may have seen another thread's patched zero page, is an error or
/// is copied again, never returned. Inlined so that a sample's copy has its constant 32-byte
/// length and compiles to two moves instead of a `memmove` call (1.6% of a cached-shard slot).
#[inline(always)]
fn copy_checked(
    f: &MappedFile,
    r: &SampleRead,
    start: u64,
    dst: &mut [u8],
) -> Result<(), ReadError> {
    let end = start.checked_add(dst.len() as u64);
    let valid = f.bound.valid_len();
    let end = match end {
        Some(end) if end <= valid.load(Ordering::Relaxed) => end,
        _ => return Err(bound_error(f, r)),
    };
    let map = f.map.as_ref().expect("a non-empty bound implies a map");
    // SAFETY: start + dst.len() <= valid_len <= mapped length, so the source range lies inside
    // the map, which lives as long as `f`; dst is a distinct buffer.
    let src = unsafe { map.as_ptr().add(start as usize) };
    let len = dst.len();
    let copy = || {
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), len) }
    };
    match &f.bound {
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        Bound::Registered(reg) => {
            use std::os::fd::AsRawFd;
            match reg.read_stable(src as usize, len, f.file.as_raw_fd(), copy) {
                Ok(()) => {}
                Err(super::sigbus::Unstable::Faulted) => return Err(bound_error(f, r)),
                Err(super::sigbus::Unstable::Busy) => {
                    return Err(ReadError {
                        file: r.file,
                        offset: r.offset,
                        kind: ReadErrorKind::Os(libc::EBUSY),
                    })
                }
            }
        }
        Bound::Local(_) => {
            let mut copy = copy;
            copy();
            compiler_fence(Ordering::SeqCst);
        }
    }
    // A length check (or a fault with the patch table full) may have lowered the bound.
    if end > valid.load(Ordering::SeqCst) {
        return Err(bound_error(f, r));
    }
    Ok(())
}

/// The error for a read beyond the bound or one that faulted: `OutOfBounds` when the file now
/// ends before the sample (the bound is lowered to the file's length, so later reads past it
/// fail without touching the map), EIO when a page inside the file faulted (a media error).
/// When the file's length cannot be read (an fstat interrupted or failed on a failing or
/// network file system) the bound is left as it was: lowering it to 0 on a transient error
/// would fail every later read of the map until the next length check.
fn bound_error(f: &MappedFile, r: &SampleRead) -> ReadError {
    let kind = match current_len(&f.file) {
        Ok(len) => {
            let file_len = len.min(f.mapped_len);
            f.bound.valid_len().fetch_min(file_len, Ordering::SeqCst);
            if r.offset.saturating_add(SAMPLE_LEN as u64) > file_len {
                ReadErrorKind::OutOfBounds { file_len }
            } else {
                ReadErrorKind::Os(libc::EIO)
            }
        }
        Err(_) => ReadErrorKind::Os(libc::EIO),
    };
    ReadError {
        file: r.file,
        offset: r.offset,
        kind,
    }
}

fn copy_sample(f: &MappedFile, r: &SampleRead) -> Result<Sample, ReadError> {
    let mut sample = [0u8; SAMPLE_LEN];
    copy_checked(f, r, r.offset, &mut sample)?;
    Ok(sample)
}

/// Copies the aligned block(s) around the sample, cut at the end of the file (like a read that
/// stops at EOF), as long as the sample itself is inside.
fn copy_block(
    f: &MappedFile,
    r: &SampleRead,
    unit: u32,
    buf: &mut AlignedBuf,
) -> Result<Sample, ReadError> {
    let range = align::block_range(r.offset, unit).ok_or(ReadError {
        file: r.file,
        offset: r.offset,
        kind: ReadErrorKind::Os(libc::EINVAL),
    })?;
    let valid = f.bound.valid_len().load(Ordering::Relaxed);
    let len = (range.len as u64).min(valid.saturating_sub(range.start)) as usize;
    if !range.covers_sample(len) {
        return Err(bound_error(f, r));
    }
    let span = &mut buf.as_mut_slice()[..len];
    copy_checked(f, r, range.start, span)?;
    let pos = range.sample_pos as usize;
    Ok(span[pos..pos + SAMPLE_LEN]
        .try_into()
        .expect("32-byte slice"))
}
