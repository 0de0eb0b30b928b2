//! Positional reads (`pread` on Unix, `ReadFile` at an offset on Windows): exactly one sample,
//! the plain read that the buffered synchronous methods and the simulated disk share, and any
//! byte range for callers that share one handle between threads (scrub, decode).

use crate::{Method, ReadError, ReadErrorKind, Sample, SampleRead, SAMPLE_LEN};
use std::fs::File;
use std::sync::Arc;

/// One worker's positional reader (`pread` on Unix, `seek_read` on Windows) over its handles:
/// one sample at a time, or where the method reads whole blocks, the block around it into the
/// worker's buffer (`B`, the platform's).
pub(crate) struct PositionalReader<B> {
    pub method: Method,
    pub files: Arc<Vec<File>>,
    pub block: Option<B>,
}

/// How a platform reads one sample through the block around it, into a worker's buffer.
pub(crate) trait BlockRead {
    fn read_block(&mut self, file: &File, r: &SampleRead) -> Result<Sample, ReadError>;
}

impl<B: BlockRead> PositionalReader<B> {
    /// The sample `r` names.
    pub(crate) fn read(&mut self, r: &SampleRead) -> Result<Sample, ReadError> {
        let file = self
            .files
            .get(r.file as usize)
            .ok_or_else(|| no_such_file(r))?;
        match &mut self.block {
            None => read_sample(file, r.file, r.offset),
            Some(block) => block.read_block(file, r),
        }
    }
}

/// The error for a read naming a file index the factory was not opened with.
pub(crate) fn no_such_file(r: &SampleRead) -> ReadError {
    ReadError {
        file: r.file,
        offset: r.offset,
        kind: ReadErrorKind::Os(BAD_HANDLE),
    }
}

/// Reads the 32 bytes at `offset`, resuming partial reads and retrying interruptions (and
/// EAGAIN); end of file becomes a short read, any other failure the OS error, both with the
/// file and offset.
pub(crate) fn read_sample(file: &File, file_idx: u32, offset: u64) -> Result<Sample, ReadError> {
    let mut buf = [0u8; SAMPLE_LEN];
    let mut got = 0usize;
    let fail = |kind| ReadError {
        file: file_idx,
        offset,
        kind,
    };
    while got < SAMPLE_LEN {
        match read_at(file, &mut buf[got..], offset + got as u64) {
            Ok(0) => {
                return Err(fail(ReadErrorKind::ShortRead {
                    got: got as u32,
                    wanted: SAMPLE_LEN as u32,
                }))
            }
            Ok(n) => got += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                ) => {}
            Err(e) => return Err(fail(ReadErrorKind::Os(e.raw_os_error().unwrap_or(EIO)))),
        }
    }
    Ok(buf)
}

/// Fills `buf` from `offset`, every call carrying its own offset, so threads may share one
/// `File` (a `seek` + `read` pair on a shared handle lets another thread's seek land in
/// between). Unix leaves the cursor alone; Windows moves it, but no read here depends on it.
/// Interruptions are retried; end of file is `UnexpectedEof` with `read_exact`'s message.
pub fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match read_at(file, buf, offset) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "failed to fill whole buffer",
                ))
            }
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The code reported for an error that carries no OS code (never seen in practice).
#[cfg(unix)]
const EIO: i32 = libc::EIO;
/// ERROR_READ_FAULT.
#[cfg(windows)]
const EIO: i32 = 30;
#[cfg(unix)]
const BAD_HANDLE: i32 = libc::EBADF;
#[cfg(windows)]
const BAD_HANDLE: i32 = crate::overlapped_engine::WIN32_ERROR_INVALID_HANDLE;

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::io::Read;
    use std::io::{Seek, SeekFrom, Write};

    /// The read ignores the handle's cursor (and, on Unix, leaves it where it was), and a range
    /// past the end is an `UnexpectedEof` error, not a short buffer.
    #[test]
    fn read_exact_at_keeps_the_cursor_and_refuses_a_short_range() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&(0..=255u8).collect::<Vec<_>>()).unwrap();
        file.seek(SeekFrom::Start(7)).unwrap();
        let mut buf = [0u8; 4];
        read_exact_at(&file, &mut buf, 100).unwrap();
        assert_eq!(buf, [100, 101, 102, 103]);
        #[cfg(unix)]
        {
            let mut next = [0u8; 1];
            file.read_exact(&mut next).unwrap();
            assert_eq!(next, [7], "the cursor moved");
        }
        let e = read_exact_at(&file, &mut buf, 254).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
