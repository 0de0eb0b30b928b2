//! The two byte-string types of the ABI: [`PoraBytes`] (borrowed input, pointer + length) and
//! [`PoraBuf`] (allocated by pora, freed by [`pora_buf_free`]), with a registry of the buffers
//! handed out so a double free or a foreign pointer is reported instead of corrupting the heap.

use crate::failure::Failure;
use crate::PoraStatus;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A borrowed byte string: `len` bytes at `ptr`. `ptr` may be null only when `len` is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PoraBytes {
    pub ptr: *const u8,
    pub len: usize,
}

/// Bytes allocated by pora (a JSON result or an error message, UTF-8, not NUL-terminated).
/// Empty is `{NULL, 0}`. Free with `pora_buf_free` once.
#[repr(C)]
#[derive(Debug)]
pub struct PoraBuf {
    pub ptr: *mut u8,
    pub len: usize,
}

impl PoraBuf {
    pub(crate) const EMPTY: PoraBuf = PoraBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    };

    /// Moves `bytes` to the heap and records the allocation as live.
    pub(crate) fn from_vec(bytes: Vec<u8>) -> PoraBuf {
        if bytes.is_empty() {
            return PoraBuf::EMPTY;
        }
        let boxed: Box<[u8]> = bytes.into_boxed_slice();
        let len = boxed.len();
        let ptr = Box::into_raw(boxed) as *mut u8;
        live().insert(ptr as usize, len);
        PoraBuf { ptr, len }
    }
}

/// The buffers handed out and not yet freed: address -> length. The recorded length is the one
/// freed, so a caller that changed `len` cannot make pora free the wrong size.
fn live() -> MutexGuard<'static, BTreeMap<usize, usize>> {
    static LIVE: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The empty byte string, `{NULL, 0}`.
impl Default for PoraBytes {
    fn default() -> Self {
        PoraBytes {
            ptr: std::ptr::null(),
            len: 0,
        }
    }
}

impl PoraBytes {
    /// The borrowed bytes; `what` names the argument in the error.
    ///
    /// # Safety
    /// `ptr` must point to `len` readable bytes that stay valid for the call.
    pub(crate) unsafe fn as_slice<'a>(&self, what: &str) -> Result<&'a [u8], Failure> {
        if self.len == 0 {
            return Ok(&[]);
        }
        if self.ptr.is_null() {
            return Err(Failure::invalid(format!(
                "{what}: pointer is null but length is {}",
                self.len
            )));
        }
        if self.len > isize::MAX as usize {
            return Err(Failure::invalid(format!(
                "{what}: length {} is not a valid length",
                self.len
            )));
        }
        Ok(std::slice::from_raw_parts(self.ptr, self.len))
    }
}

/// Frees `*buf` (the body of `pora_buf_free`, exported with the other calls in exports.rs).
///
/// # Safety
/// `buf` must be null or point to a writable `PoraBuf`.
pub(crate) unsafe fn free(buf: *mut PoraBuf) -> PoraStatus {
    if buf.is_null() {
        return PoraStatus::InvalidArgument;
    }
    let ptr = std::ptr::read(buf).ptr;
    if ptr.is_null() {
        return PoraStatus::Ok;
    }
    let Some(len) = live().remove(&(ptr as usize)) else {
        return PoraStatus::InvalidArgument;
    };
    drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
    std::ptr::write(buf, PoraBuf::EMPTY);
    PoraStatus::Ok
}
