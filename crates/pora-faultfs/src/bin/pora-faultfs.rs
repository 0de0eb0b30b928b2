//! `pora-faultfs [--threads N] [--inline] [--page-cache] [--max-background N] [--libfuse]
//! SOURCE MOUNTPOINT CONTROL`: mounts the fault file system by hand (for experiments and other
//! languages' tests) until SIGINT/SIGTERM or a `vanish` rule; the rules are those of
//! `pora_faultfs::rules`, re-read from CONTROL whenever it changes. The options are those of
//! `pora_faultfs::MountOptions` (`--libfuse`: libfuse's defaults, 10 threads waiting inline and
//! the page cache on), so a script can stand up the same server as a test.

#[cfg(target_os = "linux")]
fn main() {
    use pora_faultfs::MountOptions;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, Ordering};
    static STOP: AtomicBool = AtomicBool::new(false);
    extern "C" fn on_signal(_: libc::c_int) {
        STOP.store(true, Ordering::SeqCst);
    }
    const USAGE: &str = "usage: pora-faultfs [--threads N] [--inline] [--page-cache] [--max-background N] [--libfuse] SOURCE MOUNTPOINT CONTROL";
    let fail = |why: String| -> ! {
        eprintln!("pora-faultfs: {why}\n{USAGE}");
        std::process::exit(2);
    };
    let mut options = MountOptions::default();
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> u64 {
            args.next()
                .and_then(|v| v.to_str().and_then(|v| v.parse().ok()))
                .unwrap_or_else(|| fail(format!("{name} needs a number")))
        };
        match arg.to_str() {
            Some("--threads") => options.server_threads = number("--threads") as usize,
            Some("--max-background") => {
                options.max_background =
                    Some(number("--max-background").min(u16::MAX as u64) as u16)
            }
            Some("--inline") => options.answer_inline = true,
            Some("--page-cache") => options.page_cache = true,
            Some("--libfuse") => options = MountOptions::libfuse_like(),
            Some(flag) if flag.starts_with("--") => fail(format!("unknown option {flag}")),
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    let [source, mountpoint, control] = paths.as_slice() else {
        fail(format!("{} paths given, 3 wanted", paths.len()));
    };
    if let Some(why) = pora_faultfs::fuse_unavailable() {
        eprintln!("pora-faultfs: {why}");
        std::process::exit(1);
    }
    let mount = match pora_faultfs::FaultMount::mount_with(source, mountpoint, control, options) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("pora-faultfs: mounting {}: {e}", mountpoint.display());
            std::process::exit(1);
        }
    };
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    println!("{}", mount.path().display());
    // Polled, not waited on: a signal handler can only set a flag.
    while !STOP.load(Ordering::SeqCst) && !mount.vanished() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    eprintln!("pora-faultfs: {:?}", mount.counts());
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("pora-faultfs: Linux only");
    std::process::exit(1);
}
