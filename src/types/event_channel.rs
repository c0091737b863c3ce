//! The channel that carries a chat's events to its stream (`agent::ChatStream`).
//!
//! Nearly every event is sent by the chat itself while its stream polls it, in the same task: a
//! wake-up for those would only make the task poll itself once more for nothing, and a channel
//! made for tasks talking to each other (tokio's, a block of 32 slots walked one cache line per
//! event) costs more per streamed token than the relay around it (docs/performance.md). So this
//! is a small queue behind one lock, whose reader wakes only when it asked to: it *arms* the
//! waker when it is about to wait ([`EventReceiver::poll_recv`]) and disarms it when it takes
//! events while polling the chat ([`EventReceiver::try_recv`]). Events sent from other tasks (an
//! `async: true` hook's notice, through a [`WeakEventSender`]) while the reader waits wake it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};

use super::ChatEvent;

/// A new channel: the chat's sender and its stream's receiver.
pub(crate) fn event_channel() -> (EventSender, EventReceiver) {
    let shared = Arc::new(Shared {
        state: Mutex::default(),
        senders: AtomicUsize::new(1),
    });
    let sender = EventSender {
        shared: shared.clone(),
    };
    (sender, EventReceiver { shared })
}

struct Shared {
    state: Mutex<State>,
    /// The strong senders: the channel closes for the reader when the last one goes. Counted
    /// here rather than by an `Arc` of their own, which was one more cache line per event.
    senders: AtomicUsize,
}

#[derive(Default)]
struct State {
    events: VecDeque<Queued>,
    /// The reader's waker, woken by the next send only while `armed`.
    waker: Option<Waker>,
    armed: bool,
    /// Every (strong) sender is gone: nothing more will come.
    senders_gone: bool,
    receiver_gone: bool,
}

/// An event as it waits in the queue: a streamed token's text as it is, anything else boxed.
/// A `ChatEvent` is a few hundred bytes (its largest variant's); queued as such, every token
/// wrote and read several cache lines of the ring (docs/performance.md).
enum Queued {
    Text(String),
    Other(Box<ChatEvent>),
}

impl From<ChatEvent> for Queued {
    fn from(event: ChatEvent) -> Self {
        match event {
            ChatEvent::Text(text) => Queued::Text(text),
            other => Queued::Other(Box::new(other)),
        }
    }
}

impl From<Queued> for ChatEvent {
    fn from(queued: Queued) -> Self {
        match queued {
            Queued::Text(text) => ChatEvent::Text(text),
            Queued::Other(event) => *event,
        }
    }
}

impl Shared {
    /// The lock's data even if a holder panicked: nothing here can be left half-changed.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    /// The waker to wake after the lock is released, if the reader is waiting.
    fn disarm(&mut self) -> Option<Waker> {
        if !std::mem::take(&mut self.armed) {
            return None;
        }
        self.waker.clone()
    }
}

/// The chat's end of the channel. The channel is closed for the reader once the last clone is
/// dropped.
pub(crate) struct EventSender {
    shared: Arc<Shared>,
}

