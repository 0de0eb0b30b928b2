//! Alignment math shared by every block-reading method on every OS (`direct`, `uring-direct`,
//! `iocp-unbuffered`, and any method given `--block-size`): which byte range to read around a
//! 32-byte sample, how big a worker's buffer must be, which read units a method accepts, the
//! sector rules unbuffered reads must keep, and aligned memory that is allocated once per worker
//! and never per read.
//!
//! The functions are pure so they can be table-tested (`tests/alignment.rs`, and the Windows
//! engine's tests in `overlapped_engine/tests.rs`, which run on every OS). The sector size a
//! device reports is a host fact: [`crate::host::sector_size`].

use crate::{BlockSize, IoError, SAMPLE_LEN};
use pora_core::Input;
use std::alloc::Layout;
use std::ptr::NonNull;

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

/// Most bytes one read can move for blocks of `block` bytes (non-zero), the size of one read
/// buffer: the whole blocks a sample needs when it starts one byte into a block. That is two
/// blocks for blocks of at least 32 bytes (a sample may straddle a boundary), and just the sample
/// for 1-byte "blocks" (reading exactly the sample).
pub fn max_span(block: u32) -> usize {
    let block = (block as usize).max(1);
    (SAMPLE_LEN + block - 1).div_ceil(block) * block
}

/// How a factory's one-line description names its read unit (`what`: "reads", or "copies" for
/// mapped methods): `None` moves exactly the 32-byte sample.
pub(crate) fn describe_read_unit(unit: Option<u32>, what: &str) -> String {
    match unit {
        None => format!("{SAMPLE_LEN}-byte {what}"),
        Some(unit) => format!("{unit}-byte aligned block {what}"),
    }
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

/// The read unit of the Windows methods, which need a power of two: the sample itself (1: no
/// rounding) for natural buffered reads, one sector for natural unbuffered reads; `--block-size
/// n` reads the `n`-aligned block(s) around the sample and must be a power of two from 32 bytes
/// to [`MAX_BLOCK_BYTES`] and, unbuffered, a multiple of the sector size.
// Windows methods only; elsewhere used by the overlapped engine's tests.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn power_of_two_read_unit(
    block: BlockSize,
    sector: Option<u32>,
) -> Result<u32, IoError> {
    let n = match (block, sector) {
        (BlockSize::Natural, None) => return Ok(1),
        (BlockSize::Natural, Some(sector)) => return Ok(sector),
        (BlockSize::Bytes(n), _) => n,
    };
    if !n.is_power_of_two() || !(SAMPLE_LEN as u32..=MAX_BLOCK_BYTES).contains(&n) {
        return Err(IoError::Config(format!(
            "{} {n}: must be a power of two from {SAMPLE_LEN} to {MAX_BLOCK_BYTES} bytes",
            Input::BlockSize
        )));
    }
    match sector {
        Some(sector) if n % sector != 0 => Err(IoError::Config(format!(
            "{} {n}: unbuffered reads need a multiple of the volume's {sector}-byte sector",
            Input::BlockSize
        ))),
        _ => Ok(n),
    }
}

/// A validated power-of-two read unit and the ranges it reads: what the Windows methods carry.
// Windows methods only; elsewhere used by the overlapped engine's tests.
#[cfg_attr(not(windows), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SpanPlan {
    unit: u32,
}

#[cfg_attr(not(windows), allow(dead_code))]
impl SpanPlan {
    /// A plan reading whole `unit`-byte blocks; `unit` must be a power of two up to
    /// [`MAX_BLOCK_BYTES`] (1 reads exactly the sample).
    pub(crate) fn new(unit: u32) -> Result<SpanPlan, IoError> {
        if !unit.is_power_of_two() || unit > MAX_BLOCK_BYTES {
            return Err(IoError::Config(format!(
                "read unit {unit} bytes: must be a power of two up to {MAX_BLOCK_BYTES}"
            )));
        }
        Ok(SpanPlan { unit })
    }

    pub(crate) fn unit(self) -> u32 {
        self.unit
    }

    /// The largest range any sample can need ([`max_span`]): the per-slot buffer size.
    pub(crate) fn max_span_len(self) -> u32 {
        max_span(self.unit) as u32
    }

