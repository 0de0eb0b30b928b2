//! The one Ctrl-C / SIGTERM handler of the `pora` binary, used by `mine`, `bench`, `tune` and
//! `serve`: the first signal sets the stop flag those commands poll (they finish the piece of
//! work running, print partial results and return [`interrupted`]'s exit status; `serve` also
//! answers the running slot and shuts its listener down); a second signal exits at once, for a
//! user who does not want to wait.

use crate::common::EXIT_INTERRUPTED;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the first Ctrl-C or SIGTERM.
static STOP: AtomicBool = AtomicBool::new(false);

/// Installs the handler for `command` (named in the warning printed when the OS refuses it) and
/// returns the stop flag; a second signal exits with 130.
pub fn install(command: &str) -> &'static AtomicBool {
    install_with(command, EXIT_INTERRUPTED, || {})
}

/// [`install`], also running `on_stop` at the first signal; a second signal exits with
/// `second_exit`.
pub fn install_with(
    command: &str,
    second_exit: i32,
    on_stop: impl Fn() + Send + 'static,
) -> &'static AtomicBool {
    let installed = ctrlc::set_handler(move || {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(second_exit);
        }
        on_stop();
    });
    if let Err(e) = installed {
        eprintln!(
            "pora {command}: warning: cannot catch Ctrl-C ({e}); an interrupt will lose the partial results"
        );
    }
    &STOP
}

/// Whether a stop was asked for.
pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The exit status of a command stopped by a signal after printing its partial results.
pub fn interrupted() -> ExitCode {
    ExitCode::from(EXIT_INTERRUPTED as u8)
}
