//! The connection events off the connection's path (docs/protocol.md §11): `session_start` and
//! `session_end` hooks run in tasks of their own, so they never delay `pong`, other frames or the
//! connection's close.
//!
//! - `session_start` starts when the session opens. A chat of the session waits for it only when
//!   a hook factory's hooks use what it leaves ([`HookFactory::uses_session_start`]: the hook
//!   files, when they have `session_start` hooks that are not `async`), and at most the hook
//!   budget; otherwise not at all (a Rust hook's `session_start` may still be running when the
//!   first chat starts).
//! - `session_end` starts when the session has closed, after the session's `session_start` is
//!   over (so what that left is never put back after the end removed it).
//! - [`SessionEvents::shutdown`]: when the server stops, the runs still going get a grace
//!   period, then are ended (a command hook's processes are killed with them).
//!
//! [`HookFactory::uses_session_start`]: crate::hooks::HookFactory::uses_session_start

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::hooks::{HookStack, SessionInfo};

#[derive(Default)]
pub(crate) struct SessionEvents {
    /// Each open session's `session_start` run: the token is cancelled once the run is over.
    starting: Mutex<HashMap<String, CancellationToken>>,
    tasks: TaskTracker,
    /// Ends the runs still going (shutdown).
    stop: CancellationToken,
}

impl SessionEvents {
    fn starting(&self) -> MutexGuard<'_, HashMap<String, CancellationToken>> {
        match self.starting.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Starts the session's `session_start` hooks and returns at once.
    pub(crate) fn start(&self, hooks: HookStack, session: SessionInfo) {
        let done = CancellationToken::new();
        self.starting()
            .insert(session.session_id.clone(), done.clone());
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            // Over however it ends (a panic in a hook included: the stack isolates those).
            let _done = done.drop_guard();
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = hooks.session_start(&session) => {}
            }
        });
    }

    /// Starts the session's `session_end` hooks (once its `session_start` is over) and returns
    /// at once.
    pub(crate) fn end(&self, hooks: HookStack, session: SessionInfo) {
        let started = self.starting().remove(&session.session_id);
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            let end = async {
                if let Some(started) = started {
                    started.cancelled().await;
                }
                hooks.session_end(&session).await;
            };
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = end => {}
            }
        });
    }

    /// Whether the session's `session_start` is still running.
    pub(crate) fn is_starting(&self, session_id: &str) -> bool {
        self.starting()
            .get(session_id)
            .is_some_and(|done| !done.is_cancelled())
    }

    /// Waits until the session's `session_start` is over, at most `limit`; `false` when it was
    /// not over in time.
    pub(crate) async fn started(&self, session_id: &str, limit: Duration) -> bool {
        let Some(done) = self.starting().get(session_id).cloned() else {
            return true;
        };
        tokio::time::timeout(limit, done.cancelled()).await.is_ok()
    }

    /// Lets the runs still going finish within `grace`, then ends them.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.tasks.close();
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "session hooks still running {:.1}s into the shutdown; ending them",
                grace.as_secs_f64()
            );
            self.stop.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(2), self.tasks.wait()).await;
        }
    }
}