    /// The range that holds the sample at `offset` ([`block_range`]); `None` when it would pass
    /// `u64::MAX`.
    pub(crate) fn span(self, offset: u64) -> Option<BlockRange> {
        block_range(offset, self.unit)
    }
}

/// Why an unbuffered read would break the sector rules (pora checks this itself: Wine, and some
/// Windows file systems, do not reject misaligned unbuffered reads).
// Windows methods only; elsewhere used by the overlapped engine's tests.
#[cfg_attr(not(windows), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Misaligned {
    #[error("offset {0} is not a multiple of the sector size")]
    Offset(u64),
    #[error("length {0} is not a multiple of the sector size")]
    Length(u32),
    #[error("buffer address {0:#x} is not a multiple of the sector size")]
    Buffer(usize),
}

/// Checks the unbuffered-read rules (`FILE_FLAG_NO_BUFFERING`, O_DIRECT): file offset, length and
/// buffer address are all multiples of the sector size (a power of two).
// Windows methods only; elsewhere used by the overlapped engine's tests.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn check_sector_alignment(
    range: BlockRange,
    buffer_addr: usize,
    sector: u32,
) -> Result<(), Misaligned> {
    debug_assert!(sector.is_power_of_two());
    let mask = u64::from(sector) - 1;
    if range.start & mask != 0 {
        return Err(Misaligned::Offset(range.start));
    }
    if u64::from(range.len) & mask != 0 || range.len == 0 {
        return Err(Misaligned::Length(range.len));
    }
    if buffer_addr as u64 & mask != 0 {
        return Err(Misaligned::Buffer(buffer_addr));
    }
    Ok(())
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

/// One allocation holding `slots` buffers of `slot_len` bytes, each starting at a multiple of
/// `align`: allocated once per worker, never moved, freed on drop. The OS writes into a slot only
/// while its owning worker has a read pending there.
// Windows methods only; elsewhere used by the overlapped engine's tests.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) struct AlignedSlab {
    buf: AlignedBuf,
    slot_len: usize,
    slots: usize,
}

#[cfg_attr(not(windows), allow(dead_code))]
impl AlignedSlab {
    /// `slot_len` is rounded up to a multiple of `align` (a power of two) so every slot is aligned.
    pub(crate) fn new(slots: usize, slot_len: usize, align: usize) -> Result<AlignedSlab, IoError> {
        let bad = || {
            IoError::Config(format!(
                "cannot allocate {slots} buffers of {slot_len} bytes aligned to {align}"
            ))
        };
        if slots == 0 || slot_len == 0 || !align.is_power_of_two() {
            return Err(bad());
        }
        let slot_len = slot_len.checked_next_multiple_of(align).ok_or_else(bad)?;
        let size = slot_len.checked_mul(slots).ok_or_else(bad)?;
        let buf = AlignedBuf::new(size, align).map_err(|_| bad())?;
        Ok(AlignedSlab {
            buf,
            slot_len,
            slots,
        })
    }

    pub(crate) fn slot_len(&self) -> usize {
        self.slot_len
    }

    /// Start of slot `slot`'s buffer; the OS writes here while a read is pending.
    pub(crate) fn slot_ptr(&self, slot: usize) -> *mut u8 {
        assert!(slot < self.slots, "slot {slot} of {}", self.slots);
        // SAFETY: slot < slots, so the offset stays inside the allocation. The pointer comes from
        // the allocation's own mutable pointer, so writing through it is allowed while no
        // reference to the slot's bytes is alive (the engine's rule: only while a read is pending).
        unsafe { self.buf.ptr.as_ptr().add(slot * self.slot_len) }
    }

    /// The first `len` bytes of slot `slot`. Only called when no read into it is pending.
    pub(crate) fn slot_bytes(&self, slot: usize, len: usize) -> &[u8] {
        assert!(len <= self.slot_len);
        // SAFETY: in bounds (checked above); no OS write is pending on this slot, so nothing
        // mutates these bytes while the shared borrow of `self` lives.
        unsafe { std::slice::from_raw_parts(self.slot_ptr(slot), len) }
    }

    /// Mutable view of a slot, for fakes that play the OS in tests.
    #[cfg(test)]
    pub(crate) fn slot_bytes_mut(&mut self, slot: usize) -> &mut [u8] {
        // SAFETY: in bounds; `&mut self` guarantees no other borrow exists.
        unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(slot), self.slot_len) }
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
