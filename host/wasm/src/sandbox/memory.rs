//! The memory budget: a cap on all linear memories and tables of one instance together, and a
//! budget for the linear memories and tables of all of a pool's instances together ([`MemoryBudget`]), of which each
//! instance holds a [`MemoryReservation`] through its [`MemoryLimiter`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio::sync::Notify;
use toolnexus_core::Limit;
use wasmtime::ResourceLimiter;

/// Refuses memory growth past the instance's cap or past the pool's budget, and remembers
/// which, so a trap that follows can be reported as the limit it is.
pub(crate) struct MemoryLimiter {
    /// The cap on all linear memories and tables of the instance together.
    pub(crate) memory_bytes: usize,
    /// What its linear memories and tables hold now, together.
    pub(crate) total: usize,
    /// What this instance holds of the pool's budget: at least `total`, and during a call
    /// enough to grow to what the largest call needed ([`MemoryBudget::reserve`]); given back
    /// when the instance is dropped.
    pub(crate) reservation: MemoryReservation,
    /// The limit a refused growth hit in the current call.
    pub(crate) hit: Option<Limit>,
}

/// A pool's budget for the linear memories of all its instances together
/// (`Limits::memory_total_bytes`). Each instance holds a reservation of it ([`MemoryLimiter`]),
/// given back when the instance is dropped. A call starts only with room in the budget for its
/// instance to grow to the most any instance has held (before any call has finished: to the
/// per-instance cap), and otherwise waits for an instance to come back; so a component whose
/// instances are small runs many calls at once, one whose instances are large runs fewer, and
/// as many calls as fit at the cap (8 by default) always can. A growth past the budget is
/// refused like one past the instance's cap: that takes a call needing more than any before it
/// while the budget is spread over many.
#[derive(Debug)]
pub(crate) struct MemoryBudget {
    pub(crate) limit: usize,
    /// The per-instance cap (`Limits::memory_bytes`).
    cap: usize,
    used: AtomicUsize,
    /// The most an instance held when a call on it came back (its memories together; they
    /// never shrink). A call that traps is not counted: its instance is dropped.
    largest: AtomicUsize,
    /// Whether a call has come back, so that `largest` is what calls need.
    measured: AtomicBool,
    /// Calls running now.
    running: AtomicUsize,
    /// Woken when an instance comes back to the pool or gives its reservation back.
    pub(crate) instance_freed: Notify,
}

impl MemoryBudget {
    pub(crate) fn new(limit: usize, cap: usize) -> Self {
        MemoryBudget {
            limit,
            cap,
            used: AtomicUsize::new(0),
            largest: AtomicUsize::new(0),
            measured: AtomicBool::new(false),
            running: AtomicUsize::new(0),
            instance_freed: Notify::new(),
        }
    }

    /// Takes `bytes` of the budget, if they fit.
    fn take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|sum| *sum <= self.limit)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        if bytes > 0 {
            self.used.fetch_sub(bytes, Ordering::AcqRel);
            self.instance_freed.notify_waiters();
        }
    }

    fn end_call(&self, running: bool) {
        if running {
            self.running.fetch_sub(1, Ordering::AcqRel);
            self.instance_freed.notify_waiters();
        }
    }

    /// What a call's instance should be able to grow to: what the largest instance holds, or
    /// the per-instance cap before any call has come back; never more than the whole budget.
    fn call_room(&self) -> usize {
        let room = if self.measured.load(Ordering::Acquire) {
            self.largest.load(Ordering::Acquire)
        } else {
            self.cap
        };
        room.min(self.limit)
    }

    /// Takes what an instance already holding `charged` needs for a call (up to
    /// [`MemoryBudget::call_room`]), and counts the call as running; `None` if it does not fit
    /// while other calls run. With none running it always fits (any growth then takes its own
    /// reservation, as far as the budget goes).
    fn reserve(&self, charged: usize) -> Option<usize> {
        let need = self.call_room().saturating_sub(charged);
        if !self.take(need) {
            // Alone, a call gets what is left.
            if self.running.load(Ordering::Acquire) > 0 {
                return None;
            }
            self.running.fetch_add(1, Ordering::AcqRel);
            return Some(0);
        }
        self.running.fetch_add(1, Ordering::AcqRel);
        Some(need)
    }

    /// Room for a call on a fresh instance: its reservation, taken from the budget, or `None`.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<MemoryReservation> {
        let bytes = self.reserve(0)?;
        Some(MemoryReservation {
            budget: Arc::clone(self),
            bytes,
            running: true,
        })
    }

    /// The most an instance held when a call on it came back.
    #[cfg(test)]
    pub(crate) fn largest(&self) -> usize {
        self.largest.load(Ordering::Acquire)
    }

    /// What all instances hold of the budget now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

