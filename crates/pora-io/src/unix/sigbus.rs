//! Containment of SIGBUS faults on pora's own read-only file maps (Linux and macOS).
//!
//! Touching a mapped page that lies past the end of a file (because the file was truncated after
//! it was mapped), or whose read fails with a media error, raises SIGBUS; by default that kills
//! the process. (macOS raises SIGBUS for it too; SIGSEGV is also watched there, as a safety net
//! for protection faults the kernel reports that way.) The `mmap` method registers every map
//! here, and a process-wide handler, for faults inside a registered map only:
//! 1. records the faulting page and the faulting thread in the map's small table of patched
//!    pages (when the table is full: lowers the map's `valid_len` to the page instead, so every
//!    later read at or past it fails its bounds check),
//! 2. bumps the map's epoch, and
//! 3. replaces the faulting page with an anonymous zero page (`mmap MAP_FIXED`), so the faulting
//!    load can complete when the handler returns.
//!
//! The reader ([`Registration::read_stable`]) copies between two loads of the epoch and a load of
//! the patched-page count: if nothing was patched and the epoch did not move, the bytes came from
//! the file. Otherwise the thread whose own copy faulted finds its entry, puts the file's page
//! back (`mmap MAP_FIXED` of the file at that offset, so the next read of the page asks the disk
//! again: a sector that recovers is readable again, and one bad page never poisons the others,
//! as the earlier "lower the bound to the faulting page" rule did: the fault suite saw 19,517 read
//! errors for 8 bad KVs with it), bumps the epoch, forgets the entry and reports the error;
//! every other reader copies again until no patch is outstanding. Ordering argument: a copy
//! that saw a zero page ran after the handler's count increment and before the heal's remap;
//! the heal bumps the epoch before it decrements the count, so a reader that sees the count back
//! at zero also sees the epoch moved since its first load, and copies again.
//!
//! Async-signal safety. The handler does only lock-free atomic loads and stores on statics,
//! reads a `OnceLock` that was set before any map was registered, saves and restores `errno`, and
//! makes one `mmap(MAP_FIXED)` call. POSIX does not list `mmap` as async-signal-safe, so this is
//! what the code relies on instead:
//! - Linux (64-bit): the call is the raw system call (`syscall(SYS_mmap, ...)`), not libc's
//!   `mmap`, so no libc state is involved (musl's `mmap` would take a lock for `MAP_FIXED`); the
//!   kernel's `mmap` is safe to enter from a signal handler like any system call. 32-bit Linux
//!   uses libc's `mmap` (glibc's is a plain system-call wrapper, taking no locks).
//! - macOS: libSystem's `mmap` is a direct system-call stub in libsystem_kernel (no locks, no
//!   allocation), which is what the handler relies on there.
//! - Chaining to a previous handler or resetting to the default uses `signal(SIG_DFL)`, which
//!   POSIX does list as async-signal-safe.
//!
//! The remaining signal-handler subtlety is the reader's: it must not keep a value loaded from
//! the faulting page; it re-checks `valid_len` after the copy, behind a compiler fence.
//!
//! Not tested at run time on macOS here (no macOS machine): the code is shared with Linux and
//! compiled for `aarch64-apple-darwin` by clippy; `tests/conformance.rs::mmap_survives_truncation`
//! runs it wherever the tests run.

