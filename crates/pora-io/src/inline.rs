//! Synchronous methods (pread, O_DIRECT pread, mmap, Windows seek_read and mmap) behind the
//! completion contract: a method supplies only an [`InlineReader`] (how to read one sample);
//! [`InlineBackend`] performs the pushed reads inside `submit` and hands their completions out
//! in `reap`. Storage is allocated once at the worker's depth.

use crate::{Backend, Completion, IoError, Method, QueueFull, Read, ReadError, Sample};
use std::collections::VecDeque;
use std::time::Instant;

/// How one synchronous method reads; everything else of the [`Backend`] contract is shared.
pub(crate) trait InlineReader: Send {
    /// The method this reader implements.
    fn method(&self) -> Method;
    /// Called once per `submit` with the batch about to be read, before any of it (periodic
    /// length checks, prefetching).
    fn before_batch(&mut self, _batch: &[Read]) {}
    /// Reads one sample; EINTR/EAGAIN are retried inside.
    fn read(&mut self, read: &Read) -> Result<Sample, ReadError>;
}

/// A [`Backend`] whose reads complete inside `submit`, one after another.
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
    fn push(&mut self, read: Read) -> Result<(), QueueFull> {
        self.queue.push(read)
    }
    fn submit(&mut self) -> Result<(), IoError> {
        self.reader.before_batch(&self.queue.pending);
        let reader = &mut self.reader;
        self.queue.submit_with(|r| reader.read(r))
    }
    /// Everything submitted is already complete, so the deadline never needs waiting for.
    fn reap(
        &mut self,
        out: &mut Vec<Completion>,
        _min: usize,
        _deadline: Option<Instant>,
    ) -> Result<usize, IoError> {
        Ok(self.queue.reap(out))
    }
}

/// Queue of pushed reads and finished completions for one synchronous worker.
struct InlineQueue {
    pending: Vec<Read>,
    done: VecDeque<Completion>,
    capacity: usize,
}

impl InlineQueue {
    fn new(capacity: usize) -> Self {
        InlineQueue {
            pending: Vec::with_capacity(capacity),
            done: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    fn in_flight(&self) -> usize {
        self.pending.len() + self.done.len()
    }

    fn push(&mut self, read: Read) -> Result<(), QueueFull> {
        if self.in_flight() >= self.capacity {
            return Err(QueueFull);
        }
        self.pending.push(read);
        Ok(())
    }

    /// Performs every pending read with `read_one`, in push order.
    fn submit_with(
        &mut self,
        mut read_one: impl FnMut(&Read) -> Result<Sample, ReadError>,
    ) -> Result<(), IoError> {
        for read in self.pending.drain(..) {
            let result = read_one(&read);
            self.done.push_back(Completion {
                tag: read.tag,
                result,
            });
        }
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Completion>) -> usize {
        let n = self.done.len();
        out.extend(self.done.drain(..));
        n
    }
}