impl MemoryLimiter {
    /// Starts a call on this (idle) instance: room for it to grow, if the budget has it
    /// ([`MemoryBudget::reserve`]).
    pub(crate) fn start_call(&mut self) -> bool {
        let reservation = &mut self.reservation;
        match reservation.budget.reserve(reservation.bytes) {
            Some(more) => {
                reservation.bytes += more;
                reservation.running = true;
                true
            }
            None => false,
        }
    }

    /// The call came back: what the instance holds is what calls need, and the room reserved
    /// beyond it goes back to the budget. Whether no instance held as much before.
    pub(crate) fn end_call(&mut self) -> bool {
        let reservation = &mut self.reservation;
        let budget = &reservation.budget;
        let larger = budget.largest.fetch_max(self.total, Ordering::AcqRel) < self.total;
        if reservation.running {
            budget.measured.store(true, Ordering::Release);
        }
        budget.end_call(std::mem::take(&mut reservation.running));
        let spare = reservation.bytes.saturating_sub(self.total);
        reservation.bytes -= spare;
        budget.give_back(spare);
        larger
    }
}

/// Part of the memory budget, held by an instance's [`MemoryLimiter`] (or by a call about to
/// make one, [`MemoryBudget::admit`]); given back when dropped.
pub(crate) struct MemoryReservation {
    budget: Arc<MemoryBudget>,
    bytes: usize,
    /// Whether it is for a call (counted in the budget's `running`).
    running: bool,
}

impl MemoryReservation {
    /// No part of the budget and no call: the pool's first instance, made at load.
    pub(crate) fn none(budget: &Arc<MemoryBudget>) -> Self {
        MemoryReservation {
            budget: Arc::clone(budget),
            bytes: 0,
            running: false,
        }
    }

    pub(crate) fn into_limiter(self, memory_bytes: usize) -> MemoryLimiter {
        MemoryLimiter {
            memory_bytes,
            total: 0,
            reservation: self,
            hit: None,
        }
    }
}

impl Drop for MemoryReservation {
    fn drop(&mut self) {
        self.budget.end_call(self.running);
        self.budget.give_back(self.bytes);
    }
}

/// Core instances, tables and linear memories an instance may create: far more than a store, a
/// composition of a few components or a JavaScript engine needs, far fewer than wasmtime's
/// default of 10,000 each.
const MAX_CORE_INSTANCES: usize = 64;
const MAX_TABLES: usize = 64;
const MAX_MEMORIES: usize = 16;

/// What the host spends on one table element: a function reference is a pointer.
const TABLE_ELEMENT_BYTES: usize = std::mem::size_of::<usize>();

/// Elements one table may have, whatever room the memory cap leaves.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

impl MemoryLimiter {
    /// Whether a memory or table of the instance may grow from `current` to `desired` bytes:
    /// within the instance's cap and, past its reservation, within the pool's budget. Counted
    /// if so; the limit it hit remembered if not.
    fn grow(&mut self, current: usize, desired: usize) -> bool {
        let total = self.total.saturating_sub(current).saturating_add(desired);
        if total > self.memory_bytes {
            self.hit = Some(Limit::Memory(self.memory_bytes));
            return false;
        }
        let reservation = &mut self.reservation;
        if total > reservation.bytes {
            if !reservation.budget.take(total - reservation.bytes) {
                self.hit = Some(Limit::MemoryTotal(reservation.budget.limit));
                return false;
            }
            reservation.bytes = total;
        }
        self.total = total;
        true
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(self.grow(current, desired))
    }

