//! `iocp` and `iocp-unbuffered`: DiskSpd's recipe. Each worker opens its own overlapped handle
//! per file (`FILE_FLAG_OVERLAPPED | FILE_FLAG_RANDOM_ACCESS`, plus `FILE_FLAG_NO_BUFFERING` for
//! the unbuffered arm) and associates them with its own I/O completion port. The worker owns
//! `depth` OVERLAPPED slots and `depth` buffers, allocated once and never moved while a read is
//! pending; `submit` starts every queued read with `ReadFile`, and `reap` takes completions off
//! the port in batches (`GetQueuedCompletionStatusEx`) with the deadline as the timeout.
//!
//! `SetFileCompletionNotificationModes(FILE_SKIP_COMPLETION_PORT_ON_SUCCESS |
//! FILE_SKIP_SET_EVENT_ON_HANDLE)` makes a read that finishes inside `ReadFile` (cached data)
//! post no port packet: the backend completes it at once. Where the mode cannot be set the
//! backend waits for the packet instead, so no read is ever completed twice.
//!
//! The state machine is in `crate::overlapped_engine` and the sector rules in `crate::align`; this
//! file is only the Win32 driver under them.
//!
//! Kernel lifetimes: a pending read's OVERLAPPED and buffer are written by the kernel until its
//! packet is dequeued. Both live in boxed storage owned by the driver, never moved, and freed
//! only when no read is pending. Teardown cancels (`CancelIoEx`) and waits a bounded time (see
//! `overlapped_engine`); if reads are still pending then, the driver leaks the OVERLAPPEDs, the
//! buffers, the file handles and the port, so nothing the kernel may still touch is freed or
//! closed under it.

use super::probe::unbuffered_sector_size;
use super::sync::open_read_only;
use crate::align::{power_of_two_read_unit, AlignedSlab, BlockRange, SpanPlan};
use crate::cache_reads::{CacheReadCounter, CacheReadTally, CacheReads};
use crate::overlapped_engine::{OverlappedDriver, OverlappedEngine, PortEvent, Started};
use crate::{Backend, BackendFactory, CancelOutcome, FactoryResult, IoConfig, IoError, Method};
use std::cell::UnsafeCell;
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use windows_sys::Win32::Foundation::{
    GetLastError, ERROR_IO_PENDING, FALSE, HANDLE, INVALID_HANDLE_VALUE, WAIT_TIMEOUT,
};
use windows_sys::Win32::Storage::FileSystem::{
    ReadFile, SetFileCompletionNotificationModes, FILE_FLAG_NO_BUFFERING, FILE_FLAG_OVERLAPPED,
    FILE_FLAG_RANDOM_ACCESS,
};
use windows_sys::Win32::System::IO::{
    CancelIoEx, CreateIoCompletionPort, GetOverlappedResult, GetQueuedCompletionStatusEx,
    OVERLAPPED, OVERLAPPED_ENTRY,
};

// From winbase.h (windows-sys files them under System_WindowsProgramming, a large feature this
// crate does not otherwise need).
const FILE_SKIP_COMPLETION_PORT_ON_SUCCESS: u8 = 0x1;
const FILE_SKIP_SET_EVENT_ON_HANDLE: u8 = 0x2;
/// Buffers of the buffered arm are aligned to a cache line; the unbuffered arm's to the sector.
const BUFFERED_ALIGN_BYTES: usize = 64;

pub(crate) fn open(method: Method, paths: &[PathBuf], config: &IoConfig) -> FactoryResult {
    let unbuffered = method == Method::IocpUnbuffered;
    let flags = handle_flags(unbuffered);
    let mut sector = None;
    let mut sector_source = "not needed";
    for path in paths {
        let file = open_read_only(path, flags)?; // every file must open now, not in a worker
        if unbuffered {
            let (size, source) = unbuffered_sector_size(&file, path);
            let larger = match sector {
                Some(s) => size > s,
                None => true,
            };
            if larger {
                sector = Some(size);
                sector_source = source;
            }
        }
    }
    let unit = power_of_two_read_unit(config.block_size, sector)?;
    let plan = SpanPlan::new(unit)?;
    Ok(Arc::new(IocpFactory {
        method,
        paths: paths.to_vec(),
        flags,
        plan,
        sector,
        sector_source,
        // Only the buffered arm can hit the cache: an unbuffered read always goes to the disk.
        cache_reads: (!unbuffered).then(Arc::default),
    }))
}

