//! A spoken chat's events with its answer's audio among them (docs/protocol.md §18): what the
//! speech pipeline hands out, in its order, while the events are read meanwhile (so synthesis
//! runs ahead while a sentence's audio is awaited). Wire-free: the encoder makes the audio its
//! wire's.

use futures::{Stream, StreamExt};

use super::{Audio, ChatEvents, Outgoing};
use crate::types::{ChatEvent, NoticeLevel};
use crate::voice::pipeline::{Speech, Spoken};

/// The chat's events and audio, in order, up to and with the terminal event; it ends early
/// (after what speech still holds) when the events end without one.
pub(super) fn spoken(
    events: ChatEvents,
    speech: Speech<Outgoing>,
    chat_id: String,
) -> impl Stream<Item = Outgoing> + Send {
    struct State {
        events: ChatEvents,
        speech: Speech<Outgoing>,
        chat_id: String,
        ended: bool,
    }
    let state = State {
        events,
        speech,
        chat_id,
        ended: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            tokio::select! {
                // What is ready goes out first.
                biased;
                spoken = state.speech.next() => {
                    let outgoing = match spoken {
                        Spoken::Frame(outgoing) => outgoing,
                        Spoken::Audio { seq, text, data } => {
                            let format = state.speech.format().to_string();
                            Outgoing::Audio(Audio { seq, format, text, data })
                        }
                        Spoken::Failed(why) => {
                            tracing::warn!(chat = %state.chat_id, "speech synthesis failed: {why}");
                            Outgoing::Event(ChatEvent::Notice {
                                level: NoticeLevel::Warn,
                                message: format!("the answer cannot be spoken: {why}; it goes on as text"),
                                source: "voice".into(),
                            })
                        }
                    };
                    return Some((outgoing, state));
                }
                event = state.events.next(), if !state.ended => match event {
                    Some(ChatEvent::Text(delta)) => {
                        state.speech.text(&delta, Outgoing::Event(ChatEvent::Text(delta.clone())));
                    }
                    Some(event) => {
                        state.ended = event.is_terminal();
                        state.speech.frame(Outgoing::Event(event));
                    }
                    None => state.ended = true,
                },
            }
            if state.ended && state.speech.is_empty() {
                return None;
            }
        }
    })
}
