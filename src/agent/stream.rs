//! [`ChatStream`]: one chat's events, the chat run as they are read.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;

use crate::types::{event_channel, panic_message, EventReceiver, EventSender};
use crate::types::{ChatError, ChatEvent, ErrorCode};

/// The events of one chat. The chat runs as the stream is read, in the reader's task: no task of
/// its own, so an event reaches the reader without a wake-up of another task (under load, that
/// hop per streamed token was a measurable share of the server's CPU, docs/performance.md).
/// The stream hands out what the chat sent before it runs the chat again, so what waits in the
/// channel is at most what one step of the chat sent: the channel needs no bound, and a send
/// never waits. Dropping the stream drops the chat.
pub struct ChatStream {
    /// Read without waiting while the chat runs: the chat's own events are sent while this
    /// stream polls it. Events from work beside the chat ([`crate::hooks::LateEvents`]) wake the
    /// reader only when the stream waits ([`crate::types::EventReceiver`]).
    events: EventReceiver,
    /// The chat itself, until it is over.
    chat: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// What the chat's panic said: the stream still ends with an `Error`.
    panicked: Option<String>,
    chat_id: String,
    /// Whether the last event (`Done` or `Error`) was yielded.
    ended: bool,
    /// The event [`ChatStream::accepted`] read, yielded first.
    first: Option<Box<ChatEvent>>,
}

impl ChatStream {
    /// The size of the chat's future, which the chat holds for its whole length.
    #[cfg(test)]
    pub(crate) fn chat_size(&self) -> Option<usize> {
        self.chat
            .as_ref()
            .map(|chat| std::mem::size_of_val(&**chat))
    }

    /// Runs the chat that `start` makes of the events' sender and the late events' handle.
    pub(super) fn new<F, Fut>(chat_id: String, start: F) -> Self
    where
        F: FnOnce(EventSender, crate::hooks::LateEvents) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (tx, events) = event_channel();
        let late_events = crate::hooks::LateEvents::new(&tx);
        ChatStream {
            events,
            chat: Some(Box::pin(start(tx, late_events))),
            panicked: None,
            chat_id,
            ended: false,
            first: None,
        }
    }

    /// Waits until the chat is accepted (its `Started`), or returns the error that refused it
    /// (a quota, a hook factory, the client's tools), after which the stream is over. For a
    /// wire that answers a refusal with an HTTP status before any stream.
    pub async fn accepted(&mut self) -> Result<(), ChatError> {
        use futures::StreamExt;
        match self.next().await {
            Some(ChatEvent::Error(error)) => Err(error),
            Some(event) => {
                // Not the last event: `Started` comes before any.
                self.ended = false;
                self.first = Some(Box::new(event));
                Ok(())
            }
            None => Err(ChatError::new(
                ErrorCode::Internal,
                "the chat ended without a result",
            )),
        }
    }

    fn yielded(&mut self, event: ChatEvent) -> Poll<Option<ChatEvent>> {
        self.ended = event.is_terminal();
        Poll::Ready(Some(event))
    }
}

impl Stream for ChatStream {
    type Item = ChatEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ChatEvent>> {
        let this = &mut *self;
        if let Some(event) = this.first.take() {
            return this.yielded(*event);
        }
        if this.ended {
            return Poll::Ready(None);
        }
        if let Some(chat) = this.chat.as_mut() {
            if let Some(event) = this.events.try_recv() {
                return this.yielded(event);
            }
            // A panic anywhere in the chat (a tool, the model, a hook) stays in the chat.
            let polled =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| chat.as_mut().poll(cx)));
            match polled {
                Ok(Poll::Pending) => {}
                Ok(Poll::Ready(())) => this.chat = None,
                Err(payload) => {
                    this.chat = None;
                    this.panicked = Some(panic_message(payload));
                }
            }
        }
        // What the chat sent is there now. Still running: anything later wakes this task
        // through the chat's own wakers or a late event's send.
        match this.events.poll_recv(cx) {
            Poll::Ready(Some(event)) => this.yielded(event),
            Poll::Pending => Poll::Pending,
            // The chat dropped its sender without a last event: it panicked.
            Poll::Ready(None) => {
                this.ended = true;
                let cause = this
                    .panicked
                    .take()
                    .unwrap_or_else(|| "it ended without a result".into());
                tracing::error!(chat = %this.chat_id, %cause, "the chat failed");
                super::series::CHATS.get("internal").increment(1);
                Poll::Ready(Some(ChatEvent::Error(ChatError::new(
                    ErrorCode::Internal,
                    "the chat failed unexpectedly on the server (details are in its log)",
                ))))
            }
        }
    }
}
