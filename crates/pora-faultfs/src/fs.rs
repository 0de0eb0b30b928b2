//! The FUSE file system ([`FaultFs`], served by `fuser` on background threads) and the mount a
//! test holds ([`FaultMount`]): mounting ([`MountOptions`]: how many server threads, whether
//! waiting requests hold them, the kernel's page cache), steering the schedule, counts a test
//! waits on ([`FaultMount::wait_for`]), and an unmount that never waits for a reader (lazy
//! unmount, then the connection aborted through fusectl).
//!
//! A request that must wait (a `delay`, `tail` or `hold` read, or any request while the mount
//! `stall`s or is `freeze`d) either blocks the server thread that took it (`answer_inline`: a
//! server with a small request pool, where a few stuck requests queue every other one behind
//! them) or is parked in one list that a single answering thread serves when its wait ends, so
//! hundreds of stuck reads cost no thread each.

use crate::rules::{pareto_delay, Fault, Rules, Stall};
use fuser::{
    AccessFlags, BackgroundSession, Config, Errno, FileAttr, FileHandle, FileType, Filesystem,
    FopenFlags, Generation, INodeNo, InitFlags, KernelConfig, LockOwner, MountOption, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyXattr, Request, SessionACL,
};
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ROOT: INodeNo = INodeNo::ROOT;
const FILE: INodeNo = INodeNo(2);
/// Attributes are not cached: a vanished disk must be seen at once.
const TTL: Duration = Duration::ZERO;
/// How often the watcher re-reads the schedule, and the longest a waiting request sleeps
/// before it looks again (changes also wake it at once).
const POLL: Duration = Duration::from_millis(10);
/// How often [`FaultMount::wait_for`] looks at the counts.
const WAIT_POLL: Duration = Duration::from_millis(2);
/// How long [`FaultMount::set_rules`] waits for the file system to take its rules: generous,
/// the watcher looks every 10 ms, but a loaded 2-core machine may not run it for a while.
const RULES_TIMEOUT: Duration = Duration::from_secs(20);

/// How the file system is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MountOptions {
    /// Threads reading requests from the kernel (fuser's `n_threads`).
    pub server_threads: usize,
    /// Waiting requests (delayed, held, stalled) wait on the server thread that took them, as
    /// in a server whose workers call a stuck disk: with N threads, N stuck requests queue every
    /// other request of the mount behind them. Otherwise they are parked and answered later by
    /// one answering thread, and the server threads go on serving.
    pub answer_inline: bool,
    /// Opens keep the kernel's page cache (no `FOPEN_DIRECT_IO`, as libfuse's default): reads
    /// go through the cache and read-ahead, a cached page is not asked for again, and (Linux)
    /// an `open` invalidates the cache, waiting for pages still being read. Otherwise every read
    /// reaches the file system (a cache would hide faults after the first read).
    pub page_cache: bool,
    /// The kernel's limit of background requests (read-ahead, asynchronous reads) for this
    /// mount; `None` keeps the kernel's default (12).
    pub max_background: Option<u16>,
}

impl Default for MountOptions {
    /// The fault matrix's server: 4 threads that never wait, no page cache.
    fn default() -> Self {
        MountOptions {
            server_threads: 4,
            answer_inline: false,
            page_cache: false,
            max_background: None,
        }
    }
}

impl MountOptions {
    /// A server as libfuse's defaults make it (and fusepy on it): the multithreaded loop's 10
    /// workers, each stuck in the disk call it serves, and the kernel's page cache on.
    pub fn libfuse_like() -> Self {
        MountOptions {
            server_threads: 10,
            answer_inline: true,
            page_cache: true,
            max_background: None,
        }
    }
}

