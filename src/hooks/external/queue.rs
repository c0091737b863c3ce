//! [`AsyncHooks`]: the queue and workers behind `async: true` hooks (PROTOCOL section 11).
//!
//! A chain hands an async hook over as a [`Job`] (its input as it stands at the hook's place in
//! the chain) and goes on at once. The rules:
//! - Bounded: at most `limits.async_hook_queue` runs wait (default 1 024); a run that finds the
//!   queue full is dropped, logged at `warn` and counted in
//!   `hookwire_async_hook_drops_total{hook,event}`. [`WORKERS`] runs go at a time.
//! - Each run is bounded like any hook: its own timeout (not cut by a chain's budget: it is on
//!   no chain's clock), a command's processes killed with their group when it ends.
//! - Its answer is read only for `systemMessage` (unless `suppressOutput`): a `notice` of the
//!   chat that ran the hook, sent only while that chat still runs ([`LateEvents`]); otherwise
//!   dropped. Everything else it answers is ignored. How it ended is counted like a chain's run
//!   (`hookwire_external_hook_runs_total`).
//! - [`AsyncHooks::shutdown`] (the server stopping) takes no more runs, drops the waiting ones,
//!   gives the running ones a grace period and then ends them (which kills their processes).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::chain::{run_hook, RunHook};
use super::config::HookDef;
use super::event::Event;
use super::protocol::{Envelope, EventState};
use super::runner::Runner;
use crate::hooks::LateEvents;
use crate::types::NoticeLevel;

/// Async runs that go at the same time; the rest wait in the queue.
pub(crate) const WORKERS: usize = 4;

/// The default `limits.async_hook_queue`.
pub(crate) const DEFAULT_QUEUE: usize = 1024;

/// One async hook's run, as its chain left it.
pub(crate) struct Job {
    pub(crate) hook: Arc<HookDef>,
    pub(crate) event: Event,
    pub(crate) input: Value,
    /// What its answer is read against (the dialects read some answers relative to the input).
    pub(crate) state: EventState,
    pub(crate) envelope: Envelope,
    /// The chat that ran it, for its notice.
    pub(crate) notices: Option<LateEvents>,
    /// The notice's `source`.
    pub(crate) source: &'static str,
}

/// What the dispatcher takes when it starts: the queue's other end and the runner.
type Idle = (mpsc::Receiver<Job>, Arc<dyn RunHook>);

/// The queue of async hook runs; shared by every chat (and connection) of a server.
pub(crate) struct AsyncHooks {
    queue: mpsc::Sender<Job>,
    /// The queue's other end and the runner, until the first run starts the dispatcher (which
    /// needs a runtime; the hooks may be wired outside one).
    idle: Mutex<Option<Idle>>,
    /// No more runs are taken (shutdown began).
    closing: CancellationToken,
    /// The running ones end now.
    stop: CancellationToken,
    /// The dispatcher and the running runs.
    tasks: TaskTracker,
}

impl AsyncHooks {
    /// The server's queue: `capacity` runs (at least 1) that `runner` runs.
    pub(crate) fn serving(runner: Arc<Runner>, capacity: usize) -> Self {
        Self::new(runner, capacity)
    }

    /// A queue of `capacity` runs (at least 1) served by `runner`.
    pub(super) fn new(runner: Arc<dyn RunHook>, capacity: usize) -> Self {
        let (queue, receiver) = mpsc::channel(capacity.max(1));
        Self {
            queue,
            idle: Mutex::new(Some((receiver, runner))),
            closing: CancellationToken::new(),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
        }
    }

    /// Queues a run without waiting; `false` when it was dropped (the queue is full, or the
    /// server is stopping).
    pub(crate) fn submit(&self, job: Job) -> bool {
        if self.closing.is_cancelled() {
            tracing::debug!(hook = %job.hook.name, "the server is stopping; an async hook run was not started");
            return false;
        }
        self.start();
        match self.queue.try_send(job) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(job)) => {
                let event = job.event.as_str();
                tracing::warn!(hook = %job.hook.name, event, "the async hook queue is full (limits.async_hook_queue); this run was dropped");
                let labels = [
                    ("hook", job.hook.name.clone()),
                    ("event", event.to_string()),
                ];
                metrics::counter!("hookwire_async_hook_drops_total", &labels).increment(1);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Starts the dispatcher, once.
    fn start(&self) {
        let idle = match self.idle.lock() {
            Ok(mut idle) => idle.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some((receiver, runner)) = idle {
            let tasks = self.tasks.clone();
            let dispatch = dispatch(
                receiver,
                runner,
                self.closing.clone(),
                self.stop.clone(),
                tasks,
            );
            self.tasks.spawn(dispatch);
        }
    }

    /// Takes no more runs and drops the waiting ones; the running ones get `grace`, then are
    /// ended (their processes killed).
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.closing.cancel();
        self.tasks.close();
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "async hooks still running {:.1}s into the shutdown; ending them",
                grace.as_secs_f64()
            );
            self.stop.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(2), self.tasks.wait()).await;
        }
    }
}

/// Takes runs from the queue, [`WORKERS`] at a time, until shutdown, or until the queue is
/// dropped (with the [`AsyncHooks`]) and empty; runs that started finish within their timeouts.
async fn dispatch(
    mut queue: mpsc::Receiver<Job>,
    runner: Arc<dyn RunHook>,
    closing: CancellationToken,
    stop: CancellationToken,
    tasks: TaskTracker,
) {
    let slots = Arc::new(Semaphore::new(WORKERS));
    loop {
        // A slot first: a run leaves the queue only when it can start, so the queue's bound is
        // what waits.
        let slot = tokio::select! {
            biased;
            _ = closing.cancelled() => break,
            slot = slots.clone().acquire_owned() => slot,
        };
        let Ok(slot) = slot else { break };
        let job = tokio::select! {
            biased;
            _ = closing.cancelled() => break,
            job = queue.recv() => job,
        };
        let Some(job) = job else { break };
        let runner = runner.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            let _slot = slot;
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = run(job, runner.as_ref()) => {}
            }
        });
    }
}

/// One run: the hook within its own timeout, then its notice, if it gave one and its chat
/// still runs.
async fn run(job: Job, runner: &dyn RunHook) {
    let Job {
        hook,
        event,
        input,
        state,
        envelope,
        notices,
        source,
    } = job;
    let (output, _, _) = run_hook(
        runner,
        &hook,
        event,
        &input,
        hook.timeout,
        &state,
        &envelope,
    )
    .await;
    let output = match output {
        Ok(output) => output,
        Err(failure) => {
            tracing::warn!(hook = %hook.name, file = %hook.file.display(), line = hook.line, event = event.as_str(), error = %failure, "async hook failed");
            return;
        }
    };
    let Some(message) = output.system_message.filter(|_| !output.suppress_output) else {
        return;
    };
    let sent =
        notices.is_some_and(|chat| chat.notify(NoticeLevel::Info, message, source.to_string()));
    if !sent {
        tracing::debug!(hook = %hook.name, "an async hook's notice came after its chat ended (or with no chat); dropped");
    }
}

#[cfg(test)]
mod tests;
