//! Alignment math shared by the block-reading methods (`direct`, `uring-direct`, and every method
//! given `--block-size`): which byte range to read around a 32-byte sample, how big a worker's
//! buffer must be, and an aligned buffer that is allocated once and never per read.
//!
//! All functions here are pure so they can be table-tested (`tests/alignment.rs`).

use crate::{BlockSize, IoError, SAMPLE_LEN};
use std::alloc::Layout;
use std::ptr::NonNull;

/// Logical block size assumed when the device cannot be asked (the largest common one, so reads
/// aligned to it are aligned for 512-byte devices too).
pub const FALLBACK_LOGICAL_BLOCK_BYTES: u32 = 4096;

/// Largest `--block-size` accepted: one read never moves more than this.
pub const MAX_BLOCK_BYTES: u32 = 64 << 20;

/// The bytes one read moves to get a sample: `[start, start + len)`, with the sample at
/// `sample_pos` inside that range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRange {
    /// File offset of the first byte read; a multiple of the block size.
    pub start: u64,
    /// Bytes to read; a multiple of the block size (one block, or two when the sample straddles a
    /// block boundary).
    pub len: u32,
    /// Where the sample's first byte lands in the buffer (`offset - start`).
    pub sample_pos: u32,
}

impl BlockRange {
    /// Whether `got` bytes read from `start` cover the whole sample (a read that stops early at
    /// the end of the file still succeeds when the sample lies before it).
    pub fn covers_sample(&self, got: usize) -> bool {
        got >= self.sample_pos as usize + SAMPLE_LEN
    }
}

/// The block-aligned range that contains the 32 bytes at `offset`, for blocks of `block` bytes.
/// `None` when `block` is zero or the range would end past `u64::MAX`.
pub fn block_range(offset: u64, block: u32) -> Option<BlockRange> {
    if block == 0 {
        return None;
    }
    let block = u64::from(block);
    let sample_end = offset.checked_add(SAMPLE_LEN as u64)?;
    let start = offset - offset % block;
    let end = sample_end.div_ceil(block).checked_mul(block)?;
    Some(BlockRange {
        start,
        len: u32::try_from(end - start).ok()?,
        sample_pos: (offset - start) as u32,
    })
}

/// Most bytes one read can move for blocks of `block` bytes, the size of one read buffer: two
/// blocks, because a sample at an arbitrary offset may straddle a block boundary (a 32-byte
/// sample never spans more than two blocks of at least 32 bytes, which `read_unit` enforces).
pub fn max_span(block: u32) -> usize {
    2 * block as usize
}

/// The unit one read moves for a block method: the device's logical block for
/// `BlockSize::Natural`, `n` for `BlockSize::Bytes(n)`. For direct I/O (`logical_block` given),
/// `n` must be a multiple of the logical block size.
pub fn read_unit(block_size: BlockSize, logical_block: Option<u32>) -> Result<u32, IoError> {
    let unit = match (block_size, logical_block) {
        (BlockSize::Natural, Some(logical)) => logical,
        (BlockSize::Natural, None) => SAMPLE_LEN as u32,
        (BlockSize::Bytes(n), _) => n,
    };
    if unit < SAMPLE_LEN as u32 || unit > MAX_BLOCK_BYTES {
        return Err(IoError::Config(format!(
            "block size {unit} bytes is outside {SAMPLE_LEN}..={MAX_BLOCK_BYTES}"
        )));
    }
    if let Some(logical) = logical_block {
        if unit % logical != 0 {
            return Err(IoError::Config(format!(
                "block size {unit} bytes is not a multiple of the device's logical block size \
                 ({logical} bytes), which unbuffered reads require"
            )));
        }
    }
    Ok(unit)
}

/// A zeroed heap buffer aligned to `align` bytes, allocated once per worker.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: AlignedBuf owns its allocation exclusively (like a Box<[u8]>); moving it to another
// thread moves that ownership.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// `len` zero bytes aligned to `align` (a power of two). Errors name the sizes.
    pub fn new(len: usize, align: usize) -> Result<AlignedBuf, IoError> {
        let layout = Layout::from_size_align(len.max(1), align).map_err(|_| {
            IoError::Config(format!("cannot align a {len}-byte buffer to {align} bytes"))
        })?;
        // SAFETY: layout has a non-zero size (len.max(1)).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| {
            IoError::Config(format!("out of memory allocating a {len}-byte read buffer"))
        })?;
        Ok(AlignedBuf { ptr, layout })
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for layout.size() initialised (zeroed) bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in as_slice, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr was allocated by alloc_zeroed with exactly this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buf_is_aligned_and_zeroed() {
        for align in [512usize, 4096, 65536] {
            let buf = AlignedBuf::new(3 * align, align).unwrap();
            assert_eq!(buf.as_ptr() as usize % align, 0);
            assert_eq!(buf.len(), 3 * align);
            assert!(buf.as_slice().iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn bad_alignment_is_an_error() {
        assert!(AlignedBuf::new(4096, 3000).is_err());
    }
}
