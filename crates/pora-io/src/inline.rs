//! Synchronous methods (pread, O_DIRECT pread, mmap, Windows seek_read and mmap, the simulated
//! disk's synchronous mode) behind the completion contract: a method supplies only an
//! [`InlineReader`] (how to read one sample); [`InlineBackend`] performs the pushed reads and
//! hands their completions out in `reap`. Storage is allocated once at the worker's depth.
//!
//! Bounded batches: a synchronous read blocks its thread, so a batch of `depth` reads on a slow
//! device could keep a worker away from its deadline and stop flag for `depth` read times.
//! `submit` therefore performs reads only until [`SUBMIT_BUDGET`] has passed (at least one per
//! call, so every call makes progress) and leaves the rest submitted but unperformed; `reap`
//! performs them, one at a time, until it has `min_complete` completions or its deadline has
//! passed, exactly like an asynchronous backend waiting for a device. The clock is checked after
//! every read, through a coarse clock where the OS has a cheap one (Linux
//! `CLOCK_MONOTONIC_COARSE`, a few ns against ~30 ns for `Instant::now()`; it may lag by one
//! kernel tick, at most 10 ms). A single read that blocks (a dead device) cannot be interrupted:
//! that bound is the OS's.

use crate::{
    Backend, CancelOutcome, Completion, IoError, Method, QueueFull, ReadError, Sample, SampleRead,
};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Longest stretch of reads one `submit` performs before returning (plus the read in progress).
pub(crate) const SUBMIT_BUDGET: Duration = Duration::from_millis(10);

/// How one synchronous method reads; everything else of the [`Backend`] contract is shared.
pub(crate) trait InlineReader: Send {
    /// The method this reader implements.
    fn method(&self) -> Method;
    /// Called once per `submit` with the reads submitted by it, before any of them is performed
    /// (periodic length checks).
    fn before_batch(&mut self, _batch: &[SampleRead]) {}
    /// Called with reads as they are pushed (prefetching): a caller that pushes a group of
    /// reads and then works on (the miner hashes its next group) gives them that long to arrive.
    fn on_push(&mut self, _reads: &[SampleRead]) {}
    /// Reads one sample; EINTR/EAGAIN are retried inside.
    fn read(&mut self, read: &SampleRead) -> Result<Sample, ReadError>;
}

/// A [`Backend`] whose reads are performed by `submit` (within its budget) and `reap` (within
/// its deadline), one after another.
pub(crate) struct InlineBackend<R> {
    reader: R,
    queue: InlineQueue,
}

impl<R: InlineReader> InlineBackend<R> {
    /// A worker with room for `depth` reads (at least one).
    pub(crate) fn new(reader: R, depth: usize) -> Self {
        InlineBackend {
            reader,
            queue: InlineQueue::new(depth.max(1)),
        }
    }
}

impl<R: InlineReader> Backend for InlineBackend<R> {
    fn method(&self) -> Method {
        self.reader.method()
    }
    fn capacity(&self) -> usize {
        self.queue.capacity
    }
    fn in_flight(&self) -> usize {
        self.queue.in_flight()
    }
    fn push(&mut self, read: SampleRead) -> Result<(), QueueFull> {
        self.queue.push(read)?;
        self.reader.on_push(std::slice::from_ref(&read));
        Ok(())
    }
    fn push_all(&mut self, reads: &[SampleRead]) -> Result<(), QueueFull> {
        self.queue.push_all(reads)?;
        self.reader.on_push(reads);
        Ok(())
    }
    fn submit(&mut self) -> Result<(), IoError> {
        self.reader.before_batch(self.queue.mark_submitted());
        let give_up = coarse_deadline(SUBMIT_BUDGET);
        let reader = &mut self.reader;
        self.queue
            .perform(|r| reader.read(r), usize::MAX, || give_up.passed());
        Ok(())
    }
    /// Performs submitted reads until `min_complete` completions are ready or `deadline` passes
    /// (a deadline already past performs none), then hands out every ready completion.
    fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        min_complete: usize,
        deadline: Option<Instant>,
    ) -> Result<usize, IoError> {
        let want = min_complete.min(self.queue.in_flight());
        if self.queue.done.len() < want && self.queue.unperformed() > 0 {
            let give_up =
                deadline.map(|d| coarse_deadline(d.saturating_duration_since(Instant::now())));
            if !give_up.is_some_and(|g| g.passed()) {
                let reader = &mut self.reader;
                self.queue.perform(
                    |r| reader.read(r),
                    want,
                    || give_up.is_some_and(|g| g.passed()),
                );
            }
        }
        Ok(self.queue.reap(out))
    }
    fn drop_queued(&mut self) -> usize {
        self.queue.drop_unsubmitted()
    }
    /// Nothing is in the OS between calls: dropping the queue is the whole cancellation.
    fn cancel_all(&mut self, _within: Duration) -> CancelOutcome {
        CancelOutcome {
            discarded: self.queue.clear(),
            still_in_flight: 0,
        }
    }
}

