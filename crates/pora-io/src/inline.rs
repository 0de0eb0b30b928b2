//! Completion bookkeeping for synchronous methods (pread, mmap, Windows seek_read): reads are
//! performed inside `submit` and their completions wait here until `reap`. Storage is allocated
//! once at the worker's depth.

use crate::{Completion, IoError, QueueFull, Read, ReadError, Sample};
use std::collections::VecDeque;

/// Queue of pushed reads and finished completions for one synchronous worker.
pub(crate) struct InlineQueue {
    pending: Vec<Read>,
    done: VecDeque<Completion>,
    capacity: usize,
}

impl InlineQueue {
    pub(crate) fn new(capacity: usize) -> Self {
        InlineQueue {
            pending: Vec::with_capacity(capacity),
            done: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Reads pushed since the last submit (the Unix mmap backend prefetches them).
    #[cfg(unix)]
    pub(crate) fn pending(&self) -> &[Read] {
        &self.pending
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.pending.len() + self.done.len()
    }

    pub(crate) fn push(&mut self, read: Read) -> Result<(), QueueFull> {
        if self.in_flight() >= self.capacity {
            return Err(QueueFull);
        }
        self.pending.push(read);
        Ok(())
    }

    /// Performs every pending read with `read_one`, in push order.
    pub(crate) fn submit_with(
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

    /// Everything submitted is already complete, so the deadline never needs waiting for.
    pub(crate) fn reap(&mut self, out: &mut Vec<Completion>) -> usize {
        let n = self.done.len();
        out.extend(self.done.drain(..));
        n
    }
}
