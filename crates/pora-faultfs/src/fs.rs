//! The FUSE file system ([`FaultFs`], served by `fuser` on background threads) and the mount a
//! test holds ([`FaultMount`]): mounting, steering the schedule, and an unmount that never waits
//! for a reader (lazy unmount, then the connection aborted through fusectl).

use crate::rules::{pareto_delay, Fault, Rules};
use fuser::{
    BackgroundSession, Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags,
    Generation, INodeNo, InitFlags, KernelConfig, LockOwner, MountOption, OpenFlags, ReplyAttr,
    ReplyData, ReplyDirectory, ReplyEntry, ReplyOpen, Request, SessionACL,
};
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ROOT: INodeNo = INodeNo::ROOT;
const FILE: INodeNo = INodeNo(2);
/// Attributes are not cached: a vanished disk must be seen at once.
const TTL: Duration = Duration::ZERO;
/// How often the watcher re-reads the schedule (and wakes held reads).
const POLL: Duration = Duration::from_millis(10);
/// FUSE server threads: delayed and held reads are answered from their own threads, so a few
/// suffice to keep the other reads flowing.
const SERVER_THREADS: usize = 4;

/// Reads answered so far, by outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub reads: u64,
    pub eio: u64,
    pub short: u64,
    pub delayed: u64,
    pub held: u64,
    pub vanished: u64,
}

#[derive(Default)]
struct Counters {
    reads: AtomicU64,
    eio: AtomicU64,
    short: AtomicU64,
    delayed: AtomicU64,
    held: AtomicU64,
    vanished: AtomicU64,
}

/// The schedule as last read, with the control file's identity when it was read.
struct Schedule {
    stamp: Option<(i64, i64, u64, u64)>,
    rules: Rules,
    /// Bumped at every change, so a test can wait until its rules are in force.
    generation: u64,
}

struct Shared {
    source: File,
    size: u64,
    name: OsString,
    control: PathBuf,
    mountpoint: PathBuf,
    schedule: Mutex<Schedule>,
    changed: Condvar,
    vanished: AtomicBool,
    shutting_down: AtomicBool,
    counters: Counters,
    rng: AtomicU64,
    /// The fusectl connection number (the mount's st_dev), once mounted.
    connection: AtomicU64,
}

impl Shared {
    fn rules(&self) -> Rules {
        self.schedule
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .rules
            .clone()
    }

