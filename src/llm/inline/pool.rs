//! The idle connections of one model client to its server, and the task that drops those idle
//! too long.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::conn::Conn;
use super::IDLE_FOR;

pub(super) struct Shared {
    /// Idle connections to the pool's server, the most recently used last.
    idle: Mutex<Vec<Idle>>,
    pub(super) connect_timeout: Duration,
    /// A task drops the connections idle too long while any wait (started by the first parked).
    sweeping: AtomicBool,
}

pub(super) struct Idle {
    conn: Conn,
    since: Instant,
}

impl Shared {
    pub(super) fn new(connect_timeout: Duration) -> Shared {
        Shared {
            idle: Mutex::new(Vec::new()),
            connect_timeout,
            sweeping: AtomicBool::new(false),
        }
    }

    /// The most recently used idle connection that is still open.
    pub(super) fn take(&self) -> Option<Conn> {
        let mut idle = self.lock();
        while let Some(Idle { mut conn, since }) = idle.pop() {
            if since.elapsed() < IDLE_FOR && conn.reusable() {
                return Some(conn);
            }
        }
        None
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn park(self: &Arc<Self>, conn: Conn) {
        self.lock().push(Idle {
            conn,
            since: Instant::now(),
        });
        if self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.sweeping.store(false, Ordering::Release);
            return;
        };
        let sweeper = Sweeper(Arc::downgrade(self));
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(IDLE_FOR / 2).await;
                let Some(shared) = sweeper.0.upgrade() else {
                    return;
                };
                if !shared.sweep() {
                    return;
                }
            }
        });
    }

    /// Drops the connections idle for [`IDLE_FOR`]; whether any is left waiting (if none, the
    /// sweeper stops, and the next connection parked starts one again).
    fn sweep(&self) -> bool {
        let mut idle = self.lock();
        idle.retain(|connection| connection.since.elapsed() < IDLE_FOR);
        let any = !idle.is_empty();
        if !any {
            // Under the lock: a connection parked after this starts a sweeper of its own.
            self.sweeping.store(false, Ordering::Release);
        }
        any
    }
}

/// Marks the pool as without a sweeper when its task ends, however it ends (the runtime shut
/// down with it, too).
struct Sweeper(Weak<Shared>);

impl Drop for Sweeper {
    fn drop(&mut self) {
        if let Some(shared) = self.0.upgrade() {
            shared.sweeping.store(false, Ordering::Release);
        }
    }
}
