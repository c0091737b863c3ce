//! The commands' thread: a single-threaded runtime of its own where every command run is started
//! and watched (its spawn, its pipes, its exit, its timeout).
//!
//! On the server's runtime a run would wake its chat's task five or six times (stdin written,
//! stdout and stderr at their end, the exit), each time waiting its turn behind every streaming
//! chat: under load a run of a few milliseconds took hundreds. And `posix_spawn` holds the thread
//! that calls it until the child has started its program, which there is a worker that streams
//! other chats. Here the run's wake-ups are served by a thread that does nothing else, and its
//! chat is woken once, with the outcome. Dropping the chat's future aborts the run on this thread,
//! which kills its processes as before.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::runtime::Handle;

/// Runs on the commands' thread now (started, not yet ended or dropped there).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// The commands' runtime (`None`, logged once, when it cannot be had: then runs stay on the
/// caller's runtime).
fn commands_runtime() -> Option<&'static Handle> {
    static RUNTIME: OnceLock<Option<Handle>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .inspect_err(|error| tracing::warn!(%error, "no runtime for the commands' thread: command runs share the server's"))
                .ok()?;
            let handle = runtime.handle().clone();
            std::thread::Builder::new()
                .name("commands".into())
                .spawn(move || runtime.block_on(std::future::pending::<()>()))
                .inspect_err(|error| tracing::warn!(%error, "no commands' thread: command runs share the server's runtime"))
                .ok()?;
            Some(handle)
        })
        .as_ref()
}

/// `run` on the commands' thread, its outcome here (`None` if that runtime dropped it, which
/// only its end would do). Dropping this future aborts `run` there.
pub(super) async fn on_commands_thread<T: Send + 'static>(
    run: impl Future<Output = T> + Send + 'static,
) -> Option<T> {
    let Some(runtime) = commands_runtime() else {
        return Some(run.await);
    };
    IN_FLIGHT.fetch_add(1, Ordering::AcqRel);
    let counted = InFlight;
    let task = runtime.spawn(async move {
        let _counted = counted;
        run.await
    });
    let abort = AbortOnDrop(task.abort_handle());
    let outcome = task.await;
    drop(abort);
    match outcome {
        Ok(outcome) => Some(outcome),
        // A run that panicked: so does its caller, as if the run had been polled here.
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(_) => None,
        },
    }
}

/// Waits until no run is left on the commands' thread (runs of chats that ended were aborted,
/// and are being killed there), at most `limit`: at shutdown, so that none outlives the server.
pub(crate) async fn finish_runs(limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let none_left = NONE_LEFT.notified();
        let runs = IN_FLIGHT.load(Ordering::Acquire);
        if runs == 0 {
            return;
        }
        if tokio::time::timeout_at(deadline, none_left).await.is_err() {
            tracing::warn!(runs, "command runs still ending at shutdown");
            return;
        }
    }
}

/// Woken when the last run in flight ends.
static NONE_LEFT: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Counts a run on the commands' thread until it ends or is dropped there.
struct InFlight;

impl Drop for InFlight {
    fn drop(&mut self) {
        if IN_FLIGHT.fetch_sub(1, Ordering::AcqRel) == 1 {
            NONE_LEFT.notify_waiters();
        }
    }
}

/// Aborts the run when the chat's future that waits for it is dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
