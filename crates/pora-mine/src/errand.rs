//! Errands: work that can block on a device, done off the slot's path.
//!
//! Opening a shard file, closing it, unmapping it, `stat`-ing it or asking the page cache about it
//! can wait as long as the slowest read the device holds (docs/spec/stalls.md: on FUSE with the page cache
//! on, `open()` waits for the lock of any page still being read; a mapping cannot change while a
//! fault on it waits). A slot promises to end by its deadline plus 1 s whatever the disk does, so
//! none of that runs on its path: it runs here, on one long-lived thread per owner, started when
//! the owner is made (starting a thread maps its stack, which such a fault can hold up too), and
//! the caller either gets the answer within a budget or goes on without it.
//!
//! One errand runs at a time and a new one is refused while the last has not finished, so a
//! device stuck for an hour holds exactly one thread here, never one per slot.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send>;

/// One errand thread.
pub struct Errands {
    queue: Mutex<Option<Sender<Job>>>,
    /// An errand was handed over and has not finished.
    busy: Arc<AtomicBool>,
}

impl Errands {
    /// Starts the errand thread, named `name` (without one, errands are refused).
    pub fn new(name: &'static str) -> Errands {
        let (tx, rx) = mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .is_ok();
        Errands {
            queue: Mutex::new(started.then_some(tx)),
            busy: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether an errand is still running (a device that does not answer holds it).
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    /// Whether the errand thread is free, waiting at most `within` for the last errand to finish
    /// (it may be just past its answer).
    pub fn free_within(&self, within: Duration) -> bool {
        let until = std::time::Instant::now() + within;
        while self.busy() {
            if std::time::Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        true
    }

    /// Starts `job` unless an errand is still running; gives it back when refused.
    pub fn start<F: FnOnce() + Send + 'static>(&self, job: F) -> Result<(), F> {
        if self
            .busy
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(job);
        }
        // The job travels inside a slot that can be emptied again if the send fails, so a
        // refused job comes back to the caller whole.
        let slot = Arc::new(Mutex::new(Some(job)));
        let (theirs, busy) = (slot.clone(), self.busy.clone());
        let wrapped: Job = Box::new(move || {
            let job = theirs.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(job) = job {
                job();
            }
            busy.store(false, Ordering::Release);
        });
        let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let sent = queue.as_ref().is_some_and(|tx| tx.send(wrapped).is_ok());
        drop(queue);
        if sent {
            return Ok(());
        }
        self.busy.store(false, Ordering::Release);
        let job = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        Err(job.expect("a job that was never run is still in its slot"))
    }

    /// Runs `job` as an errand and waits at most `within` for its answer: `None` when an errand
    /// is still running, or this one did not answer in time (its answer is then dropped on the
    /// errand thread when it comes).
    pub fn ask<T: Send + 'static>(
        &self,
        within: Duration,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (tx, rx): (Sender<T>, Receiver<T>) = mpsc::channel();
        // The last errand may be just past its answer.
        self.free_within(Duration::from_millis(5));
        self.start(move || {
            let _ = tx.send(job());
        })
        .ok()?;
        rx.recv_timeout(within).ok()
    }

    /// Drops `value` on the errand thread and waits at most `within` for it: dropping can close
    /// files or unmap them, which waits for a stalled device. A healthy device's drop is over
    /// long before the bound, so callers see the usual synchronous close. When the errand thread
    /// is still held by an earlier errand, `value` is leaked instead: its files stay open until
    /// the process exits, which is all a device that stopped answering allows.
    pub fn dispose<T: Send + 'static>(&self, value: T, within: Duration) {
        // The last errand may be just past its answer (a verification that sent its result):
        // leaking the value then would keep healthy files open for good.
        self.free_within(within);
        let (tx, rx) = mpsc::channel::<()>();
        match self.start(move || {
            drop(value);
            let _ = tx.send(());
        }) {
            Ok(()) => {
                let _ = rx.recv_timeout(within);
            }
            Err(refused) => std::mem::forget(refused),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;
    use std::time::Instant;

    fn wait_idle(errands: &Errands) {
        let until = Instant::now() + Duration::from_secs(10);
        while errands.busy() {
            assert!(Instant::now() < until, "the errand never finished");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn an_answer_within_the_budget_comes_back() {
        let errands = Errands::new("test-errand");
        assert_eq!(errands.ask(Duration::from_secs(5), || 7), Some(7));
        wait_idle(&errands);
        assert_eq!(errands.ask(Duration::from_secs(5), || 8), Some(8));
    }

    #[test]
    fn a_stuck_errand_refuses_the_next_and_holds_one_thread() {
        let errands = Errands::new("test-errand");
        let (release, held) = channel::<()>();
        let started = Instant::now();
        assert_eq!(
            errands.ask(Duration::from_millis(20), move || held.recv().ok()),
            None
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(errands.busy());
        // Refused at once while the first is stuck, and the refused job comes back.
        let asked = Instant::now();
        assert_eq!(errands.ask(Duration::from_secs(5), || 1), None);
        assert!(asked.elapsed() < Duration::from_millis(500));
        let (ran, came_back) = channel::<u8>();
        let refused = errands.start(move || ran.send(2).unwrap());
        refused.expect_err("refused while held")();
        assert_eq!(
            came_back.try_recv(),
            Ok(2),
            "the refused job came back whole"
        );
        release.send(()).unwrap();
        wait_idle(&errands);
        assert_eq!(errands.ask(Duration::from_secs(5), || 3), Some(3));
    }

    #[test]
    fn dispose_returns_by_its_bound_when_the_drop_hangs_and_leaks_when_refused() {
        struct Hangs(Receiver<()>);
        impl Drop for Hangs {
            fn drop(&mut self) {
                let _ = self.0.recv();
            }
        }
        let errands = Errands::new("test-errand");
        let (release, held) = channel::<()>();
        let started = Instant::now();
        errands.dispose(Hangs(held), Duration::from_millis(50));
        assert!(started.elapsed() < Duration::from_secs(2));
        // The errand thread is held: the next value is leaked once the bound passes, not dropped
        // here (which would hang).
        let (_keep, second) = channel::<()>();
        let leaked = Instant::now();
        errands.dispose(Hangs(second), Duration::from_millis(50));
        assert!(leaked.elapsed() < Duration::from_secs(2));
        release.send(()).unwrap();
        wait_idle(&errands);
    }
}
