//! Exactly one sample by positional reads (`pread` on Unix, `ReadFile` at an offset on
//! Windows): the plain read that the buffered synchronous methods and the simulated disk share.

use crate::{ReadError, ReadErrorKind, Sample, SAMPLE_LEN};
use std::fs::File;

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

/// The code reported for an error that carries no OS code (never seen in practice).
#[cfg(unix)]
const EIO: i32 = libc::EIO;
/// ERROR_READ_FAULT.
#[cfg(windows)]
const EIO: i32 = 30;

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}