use std::sync::atomic::{compiler_fence, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

const MAPPING_COUNT: usize = 1024;
/// Pages of one map that may be patched (faulted, not yet put back) at once; a patch is put back
/// by the faulting thread right after its copy, so only a handful are ever outstanding.
const PATCHED_PAGES: usize = 64;
/// Copies a reader retries while another thread's patch is outstanding.
const STABLE_READ_TRIES: u32 = 10_000;
const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const ACTIVE: u8 = 2;

/// One registered map: `[start, start + len)` in memory, file offset 0 at `start`.
pub(crate) struct RegisteredMapping {
    state: AtomicU8,
    start: AtomicUsize,
    len: AtomicUsize,
    /// Reads must end at or before this file offset (lowered by length checks, and by faults
    /// when the patched-page table is full).
    valid_len: AtomicU64,
    faults: AtomicU64,
    /// Patched pages (address; 0 = free) and the thread that faulted on each.
    patched: [AtomicUsize; PATCHED_PAGES],
    patched_by: [AtomicU64; PATCHED_PAGES],
    patched_count: AtomicUsize,
    /// Bumped by every patch and every heal.
    epoch: AtomicU64,
}

impl RegisteredMapping {
    const fn new() -> RegisteredMapping {
        RegisteredMapping {
            state: AtomicU8::new(FREE),
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            valid_len: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            patched: [const { AtomicUsize::new(0) }; PATCHED_PAGES],
            patched_by: [const { AtomicU64::new(0) }; PATCHED_PAGES],
            patched_count: AtomicUsize::new(0),
            epoch: AtomicU64::new(0),
        }
    }
}

static MAPPINGS: [RegisteredMapping; MAPPING_COUNT] =
    [const { RegisteredMapping::new() }; MAPPING_COUNT];
static FAULTS_CONTAINED: AtomicU64 = AtomicU64::new(0);
static PAGE_BYTES: AtomicUsize = AtomicUsize::new(4096);
/// The signals a fault on a mapped file can raise here.
#[cfg(target_os = "linux")]
const WATCHED: [libc::c_int; 1] = [libc::SIGBUS];
#[cfg(target_os = "macos")]
const WATCHED: [libc::c_int; 2] = [libc::SIGBUS, libc::SIGSEGV];
/// Per watched signal, the disposition before ours, for faults that are not ours; `Err` if
/// installing failed.
static PREVIOUS: OnceLock<Result<[libc::sigaction; WATCHED.len()], String>> = OnceLock::new();

/// SIGBUS faults on pora's maps that were contained since the process started.
pub fn faults_contained() -> u64 {
    FAULTS_CONTAINED.load(Ordering::Relaxed)
}

/// A map registered with the handler; unregistered on drop (before the map is unmapped).
pub(crate) struct Registration {
    slot: &'static RegisteredMapping,
}

/// Why a stable read failed.
pub(crate) enum Unstable {
    /// This thread's copy faulted (the page is put back: the next read asks the disk again).
    Faulted,
    /// Other threads' patches stayed outstanding for every try.
    Busy,
}

impl Registration {
    /// The bound every read of this map must respect.
    pub(crate) fn valid_len(&self) -> &AtomicU64 {
        &self.slot.valid_len
    }

    /// Runs `copy` (a copy out of this map's `[from, from + len)`, addresses) until its bytes
    /// are known to come from the file; on a fault of this thread's own copy, puts the file's
    /// page back over the zero page (`fd` is the mapped file) and says which page faulted.
    #[inline(always)]
    pub(crate) fn read_stable(
        &self,
        from: usize,
        len: usize,
        fd: libc::c_int,
        mut copy: impl FnMut(),
    ) -> Result<(), Unstable> {
        let slot = self.slot;
        for _ in 0..STABLE_READ_TRIES {
            let before = slot.epoch.load(Ordering::SeqCst);
            copy();
            // The copy must not be moved past the checks: a fault during it patches from the
            // signal handler on this thread.
            compiler_fence(Ordering::SeqCst);
            let outstanding = slot.patched_count.load(Ordering::SeqCst);
            if outstanding == 0 && slot.epoch.load(Ordering::SeqCst) == before {
                return Ok(());
            }
            if self.heal_own(from, len, fd) {
                return Err(Unstable::Faulted);
            }
            std::thread::yield_now();
        }
        Err(Unstable::Busy)
    }

    /// Puts back every page this thread patched inside `[from, from + len)`; false if there was
    /// none. Every one, not the first: one copy can fault twice on the same page (another
    /// thread's heal maps the file's page back between this thread's patch and the restart of
    /// its load, which then faults again), and an entry left behind would stay outstanding for
    /// good once this thread is gone (a slot's workers are new threads), so every later read
    /// of the map would end `Busy`.
    #[cold]
    fn heal_own(&self, from: usize, len: usize, fd: libc::c_int) -> bool {
        let mut healed = false;
        while self.heal_one(from, len, fd) {
            healed = true;
        }
        healed
    }

    /// Puts back one page this thread patched inside `[from, from + len)`, if there is one.
    fn heal_one(&self, from: usize, len: usize, fd: libc::c_int) -> bool {
        let slot = self.slot;
        let page_bytes = PAGE_BYTES.load(Ordering::Relaxed);
        let me = thread_id();
        let start = slot.start.load(Ordering::Relaxed);
        let Some(entry) = (0..PATCHED_PAGES).find(|&i| {
            let page = slot.patched[i].load(Ordering::SeqCst);
            page != 0
                && page != usize::MAX
                && page < from + len
                && from < page + page_bytes
                && slot.patched_by[i].load(Ordering::SeqCst) == me
        }) else {
            return false;
        };
        let page = slot.patched[entry].load(Ordering::SeqCst);
        let offset = (page - start) as libc::off_t;
        // SAFETY: the page lies inside this registered read-only map, which stays mapped while
        // registered; mapping the file's own page back over the zero page restores what the
        // map showed before the fault.
        unsafe {
            let back = libc::mmap(
                page as *mut libc::c_void,
                page_bytes,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd,
                offset,
            );
            if back != libc::MAP_FAILED {
                libc::madvise(back, page_bytes, libc::MADV_RANDOM);
            }
        }
        slot.epoch.fetch_add(1, Ordering::SeqCst);
        slot.patched[entry].store(0, Ordering::SeqCst);
        slot.patched_count.fetch_sub(1, Ordering::SeqCst);
        true
    }
}

/// The calling thread's kernel id (async-signal-safe: a plain system call).
fn thread_id() -> u64 {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no preconditions.
    let id = unsafe { libc::syscall(libc::SYS_gettid) } as u64;
    #[cfg(target_os = "macos")]
    // SAFETY: pthread_self has no preconditions and is async-signal-safe.
    let id = unsafe { libc::pthread_self() } as u64;
    id
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.slot.state.store(FREE, Ordering::SeqCst);
    }
}

