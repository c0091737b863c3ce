//! The idle connections of one model client to its server, and the task that drops those idle
//! too long or closed by the server.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hyper::body::{Body as _, Incoming};
use tokio::time::Instant;

use super::conn::Conn;
use super::IDLE_FOR;

/// The most chunks read from a parked reply's rest when it is taken (what a server writes after
/// the protocol's last event: the body's end, now and then a blank line or a comment).
const MAX_REST_CHUNKS: usize = 16;

/// What a model client's requests share: its idle connections and the connect timeout.
pub(super) struct Shared {
    /// Idle connections to the pool's server, the most recently used last.
    idle: Mutex<Vec<Idle>>,
    pub(super) connect_timeout: Duration,
    /// The running sweeper's generation (0: none runs), so that a sweeper that ends clears only
    /// its own mark.
    sweeper: AtomicU64,
    generations: AtomicU64,
}

/// A connection waiting for its next request.
struct Idle {
    conn: Conn,
    /// The rest of its last reply when the reader stopped at the protocol's last event before
    /// the body's end came (a server that writes the end on its own); read when it is taken.
    rest: Option<Incoming>,
    since: Instant,
}

impl Idle {
    /// Still open, its last reply read to the end (what is already there of its rest is read
    /// now), and ready for a request.
    fn ready(&mut self) -> bool {
        if let Some(mut rest) = self.rest.take() {
            let cx = &mut Context::from_waker(Waker::noop());
            let mut ended = false;
            for _ in 0..MAX_REST_CHUNKS {
                self.conn.drive(cx);
                match Pin::new(&mut rest).poll_frame(cx) {
                    Poll::Ready(None) => {
                        ended = true;
                        break;
                    }
                    Poll::Ready(Some(Ok(_))) => continue,
                    Poll::Ready(Some(Err(_))) | Poll::Pending => break,
                }
            }
            if !ended {
                return false;
            }
        }
        self.since.elapsed() < IDLE_FOR && self.conn.reusable()
    }
}

impl Shared {
    pub(super) fn new(connect_timeout: Duration) -> Shared {
        Shared {
            idle: Mutex::new(Vec::new()),
            connect_timeout,
            sweeper: AtomicU64::new(0),
            generations: AtomicU64::new(0),
        }
    }

    /// The most recently used idle connection that is ready for a request; those found closed
    /// or too old on the way are dropped (closed outside the lock).
    pub(super) fn take(&self) -> Option<Conn> {
        let mut dead = Vec::new();
        let found = {
            let mut idle = self.lock();
            loop {
                let Some(mut waiting) = idle.pop() else {
                    break None;
                };
                if waiting.ready() {
                    break Some(waiting.conn);
                }
                dead.push(waiting);
            }
        };
        drop(dead);
        found
    }

    /// How many connections wait (for the tests).
    #[cfg(test)]
    pub(super) fn idle_count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts `conn` back for the next request; `rest` is its last reply's body when its end has
    /// not been read yet.
    pub(super) fn park(self: &Arc<Self>, conn: Conn, rest: Option<Incoming>) {
        self.lock().push(Idle {
            conn,
            rest,
            since: Instant::now(),
        });
        if self.sweeper.load(Ordering::Acquire) != 0 {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
        if self
            .sweeper
            .compare_exchange(0, generation, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let sweeper = Sweeper {
            shared: Arc::downgrade(self),
            generation,
        };
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(IDLE_FOR / 2).await;
                let Some(shared) = sweeper.shared.upgrade() else {
                    return;
                };
                if !shared.sweep(generation) {
                    return;
                }
            }
        });
    }

    /// Drops the connections idle for [`IDLE_FOR`] or closed by the server; whether any is left
    /// waiting (if none, the sweeper `generation` stops, and the next connection parked starts
    /// one again).
    fn sweep(&self, generation: u64) -> bool {
        let mut dead = Vec::new();
        let any = {
            let mut idle = self.lock();
            let mut kept = Vec::with_capacity(idle.len());
            for mut waiting in idle.drain(..) {
                if waiting.ready() {
                    kept.push(waiting);
                } else {
                    dead.push(waiting);
                }
            }
            *idle = kept;
            let any = !idle.is_empty();
            if !any {
                // Under the lock: a connection parked after this starts a sweeper of its own.
                let _ = self.sweeper.compare_exchange(
                    generation,
                    0,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
            any
        };
        drop(dead);
        any
    }
}

/// Clears the pool's mark of its sweeper when the sweeper's task ends, however it ends (the
/// runtime shut down with it, too), unless another sweeper runs by then.
struct Sweeper {
    shared: Weak<Shared>,
    generation: u64,
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            let _ = shared.sweeper.compare_exchange(
                self.generation,
                0,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }
}