impl Clone for EventSender {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::Relaxed);
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for EventSender {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let waker = {
            let mut state = self.shared.lock();
            state.senders_gone = true;
            state.disarm()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl EventSender {
    /// Queues an event; fails if the stream is gone (the chat is being dropped).
    pub(crate) fn send(&self, event: ChatEvent) -> Result<(), StreamGone> {
        let event = Queued::from(event);
        let waker = {
            let mut state = self.shared.lock();
            if state.receiver_gone {
                return Err(StreamGone);
            }
            state.events.push_back(event);
            state.disarm()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// A sender that does not keep the channel open: it sends only while the chat's own sender
    /// exists.
    pub(crate) fn downgrade(&self) -> WeakEventSender {
        WeakEventSender {
            shared: Arc::downgrade(&self.shared),
        }
    }
}

/// A send failed: the chat's stream is gone.
#[derive(Debug, PartialEq)]
pub(crate) struct StreamGone;

/// A sender for work beside the chat: [`WeakEventSender::upgrade`] fails once the chat's own
/// senders are gone.
#[derive(Clone, Debug)]
pub(crate) struct WeakEventSender {
    shared: Weak<Shared>,
}

impl WeakEventSender {
    pub(crate) fn upgrade(&self) -> Option<EventSender> {
        let shared = self.shared.upgrade()?;
        // A strong sender only while one still exists: the last one's drop closed the channel.
        shared
            .senders
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n > 0).then_some(n + 1)
            })
            .ok()?;
        Some(EventSender { shared })
    }
}

/// The stream's end of the channel. Dropping it makes every later send fail and drops what
/// was queued.
pub(crate) struct EventReceiver {
    shared: Arc<Shared>,
}

impl Drop for EventReceiver {
    fn drop(&mut self) {
        let events = {
            let mut state = self.shared.lock();
            state.receiver_gone = true;
            state.waker = None;
            std::mem::take(&mut state.events)
        };
        // Dropped outside the lock: an event owns strings, nothing that reenters the channel.
        drop(events);
    }
}

impl EventReceiver {
    /// The next event already sent, without waiting. It also disarms the waker: the caller is
    /// polling the chat, whose own sends need not wake it.
    pub(crate) fn try_recv(&mut self) -> Option<ChatEvent> {
        let mut state = self.shared.lock();
        state.armed = false;
        state.events.pop_front().map(ChatEvent::from)
    }

    /// The next event; `None` once every sender is gone and nothing is left. When there is none
    /// yet, the next send (or the last sender's drop) wakes `cx`.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<ChatEvent>> {
        let mut state = self.shared.lock();
        if let Some(event) = state.events.pop_front() {
            state.armed = false;
            return Poll::Ready(Some(event.into()));
        }
        if state.senders_gone {
            return Poll::Ready(None);
        }
        if !state
            .waker
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            state.waker = Some(cx.waker().clone());
        }
        state.armed = true;
        Poll::Pending
    }

    /// Waits for the next event; `None` once every sender is gone and nothing is left.
    #[cfg(test)]
    pub(crate) async fn recv(&mut self) -> Option<ChatEvent> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::NoticeLevel;
    use futures::task::ArcWake;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl ArcWake for Wakes {
        fn wake_by_ref(arc_self: &Arc<Self>) {
            arc_self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn text(s: &str) -> ChatEvent {
        ChatEvent::Text(s.into())
    }

    #[test]
    fn events_come_out_in_order_and_the_end_after_them() {
        let (tx, mut rx) = event_channel();
        let wakes = Arc::new(Wakes::default());
        let waker = futures::task::waker(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        tx.send(text("a")).unwrap();
        tx.send(text("b")).unwrap();
        drop(tx);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Some(text("a"))));
        assert_eq!(rx.try_recv(), Some(text("b")));
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(None));
        assert_eq!(rx.try_recv(), None);
    }

    #[test]
    fn a_send_wakes_the_reader_only_while_it_waits() {
        let (tx, mut rx) = event_channel();
        let wakes = Arc::new(Wakes::default());
        let waker = futures::task::waker(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        // The reader waits: the next send wakes it, once.
        assert_eq!(rx.poll_recv(&mut cx), Poll::Pending);
        tx.send(text("late")).unwrap();
        tx.send(text("later")).unwrap();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        // The reader polls the chat: what the chat sends meanwhile wakes nobody.
        assert_eq!(rx.try_recv(), Some(text("late")));
        assert_eq!(rx.try_recv(), Some(text("later")));
        assert_eq!(rx.try_recv(), None);
        tx.send(text("own")).unwrap();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        assert_eq!(rx.try_recv(), Some(text("own")));
        // Waiting again: the last sender's drop wakes it, and the channel then ends.
        assert_eq!(rx.poll_recv(&mut cx), Poll::Pending);
        drop(tx);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn a_weak_sender_sends_only_while_the_chat_holds_its_own() {
        let (tx, mut rx) = event_channel();
        let weak = tx.downgrade();
        let notice = || ChatEvent::Notice {
            level: NoticeLevel::Info,
            message: "m".into(),
            source: "s".into(),
        };
        let upgraded = weak.upgrade().unwrap();
        upgraded.send(notice()).unwrap();
        drop(upgraded);
        assert_eq!(rx.try_recv(), Some(notice()));
        drop(tx);
        assert!(weak.upgrade().is_none());
    }

    #[test]
    fn sends_fail_once_the_reader_is_gone() {
        let (tx, rx) = event_channel();
        tx.send(text("kept")).unwrap();
        drop(rx);
        assert_eq!(tx.send(text("lost")), Err(StreamGone));
    }

    #[tokio::test]
    async fn a_send_from_another_task_reaches_a_waiting_reader() {
        let (tx, mut rx) = event_channel();
        let weak = tx.downgrade();
        let sender = tokio::spawn(async move {
            tokio::task::yield_now().await;
            if let Some(tx) = weak.upgrade() {
                let _ = tx.send(text("from afar"));
            }
        });
        assert_eq!(rx.recv().await, Some(text("from afar")));
        sender.await.unwrap();
        drop(tx);
        assert_eq!(rx.recv().await, None);
    }
}