/// Pushed reads (`pending[..submitted]` submitted, of which `pending[..next]` performed) and
/// finished completions of one synchronous worker. `pending` is compacted after every batch, so
/// it never holds more than `capacity` reads and never reallocates.
struct InlineQueue {
    pending: Vec<SampleRead>,
    next: usize,
    submitted: usize,
    done: VecDeque<Completion>,
    capacity: usize,
}

impl InlineQueue {
    fn new(capacity: usize) -> Self {
        InlineQueue {
            pending: Vec::with_capacity(capacity),
            next: 0,
            submitted: 0,
            done: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    fn in_flight(&self) -> usize {
        self.pending.len() - self.next + self.done.len()
    }

    /// Submitted reads not yet performed.
    fn unperformed(&self) -> usize {
        self.submitted - self.next
    }

    fn push(&mut self, read: SampleRead) -> Result<(), QueueFull> {
        if self.in_flight() >= self.capacity {
            return Err(QueueFull);
        }
        self.pending.push(read);
        Ok(())
    }

    /// All of `reads` or, past the capacity, none.
    fn push_all(&mut self, reads: &[SampleRead]) -> Result<(), QueueFull> {
        if self.in_flight() + reads.len() > self.capacity {
            return Err(QueueFull);
        }
        self.pending.extend_from_slice(reads);
        Ok(())
    }

    /// Marks every pushed read submitted; returns the newly submitted ones.
    fn mark_submitted(&mut self) -> &[SampleRead] {
        let fresh = self.submitted;
        self.submitted = self.pending.len();
        &self.pending[fresh..]
    }

    /// Performs submitted reads in push order with `read_one` until `done` holds `want`
    /// completions, none is left, or `stop()` says so (asked after each read, so at least one
    /// read is performed).
    fn perform(
        &mut self,
        mut read_one: impl FnMut(&SampleRead) -> Result<Sample, ReadError>,
        want: usize,
        mut stop: impl FnMut() -> bool,
    ) {
        while self.next < self.submitted && self.done.len() < want {
            let read = self.pending[self.next];
            self.next += 1;
            let result = read_one(&read);
            self.done.push_back(Completion {
                tag: read.tag,
                result,
            });
            if stop() {
                break;
            }
        }
        self.compact();
    }

    /// Drops the performed reads from the front of `pending`.
    fn compact(&mut self) {
        if self.next == 0 {
            return;
        }
        self.pending.drain(..self.next);
        self.submitted -= self.next;
        self.next = 0;
    }

    fn reap(&mut self, out: &mut Vec<Completion>) -> usize {
        let n = self.done.len();
        // Two block copies instead of an element-by-element drain (2.4% of a cached-shard slot).
        let (front, back) = self.done.as_slices();
        out.extend_from_slice(front);
        out.extend_from_slice(back);
        self.done.clear();
        n
    }

    /// Forgets the pushed reads not yet submitted; returns how many there were.
    fn drop_unsubmitted(&mut self) -> usize {
        let dropped = self.pending.len() - self.submitted;
        self.pending.truncate(self.submitted);
        dropped
    }

    /// Forgets every pushed read and completion; returns how many there were.
    fn clear(&mut self) -> usize {
        let n = self.in_flight();
        self.pending.clear();
        self.done.clear();
        self.next = 0;
        self.submitted = 0;
        n
    }
}

/// A point in time on the coarse clock.
#[derive(Clone, Copy)]
struct CoarseDeadline(Duration);

impl CoarseDeadline {
    fn passed(self) -> bool {
        coarse_now() >= self.0
    }
}

/// `after` from now on the coarse clock.
fn coarse_deadline(after: Duration) -> CoarseDeadline {
    CoarseDeadline(coarse_now().saturating_add(after))
}

/// The coarse monotonic clock (Linux): updated every kernel tick, read without a system call.
#[cfg(target_os = "linux")]
fn coarse_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, owned `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Elsewhere the ordinary monotonic clock, measured from the first use.
#[cfg(not(target_os = "linux"))]
fn coarse_now() -> Duration {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ReadErrorKind;

    /// A reader whose every read takes `latency` and returns its offset's low byte.
    struct SlowReader {
        latency: Duration,
        reads: usize,
        /// Reads announced to `on_push`, in order.
        announced: Vec<u32>,
    }

    impl InlineReader for SlowReader {
        fn method(&self) -> Method {
            Method::Sim
        }
        fn on_push(&mut self, reads: &[SampleRead]) {
            self.announced.extend(reads.iter().map(|r| r.tag));
        }
        fn read(&mut self, read: &SampleRead) -> Result<Sample, ReadError> {
            self.reads += 1;
            std::thread::sleep(self.latency);
            if read.offset == u64::MAX {
                return Err(ReadError {
                    file: read.file,
                    offset: read.offset,
                    kind: ReadErrorKind::Injected,
                });
            }
            Ok([read.offset as u8; 32])
        }
    }

    fn slow_backend(latency_ms: u64, depth: usize) -> InlineBackend<SlowReader> {
        InlineBackend::new(
            SlowReader {
                latency: Duration::from_millis(latency_ms),
                reads: 0,
                announced: Vec::new(),
            },
            depth,
        )
    }

    fn push_all(b: &mut InlineBackend<SlowReader>, n: u32) {
        for tag in 0..n {
            b.push(SampleRead {
                tag,
                file: 0,
                offset: u64::from(tag),
            })
            .unwrap();
        }
    }

    /// One `submit` of 1,000 reads of 5 ms each performs only what fits in its budget, and a
    /// reap with a deadline in the past performs none; the rest complete later, all correct.
    #[test]
    fn submit_stops_at_its_budget_and_reap_at_its_deadline() {
        let mut b = slow_backend(5, 1000);
        push_all(&mut b, 1000);
        b.submit().unwrap();
        // Each read sleeps >= 5 ms and the clock is checked after each: at most
        // budget / 5 ms + 1 reads, plus one tick of the coarse clock (<= 10 ms: 2 reads).
        let bound = (SUBMIT_BUDGET.as_millis() / 5) as usize + 3;
        assert!(
            b.reader.reads <= bound,
            "{} reads in one submit",
            b.reader.reads
        );
        assert_eq!(b.in_flight(), 1000);
        let mut out = Vec::with_capacity(1000);
        let after_submit = b.reader.reads;
        b.reap(
            &mut out,
            1000,
            Some(Instant::now() - Duration::from_millis(1)),
        )
        .unwrap();
        assert_eq!(
            b.reader.reads, after_submit,
            "a past deadline performs nothing"
        );
        assert_eq!(out.len(), after_submit);
        // A reap with 20 ms left performs about 4 more, never hundreds.
        b.reap(
            &mut out,
            1000,
            Some(Instant::now() + Duration::from_millis(20)),
        )
        .unwrap();
        assert!(b.reader.reads - after_submit <= 20 / 5 + 3);
        // Without a deadline it performs exactly what was asked for.
        let before = b.reader.reads;
        b.reap(&mut out, 3, None).unwrap();
        assert_eq!(b.reader.reads, before + 3);
        let gone = b.cancel_all(Duration::ZERO);
        assert_eq!(gone.discarded + out.len(), 1000);
        assert!(gone.is_idle());
        assert_eq!(b.in_flight(), 0);
        for c in &out {
            assert_eq!(c.result.as_ref().unwrap()[0], c.tag as u8);
        }
    }

    /// Reads pushed after a partial batch keep push order, never exceed the depth and each
    /// completes exactly once.
    #[test]
    fn partial_batches_keep_order_and_capacity() {
        let mut b = slow_backend(0, 8);
        push_all(&mut b, 8);
        assert_eq!(
            b.push(SampleRead {
                tag: 99,
                file: 0,
                offset: 0
            }),
            Err(QueueFull)
        );
        b.submit().unwrap();
        let mut out = Vec::new();
        b.reap(&mut out, 3, None).unwrap();
        assert!(out.len() >= 3);
        let first = out.len() as u32;
        for tag in 100..100 + first {
            b.push(SampleRead {
                tag,
                file: 0,
                offset: u64::from(tag),
            })
            .unwrap();
        }
        assert_eq!(b.in_flight(), 8);
        b.submit().unwrap();
        while b.in_flight() > 0 {
            b.reap(&mut out, 1, None).unwrap();
        }
        let tags: Vec<u32> = out.iter().map(|c| c.tag).collect();
        let mut expected: Vec<u32> = (0..8).collect();
        expected.extend(100..100 + first);
        assert_eq!(tags, expected);
        assert!(b.queue.pending.capacity() == 8, "no reallocation");
    }

    /// `push_all` queues a group in order and tells the reader (which prefetches) at once, and
    /// a group beyond the capacity is refused whole: nothing of it is queued or announced.
    #[test]
    fn push_all_queues_in_order_or_not_at_all() {
        let mut b = slow_backend(0, 8);
        let reads = |tags: std::ops::Range<u32>| -> Vec<SampleRead> {
            tags.map(|tag| SampleRead {
                tag,
                file: 0,
                offset: u64::from(tag),
            })
            .collect()
        };
        b.push_all(&reads(0..5)).unwrap();
        assert_eq!(b.reader.announced, [0, 1, 2, 3, 4]);
        assert_eq!(b.reader.reads, 0, "announced, not performed");
        assert_eq!(b.push_all(&reads(5..9)), Err(QueueFull));
        assert_eq!(b.in_flight(), 5);
        assert_eq!(b.reader.announced.len(), 5);
        b.push(reads(5..6)[0]).unwrap();
        b.push_all(&reads(6..8)).unwrap();
        b.submit().unwrap();
        let mut out = Vec::new();
        while b.in_flight() > 0 {
            b.reap(&mut out, 1, None).unwrap();
        }
        let tags: Vec<u32> = out.iter().map(|c| c.tag).collect();
        assert_eq!(tags, (0..8).collect::<Vec<_>>());
        assert_eq!(b.reader.announced, tags);
        assert_eq!(b.queue.pending.capacity(), 8, "no reallocation");
    }

    /// `drop_queued` forgets only the reads not yet submitted: they are never performed, the
    /// submitted ones still complete, and the queue keeps its storage.
    #[test]
    fn drop_queued_forgets_only_unsubmitted_reads() {
        let mut b = slow_backend(0, 8);
        push_all(&mut b, 3);
        b.submit().unwrap();
        for tag in 10..14 {
            b.push(SampleRead {
                tag,
                file: 0,
                offset: u64::from(tag),
            })
            .unwrap();
        }
        assert_eq!(b.drop_queued(), 4);
        assert_eq!(b.in_flight(), 3);
        b.submit().unwrap();
        let mut out = Vec::new();
        while b.in_flight() > 0 {
            b.reap(&mut out, 1, None).unwrap();
        }
        assert_eq!(out.iter().map(|c| c.tag).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(b.reader.reads, 3, "a dropped read was performed");
        assert_eq!(b.queue.pending.capacity(), 8, "no reallocation");
    }

    /// Reads pushed but not submitted are neither performed by `reap` nor waited for.
    #[test]
    fn reap_never_performs_unsubmitted_reads() {
        let mut b = slow_backend(0, 4);
        push_all(&mut b, 2);
        let mut out = Vec::new();
        assert_eq!(b.reap(&mut out, 2, None).unwrap(), 0);
        assert_eq!(b.reader.reads, 0);
        b.submit().unwrap();
        b.reap(&mut out, 2, None).unwrap();
        assert_eq!(out.len(), 2);
    }
}
