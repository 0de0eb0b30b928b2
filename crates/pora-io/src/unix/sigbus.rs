//! Containment of SIGBUS faults on pora's own read-only file maps (Linux).
//!
//! Touching a mapped page that lies past the end of a file (because the file was truncated after
//! it was mapped), or whose read fails with a media error, raises SIGBUS; by default that kills
//! the process. The `mmap` method registers every map here, and a process-wide SIGBUS handler,
//! for faults inside a registered map only:
//! 1. lowers the map's `valid_len` to the faulting page's offset (so every later read at or past
//!    that page fails its bounds check),
//! 2. replaces the faulting page with an anonymous zero page (`mmap MAP_FIXED`), so the faulting
//!    load can complete when the handler returns, and
//! 3. counts the fault.
//!
//! The reader re-checks `valid_len` after its copy (behind a compiler fence) and turns the zeros it
//! may have copied into a `ReadError`. Faults outside registered maps are passed on to the
//! previous handler (Rust's own stack-overflow handler, or the default action), so unrelated
//! SIGBUS still terminates the process. The handler only does atomic loads/stores and one `mmap`
//! system call (glibc's `mmap` is a plain system-call wrapper, taking no locks).

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

const SLOT_COUNT: usize = 1024;
const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const ACTIVE: u8 = 2;

/// One registered map: `[start, start + len)` in memory, file offset 0 at `start`.
pub(crate) struct Slot {
    state: AtomicU8,
    start: AtomicUsize,
    len: AtomicUsize,
    /// Reads must end at or before this file offset (lowered by faults and length checks).
    valid_len: AtomicU64,
    faults: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            state: AtomicU8::new(FREE),
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            valid_len: AtomicU64::new(0),
            faults: AtomicU64::new(0),
        }
    }
}

static SLOTS: [Slot; SLOT_COUNT] = [const { Slot::new() }; SLOT_COUNT];
static FAULTS_CONTAINED: AtomicU64 = AtomicU64::new(0);
static PAGE_BYTES: AtomicUsize = AtomicUsize::new(4096);
/// The SIGBUS disposition before ours, for faults that are not ours; `Err` if install failed.
static PREVIOUS: OnceLock<Result<libc::sigaction, String>> = OnceLock::new();

/// SIGBUS faults on pora's maps that were contained since the process started.
pub fn faults_contained() -> u64 {
    FAULTS_CONTAINED.load(Ordering::Relaxed)
}

/// A map registered with the handler; unregistered on drop (before the map is unmapped).
pub(crate) struct Registration {
    slot: &'static Slot,
}

impl Registration {
    /// The bound every read of this map must respect.
    pub(crate) fn valid_len(&self) -> &AtomicU64 {
        &self.slot.valid_len
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.slot.state.store(FREE, Ordering::SeqCst);
    }
}

/// Installs the handler (once per process) and registers `[start, start + len)`.
pub(crate) fn register(start: *const u8, len: usize) -> Result<Registration, String> {
    install()?;
    let slot = SLOTS
        .iter()
        .find(|s| {
            s.state
                .compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })
        .ok_or_else(|| format!("more than {SLOT_COUNT} files are mapped at once"))?;
    slot.start.store(start as usize, Ordering::Relaxed);
    slot.len.store(len, Ordering::Relaxed);
    slot.valid_len.store(len as u64, Ordering::Relaxed);
    slot.faults.store(0, Ordering::Relaxed);
    slot.state.store(ACTIVE, Ordering::Release);
    Ok(Registration { slot })
}

fn install() -> Result<(), String> {
    PREVIOUS
        .get_or_init(install_once)
        .as_ref()
        .map(|_| ())
        .map_err(Clone::clone)
}

fn install_once() -> Result<libc::sigaction, String> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if page > 0 {
        PAGE_BYTES.store(page as usize, Ordering::Relaxed);
    }
    // SAFETY: sigaction is plain data; all-zero is a valid (empty) value.
    let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut ours: libc::sigaction = unsafe { std::mem::zeroed() };
    ours.sa_sigaction = on_sigbus as *const () as usize;
    ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: sa_mask is a valid sigset_t to initialise.
    unsafe { libc::sigemptyset(&mut ours.sa_mask) };
    // SAFETY: valid signal number and sigaction pointers. Until `get_or_init` stores `previous`,
    // the handler finds `PREVIOUS` unset and gives foreign faults the default action; no map is
    // registered before this returns, so no fault of ours can happen meanwhile.
    let rc = unsafe { libc::sigaction(libc::SIGBUS, &ours, &mut previous) };
    if rc != 0 {
        return Err(format!(
            "cannot install the SIGBUS handler: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(previous)
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    if contain(addr) {
        return;
    }
    chain(sig, info, ctx);
}

/// Patches the faulting page if it belongs to a registered map.
fn contain(addr: usize) -> bool {
    let page_bytes = PAGE_BYTES.load(Ordering::Relaxed);
    for slot in SLOTS.iter() {
        if slot.state.load(Ordering::Acquire) != ACTIVE {
            continue;
        }
        let start = slot.start.load(Ordering::Relaxed);
        let mapped_end = start
            + slot
                .len
                .load(Ordering::Relaxed)
                .next_multiple_of(page_bytes);
        if addr < start || addr >= mapped_end {
            continue;
        }
        let page = addr - addr % page_bytes;
        slot.valid_len
            .fetch_min((page - start) as u64, Ordering::SeqCst);
        // SAFETY: the page lies inside a read-only map that pora owns and that stays mapped while
        // registered; replacing it with an anonymous read-only page changes only what it reads as.
        let patched = unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                page_bytes,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if patched == libc::MAP_FAILED {
            return false;
        }
        slot.faults.fetch_add(1, Ordering::SeqCst);
        FAULTS_CONTAINED.fetch_add(1, Ordering::Relaxed);
        return true;
    }
    false
}

/// Hands a fault that is not ours to the previous disposition.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let previous = match PREVIOUS.get() {
        Some(Ok(previous)) => previous,
        _ => return reset_to_default(sig),
    };
    match previous.sa_sigaction {
        // Returning re-executes the faulting access, which now takes the default action (or,
        // for SIG_IGN, would loop forever: a hardware fault cannot be ignored, so default too).
        libc::SIG_DFL | libc::SIG_IGN => reset_to_default(sig),
        handler if previous.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: with SA_SIGINFO the stored handler has the three-argument signature.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(handler) };
            f(sig, info, ctx)
        }
        handler => {
            // SAFETY: without SA_SIGINFO the stored handler has the one-argument signature.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
            f(sig)
        }
    }
}

fn reset_to_default(sig: libc::c_int) {
    // SAFETY: signal() with SIG_DFL is async-signal-safe and has no memory preconditions.
    unsafe { libc::signal(sig, libc::SIG_DFL) };
}
