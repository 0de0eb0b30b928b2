//! `pora-faultfs SOURCE MOUNTPOINT CONTROL`: mounts the fault file system by hand (for
//! experiments and other languages' tests) until SIGINT/SIGTERM or a `vanish` rule; the rules
//! are those of `pora_faultfs::rules`, re-read from CONTROL whenever it changes.

#[cfg(target_os = "linux")]
fn main() {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, Ordering};
    static STOP: AtomicBool = AtomicBool::new(false);
    extern "C" fn on_signal(_: libc::c_int) {
        STOP.store(true, Ordering::SeqCst);
    }
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [source, mountpoint, control] = args.as_slice() else {
        eprintln!("usage: pora-faultfs SOURCE MOUNTPOINT CONTROL");
        std::process::exit(2);
    };
    if let Some(why) = pora_faultfs::fuse_unavailable() {
        eprintln!("pora-faultfs: {why}");
        std::process::exit(1);
    }
    let mount = match pora_faultfs::FaultMount::mount(source, mountpoint, control) {
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