/// Declares [`Counts`] (the numbers tests read) and `Counters` (the same fields as the atomics
/// the server bumps) with each field named once, and `Counters::snapshot` between them.
macro_rules! counts {
    ($($(#[$doc:meta])* $field:ident),+ $(,)?) => {
        /// What the file system has seen, for tests to assert on and to wait on
        /// ([`FaultMount::wait_for`]). Totals only grow; the `_now` fields are the requests
        /// waiting at this moment.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct Counts {
            $($(#[$doc])* pub $field: u64,)+
            /// Versions of the rules taken so far (1 after the mount read the control file once).
            pub rules_loaded: u64,
        }

        #[derive(Default)]
        struct Counters {
            $($field: AtomicU64,)+
        }

        impl Counters {
            /// The counts now, with `rules_loaded` versions of the rules taken.
            fn snapshot(&self, rules_loaded: u64) -> Counts {
                Counts {
                    $($field: self.$field.load(Ordering::SeqCst),)+
                    rules_loaded,
                }
            }
        }
    };
}

counts! {
    /// Read requests received.
    reads,
    /// Reads failed with EIO by an `eio` rule.
    eio,
    /// Reads answered short by a `short` rule.
    short,
    /// Reads delayed by a `delay` or `tail` rule.
    delayed,
    /// Reads held by a `hold` rule.
    held,
    /// Reads failed because the disk vanished.
    vanished,
    /// Read requests answered (with data or an error).
    answered,
    /// Reads waiting on a `hold` rule right now.
    held_now,
    /// Reads waiting out a `delay` or `tail` right now.
    delayed_now,
    /// Requests of any kind that met a `stall` or `freeze`.
    stalled,
    /// Requests waiting on a `stall` or `freeze` right now.
    stalled_now,
    /// Requests of any kind received (reads, lookups, getattrs, opens, flushes, releases, ...).
    requests,
    /// Open requests received (of the file and of the directory).
    opens,
}

impl Counts {
    /// Requests waiting right now, whatever made them wait.
    pub fn waiting_now(&self) -> u64 {
        self.held_now + self.delayed_now + self.stalled_now
    }
}

/// What a waiting request waits for (every wait also ends when the disk vanishes or the mount
/// is dropped).
#[derive(Clone, Copy, Debug)]
enum Wait {
    /// A fixed time: `delay`, `tail`, `stall MS`.
    Until(Instant),
    /// A `hold` covering these bytes to be removed.
    Hold { offset: u64, len: u64 },
    /// The `freeze` line to be removed.
    Freeze,
}

impl Wait {
    fn over(&self, rules: &Rules, now: Instant) -> bool {
        match *self {
            Wait::Until(t) => now >= t,
            Wait::Hold { offset, len } => !rules.still_held(offset, len),
            Wait::Freeze => !rules.frozen(),
        }
    }

    fn deadline(&self) -> Option<Instant> {
        match *self {
            Wait::Until(t) => Some(t),
            _ => None,
        }
    }
}

/// Which `_now` count a wait is in.
#[derive(Clone, Copy)]
enum Waiting {
    Held,
    Delayed,
    Stalled,
}

/// A request parked until its wait ends; `then` answers it (or goes on serving it).
struct Parked {
    wait: Wait,
    waiting: Waiting,
    then: Box<dyn FnOnce() + Send>,
}

/// The schedule as last read, and the parked requests (under one lock, so a rule change and a
/// new parked request both wake the answering thread through one condition variable).
struct State {
    /// The control file's identity when last read (mtime, ctime, size, inode).
    stamp: Option<(i64, i64, i64, i64, u64, u64)>,
    /// The control file's text when last read (a rewrite within one timestamp tick, same size
    /// and inode, is still seen by the watcher's comparison of the text).
    text: String,
    rules: Rules,
    /// Bumped at every change, so a test can wait until its rules are in force.
    generation: u64,
    parked: Vec<Parked>,
}

struct Shared {
    source: File,
    size: u64,
    name: OsString,
    control: PathBuf,
    mountpoint: PathBuf,
    options: MountOptions,
    state: Mutex<State>,
    changed: Condvar,
    vanished: AtomicBool,
    /// Set by the first thread that detaches the vanished disk's mount.
    detaching: AtomicBool,
    /// Set once a vanished disk's mount is detached and its connection aborted.
    detached: AtomicBool,
    shutting_down: AtomicBool,
    counters: Counters,
    rng: AtomicU64,
    /// The fusectl connection number (the kernel's dev_t of the mount), once mounted.
    connection: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn rules(&self) -> Rules {
        self.lock().rules.clone()
    }

    /// Re-reads the control file if its identity changed, or (`force`, the watcher) if its text
    /// did; a bad file keeps the old rules (and says so, once per text).
    fn reload(&self, force: bool) {
        let stamp = std::fs::metadata(&self.control).ok().map(|m| {
            (
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
                m.len(),
                m.ino(),
            )
        });
        let mut state = self.lock();
        let restamped = stamp != state.stamp;
        if !restamped && !force {
            return;
        }
        let text = std::fs::read_to_string(&self.control).unwrap_or_default();
        state.stamp = stamp;
        // A new identity is a new version even with the same text: `set_rules` of the rules
        // already in force then returns at once instead of waiting for a change.
        if !restamped && text == state.text {
            return;
        }
        let same_text = text == state.text;
        match Rules::parse(&text) {
            Ok(rules) => {
                if rules.vanish {
                    // Before anyone waiting sees the new rules: a hold that the `vanish` file
                    // no longer has must release its read with ENXIO, not with data.
                    self.vanished.store(true, Ordering::SeqCst);
                }
                state.rules = rules;
                state.generation += 1;
                self.changed.notify_all();
            }
            Err(e) if !same_text => eprintln!(
                "pora-faultfs: {}: {e}; keeping the previous rules",
                self.control.display()
            ),
            Err(_) => {}
        }
        state.text = text;
    }

    /// A uniform draw in [0, 1) (xorshift64*; tests need variety, not quality).
    fn draw(&self) -> f64 {
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.store(x, Ordering::Relaxed);
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn gone(&self) -> bool {
        self.vanished.load(Ordering::SeqCst) || self.shutting_down.load(Ordering::SeqCst)
    }

    /// The unplugged disk: reads fail from now on, waiting requests are answered, the mount is
    /// detached and the connection aborted (open descriptors then fail with ENOTCONN, and a
    /// request still in the server's hands fails with ECONNABORTED).
    fn vanish(&self) {
        self.vanished.store(true, Ordering::SeqCst);
        self.changed.notify_all();
        if self.detaching.swap(true, Ordering::SeqCst) {
            return;
        }
        detach(&self.mountpoint, self.connection.load(Ordering::SeqCst));
        self.detached.store(true, Ordering::SeqCst);
    }

    fn now_counter(&self, waiting: Waiting) -> &AtomicU64 {
        match waiting {
            Waiting::Held => &self.counters.held_now,
            Waiting::Delayed => &self.counters.delayed_now,
            Waiting::Stalled => &self.counters.stalled_now,
        }
    }

    /// Runs `then` once `wait` is over: on this (server) thread after blocking it, with
    /// `answer_inline`; otherwise parked for the answering thread, this thread going back to
    /// the kernel for the next request.
    fn wait_then(&self, wait: Wait, waiting: Waiting, then: impl FnOnce() + Send + 'static) {
        let now = self.now_counter(waiting);
        now.fetch_add(1, Ordering::SeqCst);
        if self.options.answer_inline {
            let mut state = self.lock();
            loop {
                let at = Instant::now();
                if self.gone() || wait.over(&state.rules, at) {
                    break;
                }
                let nap = wait.deadline().map_or(POLL, |d| (d - at).min(POLL));
                state = self
                    .changed
                    .wait_timeout(state, nap)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            drop(state);
            now.fetch_sub(1, Ordering::SeqCst);
            then();
        } else {
            let mut state = self.lock();
            if self.shutting_down.load(Ordering::SeqCst) {
                // The answering thread may be gone: answer here (the wait ends on shutdown).
                drop(state);
                now.fetch_sub(1, Ordering::SeqCst);
                return then();
            }
            state.parked.push(Parked {
                wait,
                waiting,
                then: Box::new(then),
            });
            self.changed.notify_all();
        }
    }

    /// The answering thread: runs each parked request whose wait is over, until the mount is
    /// dropped and nothing is parked.
    fn answer_parked(&self) {
        let mut state = self.lock();
        loop {
            let now = Instant::now();
            let gone = self.gone();
            let (ready, waiting): (Vec<Parked>, Vec<Parked>) = std::mem::take(&mut state.parked)
                .into_iter()
                .partition(|p| gone || p.wait.over(&state.rules, now));
            state.parked = waiting;
            if !ready.is_empty() {
                drop(state);
                for p in ready {
                    self.now_counter(p.waiting).fetch_sub(1, Ordering::SeqCst);
                    (p.then)();
                }
                state = self.lock();
                continue;
            }
            if self.shutting_down.load(Ordering::SeqCst) && state.parked.is_empty() {
                return;
            }
            let nap = state
                .parked
                .iter()
                .filter_map(|p| p.wait.deadline())
                .min()
                .map_or(POLL, |d| d.saturating_duration_since(now).min(POLL));
            state = self
                .changed
                .wait_timeout(state, nap)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Serves one request: counts it, makes it wait out a `stall`/`freeze` in force, then runs
    /// `serve` (on the thread that ends the wait).
    fn request(self: &Arc<Self>, serve: impl FnOnce(&Arc<Shared>) + Send + 'static) {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        // A changed control file is seen by the next request, not only by the watcher's poll.
        self.reload(false);
        let stall = {
            let state = self.lock();
            if state.rules.vanish || self.gone() {
                None
            } else {
                state.rules.stall
            }
        };
        let wait = match stall {
            None => return serve(self),
            Some(Stall::For(d)) => Wait::Until(Instant::now() + d),
            Some(Stall::Freeze) => Wait::Freeze,
        };
        self.counters.stalled.fetch_add(1, Ordering::Relaxed);
        let shared = self.clone();
        self.wait_then(wait, Waiting::Stalled, move || serve(&shared));
    }

    fn attr(&self, ino: INodeNo) -> FileAttr {
        let (kind, perm, size, nlink) = if ino == ROOT {
            (FileType::Directory, 0o555, 0, 2)
        } else {
            (FileType::RegularFile, 0o444, self.size, 1)
        };
        FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        }
    }

    /// Answers a read with an error.
    fn fail(&self, reply: ReplyData, errno: Errno) {
        self.counters.answered.fetch_add(1, Ordering::Relaxed);
        reply.error(errno);
    }

    /// Reads the real bytes and answers, halving them for a short read.
    fn answer(&self, offset: u64, size: u32, short: bool, reply: ReplyData) {
        if self.gone() {
            self.counters.vanished.fetch_add(1, Ordering::Relaxed);
            return self.fail(reply, Errno::ENXIO);
        }
        let len = (size as u64).min(self.size.saturating_sub(offset)) as usize;
        let mut buf = vec![0u8; len];
        if let Err(e) = self.source.read_exact_at(&mut buf, offset) {
            return self.fail(
                reply,
                Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)),
            );
        }
        if short {
            buf.truncate(len / 2);
        }
        self.counters.answered.fetch_add(1, Ordering::Relaxed);
        reply.data(&buf);
    }

    /// A read after any stall: the first matching range rule decides.
    fn read(self: &Arc<Self>, offset: u64, size: u32, reply: ReplyData) {
        let rules = self.rules();
        if rules.vanish {
            self.vanish();
        }
        if self.gone() {
            self.counters.vanished.fetch_add(1, Ordering::Relaxed);
            return self.fail(reply, Errno::ENXIO);
        }
        let draw = self.draw();
        let fault = rules.matching(offset, size as u64, draw).map(|r| r.fault);
        let (wait, waiting) = match fault {
            None => return self.answer(offset, size, false, reply),
            Some(Fault::Eio) => {
                self.counters.eio.fetch_add(1, Ordering::Relaxed);
                return self.fail(reply, Errno::EIO);
            }
            Some(Fault::Short) => {
                self.counters.short.fetch_add(1, Ordering::Relaxed);
                return self.answer(offset, size, true, reply);
            }
            Some(Fault::Delay(d)) => (Wait::Until(Instant::now() + d), Waiting::Delayed),
            Some(Fault::Tail(median)) => (
                Wait::Until(Instant::now() + pareto_delay(median, self.draw())),
                Waiting::Delayed,
            ),
            Some(Fault::Hold) => (
                Wait::Hold {
                    offset,
                    len: size as u64,
                },
                Waiting::Held,
            ),
        };
        match waiting {
            Waiting::Held => &self.counters.held,
            _ => &self.counters.delayed,
        }
        .fetch_add(1, Ordering::Relaxed);
        let shared = self.clone();
        self.wait_then(wait, waiting, move || {
            shared.answer(offset, size, false, reply)
        });
    }
}

struct FaultFs {
    shared: Arc<Shared>,
}

impl Filesystem for FaultFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // mmap of a direct-io file goes through the page cache (Linux 6.6+); older kernels
        // refuse mmap, which the tests report as a skip for that method.
        let _ = config.add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
        if let Some(n) = self.shared.options.max_background {
            // The kernel clamps it to its own limit; what it took is what /sys shows.
            let _ = config.set_max_background(n);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let name = name.to_os_string();
        self.shared.request(move |sh| {
            if sh.gone() {
                return reply.error(Errno::ENXIO);
            }
            if parent == ROOT && name == sh.name {
                reply.entry(&TTL, &sh.attr(FILE), Generation(0));
            } else {
                reply.error(Errno::ENOENT);
            }
        });
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.shared.request(move |sh| {
            if sh.gone() && ino != ROOT {
                return reply.error(Errno::ENXIO);
            }
            match ino {
                ROOT | FILE => reply.attr(&TTL, &sh.attr(ino)),
                _ => reply.error(Errno::ENOENT),
            }
        });
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.shared.counters.opens.fetch_add(1, Ordering::Relaxed);
        self.shared.request(move |sh| {
            if sh.gone() {
                return reply.error(Errno::ENXIO);
            }
            if ino != FILE {
                return reply.error(Errno::EISDIR);
            }
            if flags.0 & libc::O_ACCMODE != libc::O_RDONLY {
                return reply.error(Errno::EROFS);
            }
            let cache = if sh.options.page_cache {
                FopenFlags::empty()
            } else {
                FopenFlags::FOPEN_DIRECT_IO
            };
            reply.opened(FileHandle(0), cache);
        });
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.shared.counters.reads.fetch_add(1, Ordering::Relaxed);
        if ino != FILE {
            self.shared
                .counters
                .requests
                .fetch_add(1, Ordering::Relaxed);
            return self.shared.fail(reply, Errno::EISDIR);
        }
        self.shared.request(move |sh| sh.read(offset, size, reply));
    }

    // Answered (after any stall) so that the kernel goes on sending a FLUSH at every close, as
    // to a libfuse server: a close on a stalled mount waits like a real one.
    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        self.shared.request(move |_| reply.ok());
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.shared.request(move |_| reply.ok());
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.shared.counters.opens.fetch_add(1, Ordering::Relaxed);
        self.shared
            .request(move |_| reply.opened(FileHandle(0), FopenFlags::empty()));
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        self.shared.request(move |sh| {
            if ino != ROOT {
                return reply.error(Errno::ENOTDIR);
            }
            let entries = [
                (ROOT, FileType::Directory, OsStr::new(".")),
                (ROOT, FileType::Directory, OsStr::new("..")),
                (FILE, FileType::RegularFile, sh.name.as_os_str()),
            ];
            for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
                if reply.add(*ino, (i + 1) as u64, *kind, name) {
                    break;
                }
            }
            reply.ok();
        });
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.shared.request(move |_| reply.ok());
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        self.shared
            .request(move |_| reply.statfs(0, 0, 0, 0, 0, 512, 255, 0));
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        self.shared.request(move |_| reply.ok());
    }

    // No extended attributes; ENOSYS (after any stall) makes the kernel stop asking.
    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        self.shared.request(move |_| reply.error(Errno::ENOSYS));
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        self.shared.request(move |_| reply.error(Errno::ENOSYS));
    }
}