fn handle_flags(unbuffered: bool) -> u32 {
    let base = FILE_FLAG_OVERLAPPED | FILE_FLAG_RANDOM_ACCESS;
    if unbuffered {
        base | FILE_FLAG_NO_BUFFERING
    } else {
        base
    }
}

struct IocpFactory {
    method: Method,
    paths: Vec<PathBuf>,
    flags: u32,
    plan: SpanPlan,
    /// `Some` for the unbuffered arm: the sector size every read is checked against.
    sector: Option<u32>,
    sector_source: &'static str,
    /// The buffered arm's reads, classified by whether `ReadFile` finished inside the call.
    cache_reads: Option<Arc<CacheReadCounter>>,
}

impl BackendFactory for IocpFactory {
    fn method(&self) -> Method {
        self.method
    }
    fn describe(&self) -> String {
        match self.sector {
            Some(sector) => format!(
                "iocp-unbuffered: overlapped FILE_FLAG_NO_BUFFERING handles per worker on its own completion port, \
                 {}-byte reads, {sector}-byte sectors ({}), sector-aligned buffers",
                self.plan.unit(),
                self.sector_source
            ),
            None => format!(
                "iocp: overlapped buffered handles per worker on its own completion port, {}-byte reads, \
                 reads that finish inside ReadFile completed inline (FILE_SKIP_COMPLETION_PORT_ON_SUCCESS where the OS accepts it)",
                self.plan.unit().max(32)
            ),
        }
    }
    fn worker(&self, depth: usize) -> Result<Box<dyn Backend>, IoError> {
        let depth = depth.max(1);
        let mut driver = IocpDriver::new(&self.paths, self.flags, self.plan, self.sector, depth)?;
        driver.cache_reads = self
            .cache_reads
            .as_ref()
            .map(|c| CacheReadTally::new(c.clone(), 1));
        let files = self.paths.len() as u32;
        let engine = OverlappedEngine::new(driver, self.plan, self.sector, files, depth);
        Ok(Box::new(IocpBackend {
            method: self.method,
            engine,
        }))
    }
    fn cache_reads(&self) -> Option<CacheReads> {
        self.cache_reads.as_ref().map(|c| c.load())
    }
}

struct IocpBackend {
    method: Method,
    engine: OverlappedEngine<IocpDriver>,
}

forward_backend!(IocpBackend, engine, {
    fn method(&self) -> Method {
        self.method
    }
    fn cancel_all(&mut self, within: Duration) -> CancelOutcome {
        self.engine.cancel_all(within)
    }
});

/// One worker's port, handles, OVERLAPPED slots and buffers.
struct IocpDriver {
    /// The port and the handles are leaked with the memory when reads stay pending.
    port: ManuallyDrop<OwnedHandle>,
    files: ManuallyDrop<Vec<File>>,
    /// Per file: whether `ReadFile` returning TRUE means "no port packet will follow".
    skip_port_on_success: Vec<bool>,
    /// One OVERLAPPED per slot. Boxed once, never moved or resized: the kernel holds pointers
    /// into it while reads are pending. `UnsafeCell` because the kernel writes it behind our back.
    overlapped: ManuallyDrop<Box<[UnsafeCell<OVERLAPPED>]>>,
    buffers: ManuallyDrop<AlignedSlab>,
    entries: Box<[OVERLAPPED_ENTRY]>,
    sector: Option<u32>,
    /// The buffered arm's tally: a read that completes inside `ReadFile` came from the cache.
    cache_reads: Option<CacheReadTally>,
    /// Set when pending reads could not be drained: the memory, handles and port above are then
    /// never freed or closed.
    leak: bool,
}

// SAFETY: the driver owns its handles and memory outright; the raw pointers inside OVERLAPPED /
// OVERLAPPED_ENTRY refer only to this driver's own slots. A completion port is not tied to a
// thread, and I/O on port-associated handles is not cancelled when the issuing thread exits, so
// the worker may move between threads.
unsafe impl Send for IocpDriver {}