/// Installs the handler (once per process) and registers `[start, start + len)`.
pub(crate) fn register(start: *const u8, len: usize) -> Result<Registration, String> {
    install()?;
    let slot = MAPPINGS
        .iter()
        .find(|s| {
            s.state
                .compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })
        .ok_or_else(|| format!("more than {MAPPING_COUNT} files are mapped at once"))?;
    slot.start.store(start as usize, Ordering::Relaxed);
    slot.len.store(len, Ordering::Relaxed);
    slot.valid_len.store(len as u64, Ordering::Relaxed);
    slot.faults.store(0, Ordering::Relaxed);
    for p in &slot.patched {
        p.store(0, Ordering::Relaxed);
    }
    slot.patched_count.store(0, Ordering::Relaxed);
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

fn install_once() -> Result<[libc::sigaction; WATCHED.len()], String> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if page > 0 {
        PAGE_BYTES.store(page as usize, Ordering::Relaxed);
    }
    // SAFETY: sigaction is plain data; all-zero is a valid (empty) value.
    let mut previous: [libc::sigaction; WATCHED.len()] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut ours: libc::sigaction = unsafe { std::mem::zeroed() };
    ours.sa_sigaction = on_fault as *const () as usize;
    ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: sa_mask is a valid sigset_t to initialise.
    unsafe { libc::sigemptyset(&mut ours.sa_mask) };
    for (sig, previous) in WATCHED.iter().zip(previous.iter_mut()) {
        // SAFETY: valid signal number and sigaction pointers. Until `get_or_init` stores
        // `previous`, the handler finds `PREVIOUS` unset and gives foreign faults the default
        // action; no map is registered before this returns, so no fault of ours can happen.
        let rc = unsafe { libc::sigaction(*sig, &ours, previous) };
        if rc != 0 {
            return Err(format!(
                "cannot install the handler for signal {sig}: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(previous)
}

extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    // The interrupted code may be about to read errno: leave it as it was.
    let errno = Errno::save();
    let contained = contain(addr);
    errno.restore();
    if !contained {
        chain(sig, info, ctx);
    }
}

/// The calling thread's `errno`, saved by the handler and put back before it returns.
struct Errno(libc::c_int);

impl Errno {
    fn location() -> *mut libc::c_int {
        // SAFETY: returns the calling thread's errno slot; no preconditions.
        #[cfg(target_os = "linux")]
        let at = unsafe { libc::__errno_location() };
        // SAFETY: as above.
        #[cfg(target_os = "macos")]
        let at = unsafe { libc::__error() };
        at
    }
    fn save() -> Errno {
        // SAFETY: the slot is valid for the thread's lifetime.
        Errno(unsafe { *Errno::location() })
    }
    fn restore(self) {
        // SAFETY: as above.
        unsafe { *Errno::location() = self.0 };
    }
}

/// Maps an anonymous read-only zero page over `[page, page + len)`; false if that failed.
fn map_zero_page(page: usize, len: usize) -> bool {
    let prot = libc::PROT_READ;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
    // SAFETY (both branches): the page lies inside a read-only map that pora owns and that stays
    // mapped while registered; replacing it with an anonymous read-only page changes only what
    // it reads as.
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    let ok = unsafe { libc::syscall(libc::SYS_mmap, page, len, prot, flags, -1, 0) } != -1;
    #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
    let ok = unsafe { libc::mmap(page as *mut libc::c_void, len, prot, flags, -1, 0) }
        != libc::MAP_FAILED;
    ok
}

/// Patches the faulting page if it belongs to a registered map.
fn contain(addr: usize) -> bool {
    let page_bytes = PAGE_BYTES.load(Ordering::Relaxed);
    for slot in MAPPINGS.iter() {
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
        // Recorded (and the epoch bumped) before the zero page exists, so no reader can copy
        // zeros without seeing a patch outstanding.
        let free = (0..PATCHED_PAGES).find(|&i| {
            slot.patched[i]
                .compare_exchange(0, usize::MAX, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
        });
        match free {
            Some(i) => {
                slot.patched_by[i].store(thread_id(), Ordering::SeqCst);
                slot.patched[i].store(page, Ordering::SeqCst);
                slot.patched_count.fetch_add(1, Ordering::SeqCst);
            }
            None => {
                slot.valid_len
                    .fetch_min((page - start) as u64, Ordering::SeqCst);
            }
        }
        slot.epoch.fetch_add(1, Ordering::SeqCst);
        if !map_zero_page(page, page_bytes) {
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
        Some(Ok(all)) => match WATCHED.iter().position(|&w| w == sig) {
            Some(i) => &all[i],
            None => return reset_to_default(sig),
        },
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    /// One copy that faulted twice on the same page (another thread's heal came between) leaves
    /// two entries of this thread: the read must put both back, or the map stays `Busy` for
    /// every later reader (seen as a shard whose `mmap` reads never recovered).
    #[test]
    fn a_page_patched_twice_by_one_thread_is_put_back_once_for_all() {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let mut file = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..2 * page).map(|i| (i % 251) as u8 + 1).collect();
        file.write_all(&bytes).unwrap();
        // SAFETY: a fresh read-only shared map of the whole file, unmapped at the end.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        let start = map as usize;
        let reg = register(map as *const u8, 2 * page).unwrap();
        // What the handler does for two faults of this thread on page 0.
        assert!(contain(start + 8));
        assert!(contain(start + 8));
        assert_eq!(reg.slot.patched_count.load(Ordering::SeqCst), 2);
        let mut out = [0u8; 32];
        let copy = |dst: &mut [u8; 32]| {
            // SAFETY: inside the map.
            unsafe { std::ptr::copy_nonoverlapping(start as *const u8, dst.as_mut_ptr(), 32) }
        };
        let first = reg.read_stable(start, 32, file.as_raw_fd(), || copy(&mut out));
        assert!(matches!(first, Err(Unstable::Faulted)));
        assert_eq!(
            reg.slot.patched_count.load(Ordering::SeqCst),
            0,
            "both patches put back"
        );
        let again = reg.read_stable(start, 32, file.as_raw_fd(), || copy(&mut out));
        assert!(again.is_ok(), "the map reads again");
        assert_eq!(
            &out[..],
            &bytes[..32],
            "the file's bytes, not the zero page"
        );
        drop(reg);
        // SAFETY: the map made above, no longer registered.
        unsafe { libc::munmap(map, 2 * page) };
    }
}
