//! One subscriber's queue of a run's events, bounded in bytes: what a slow reader can make the
//! server hold.
//!
//! Each subscriber has its own queue (not a shared ring), so that the one that falls behind is
//! the one that is cut: once what it has not read yet would pass the bound, its queue is
//! emptied at once (the memory goes back then, not when the reader wakes up) and the reader
//! gets [`Recv::Cut`]; it can subscribe again and gets the Task as it is, then the events
//! after. Hand-written because the bound is in bytes, which no channel crate counts.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// What a reader gets.
pub(crate) enum Recv<T> {
    Event(T),
    /// The run's events are over (after every event queued).
    Closed,
    /// The reader fell more than the bound behind; its queue was dropped.
    Cut,
}

/// The publisher's end of one subscriber's queue.
pub(crate) struct QueueSender<T>(Arc<Shared<T>>);

/// The subscriber's end.
pub(crate) struct QueueReceiver<T>(Arc<Shared<T>>);

struct Shared<T> {
    state: Mutex<State<T>>,
    /// Woken on each push, cut or close.
    changed: Notify,
}

struct State<T> {
    /// Each event with the bytes it is counted for.
    events: VecDeque<(T, usize)>,
    bytes: usize,
    cut: bool,
    closed: bool,
}

/// A new queue.
pub(crate) fn queue<T>() -> (QueueSender<T>, QueueReceiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            events: VecDeque::new(),
            bytes: 0,
            cut: false,
            closed: false,
        }),
        changed: Notify::new(),
    });
    (QueueSender(Arc::clone(&shared)), QueueReceiver(shared))
}

impl<T> Shared<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T> QueueSender<T> {
    /// Queues `event`, counted as `bytes`, unless that takes the unread events over
    /// `max_bytes` (the reader is then cut: `false`, and this sender is done with). An event
    /// always fits an empty queue, so a reader that keeps up is never cut, whatever the size
    /// of one event.
    pub(crate) fn push(&self, event: T, bytes: usize, max_bytes: usize) -> bool {
        let mut state = self.0.lock();
        if state.cut || state.closed {
            return false;
        }
        if !state.events.is_empty() && state.bytes.saturating_add(bytes) > max_bytes {
            state.cut = true;
            state.events = VecDeque::new();
            state.bytes = 0;
        } else {
            state.bytes += bytes;
            state.events.push_back((event, bytes));
        }
        let kept = !state.cut;
        drop(state);
        self.0.changed.notify_one();
        kept
    }

    /// Ends the events: the reader gets what is queued, then [`Recv::Closed`].
    pub(crate) fn close(&self) {
        self.0.lock().closed = true;
        self.0.changed.notify_one();
    }

    /// Whether the reader is gone (its receiver dropped).
    pub(crate) fn is_abandoned(&self) -> bool {
        Arc::strong_count(&self.0) == 1
    }
}

impl<T> Drop for QueueSender<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T> QueueReceiver<T> {
    /// The next event, or why there is none. Cancel-safe: an event is taken only when this
    /// returns it.
    pub(crate) async fn recv(&mut self) -> Recv<T> {
        loop {
            let notified = self.0.changed.notified();
            {
                let mut state = self.0.lock();
                if state.cut {
                    return Recv::Cut;
                }
                if let Some((event, bytes)) = state.events.pop_front() {
                    state.bytes -= bytes;
                    return Recv::Event(event);
                }
                if state.closed {
                    return Recv::Closed;
                }
            }
            // `notify_one` keeps a permit when no one waits, so a push between the check and
            // this await is not missed.
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(recv: Recv<u64>) -> Option<u64> {
        match recv {
            Recv::Event(n) => Some(n),
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_reader_that_keeps_up_gets_every_event_then_the_close() {
        let (tx, mut rx) = queue();
        for n in 0..3 {
            assert!(tx.push(n, 10, 25));
            assert_eq!(number(rx.recv().await), Some(n));
        }
        assert!(tx.push(9, 1000, 25), "one event fits an empty queue");
        tx.close();
        assert_eq!(number(rx.recv().await), Some(9));
        assert!(matches!(rx.recv().await, Recv::Closed));
    }

    #[tokio::test]
    async fn a_reader_that_falls_behind_is_cut_and_its_queue_freed() {
        let (tx, mut rx) = queue();
        assert!(tx.push(0, 10, 25));
        assert!(tx.push(1, 10, 25));
        assert!(!tx.push(2, 10, 25), "the third would pass 25 bytes");
        assert!(!tx.push(3, 1, 25), "a cut reader gets nothing more");
        assert!(matches!(rx.recv().await, Recv::Cut));
        assert!(!tx.is_abandoned());
        drop(rx);
        assert!(tx.is_abandoned());
    }
}