impl IocpDriver {
    fn new(
        paths: &[PathBuf],
        flags: u32,
        plan: SpanPlan,
        sector: Option<u32>,
        depth: usize,
    ) -> Result<Self, IoError> {
        let port = create_port()?;
        let mut files = Vec::with_capacity(paths.len());
        let mut skip_port_on_success = Vec::with_capacity(paths.len());
        for (key, path) in paths.iter().enumerate() {
            let file = open_read_only(path, flags)?;
            associate(&port, &file, key)?;
            skip_port_on_success.push(skip_completion_on_success(&file));
            files.push(file);
        }
        // SAFETY: OVERLAPPED and OVERLAPPED_ENTRY are plain C structs for which all-zero is valid.
        let zero_ov = || UnsafeCell::new(unsafe { std::mem::zeroed::<OVERLAPPED>() });
        let overlapped: Box<[UnsafeCell<OVERLAPPED>]> = (0..depth).map(|_| zero_ov()).collect();
        // SAFETY: as above.
        let entries =
            vec![unsafe { std::mem::zeroed::<OVERLAPPED_ENTRY>() }; depth].into_boxed_slice();
        let align = sector.map_or(BUFFERED_ALIGN_BYTES, |s| s as usize);
        let buffers = AlignedSlab::new(depth, plan.max_span_len() as usize, align)?;
        Ok(IocpDriver {
            port: ManuallyDrop::new(port),
            files: ManuallyDrop::new(files),
            skip_port_on_success,
            overlapped: ManuallyDrop::new(overlapped),
            buffers: ManuallyDrop::new(buffers),
            entries,
            sector,
            cache_reads: None,
            leak: false,
        })
    }

    /// Maps an OVERLAPPED pointer from the port back to its slot; `None` if it is not ours.
    fn slot_of(&self, ov: *mut OVERLAPPED) -> Option<u32> {
        let base = self.overlapped.as_ptr() as usize;
        let offset = (ov as usize).checked_sub(base)?;
        let size = std::mem::size_of::<UnsafeCell<OVERLAPPED>>();
        let slot = offset / size;
        (offset % size == 0 && slot < self.overlapped.len()).then_some(slot as u32)
    }

    /// The outcome of a completed OVERLAPPED: bytes transferred, or the Win32 error code.
    fn outcome(&self, entry: &OVERLAPPED_ENTRY, slot: u32) -> Result<u32, i32> {
        let ov = self.overlapped[slot as usize].get();
        // SAFETY: the read on this slot has completed (its packet was dequeued), so the kernel no
        // longer writes the OVERLAPPED; `Internal` holds the final NTSTATUS.
        let status = unsafe { (*ov).Internal };
        if status == 0 {
            return Ok(entry.dwNumberOfBytesTransferred); // STATUS_SUCCESS
        }
        let file = &self.files[entry.lpCompletionKey.min(self.files.len() - 1)];
        let mut bytes = 0u32;
        // SAFETY: valid handle and a completed OVERLAPPED of that handle; bWait FALSE never blocks.
        let ok =
            unsafe { GetOverlappedResult(file.as_raw_handle() as HANDLE, ov, &mut bytes, FALSE) };
        if ok != 0 {
            Ok(bytes)
        } else {
            // SAFETY: reads the calling thread's last-error value.
            Err(unsafe { GetLastError() } as i32)
        }
    }
}

fn create_port() -> Result<OwnedHandle, IoError> {
    // SAFETY: creating a new port (no file handle, no existing port); one thread (this worker)
    // dequeues from it.
    let port = unsafe { CreateIoCompletionPort(INVALID_HANDLE_VALUE, std::ptr::null_mut(), 0, 1) };
    if port.is_null() {
        return Err(IoError::Os {
            what: "CreateIoCompletionPort",
            source: super::last_os_error(),
        });
    }
    // SAFETY: `port` is a fresh handle owned by nobody else.
    Ok(unsafe { OwnedHandle::from_raw_handle(port as RawHandle) })
}

/// Associates `file` with `port`; completions carry `key` (the file index).
fn associate(port: &OwnedHandle, file: &File, key: usize) -> Result<(), IoError> {
    // SAFETY: both handles are valid and open; the file was opened with FILE_FLAG_OVERLAPPED.
    let got = unsafe {
        CreateIoCompletionPort(
            file.as_raw_handle() as HANDLE,
            port.as_raw_handle() as HANDLE,
            key,
            0,
        )
    };
    if got.is_null() {
        return Err(IoError::Os {
            what: "associating a file with the completion port",
            source: super::last_os_error(),
        });
    }
    Ok(())
}

/// Asks Windows not to post a port packet (nor set the handle's event) when a read completes
/// inside `ReadFile`. Returns whether that mode is in force.
fn skip_completion_on_success(file: &File) -> bool {
    let modes = FILE_SKIP_COMPLETION_PORT_ON_SUCCESS | FILE_SKIP_SET_EVENT_ON_HANDLE;
    // SAFETY: valid handle, documented flag values.
    unsafe { SetFileCompletionNotificationModes(file.as_raw_handle() as HANDLE, modes) != 0 }
}

impl OverlappedDriver for IocpDriver {
    fn buffer_addr(&self, slot: u32) -> usize {
        self.buffers.slot_ptr(slot as usize) as usize
    }

