//! Handles as ids: opened shard sets, cancel tokens and slot overlays live in process-wide maps
//! keyed by a 64-bit id whose top byte says the kind (1 = shard set, 2 = cancel token, 3 =
//! overlay) and whose low bits
//! count up and are never reused. So a C caller's stale, forged or swapped id is detected: an id
//! of this kind issued before and gone is CLOSED, anything else is INVALID_ARGUMENT. A shard set
//! is held by `Arc`, so closing it while a slot runs on another thread frees it only when that
//! slot returns.

use crate::failure::Failure;
use crate::PoraStatus;
use pora_mine::session::Session;
use pora_mine::Overlay;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

const KIND_SHIFT: u32 = 56;
const COUNTER_MASK: u64 = (1 << KIND_SHIFT) - 1;

/// The two kinds of id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Shards = 1,
    Cancel = 2,
    Overlay = 3,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Shards => "shard handle",
            Kind::Cancel => "cancel token",
            Kind::Overlay => "overlay",
        }
    }
}

/// An opened shard set.
pub(crate) struct Shards {
    pub session: Session,
    /// Set by close: a running slot stops (it watches this flag) and reports CLOSED.
    pub closed: AtomicBool,
}

impl Shards {
    pub fn new(session: Session) -> Shards {
        Shards {
            session,
            closed: AtomicBool::new(false),
        }
    }

    /// Marks the set closed, which stops its running slot.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

/// One kind's live objects and the next counter value.
struct Table<T> {
    kind: Kind,
    next: u64,
    live: BTreeMap<u64, Arc<T>>,
}

impl<T> Table<T> {
    const fn new(kind: Kind) -> Table<T> {
        Table {
            kind,
            next: 1,
            live: BTreeMap::new(),
        }
    }

    fn insert(&mut self, value: T) -> u64 {
        let counter = self.next;
        self.next += 1;
        self.live.insert(counter, Arc::new(value));
        ((self.kind as u64) << KIND_SHIFT) | counter
    }

    /// The counter of `id`, or why it is not one of ours.
    fn counter(&self, id: u64) -> Result<u64, Failure> {
        let name = self.kind.name();
        if id == 0 {
            return Err(Failure::invalid(format!("{name} 0 is not a {name}")));
        }
        let counter = id & COUNTER_MASK;
        if id >> KIND_SHIFT != self.kind as u64 || counter >= self.next {
            return Err(Failure::invalid(format!(
                "{id:#x} is not a {name} pora issued"
            )));
        }
        Ok(counter)
    }

    fn get(&self, id: u64) -> Result<Arc<T>, Failure> {
        let counter = self.counter(id)?;
        self.live
            .get(&counter)
            .cloned()
            .ok_or_else(|| gone(self.kind, id))
    }

    fn remove(&mut self, id: u64) -> Result<Arc<T>, Failure> {
        let counter = self.counter(id)?;
        self.live
            .remove(&counter)
            .ok_or_else(|| gone(self.kind, id))
    }
}

fn gone(kind: Kind, id: u64) -> Failure {
    let what = match kind {
        Kind::Shards => "closed",
        Kind::Cancel | Kind::Overlay => "freed",
    };
    Failure::new(
        PoraStatus::Closed,
        format!("{} {id:#x} was already {what}", kind.name()),
    )
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

static SHARDS: Mutex<Table<Shards>> = Mutex::new(Table::new(Kind::Shards));
static CANCELS: Mutex<Table<AtomicBool>> = Mutex::new(Table::new(Kind::Cancel));
/// An overlay is changed in place between slots; a slot takes an `Arc` snapshot, so a change
/// while a slot runs copies the map (KV bytes are shared, never copied again).
static OVERLAYS: Mutex<Table<Mutex<Arc<Overlay>>>> = Mutex::new(Table::new(Kind::Overlay));

pub(crate) fn add_shards(shards: Shards) -> u64 {
    lock(&SHARDS).insert(shards)
}

pub(crate) fn shards(id: u64) -> Result<Arc<Shards>, Failure> {
    lock(&SHARDS).get(id)
}

pub(crate) fn remove_shards(id: u64) -> Result<Arc<Shards>, Failure> {
    lock(&SHARDS).remove(id)
}

pub(crate) fn add_cancel() -> u64 {
    lock(&CANCELS).insert(AtomicBool::new(false))
}

pub(crate) fn cancel(id: u64) -> Result<Arc<AtomicBool>, Failure> {
    lock(&CANCELS).get(id)
}

pub(crate) fn remove_cancel(id: u64) -> Result<Arc<AtomicBool>, Failure> {
    lock(&CANCELS).remove(id)
}

pub(crate) fn add_overlay() -> u64 {
    lock(&OVERLAYS).insert(Mutex::new(Arc::new(Overlay::new())))
}

pub(crate) fn overlay(id: u64) -> Result<Arc<Mutex<Arc<Overlay>>>, Failure> {
    lock(&OVERLAYS).get(id)
}

pub(crate) fn remove_overlay(id: u64) -> Result<Arc<Mutex<Arc<Overlay>>>, Failure> {
    lock(&OVERLAYS).remove(id)
}

/// The snapshot a slot mines with: `None` for id 0.
pub(crate) fn overlay_snapshot(id: u64) -> Result<Option<Arc<Overlay>>, Failure> {
    if id == 0 {
        return Ok(None);
    }
    let overlay = overlay(id)?;
    let snapshot = Arc::clone(&lock(&overlay));
    Ok(Some(snapshot))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked_for_kind_age_and_liveness() {
        let mut t: Table<u8> = Table::new(Kind::Cancel);
        let a = t.insert(7);
        assert_eq!(*t.get(a).unwrap(), 7);
        assert_eq!(t.remove(a).unwrap().as_ref(), &7);
        assert_eq!(t.get(a).unwrap_err().status, PoraStatus::Closed);
        assert_eq!(t.remove(a).unwrap_err().status, PoraStatus::Closed);
        let b = t.insert(8);
        assert_ne!(a, b, "ids are never reused");
        let wrong_kind = (b & COUNTER_MASK) | ((Kind::Shards as u64) << KIND_SHIFT);
        assert_eq!(
            t.get(wrong_kind).unwrap_err().status,
            PoraStatus::InvalidArgument
        );
        assert_eq!(t.get(0).unwrap_err().status, PoraStatus::InvalidArgument);
        assert_eq!(
            t.get(b + 100).unwrap_err().status,
            PoraStatus::InvalidArgument
        );
    }
}
