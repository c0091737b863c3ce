//! [`AsyncHooks`]: the queue and workers behind `async: true` hooks (docs/protocol.md §11
//! and §15).
//!
//! A chain hands an async hook over as a [`Job`] (its input as it stands at the hook's place in
//! the chain) and goes on at once. The rules:
//! - Bounded: at most `limits.async_hook_queue` runs wait (default 1 024), and at most
//!   `limits.async_hook_queue_per_connection` of them (default 64) from one connection (its
//!   session id). When the queue is full, a run from a connection holding fewer runs than the
//!   largest holder still gets in, and that holder's newest waiting run is dropped instead: each
//!   connection keeps at least an equal share, so one client that opens many connections cannot
//!   fill the queue for the others. [`WORKERS`] runs go at a time, the connections with waiting
//!   runs taking turns (one run each, round robin).
//! - A run that finds no room is dropped, logged at `warn` with its chat, event, hook, tool and
//!   a hash of the tool's arguments ([`Dropped`]), and counted in
//!   `hookwire_async_hook_drops_total{hook,event}`; a hook with `on_full: wait` (an audit hook)
//!   makes its chat wait for room instead, at most what is left of its chain's budget.
//! - Each run is bounded like any hook: its own timeout (not cut by a chain's budget: it is on
//!   no chain's clock), a command's processes killed with their group when it ends. A hook that
//!   calls the model takes its calls from its chat's ([`HookSpend`]).
//! - Its answer is read only for `systemMessage` (unless `suppressOutput`): a `notice` of the
//!   chat that ran the hook, sent only while that chat still runs ([`LateEvents`]); otherwise
//!   dropped. Everything else it answers is ignored. How it ended is counted like a chain's run
//!   (`hookwire_external_hook_runs_total`).
//! - [`AsyncHooks::shutdown`] (the server stopping) takes no more runs, drops the waiting ones,
//!   gives the running ones a grace period and then ends them (which kills their processes).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::hook_run::{over_limit, run_hook, RunHook};
use super::runner::Runner;
use crate::hooks::external::hook::{Envelope, Event, EventState, HookDef, OnFull};
use crate::hooks::spend::HookSpend;
use crate::hooks::sync::lock;
use crate::hooks::LateEvents;
use crate::types::NoticeLevel;

/// Async runs that go at the same time; the rest wait in the queue.
pub(crate) const WORKERS: usize = 4;

/// The default `limits.async_hook_queue`.
pub(crate) const DEFAULT_QUEUE: usize = 1024;

/// The default `limits.async_hook_queue_per_connection`.
pub(crate) const DEFAULT_QUEUE_PER_CONNECTION: usize = 64;

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
    /// The chat's hook model calls.
    pub(crate) spend: Arc<HookSpend>,
}

/// Why a run found no room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Full {
    Queue,
    Connection,
    /// The queue was full and a connection holding fewer runs needed the room.
    Evicted,
}

impl Full {
    fn why(self) -> &'static str {
        match self {
            Full::Queue => "the async hook queue is full (limits.async_hook_queue)",
            Full::Connection => "this connection holds as many queued async hook runs as it may (limits.async_hook_queue_per_connection)",
            Full::Evicted => "the async hook queue is full (limits.async_hook_queue) and this connection held the most waiting runs, so its newest made room for a connection holding fewer",
        }
    }
}

/// The runs waiting for a worker, by connection.
#[derive(Default)]
struct Waiting {
    by_connection: HashMap<String, VecDeque<Box<Job>>>,
    /// The connections with waiting runs, in the order of their next turn.
    turns: VecDeque<String>,
    total: usize,
}

impl Waiting {
    /// Queues `job`. When the queue is full, a connection that holds fewer runs than the one
    /// holding the most still gets in: that holder's newest run makes room and is handed back
    /// (`Ok(Some(evicted))`) to be dropped. So one client that opens many connections cannot
    /// fill the queue for the others: each connection keeps at least an equal share.
    fn push(
        &mut self,
        job: Box<Job>,
        limits: Limits,
    ) -> Result<Option<Box<Job>>, (Box<Job>, Full)> {
        let connection = job.envelope.session_id.clone();
        let queued = self.by_connection.get(&connection).map_or(0, VecDeque::len);
        if queued >= limits.per_connection {
            return Err((job, Full::Connection));
        }
        let evicted = if self.total >= limits.capacity {
            match self.evict_from_largest_holder(queued) {
                Some(evicted) => Some(evicted),
                None => return Err((job, Full::Queue)),
            }
        } else {
            None
        };
        if queued == 0 {
            self.turns.push_back(connection.clone());
        }
        self.by_connection
            .entry(connection)
            .or_default()
            .push_back(job);
        self.total += 1;
        Ok(evicted)
    }

