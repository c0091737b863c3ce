//! A wait beside a task's main work, polled only when it woke the task.
//!
//! A streamed chat waits on its upstream's next bytes and, beside that, on a few things that
//! rarely happen: its cancellation, the reply's idle timeout, the reader's queue; a connection's
//! session, beside the chat it writes, on its client's next frame. Polling each of
//! those whenever the task wakes (once per token) costs a lock or a timer registration every
//! time, a measurable share of a token's CPU (docs/performance.md). A [`SideWait`] polls its
//! future with a waker of its own that notes the wake and passes it on to the task; the task's
//! other wake-ups then cost a pointer comparison and one atomic load.
//!
//! The inner future must keep its registration between polls (tokio's `Sleep`, `Notified` and
//! `CancellationToken::cancelled` do; a channel's receiver does until it hands out an item, and
//! an item handed out leaves the wait marked so that the next poll looks again; so does a
//! WebSocket's read side, whose socket wakes it when bytes arrive).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

/// See the module's documentation.
pub(crate) struct SideWait {
    shared: Arc<Shared>,
    /// The waker handed to the inner future.
    own: Waker,
    /// The task's waker as last passed to `shared`.
    task: Option<Waker>,
}

struct Shared {
    /// The inner future may have progressed: poll it.
    woken: AtomicBool,
    /// The task to wake when the inner future wakes.
    task: TaskToWake,
}

impl Wake for Shared {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

/// The task that a waker of one's own passes its wake-ups on to, where another thread finds
/// it: set again only when the task's waker changes.
#[derive(Default)]
pub(crate) struct TaskToWake(Mutex<Option<Waker>>);

impl TaskToWake {
    /// Makes `waker` the task's, unless `last` (the waker this side set last) wakes the same
    /// task: then a pointer comparison is all it costs.
    pub(crate) fn set(&self, last: &mut Option<Waker>, waker: &Waker) {
        if !last.as_ref().is_some_and(|t| t.will_wake(waker)) {
            let waker = waker.clone();
            *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(waker.clone());
            *last = Some(waker);
        }
    }

    /// Wakes the task, if one was set.
    pub(crate) fn wake(&self) {
        // Woken outside the lock: a waker may do anything, polling this wait again included.
        let task = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(task) = task {
            task.wake();
        }
    }
}

impl Default for SideWait {
    fn default() -> Self {
        Self::new()
    }
}

impl SideWait {
    /// A wait whose first poll polls the inner future.
    pub(crate) fn new() -> Self {
        let shared = Arc::new(Shared {
            woken: AtomicBool::new(true),
            task: TaskToWake::default(),
        });
        Self {
            own: Waker::from(shared.clone()),
            shared,
            task: None,
        }
    }

    /// Polls the inner future through `poll` if it woke since it was last polled pending (or
    /// was never polled, or [`SideWait::look_again`] was called); `Pending` otherwise. After
    /// `Ready` the next call polls again.
    pub(crate) fn poll<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        self.shared.task.set(&mut self.task, cx.waker());
        // A load first: the swap (a write to the line) only when it was woken.
        if !self.shared.woken.load(Ordering::Acquire)
            || !self.shared.woken.swap(false, Ordering::AcqRel)
        {
            return Poll::Pending;
        }
        let polled = poll(&mut Context::from_waker(&self.own));
        if polled.is_ready() {
            self.look_again();
        }
        polled
    }

    /// The next [`SideWait::poll`] polls the inner future, woken or not (after it was changed,
    /// e.g. a timer reset).
    pub(crate) fn look_again(&self) {
        self.shared.woken.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts the task's wake-ups.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn task() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    /// Polls `wait` with an inner future that is `ready` or not; counts the inner polls and
    /// keeps the waker the inner future was given.
    fn poll_inner(
        wait: &mut SideWait,
        cx: &mut Context<'_>,
        ready: bool,
        polls: &mut usize,
        inner_waker: &mut Option<Waker>,
    ) -> Poll<()> {
        wait.poll(cx, |inner| {
            *polls += 1;
            *inner_waker = Some(inner.waker().clone());
            if ready {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }

    #[test]
    fn the_inner_future_is_polled_only_after_it_woke() {
        let (woken, waker) = task();
        let mut cx = Context::from_waker(&waker);
        let mut wait = SideWait::new();
        let (mut polls, mut inner_waker) = (0, None);
        assert!(poll_inner(&mut wait, &mut cx, false, &mut polls, &mut inner_waker).is_pending());
        assert!(poll_inner(&mut wait, &mut cx, false, &mut polls, &mut inner_waker).is_pending());
        assert!(poll_inner(&mut wait, &mut cx, true, &mut polls, &mut inner_waker).is_pending());
        assert_eq!(polls, 1, "polled once, then not until woken");
        assert_eq!(woken.0.load(Ordering::SeqCst), 0);

        if let Some(inner) = inner_waker.take() {
            inner.wake();
        }
        assert_eq!(
            woken.0.load(Ordering::SeqCst),
            1,
            "the inner wake reaches the task"
        );
        assert!(poll_inner(&mut wait, &mut cx, true, &mut polls, &mut inner_waker).is_ready());
        assert!(
            poll_inner(&mut wait, &mut cx, true, &mut polls, &mut inner_waker).is_ready(),
            "after an item, the next poll looks again"
        );
        assert_eq!(polls, 3);
    }

    #[test]
    fn a_new_task_waker_is_the_one_woken() {
        let (first, first_waker) = task();
        let (second, second_waker) = task();
        let mut wait = SideWait::new();
        let mut inner_waker = None;
        let _ = wait.poll(&mut Context::from_waker(&first_waker), |inner| {
            inner_waker = Some(inner.waker().clone());
            Poll::<()>::Pending
        });
        // Polled from another task (a moved future): not polled inside, but the waker is new.
        let polled = wait.poll(&mut Context::from_waker(&second_waker), |_| Poll::Ready(()));
        assert!(polled.is_pending());
        if let Some(inner) = inner_waker.take() {
            inner.wake();
        }
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn look_again_polls_without_a_wake() {
        let (_, waker) = task();
        let mut cx = Context::from_waker(&waker);
        let mut wait = SideWait::new();
        let _ = wait.poll(&mut cx, |_| Poll::<()>::Pending);
        wait.look_again();
        assert!(wait.poll(&mut cx, |_| Poll::Ready(())).is_ready());
    }
}