    /// Re-reads the control file if it changed; a bad file keeps the old rules (and says so).
    fn reload(&self) {
        let stamp = std::fs::metadata(&self.control)
            .ok()
            .map(|m| (m.mtime(), m.mtime_nsec(), m.len(), m.ino()));
        let mut schedule = self.schedule.lock().unwrap_or_else(PoisonError::into_inner);
        if stamp == schedule.stamp {
            return;
        }
        let text = std::fs::read_to_string(&self.control).unwrap_or_default();
        match Rules::parse(&text) {
            Ok(rules) => {
                schedule.rules = rules;
                schedule.stamp = stamp;
                schedule.generation += 1;
                self.changed.notify_all();
            }
            Err(e) => eprintln!(
                "pora-faultfs: {}: {e}; keeping the previous rules",
                self.control.display()
            ),
        }
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

    /// The unplugged disk: reads fail from now on, held reads are answered, the mount is
    /// detached and the connection aborted (open descriptors then fail with ENOTCONN).
    fn vanish(&self) {
        if self.vanished.swap(true, Ordering::SeqCst) {
            return;
        }
        self.changed.notify_all();
        detach(&self.mountpoint, self.connection.load(Ordering::SeqCst));
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

    /// Reads the real bytes and answers, halving them for a short read.
    fn answer(&self, offset: u64, size: u32, short: bool, reply: ReplyData) {
        if self.gone() {
            self.counters.vanished.fetch_add(1, Ordering::Relaxed);
            return reply.error(Errno::ENXIO);
        }
        let len = (size as u64).min(self.size.saturating_sub(offset)) as usize;
        let mut buf = vec![0u8; len];
        if let Err(e) = self.source.read_exact_at(&mut buf, offset) {
            return reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)));
        }
        if short {
            buf.truncate(len / 2);
        }
        reply.data(&buf);
    }

    /// Waits while a `hold` rule covers the read (or until the disk vanishes).
    fn wait_released(&self, offset: u64, size: u32) {
        let mut schedule = self.schedule.lock().unwrap_or_else(PoisonError::into_inner);
        while !self.gone() && schedule.rules.still_held(offset, size as u64) {
            schedule = self
                .changed
                .wait_timeout(schedule, POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
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
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if self.shared.gone() {
            return reply.error(Errno::ENXIO);
        }
        if parent == ROOT && name == self.shared.name.as_os_str() {
            reply.entry(&TTL, &self.shared.attr(FILE), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if self.shared.gone() && ino != ROOT {
            return reply.error(Errno::ENXIO);
        }
        match ino {
            ROOT | FILE => reply.attr(&TTL, &self.shared.attr(ino)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if self.shared.gone() {
            return reply.error(Errno::ENXIO);
        }
        if ino != FILE {
            return reply.error(Errno::EISDIR);
        }
        if flags.0 & libc::O_ACCMODE != libc::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
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
        let shared = &self.shared;
        shared.counters.reads.fetch_add(1, Ordering::Relaxed);
        if ino != FILE {
            return reply.error(Errno::EISDIR);
        }
        shared.reload();
        let rules = shared.rules();
        if rules.vanish {
            shared.vanish();
        }
        if shared.gone() {
            shared.counters.vanished.fetch_add(1, Ordering::Relaxed);
            return reply.error(Errno::ENXIO);
        }
        let draw = shared.draw();
        let fault = rules.matching(offset, size as u64, draw).map(|r| r.fault);
        match fault {
            None => shared.answer(offset, size, false, reply),
            Some(Fault::Eio) => {
                shared.counters.eio.fetch_add(1, Ordering::Relaxed);
                reply.error(Errno::EIO)
            }
            Some(Fault::Short) => {
                shared.counters.short.fetch_add(1, Ordering::Relaxed);
                shared.answer(offset, size, true, reply)
            }
            Some(Fault::Delay(_) | Fault::Tail(_) | Fault::Hold) => {
                let wait = match fault {
                    Some(Fault::Delay(d)) => Some(d),
                    Some(Fault::Tail(median)) => Some(pareto_delay(median, shared.draw())),
                    _ => None,
                };
                let counter = if wait.is_some() {
                    &shared.counters.delayed
                } else {
                    &shared.counters.held
                };
                counter.fetch_add(1, Ordering::Relaxed);
                // Answered from its own thread, so the server goes on answering other reads.
                let shared = shared.clone();
                std::thread::spawn(move || {
                    match wait {
                        Some(d) => sleep_unless_gone(&shared, d),
                        None => shared.wait_released(offset, size),
                    }
                    shared.answer(offset, size, false, reply);
                });
            }
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (ROOT, FileType::Directory, OsStr::new(".")),
            (ROOT, FileType::Directory, OsStr::new("..")),
            (FILE, FileType::RegularFile, self.shared.name.as_os_str()),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

/// Sleeps `d`, waking early if the disk vanishes or the mount is shutting down.
fn sleep_unless_gone(shared: &Shared, d: Duration) {
    let until = Instant::now() + d;
    while !shared.gone() {
        let now = Instant::now();
        if now >= until {
            return;
        }
        std::thread::sleep((until - now).min(POLL));
    }
}

/// Lazily unmounts `mountpoint` and aborts the FUSE connection `connection` (0: unknown).
fn detach(mountpoint: &Path, connection: u64) {
    if let Ok(c) = CString::new(mountpoint.as_os_str().as_bytes()) {
        // SAFETY: a valid NUL-terminated path; MNT_DETACH never waits for users of the mount.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
    if connection != 0 {
        let abort = Path::new("/sys/fs/fuse/connections")
            .join(connection.to_string())
            .join("abort");
        let _ = std::fs::write(abort, "1");
    }
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

/// A mounted fault file system; dropping it releases held reads and unmounts without waiting
/// for readers.
pub struct FaultMount {
    shared: Arc<Shared>,
    file: PathBuf,
    session: Option<BackgroundSession>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl FaultMount {
    /// Mounts a pass-through of `source` at `mountpoint` (an existing empty directory), the
    /// file appearing under its own name, steered by `control` (created empty if missing).
    pub fn mount(source: &Path, mountpoint: &Path, control: &Path) -> io::Result<FaultMount> {
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
            schedule: Mutex::new(Schedule {
                stamp: None,
                rules: Rules::default(),
                generation: 0,
            }),
            changed: Condvar::new(),
            vanished: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
            counters: Counters::default(),
            rng: AtomicU64::new(seed),
            connection: AtomicU64::new(0),
        });
        shared.reload();
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::RO,
            MountOption::FSName("pora-faultfs".into()),
            MountOption::Subtype("pora-faultfs".into()),
            MountOption::CUSTOM("allow_other".into()),
        ];
        config.acl = SessionACL::All;
        config.n_threads = Some(SERVER_THREADS);
        let session = fuser::spawn_mount(
            FaultFs {
                shared: shared.clone(),
            },
            mountpoint,
            &config,
        )?;
        ensure_fusectl();
        let dev = std::fs::metadata(mountpoint)?.dev();
        shared.connection.store(dev, Ordering::SeqCst);
        let watcher = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                while !shared.shutting_down.load(Ordering::SeqCst) {
                    shared.reload();
                    if shared.rules().vanish {
                        shared.vanish();
                    }
                    std::thread::sleep(POLL);
                }
            })
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

    /// Replaces the schedule (written beside the control file, renamed over it) and waits until
    /// the file system uses it. A schedule that does not parse is refused here.
    pub fn set_rules(&self, text: &str) -> io::Result<()> {
        Rules::parse(text).map_err(io::Error::other)?;
        let before = self.generation();
        let tmp = self.shared.control.with_extension("new");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.shared.control)?;
        let until = Instant::now() + Duration::from_secs(5);
        while self.generation() == before {
            if Instant::now() > until {
                return Err(io::Error::other(
                    "the fault file system did not pick up its rules",
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }

    fn generation(&self) -> u64 {
        self.shared
            .schedule
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .generation
    }

    /// Unplugs the disk now (as a `vanish` rule would).
    pub fn vanish(&self) {
        self.shared.vanish();
    }

    /// Whether the disk was unplugged.
    pub fn vanished(&self) -> bool {
        self.shared.vanished.load(Ordering::SeqCst)
    }

    /// Reads answered so far, by outcome.
    pub fn counts(&self) -> Counts {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Counts {
            reads: get(&c.reads),
            eio: get(&c.eio),
            short: get(&c.short),
            delayed: get(&c.delayed),
            held: get(&c.held),
            vanished: get(&c.vanished),
        }
    }
}

impl Drop for FaultMount {
    fn drop(&mut self) {
        self.shared.shutting_down.store(true, Ordering::SeqCst);
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
