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
//! Both events' hooks are metered as one connection's ([`SessionInfo::hook_spend`]): the model
//! calls they make share one `limits.max_hook_model_calls` (and `limits.max_total_tokens`), as a
//! chat's hooks do; what they spent is logged when `session_end` is over.
//!
//! [`HookFactory::uses_session_start`]: crate::hooks::HookFactory::uses_session_start

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::hooks::spend::HookSpend;
use crate::hooks::{HookStack, SessionInfo};

/// An open session, from its start to its end.
struct Open {
    /// Cancelled once the session's `session_start` run is over.
    started: CancellationToken,
    /// The connection's hook model calls, shared by `session_start` and `session_end`.
    spend: Arc<HookSpend>,
}

#[derive(Default)]
pub(crate) struct SessionEvents {
    /// Each open session: its `session_start` run and its hooks' meter.
    starting: Mutex<HashMap<String, Open>>,
    tasks: TaskTracker,
    /// Ends the runs still going (shutdown).
    stop: CancellationToken,
}

impl SessionEvents {
    fn starting(&self) -> MutexGuard<'_, HashMap<String, Open>> {
        match self.starting.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Starts the session's `session_start` hooks, metered by `spend` (the connection's, until
    /// its end), and returns at once.
    pub(crate) fn start(&self, hooks: HookStack, session: SessionInfo, spend: Arc<HookSpend>) {
        let done = CancellationToken::new();
        let session = session.with_hook_spend(spend.clone());
        let open = Open {
            started: done.clone(),
            spend,
        };
        self.starting().insert(session.session_id.clone(), open);
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
        let open = self.starting().remove(&session.session_id);
        let (started, session) = match open {
            Some(open) => (Some(open.started), session.with_hook_spend(open.spend)),
            None => (None, session),
        };
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            let end = async {
                if let Some(started) = started {
                    started.cancelled().await;
                }
                hooks.session_end(&session).await;
                log_spend(&session);
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
            .is_some_and(|open| !open.started.is_cancelled())
    }

    /// Waits until the session's `session_start` is over, at most `limit`; `false` when it was
    /// not over in time.
    pub(crate) async fn started(&self, session_id: &str, limit: Duration) -> bool {
        let Some(done) = self
            .starting()
            .get(session_id)
            .map(|open| open.started.clone())
        else {
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

/// What the connection's hooks spent on model calls (a chat's go into its `done.usage`; a
/// connection has no such frame).
fn log_spend(session: &SessionInfo) {
    let spent = session.hook_spend().usage();
    if spent.hook_calls > 0 {
        tracing::info!(
            session = %session.session_id,
            hook_calls = spent.hook_calls,
            hook_prompt_tokens = spent.hook_prompt_tokens,
            hook_completion_tokens = spent.hook_completion_tokens,
            "the connection's session_start and session_end hooks called the model"
        );
    }
}