/// Lazily unmounts `mountpoint` and aborts the FUSE connection `connection` (0: unknown).
fn detach(mountpoint: &Path, connection: u64) {
    if let Ok(c) = CString::new(mountpoint.as_os_str().as_bytes()) {
        // SAFETY: a valid NUL-terminated path; MNT_DETACH never waits for users of the mount.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
    if connection != 0 {
        let _ = std::fs::write(connection_dir(connection).join("abort"), "1");
    }
}

/// The connection's directory in fusectl.
fn connection_dir(connection: u64) -> PathBuf {
    Path::new("/sys/fs/fuse/connections").join(connection.to_string())
}

/// Why FUSE cannot be used here, or `None` if it can (root, `/dev/fuse` openable).
pub fn fuse_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (the fault file system mounts with mount(2))".into());
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
    {
        Ok(_) => None,
        Err(e) => Some(format!("/dev/fuse cannot be opened: {e}")),
    }
}

/// A mounted fault file system; dropping it releases waiting requests and unmounts without
/// waiting for readers.
pub struct FaultMount {
    shared: Arc<Shared>,
    file: PathBuf,
    session: Option<BackgroundSession>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl FaultMount {
    /// Mounts a pass-through of `source` at `mountpoint` (an existing empty directory), the
    /// file appearing under its own name, steered by `control` (created empty if missing),
    /// served as [`MountOptions::default`] says.
    pub fn mount(source: &Path, mountpoint: &Path, control: &Path) -> io::Result<FaultMount> {
        Self::mount_with(source, mountpoint, control, MountOptions::default())
    }

    /// [`FaultMount::mount`], served as `options` say.
    pub fn mount_with(
        source: &Path,
        mountpoint: &Path,
        control: &Path,
        options: MountOptions,
    ) -> io::Result<FaultMount> {
        if options.server_threads == 0 {
            return Err(io::Error::other("server_threads must be at least 1"));
        }
        let file = File::open(source)?;
        let size = file.metadata()?.len();
        let name = source
            .file_name()
            .ok_or_else(|| io::Error::other(format!("{}: no file name", source.display())))?
            .to_os_string();
        if !control.exists() {
            std::fs::write(control, "")?;
        }
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1;
        let shared = Arc::new(Shared {
            source: file,
            size,
            name: name.clone(),
            control: control.to_path_buf(),
            mountpoint: mountpoint.to_path_buf(),
            options,
            state: Mutex::new(State {
                stamp: None,
                text: String::new(),
                rules: Rules::default(),
                generation: 0,
                parked: Vec::new(),
            }),
            changed: Condvar::new(),
            vanished: AtomicBool::new(false),
            detaching: AtomicBool::new(false),
            detached: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
            counters: Counters::default(),
            rng: AtomicU64::new(seed),
            connection: AtomicU64::new(0),
        });
        shared.reload(true);
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::RO,
            MountOption::FSName("pora-faultfs".into()),
            MountOption::Subtype("pora-faultfs".into()),
            MountOption::CUSTOM("allow_other".into()),
        ];
        config.acl = SessionACL::All;
        config.n_threads = Some(options.server_threads);
        // Started before the mount: parked requests are answered from the first request on.
        std::thread::Builder::new()
            .name("faultfs-answer".into())
            .spawn({
                let shared = shared.clone();
                move || shared.answer_parked()
            })?;
        let session = match fuser::spawn_mount(
            FaultFs {
                shared: shared.clone(),
            },
            mountpoint,
            &config,
        ) {
            Ok(s) => s,
            Err(e) => {
                shared.shutting_down.store(true, Ordering::SeqCst);
                shared.changed.notify_all();
                return Err(e);
            }
        };
        ensure_fusectl();
        let dev = std::fs::metadata(mountpoint)?.dev();
        // fusectl names a connection by the kernel's dev_t (major << 20 | minor), which differs
        // from stat's encoding once the minor passes 255.
        let kernel_dev = ((libc::major(dev) as u64) << 20) | libc::minor(dev) as u64;
        shared.connection.store(kernel_dev, Ordering::SeqCst);
        let watcher = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("faultfs-rules".into())
                .spawn(move || {
                    while !shared.shutting_down.load(Ordering::SeqCst) {
                        shared.reload(true);
                        if shared.rules().vanish {
                            shared.vanish();
                        }
                        std::thread::sleep(POLL);
                    }
                })?
        };
        Ok(FaultMount {
            file: mountpoint.join(name),
            shared,
            session: Some(session),
            watcher: Some(watcher),
        })
    }

    /// The pass-through file inside the mount.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// How the file system is served.
    pub fn options(&self) -> MountOptions {
        self.shared.options
    }

    /// Replaces the schedule (written beside the control file, renamed over it) and waits until
    /// the file system uses it: a request arriving after this returns meets the new rules, and
    /// held or frozen requests the new rules release are on their way. A schedule that does not
    /// parse is refused here.
    pub fn set_rules(&self, text: &str) -> io::Result<()> {
        Rules::parse(text).map_err(io::Error::other)?;
        let before = self.shared.lock().generation;
        let tmp = self.shared.control.with_extension("new");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.shared.control)?;
        let until = Instant::now() + RULES_TIMEOUT;
        while self.shared.lock().generation == before {
            if Instant::now() > until {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the fault file system did not pick up its rules within {RULES_TIMEOUT:?}"
                    ),
                ));
            }
            std::thread::sleep(WAIT_POLL);
        }
        Ok(())
    }

    /// Unplugs the disk now (as a `vanish` rule would); when this returns, the mount is
    /// detached and its connection aborted.
    pub fn vanish(&self) {
        self.shared.vanish();
        // Another thread (the watcher, a read) may be detaching it right now.
        while !self.shared.detached.load(Ordering::SeqCst) {
            std::thread::sleep(WAIT_POLL);
        }
    }

    /// Whether the disk was unplugged and its mount is gone (detached, connection aborted).
    pub fn vanished(&self) -> bool {
        self.shared.detached.load(Ordering::SeqCst)
    }

    /// What the file system has seen so far, and what waits right now.
    pub fn counts(&self) -> Counts {
        let rules_loaded = self.shared.lock().generation;
        self.shared.counters.snapshot(rules_loaded)
    }

    /// Waits until `done` holds for the counts (looking every 2 ms), returning them; after
    /// `timeout` fails with `TimedOut`, naming the counts last seen. Tests wait with this for
    /// what they need ("the read is held", "the open arrived") instead of sleeping.
    pub fn wait_for(
        &self,
        done: impl Fn(&Counts) -> bool,
        timeout: Duration,
    ) -> io::Result<Counts> {
        let until = Instant::now() + timeout;
        loop {
            let c = self.counts();
            if done(&c) {
                return Ok(c);
            }
            if Instant::now() >= until {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("pora-faultfs: condition not met within {timeout:?}; counts: {c:?}"),
                ));
            }
            std::thread::sleep(WAIT_POLL);
        }
    }

    /// Requests the kernel holds for this mount right now: queued for the server or being
    /// served (fusectl's `waiting`). Unlike [`Counts`], this sees requests no server thread has
    /// taken yet, e.g. those queued behind server threads that all wait.
    pub fn kernel_waiting(&self) -> io::Result<u64> {
        let path = connection_dir(self.shared.connection.load(Ordering::SeqCst)).join("waiting");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        text.trim()
            .parse()
            .map_err(|_| io::Error::other(format!("{}: {text:?}", path.display())))
    }
}

impl Drop for FaultMount {
    fn drop(&mut self) {
        self.shared.shutting_down.store(true, Ordering::SeqCst);
        // Waiting requests are answered (ENXIO) by whoever holds them; the answering thread
        // ends once nothing is parked.
        self.shared.changed.notify_all();
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
        detach(
            &self.shared.mountpoint,
            self.shared.connection.load(Ordering::SeqCst),
        );
        // The session's thread ends with the aborted connection; dropping it does not wait.
        drop(self.session.take());
    }
}

/// Mounts fusectl (where connections are aborted) if it is not mounted yet; best effort.
fn ensure_fusectl() {
    let dir = Path::new("/sys/fs/fuse/connections");
    let mounted = std::fs::read_to_string("/proc/self/mounts")
        .map(|m| m.lines().any(|l| l.split(' ').nth(2) == Some("fusectl")))
        .unwrap_or(false);
    if mounted || !dir.exists() {
        return;
    }
    let (src, target, kind) = (
        CString::new("fusectl").unwrap_or_default(),
        CString::new("/sys/fs/fuse/connections").unwrap_or_default(),
        CString::new("fusectl").unwrap_or_default(),
    );
    // SAFETY: valid NUL-terminated strings; no data argument.
    unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            kind.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
}