    /// The newest run of the connection holding the most runs, if it holds more than `than`.
    fn evict_from_largest_holder(&mut self, than: usize) -> Option<Box<Job>> {
        let (largest, held) = self
            .by_connection
            .iter()
            .map(|(connection, runs)| (connection, runs.len()))
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))?;
        if held <= than {
            return None;
        }
        let largest = largest.clone();
        let runs = self.by_connection.get_mut(&largest)?;
        let evicted = runs.pop_back()?;
        if runs.is_empty() {
            self.by_connection.remove(&largest);
            self.turns.retain(|connection| *connection != largest);
        }
        self.total -= 1;
        Some(evicted)
    }

    /// The next run: the first of the connection whose turn it is (it goes to the back of the
    /// line if it has more).
    fn pop(&mut self) -> Option<Box<Job>> {
        let connection = self.turns.pop_front()?;
        let runs = self.by_connection.get_mut(&connection)?;
        let job = runs.pop_front();
        if runs.is_empty() {
            self.by_connection.remove(&connection);
        } else {
            self.turns.push_back(connection);
        }
        if job.is_some() {
            self.total -= 1;
        }
        job
    }

    fn clear(&mut self) {
        *self = Waiting::default();
    }
}

#[derive(Debug, Clone, Copy)]
struct Limits {
    capacity: usize,
    per_connection: usize,
}

/// What the queue's callers and its dispatcher share.
struct Shared {
    waiting: Mutex<Waiting>,
    limits: Limits,
    /// A run was queued (the dispatcher is its only waiter, so a permit is kept).
    queued: Notify,
    /// A run left the queue: chats waiting for room look again.
    freed: Notify,
}

impl Shared {
    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        lock(&self.waiting)
    }

    /// Queues `job`; a run it displaced (see [`Waiting::push`]) is dropped, logged and counted.
    fn push(&self, job: Box<Job>) -> Result<(), (Box<Job>, Full)> {
        let evicted = self.waiting().push(job, self.limits)?;
        self.queued.notify_one();
        if let Some(evicted) = evicted {
            drop_run(&evicted, Full::Evicted.why());
        }
        Ok(())
    }

    fn pop(&self) -> Option<Box<Job>> {
        let job = self.waiting().pop();
        if job.is_some() {
            self.freed.notify_waiters();
        }
        job
    }
}

/// A dropped run, as its log line names it: the chat, the event, the hook, the tool and a hash
/// of the tool's arguments (never the arguments: they may hold what the log should not).
struct Dropped<'a>(&'a Job);

impl std::fmt::Display for Dropped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let job = self.0;
        write!(
            f,
            "chat={} event={} hook={}",
            job.envelope.run_id.as_deref().unwrap_or("-"),
            job.event.as_str(),
            job.hook.name
        )?;
        if let Some(tool) = &job.state.tool_name {
            write!(f, " tool={tool}")?;
        }
        if let Some(arguments) = &job.state.tool_arguments {
            write!(f, " arguments_sha256={}", arguments_hash(arguments))?;
        }
        Ok(())
    }
}

/// The first 16 hex digits of the SHA-256 of the arguments' JSON: enough to match a dropped run
/// with the tool call in another record, nothing of their content.
fn arguments_hash(arguments: &Value) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(arguments.to_string().as_bytes());
    hex::encode(&digest[..8])
}

/// Logs and counts a run that was not queued.
fn drop_run(job: &Job, why: &str) {
    let event = job.event.as_str();
    tracing::warn!(
        chat = job.envelope.run_id.as_deref().unwrap_or("-"),
        session = %job.envelope.session_id,
        event,
        hook = %job.hook.name,
        tool = job.state.tool_name.as_deref().unwrap_or("-"),
        "{why}; this async hook run was dropped: {}",
        Dropped(job)
    );
    let labels = [
        ("hook", job.hook.name.clone()),
        ("event", event.to_string()),
    ];
    metrics::counter!("hookwire_async_hook_drops_total", &labels).increment(1);
}

/// The queue of async hook runs; shared by every chat (and connection) of a server.
pub(crate) struct AsyncHooks {
    shared: Arc<Shared>,
    /// The runner, until the first run starts the dispatcher (which needs a runtime; the hooks
    /// may be wired outside one).
    idle: Mutex<Option<Arc<dyn RunHook>>>,
    /// No more runs are taken (shutdown began).
    closing: CancellationToken,
    /// The running ones end now.
    stop: CancellationToken,
    /// The dispatcher and the running runs.
    tasks: TaskTracker,
}