    fn buffer(&self, slot: u32, len: u32) -> &[u8] {
        self.buffers.slot_bytes(slot as usize, len as usize)
    }

    fn start(&mut self, slot: u32, file: u32, span: BlockRange) -> Started {
        let ov = self.overlapped[slot as usize].get();
        let buf = self.buffers.slot_ptr(slot as usize);
        debug_assert!(span.len as usize <= self.buffers.slot_len());
        if let Some(sector) = self.sector {
            // The engine already refused misaligned reads; this guards paths that bypass it.
            debug_assert!(crate::align::check_sector_alignment(span, buf as usize, sector).is_ok());
        }
        let handle = self.files[file as usize].as_raw_handle() as HANDLE;
        // SAFETY: the engine starts only free slots, so no read is pending on this OVERLAPPED and
        // buffer; both live in boxed storage that is not moved or freed until the read completes
        // (see `leak`). The buffer holds `slot_len >= span.len` bytes.
        let ok = unsafe {
            ov.write(std::mem::zeroed());
            (*ov).Anonymous.Anonymous.Offset = span.start as u32;
            (*ov).Anonymous.Anonymous.OffsetHigh = (span.start >> 32) as u32;
            ReadFile(handle, buf, span.len, std::ptr::null_mut(), ov)
        };
        // SAFETY: reads the calling thread's last-error value, set by ReadFile.
        let error = (ok == 0).then(|| unsafe { GetLastError() });
        if let Some(tally) = self.cache_reads.as_mut() {
            // TRUE: the cache manager served it inside the call; pending: it went to the disk.
            match error {
                None => tally.record(true),
                Some(ERROR_IO_PENDING) => tally.record(false),
                Some(_) => {} // failed: neither
            }
        }
        match error {
            // Completed, but a packet will still arrive: complete it from the port.
            None if !self.skip_port_on_success[file as usize] => Started::Pending,
            None => {
                // SAFETY: the read completed synchronously; InternalHigh holds the bytes.
                let bytes = unsafe { (*ov).InternalHigh } as u32;
                Started::CompletedNow { bytes }
            }
            Some(ERROR_IO_PENDING) => Started::Pending,
            Some(code) => Started::Failed { code: code as i32 },
        }
    }

    fn wait(&mut self, events: &mut [PortEvent], timeout_ms: u32) -> Result<usize, IoError> {
        let max = self.entries.len().min(events.len()) as u32;
        let mut removed = 0u32;
        // SAFETY: `entries` has room for `max` entries; the port handle is valid; not alertable.
        let ok = unsafe {
            GetQueuedCompletionStatusEx(
                self.port.as_raw_handle() as HANDLE,
                self.entries.as_mut_ptr(),
                max,
                &mut removed,
                timeout_ms,
                FALSE,
            )
        };
        if ok == 0 {
            let err = super::last_os_error();
            if err.raw_os_error() == Some(WAIT_TIMEOUT as i32) {
                return Ok(0);
            }
            return Err(IoError::Os {
                what: "GetQueuedCompletionStatusEx",
                source: err,
            });
        }
        for (i, event) in events.iter_mut().enumerate().take(removed as usize) {
            let entry = self.entries[i];
            *event = match self.slot_of(entry.lpOverlapped) {
                Some(slot) => PortEvent {
                    slot,
                    outcome: self.outcome(&entry, slot),
                },
                None => PortEvent {
                    slot: u32::MAX,
                    outcome: Err(0),
                },
            };
        }
        Ok(removed as usize)
    }

    fn cancel_all(&mut self) {
        for file in self.files.iter() {
            // SAFETY: valid handle; a null OVERLAPPED cancels every read this process has pending
            // on it. Failure (ERROR_NOT_FOUND: nothing pending) needs no handling.
            unsafe { CancelIoEx(file.as_raw_handle() as HANDLE, std::ptr::null()) };
        }
    }

    fn leak_buffers(&mut self) {
        self.leak = true;
    }
}

impl Drop for IocpDriver {
    fn drop(&mut self) {
        if self.leak {
            return; // reads may still be pending: the kernel may write these bytes later
        }
        // SAFETY: dropped exactly once, here; the engine drained every pending read first, so
        // the kernel holds no pointer into the OVERLAPPEDs or buffers; handles close before the
        // port they are associated with.
        unsafe {
            ManuallyDrop::drop(&mut self.files);
            ManuallyDrop::drop(&mut self.port);
            ManuallyDrop::drop(&mut self.overlapped);
            ManuallyDrop::drop(&mut self.buffers);
        }
    }
}