    fn instances(&self) -> usize {
        MAX_CORE_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    /// Tables live in host memory: their elements count toward the same cap and budget as
    /// linear memories (a component declaring many large tables would otherwise hold memory
    /// that neither `memory=` nor `memory-total=` sees).
    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        Ok(self.grow(
            current.saturating_mul(TABLE_ELEMENT_BYTES),
            desired.saturating_mul(TABLE_ELEMENT_BYTES),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    /// An instance's limiter as the pool makes it, its memories grown to `total`.
    fn instance(reservation: MemoryReservation, total: usize) -> MemoryLimiter {
        let mut limiter = reservation.into_limiter(64 * MIB);
        assert!(limiter.memory_growing(0, total, None).unwrap());
        limiter
    }

    #[test]
    fn calls_start_with_room_to_grow_to_the_cap_until_one_has_come_back() {
        let budget = Arc::new(MemoryBudget::new(100 * MIB, 30 * MIB));
        let mut reservations: Vec<_> = std::iter::from_fn(|| budget.admit()).take(10).collect();
        assert_eq!(
            reservations.len(),
            3,
            "three calls of 30 MiB fit in 100 MiB"
        );
        let mut first = instance(reservations.pop().unwrap(), 10 * MIB);
        assert!(
            budget.admit().is_none(),
            "two reservations and one instance hold 90 MiB"
        );
        drop(reservations);
        assert!(first.end_call(), "the largest instance so far");
        // Measured: calls need 10 MiB, what the idle instance holds.
        assert_eq!(budget.used(), 10 * MIB);
        let more: Vec<_> = std::iter::from_fn(|| budget.admit()).take(20).collect();
        assert_eq!(
            more.len(),
            9,
            "nine more calls of 10 MiB fit beside the idle instance"
        );
        drop(more);
        assert!(
            first.start_call(),
            "the idle instance needs no more for a call"
        );
        drop(first);
        assert_eq!(budget.used(), 0, "everything is given back");
    }

    #[test]
    fn growth_past_the_budget_is_refused_as_the_total_limit_and_changes_nothing() {
        let budget = Arc::new(MemoryBudget::new(40 * MIB, 64 * MIB));
        let mut a = instance(budget.admit().unwrap(), 10 * MIB);
        assert_eq!(
            a.reservation.bytes,
            40 * MIB,
            "alone, a call may grow to the whole budget"
        );
        let _ = a.end_call();
        let mut b = instance(budget.admit().unwrap(), 10 * MIB);
        assert!(!b.memory_growing(10 * MIB, 31 * MIB, None).unwrap());
        assert_eq!(b.hit, Some(Limit::MemoryTotal(40 * MIB)));
        assert_eq!((b.total, b.reservation.bytes), (10 * MIB, 10 * MIB));
        assert_eq!(budget.used(), 20 * MIB);
        b.hit = None;
        assert!(!b.memory_growing(10 * MIB, 65 * MIB, None).unwrap());
        assert_eq!(
            b.hit,
            Some(Limit::Memory(64 * MIB)),
            "the instance's own cap first"
        );
        drop((a, b));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_lone_call_always_starts_even_when_idle_instances_fill_the_budget() {
        let budget = Arc::new(MemoryBudget::new(16 * MIB, 64 * MIB));
        let mut idle: Vec<_> = (0..4)
            .map(|_| {
                let mut limiter = instance(MemoryReservation::none(&budget), 4 * MIB);
                let _ = limiter.end_call();
                limiter
            })
            .collect();
        assert_eq!(budget.used(), 16 * MIB);
        assert!(idle[0].start_call(), "nothing else runs");
        assert!(
            !idle[1].start_call(),
            "a second call waits: no room for it to grow"
        );
        assert!(budget.admit().is_none());
        let _ = idle[0].end_call();
        assert!(idle[1].start_call());
        drop(idle);
        assert_eq!(budget.used(), 0);
    }
}
