//! The wrapper every exported function runs in: it catches panics (turning them into
//! `PORA_STATUS_PANIC` with the formatted message and location), and writes either the result or
//! the error message into the caller's `out` buffer.
//!
//! Rust's default panic hook prints to stderr, which an embedding program does not want. A hook
//! is installed once that stays silent while the panicking thread is inside a pora call (the
//! message is returned to the caller instead) and hands every other panic to the hook that was
//! there before, so the host's own panics print exactly as they did.

use crate::buf::PoraBuf;
use crate::failure::Outcome;
use crate::PoraStatus;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Depth of pora calls on this thread (a call may run inside another in tests).
    static INSIDE: Cell<u32> = const { Cell::new(0) };
    /// Where the last silenced panic happened, for the message.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if INSIDE.with(Cell::get) > 0 {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()));
                LOCATION.with(|slot| *slot.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `body` with panics caught; returns its status and writes its result or message to `out`.
/// A null `out` is refused before `body` runs.
///
/// # Safety
/// `out` must be null or point to a writable `PoraBuf`.
pub(crate) unsafe fn call(out: *mut PoraBuf, body: impl FnOnce() -> Outcome) -> PoraStatus {
    if out.is_null() {
        return PoraStatus::InvalidArgument;
    }
    // Whatever the caller left there is not ours to free.
    std::ptr::write(out, PoraBuf::EMPTY);
    let (status, bytes) = match catch(body) {
        Ok(Ok(bytes)) => (PoraStatus::Ok, bytes),
        Ok(Err(f)) => (f.status, f.message.into_bytes()),
        Err(message) => (PoraStatus::Panic, message.into_bytes()),
    };
    // Allocation of the message itself could only fail by aborting; nothing else can panic here.
    std::ptr::write(out, PoraBuf::from_vec(bytes));
    status
}

/// Runs `body` with panics caught, for calls that return only a status.
pub(crate) fn status_only(body: impl FnOnce() -> PoraStatus) -> PoraStatus {
    catch(body).unwrap_or(PoraStatus::Panic)
}

/// `body()`, or the panic's message with its location.
fn catch<T>(body: impl FnOnce() -> T) -> Result<T, String> {
    install_quiet_hook();
    INSIDE.with(|d| d.set(d.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(body));
    INSIDE.with(|d| d.set(d.get() - 1));
    result.map_err(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        let at = LOCATION.with(|slot| slot.borrow_mut().take());
        match at {
            Some(at) => format!("pora panicked at {at}: {what}"),
            None => format!("pora panicked: {what}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::Failure;
    use crate::pora_buf_free;

    fn text(buf: &PoraBuf) -> String {
        let bytes = unsafe { std::slice::from_raw_parts(buf.ptr, buf.len) };
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn a_formatted_panic_becomes_a_status_with_its_message_and_location() {
        let mut out = PoraBuf::EMPTY;
        let n = 42;
        let status = unsafe { call(&mut out, || panic!("shard {n} exploded")) };
        assert_eq!(status, PoraStatus::Panic);
        let msg = text(&out);
        assert!(msg.contains("shard 42 exploded"), "{msg}");
        assert!(msg.contains("guard.rs:"), "location missing: {msg}");
        assert_eq!(unsafe { pora_buf_free(&mut out) }, PoraStatus::Ok);
        // Outside a pora call the previous hook is back in charge, and the depth is balanced.
        assert_eq!(INSIDE.with(Cell::get), 0);
    }

    #[test]
    fn a_static_panic_and_a_status_only_panic_are_caught() {
        let mut out = PoraBuf::EMPTY;
        let status = unsafe { call(&mut out, || panic!("plain")) };
        assert_eq!(status, PoraStatus::Panic);
        assert!(text(&out).contains("plain"));
        unsafe { pora_buf_free(&mut out) };
        assert_eq!(status_only(|| panic!("x")), PoraStatus::Panic);
    }

    #[test]
    fn failures_write_their_message_and_null_out_is_refused() {
        let mut out = PoraBuf::EMPTY;
        let status = unsafe { call(&mut out, || Err(Failure::new(PoraStatus::Busy, "busy now"))) };
        assert_eq!(status, PoraStatus::Busy);
        assert_eq!(text(&out), "busy now");
        unsafe { pora_buf_free(&mut out) };
        let ran = Cell::new(false);
        let status = unsafe {
            call(std::ptr::null_mut(), || {
                ran.set(true);
                Ok(Vec::new())
            })
        };
        assert_eq!(status, PoraStatus::InvalidArgument);
        assert!(!ran.get(), "the body must not run without an out buffer");
    }
}
