//! Group commit: one flush shared by every caller that waits for one at the same time.
//!
//! A save needs a flush of its directory that *starts after* its rename: such a flush makes
//! the rename durable, whoever runs it. So callers that arrive while no flush runs start one;
//! callers that arrive while a flush runs (which may have started before their rename) join the
//! next, which the first of them starts when the running one ends. Every caller in a batch gets
//! that flush's outcome: a failed flush fails exactly its batch, and a caller is never answered
//! by a flush that started before it arrived.
//!
//! The native file store shares one [`SharedFlush`] among the saves into one directory
//! ([`crate::DirStore`]); the wasmtime host shares one among every component instance that
//! syncs the same directory, so the file-store component's saves share their directory
//! flushes across instances too (inside one instance there is only one thread, and never anyone
//! to share with).

use std::io;
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

/// Flushes shared by the callers waiting for one at the same time (see the module docs). Every
/// caller of one `SharedFlush` must pass a flush that makes the same thing durable (the same
/// directory): a batch is served by the flush its first caller passed.
#[derive(Debug, Default)]
pub struct SharedFlush {
    state: Mutex<State>,
    done: Condvar,
}

#[derive(Debug, Default)]
struct State {
    running: bool,
    /// The batch the next flush to start serves.
    joining: Arc<Batch>,
}

/// One flush's outcome, set once it ends.
#[derive(Debug, Default)]
struct Batch(OnceLock<Result<(), FlushError>>);

/// What a failed flush said, for every caller of its batch: its kind, OS error code and message.
type FlushError = (io::ErrorKind, Option<i32>, String);

impl SharedFlush {
    /// Waits for a run of `flush` (this caller's or another's) that starts after this call,
    /// doing `meanwhile` first: any other caller may start the flush this call waits for while
    /// it does (a save flushes its version record there, beside the directory flush).
    pub fn run(
        &self,
        flush: impl FnOnce() -> io::Result<()>,
        meanwhile: impl FnOnce(),
    ) -> io::Result<()> {
        // Nothing panics while holding the state, so a poisoned lock still holds a true one.
        let mine = Arc::clone(&self.lock().joining);
        meanwhile();
        let mut state = self.lock();
        // A caller only ever starts the flush of its own batch: the batch waiting to start is
        // swapped out only when a flush starts, so it stays this caller's until one does.
        let mut flush = Some(flush);
        loop {
            if let Some(outcome) = mine.0.get() {
                return outcome.clone().map_err(|(kind, code, message)| match code {
                    Some(code) => io::Error::from_raw_os_error(code),
                    None => io::Error::new(kind, message),
                });
            }
            if let Some(flush) = flush.take_if(|_| !state.running) {
                state.running = true;
                let batch = std::mem::take(&mut state.joining);
                drop(state);
                let result = flush();
                let _ = batch.0.set(
                    result
                        .as_ref()
                        .map(|_| ())
                        .map_err(|e| (e.kind(), e.raw_os_error(), e.to_string())),
                );
                state = self.lock();
                state.running = false;
                self.done.notify_all();
                if Arc::ptr_eq(&batch, &mine) {
                    return result;
                }
                continue;
            }
            state = self
                .done
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_lone_caller_runs_its_own_flush() {
        let shared = SharedFlush::default();
        let ran = AtomicUsize::new(0);
        let mut meanwhile_ran = false;
        shared
            .run(
                || {
                    ran.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
                || meanwhile_ran = true,
            )
            .unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert!(meanwhile_ran);
    }

    /// A first caller whose flush runs until `release` is sent (and then counts itself in
    /// `runs`): started, and running its flush, when this returns.
    fn a_running_flush(
        shared: &Arc<SharedFlush>,
        runs: &Arc<AtomicUsize>,
    ) -> (std::thread::JoinHandle<io::Result<()>>, mpsc::Sender<()>) {
        let (started_tx, started_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (shared, runs) = (Arc::clone(shared), Arc::clone(runs));
        let first = std::thread::spawn(move || {
            shared.run(
                || {
                    started_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
                || {},
            )
        });
        started_rx.recv().unwrap();
        (first, release_tx)
    }

    /// `n` callers arriving now, each flushing with `flush` and answering what `after` says
    /// once answered; returns when all have arrived and had time to wait for the state.
    fn callers_arriving<T: Send + 'static>(
        shared: &Arc<SharedFlush>,
        n: usize,
        flush: impl Fn() -> io::Result<()> + Send + Sync + 'static,
        after: impl Fn() -> T + Send + Sync + 'static,
    ) -> Vec<std::thread::JoinHandle<io::Result<T>>> {
        let arrived = Arc::new(AtomicUsize::new(0));
        let (flush, after) = (Arc::new(flush), Arc::new(after));
        let callers = (0..n)
            .map(|_| {
                let (shared, arrived) = (Arc::clone(shared), Arc::clone(&arrived));
                let (flush, after) = (Arc::clone(&flush), Arc::clone(&after));
                std::thread::spawn(move || {
                    shared.run(
                        || flush(),
                        || {
                            arrived.fetch_add(1, Ordering::SeqCst);
                        },
                    )?;
                    Ok(after())
                })
            })
            .collect();
        while arrived.load(Ordering::SeqCst) < n {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Time for them to be waiting for the state (none may start a flush now).
        std::thread::sleep(Duration::from_millis(20));
        callers
    }

    /// Callers that arrive while a flush runs are not answered by it (it may have started
    /// before their renames): they share the next one, run once for all of them.
    #[test]
    fn callers_arriving_during_a_flush_share_the_next_one_and_never_the_running_one() {
        let shared = Arc::new(SharedFlush::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let (first, release) = a_running_flush(&shared, &runs);
        let (counted, seen) = (Arc::clone(&runs), Arc::clone(&runs));
        let later = callers_arriving(
            &shared,
            5,
            move || {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(())
            },
            // Answered only after a flush that started after this caller arrived.
            move || seen.load(Ordering::SeqCst),
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0, "no flush but the first ran");
        release.send(()).unwrap();
        first.join().unwrap().unwrap();
        for caller in later {
            let runs_when_answered = caller.join().unwrap().unwrap();
            assert!(
                runs_when_answered >= 2,
                "a late caller was answered by the flush that was running when it arrived"
            );
        }
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "the five late callers shared one flush"
        );
    }

    /// A failed flush fails every caller of its batch, with its OS error, and no one else.
    #[test]
    fn a_failed_flush_fails_exactly_its_batch() {
        let shared = Arc::new(SharedFlush::default());
        let (first, release) = a_running_flush(&shared, &Arc::default());
        let failing = callers_arriving(
            &shared,
            3,
            || Err(io::Error::from_raw_os_error(libc_eio())),
            || (),
        );
        release.send(()).unwrap();
        assert!(
            first.join().unwrap().is_ok(),
            "the first batch's flush succeeded"
        );
        for caller in failing {
            let err = caller.join().unwrap().unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc_eio()), "{err}");
        }
        // The next caller gets a flush of its own, not the failed outcome.
        assert!(shared.run(|| Ok(()), || {}).is_ok());
    }

    /// EIO's number on every Unix this builds for.
    fn libc_eio() -> i32 {
        5
    }
}
