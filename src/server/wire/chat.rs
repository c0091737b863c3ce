//! One chat as what its wire sends: the chat's events (and the answer's spoken sentences, when
//! it is spoken) through the wire's encoder, in order, ending with exactly one terminal event.
//! The chat runs as this stream is read, in the reader's task: a streamed token goes from the
//! upstream's socket to the client's without a hop between tasks (docs/performance.md).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};

use super::speech::spoken;
use super::{ChatEvents, Encoded, Outgoing, WireEncoder};
use crate::types::{ChatError, ChatEvent, ErrorCode};
use crate::voice::pipeline::Speech;

/// Where a chat's events come from.
enum Source {
    /// The chat's events as it makes them.
    Events(ChatEvents),
    /// The events with the answer's audio among them, in the speech pipeline's order.
    Spoken(Pin<Box<dyn Stream<Item = Outgoing> + Send>>),
}

/// One chat's items for its wire, in order, ending with the encoding of exactly one `Done` or
/// `Error` (one is made up when the chat's stream breaks that promise). Dropped unread, it drops
/// the chat, and the chat's upstream request with it.
pub(crate) struct WireChat<E: WireEncoder> {
    source: Source,
    encoder: E,
    /// The chat's id, for the log.
    chat_id: String,
    /// Items encoded and not taken yet.
    queued: VecDeque<E::Item>,
    /// Goes out after `Started`: the server's word about the chat (voice asked for, but not
    /// configured).
    after_start: Option<ChatEvent>,
    /// The terminal event was encoded.
    over: bool,
}

impl<E: WireEncoder> WireChat<E> {
    /// Every event of the chat `chat_id` through `encoder`.
    pub(crate) fn new(events: ChatEvents, encoder: E, chat_id: String) -> Self {
        Self::from_source(Source::Events(events), encoder, chat_id)
    }

    /// The events with the answer's sentences spoken among them, in the order of
    /// [`crate::voice::pipeline`]; everything is sent before the last item.
    pub(crate) fn spoken(
        events: ChatEvents,
        speech: Speech<Outgoing>,
        encoder: E,
        chat_id: String,
    ) -> Self {
        let source = Source::Spoken(spoken(events, speech, chat_id.clone()).boxed());
        Self::from_source(source, encoder, chat_id)
    }

    fn from_source(source: Source, encoder: E, chat_id: String) -> Self {
        Self {
            source,
            encoder,
            chat_id,
            queued: VecDeque::new(),
            after_start: None,
            over: false,
        }
    }

    /// `event` goes out right after the chat's `Started`.
    pub(crate) fn after_start(mut self, event: ChatEvent) -> Self {
        self.after_start = Some(event);
        self
    }

    fn queue(&mut self, encoded: Encoded<E::Item>) {
        match encoded {
            Encoded::None => {}
            Encoded::One(item) => self.queued.push_back(item),
            Encoded::Many(items) => self.queued.extend(items),
        }
    }

    /// The stream promised a last event and broke the promise: the client still learns that the
    /// chat is over.
    fn no_end(&mut self) -> ChatEvent {
        tracing::error!(chat = %self.chat_id, "a chat stream ended without done or error");
        let error = ChatError::new(ErrorCode::Internal, "the chat ended without a result");
        ChatEvent::Error(error)
    }
}

impl<E> Stream for WireChat<E>
where
    E: WireEncoder + Unpin,
    E::Item: Unpin,
{
    type Item = E::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<E::Item>> {
        let this = &mut *self;
        loop {
            if let Some(item) = this.queued.pop_front() {
                return Poll::Ready(Some(item));
            }
            if this.over {
                return Poll::Ready(None);
            }
            let next = match &mut this.source {
                Source::Events(events) => {
                    events.poll_next_unpin(cx).map(|e| e.map(Outgoing::Event))
                }
                Source::Spoken(outgoing) => outgoing.poll_next_unpin(cx),
            };
            let event = match next {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Outgoing::Audio(audio))) => {
                    let encoded = this.encoder.audio(audio);
                    this.queue(encoded);
                    continue;
                }
                Poll::Ready(Some(Outgoing::Event(event))) => event,
                Poll::Ready(None) => this.no_end(),
            };
            this.over = event.is_terminal();
            let started = matches!(event, ChatEvent::Started { .. });
            match this.encoder.encode(event) {
                // The streamed token's way: its item at once.
                Encoded::One(item) if !this.over && !started => return Poll::Ready(Some(item)),
                encoded => this.queue(encoded),
            }
            if let Some(event) = this.after_start.take_if(|_| started) {
                let encoded = this.encoder.encode(event);
                this.queue(encoded);
            }
        }
    }
}
