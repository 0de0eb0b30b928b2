//! Synchronous Unix methods: `pread` (a buffered handle per worker, POSIX_FADV_RANDOM),
//! `pread-shared` (one handle for all workers, es-node's way), `direct` (O_DIRECT) and `mmap`.

use crate::inline::InlineQueue;
use crate::{Backend, BackendFactory, Completion, IoConfig, IoError, Method, QueueFull, Read, ReadError, ReadErrorKind, Sample, SAMPLE_LEN};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Opens `path` read-only; `O_DIRECT` when `direct`.
pub(crate) fn open_read_only(path: &PathBuf, direct: bool) -> Result<File, IoError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(target_os = "linux")]
    if direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    let file = opts.open(path).map_err(|source| IoError::Open { path: path.clone(), source })?;
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

/// Tells the kernel not to read ahead: every read is one random sample.
#[cfg(target_os = "linux")]
fn advise_random(file: &File) {
    // SAFETY: posix_fadvise on a valid descriptor; failure only loses a hint.
    unsafe {
        libc::posix_fadvise(std::os::fd::AsRawFd::as_raw_fd(file), 0, 0, libc::POSIX_FADV_RANDOM);
    }
}

/// Reads exactly one sample with positional reads, retrying EINTR/EAGAIN.
pub(crate) fn pread_sample(file: &File, file_idx: u32, offset: u64) -> Result<Sample, ReadError> {
    let mut buf = [0u8; SAMPLE_LEN];
    let mut got = 0usize;
    while got < SAMPLE_LEN {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => {
                return Err(ReadError {
                    file: file_idx,
                    offset,
                    kind: ReadErrorKind::ShortRead { got: got as u32, wanted: SAMPLE_LEN as u32 },
                })
            }
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock) => {}
            Err(e) => {
                return Err(ReadError { file: file_idx, offset, kind: ReadErrorKind::Os(e.raw_os_error().unwrap_or(libc::EIO)) })
            }
        }
    }
    Ok(buf)
}

pub(crate) fn open(method: Method, paths: &[PathBuf], config: &IoConfig) -> Result<Arc<dyn BackendFactory>, IoError> {
    match method {
        Method::Pread | Method::PreadShared => {
            if config.block_size != crate::BlockSize::Natural {
                return Err(IoError::Config(format!("method {method} reads exactly one sample; --block-size needs a block method")));
            }
            let shared = if method == Method::PreadShared { Some(open_all(paths, false)?) } else { None };
            Ok(Arc::new(PreadFactory { method, paths: paths.to_vec(), shared }))
        }
        _ => Err(IoError::Unavailable { method: method.name(), reason: "not implemented yet".into() }),
    }
}

fn open_all(paths: &[PathBuf], direct: bool) -> Result<Arc<Vec<File>>, IoError> {
    Ok(Arc::new(paths.iter().map(|p| open_read_only(p, direct)).collect::<Result<Vec<_>, _>>()?))
}

struct PreadFactory {
    method: Method,
    paths: Vec<PathBuf>,
    /// `Some` for pread-shared: every worker uses these handles.
    shared: Option<Arc<Vec<File>>>,
}

impl BackendFactory for PreadFactory {
    fn method(&self) -> Method {
        self.method
    }
    fn describe(&self) -> String {
        match self.shared {
            Some(_) => "pread-shared: one buffered handle per file shared by all workers".into(),
            None => "pread: one buffered handle per file per worker, POSIX_FADV_RANDOM".into(),
        }
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let files = match &self.shared {
            Some(files) => files.clone(),
            None => open_all(&self.paths, false)?,
        };
        Ok(Box::new(PreadBackend { method: self.method, files, queue: InlineQueue::new(depth.max(1)) }))
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
        self.queue.submit_with(|r| pread_sample(&files[r.file as usize], r.file, r.offset))
    }
    fn reap(&mut self, out: &mut Vec<Completion>, _min: usize, _deadline: Option<Instant>) -> Result<usize, IoError> {
        Ok(self.queue.reap(out))
    }
}
