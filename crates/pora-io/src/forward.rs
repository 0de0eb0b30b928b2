//! `forward_backend!`: a [`Backend`](crate::Backend) whose queue is one of its fields. The
//! Windows `iocp` backend is the overlapped engine plus its method, and a test wrapper keeps the
//! trait's default `cancel_all` over the simulated disk: both forward the queue's six methods
//! unchanged, written here once.

/// Implements `Backend` for `$ty` with `capacity`, `in_flight`, `push`, `submit`, `reap` and
/// `drop_queued` forwarded to its field `$queue` (anything with those methods); the items in
/// braces (`method` at least, and any other the trait's defaults do not fit) follow them.
#[cfg_attr(not(any(windows, all(test, feature = "sim"))), allow(unused_macros))]
macro_rules! forward_backend {
    ($ty:ty, $queue:tt, { $($items:tt)* }) => {
        impl $crate::Backend for $ty {
            fn capacity(&self) -> usize { self.$queue.capacity() }
            fn in_flight(&self) -> usize { self.$queue.in_flight() }
            fn push(&mut self, read: $crate::SampleRead) -> Result<(), $crate::QueueFull> {
                self.$queue.push(read)
            }
            fn submit(&mut self) -> Result<(), $crate::IoError> { self.$queue.submit() }
            fn reap(
                &mut self, out: &mut Vec<$crate::Completion>, min_complete: usize,
                deadline: Option<std::time::Instant>,
            ) -> Result<usize, $crate::IoError> {
                self.$queue.reap(out, min_complete, deadline)
            }
            fn drop_queued(&mut self) -> usize { self.$queue.drop_queued() }
            $($items)*
        }
    };
}