impl AsyncHooks {
    /// The server's queue: `capacity` runs (at least 1), `per_connection` of them from one
    /// connection (at least 1), that `runner` runs.
    pub(crate) fn serving(runner: Arc<Runner>, capacity: usize, per_connection: usize) -> Self {
        Self::new(runner, capacity, per_connection)
    }

    /// A queue of `capacity` runs (at least 1), `per_connection` from one connection (at least
    /// 1), served by `runner`.
    pub(super) fn new(runner: Arc<dyn RunHook>, capacity: usize, per_connection: usize) -> Self {
        let limits = Limits {
            capacity: capacity.max(1),
            per_connection: per_connection.max(1),
        };
        Self {
            shared: Arc::new(Shared {
                waiting: Mutex::new(Waiting::default()),
                limits,
                queued: Notify::new(),
                freed: Notify::new(),
            }),
            idle: Mutex::new(Some(runner)),
            closing: CancellationToken::new(),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
        }
    }

    /// Queues a run without waiting; `false` when it was dropped (no room, or the server is
    /// stopping).
    pub(crate) fn submit(&self, job: Job) -> bool {
        if self.closing.is_cancelled() {
            tracing::debug!(hook = %job.hook.name, "the server is stopping; an async hook run was not started");
            return false;
        }
        self.start();
        match self.shared.push(Box::new(job)) {
            Ok(()) => true,
            Err((job, full)) => {
                drop_run(&job, full.why());
                false
            }
        }
    }

    /// A chain hands a run over: queued at once if there is room; otherwise dropped, unless the
    /// hook has `on_full: wait`, which waits for room up to `wait` (what is left of the chain's
    /// budget). `false` when it was dropped.
    pub(crate) async fn hand_over(&self, job: Job, wait: Duration) -> bool {
        if job.hook.on_full != OnFull::Wait {
            return self.submit(job);
        }
        let deadline = tokio::time::Instant::now() + wait;
        let mut job = Box::new(job);
        loop {
            if self.closing.is_cancelled() {
                tracing::debug!(hook = %job.hook.name, "the server is stopping; an async hook run was not started");
                return false;
            }
            self.start();
            // Registered before the look, so a run that leaves in between still wakes it.
            let freed = self.shared.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            let full = match self.shared.push(job) {
                Ok(()) => return true,
                Err((back, full)) => {
                    job = back;
                    full
                }
            };
            tokio::select! {
                _ = &mut freed => {}
                _ = self.closing.cancelled() => {}
                _ = tokio::time::sleep_until(deadline) => {
                    drop_run(&job, &format!("{}, and no room came within the chain's budget (on_full: wait)", full.why()));
                    return false;
                }
            }
        }
    }

    /// Starts the dispatcher, once.
    fn start(&self) {
        let idle = lock(&self.idle).take();
        if let Some(runner) = idle {
            let tasks = self.tasks.clone();
            let dispatch = dispatch(
                self.shared.clone(),
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
        self.shared.waiting().clear();
        self.shared.freed.notify_waiters();
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

impl Drop for AsyncHooks {
    /// The dispatcher ends with the queue (the server calls [`AsyncHooks::shutdown`] first).
    fn drop(&mut self) {
        self.closing.cancel();
    }
}

/// Takes runs from the queue, [`WORKERS`] at a time, until shutdown; runs that started finish
/// within their timeouts.
async fn dispatch(
    shared: Arc<Shared>,
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
        let job = loop {
            if let Some(job) = shared.pop() {
                break job;
            }
            tokio::select! {
                biased;
                _ = closing.cancelled() => return,
                _ = shared.queued.notified() => {}
            }
        };
        let runner = runner.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            let _slot = slot;
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = run(*job, runner.as_ref()) => {}
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
        spend,
    } = job;
    if hook.handler.calls_model() {
        if let Err(exhausted) = spend.room() {
            let mut warnings = Vec::new();
            over_limit(&spend, &hook, event, exhausted, &mut warnings);
            for warning in warnings {
                if let Some(chat) = &notices {
                    chat.notify(NoticeLevel::Warn, warning, source.to_string());
                }
            }
            return;
        }
    }
    let (output, _, _) = run_hook(
        runner,
        &hook,
        event,
        &input,
        hook.timeout,
        (&state, &envelope),
        &spend,
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
