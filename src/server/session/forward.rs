//! One chat's frames as the writer takes them: its events as frames (fitted to
//! `limits.max_frame_bytes`), spoken sentences put back in order among them. The chat runs as its
//! frames are read, in the writer's task: a streamed token goes from the upstream's socket to the
//! client's without a hop between tasks (docs/performance.md).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::server::frames::ServerFrame;
use crate::types::{ChatEvent, ErrorCode, NoticeLevel};
use crate::voice::pipeline::{Speech, Spoken};

type ChatEvents = crate::agent::ChatStream;

/// Where a chat's frames come from.
enum FrameSource {
    /// The events themselves, each made a frame as it is taken.
    Unspoken(ChatEvents),
    /// The speech pipeline's order of frames and audio.
    Spoken(Pin<Box<dyn Stream<Item = ServerFrame> + Send>>),
}

/// What a chat's frames are addressed with.
#[derive(Clone)]
pub(super) struct FrameContext {
    chat_id: String,
    instance: Arc<str>,
    max_frame_bytes: usize,
    /// A `text` frame's JSON up to its `delta`'s value (`{"type":"text","id":"…","delta":`),
    /// made once per chat: a streamed token's frame is this, the delta as a JSON string and `}`,
    /// with no frame built and no id copied per token (docs/performance.md).
    text_prefix: Option<Arc<str>>,
}

impl FrameContext {
    pub(super) fn new(chat_id: String, instance: Arc<str>, max_frame_bytes: usize) -> Self {
        let empty = ServerFrame::Text {
            id: chat_id.clone(),
            delta: String::new(),
        }
        .to_json();
        let text_prefix = empty.strip_suffix("\"\"}").map(Arc::from);
        Self {
            chat_id,
            instance,
            max_frame_bytes,
            text_prefix,
        }
    }

    fn frame(&self, event: ChatEvent) -> ServerFrame {
        ServerFrame::from_event(&self.chat_id, event).with_instance(&self.instance)
    }

    /// The JSON of the `text` frame carrying `delta`, the same as its `ServerFrame`'s; `None`
    /// when it needs fitting (split across frames).
    fn text_json(&self, delta: &str) -> Option<String> {
        let prefix = self.text_prefix.as_deref()?;
        if !crate::server::fit::text_fits(&self.chat_id, delta, self.max_frame_bytes) {
            return None;
        }
        let mut json = Vec::with_capacity(prefix.len() + delta.len() + 8);
        json.extend_from_slice(prefix.as_bytes());
        serde_json::to_writer(&mut json, delta).ok()?;
        json.push(b'}');
        String::from_utf8(json).ok()
    }

    fn voice_notice(&self, message: String) -> ServerFrame {
        ServerFrame::Notice {
            id: self.chat_id.clone(),
            level: NoticeLevel::Warn,
            message,
            source: "voice".into(),
        }
    }

    /// The stream promised a last event and broke the promise: the client still learns that the
    /// chat is over.
    fn no_end(&self) -> ServerFrame {
        tracing::error!(chat = %self.chat_id, "a chat stream ended without done or error");
        ServerFrame::error(
            Some(self.chat_id.clone()),
            ErrorCode::Internal,
            "the chat ended without a result",
        )
    }
}

/// One chat's frames, in order, ending with exactly one `done` or `error`. `finished` is
/// cancelled once the last frame is taken, or when the frames are dropped unread (the chat is
/// then dropped too, and its upstream request with it).
pub(super) struct ChatFrames {
    source: FrameSource,
    context: FrameContext,
    /// Fitted pieces not taken yet.
    queued: VecDeque<ServerFrame>,
    /// Goes out after the `start` frame: the chat asked for voice, which is not configured.
    after_start: Option<ServerFrame>,
    /// The last frame was queued.
    over: bool,
    finished: CancellationToken,
}

impl ChatFrames {
    /// Every event as its frame. `voice_asked`: the chat asked for voice, which is not
    /// configured; a notice after `start` says so and the chat goes on as text.
    pub(super) fn unspoken(
        events: ChatEvents,
        context: FrameContext,
        voice_asked: bool,
        finished: CancellationToken,
    ) -> Self {
        let after_start = voice_asked.then(|| {
            context.voice_notice(
                "voice was asked for, but this server has no voice.tts configured; the answer \
                 comes as text only"
                    .into(),
            )
        });
        Self::new(
            FrameSource::Unspoken(events),
            context,
            after_start,
            finished,
        )
    }

    /// The events as frames with the answer's `audio` frames among them, in the order of
    /// [`crate::voice::pipeline`]; everything is sent before the last frame.
    pub(super) fn spoken(
        events: ChatEvents,
        speech: Speech<ServerFrame>,
        context: FrameContext,
        finished: CancellationToken,
    ) -> Self {
        let source = spoken_frames(events, speech, context.clone()).boxed();
        Self::new(FrameSource::Spoken(source), context, None, finished)
    }

    fn new(
        source: FrameSource,
        context: FrameContext,
        after_start: Option<ServerFrame>,
        finished: CancellationToken,
    ) -> Self {
        Self {
            source,
            context,
            queued: VecDeque::new(),
            after_start,
            over: false,
            finished,
        }
    }

    fn queue(&mut self, frame: ServerFrame) {
        let started = matches!(frame, ServerFrame::Start { .. });
        self.over |= is_last(&frame);
        self.queued
            .extend(crate::server::fit::fit(frame, self.context.max_frame_bytes));
        if started {
            if let Some(notice) = self.after_start.take() {
                self.queued.extend(crate::server::fit::fit(
                    notice,
                    self.context.max_frame_bytes,
                ));
            }
        }
    }
}

fn is_last(frame: &ServerFrame) -> bool {
    matches!(frame, ServerFrame::Done { .. } | ServerFrame::Error(_))
}

impl Stream for ChatFrames {
    /// Each frame's JSON.
    type Item = String;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<String>> {
        let this = &mut *self;
        loop {
            if let Some(frame) = this.queued.pop_front() {
                if this.over && this.queued.is_empty() {
                    this.finished.cancel();
                }
                return Poll::Ready(Some(frame.to_json()));
            }
            if this.over {
                return Poll::Ready(None);
            }
            let frame = match &mut this.source {
                FrameSource::Unspoken(events) => match events.poll_next_unpin(cx) {
                    // The streamed token's way: its JSON at once.
                    Poll::Ready(Some(ChatEvent::Text(delta))) => {
                        if let Some(json) = this.context.text_json(&delta) {
                            return Poll::Ready(Some(json));
                        }
                        Poll::Ready(Some(this.context.frame(ChatEvent::Text(delta))))
                    }
                    polled => polled.map(|event| event.map(|event| this.context.frame(event))),
                },
                FrameSource::Spoken(frames) => frames.poll_next_unpin(cx),
            };
            match frame {
                Poll::Ready(Some(frame))
                    if crate::server::fit::is_fitting_text(
                        &frame,
                        this.context.max_frame_bytes,
                    ) =>
                {
                    return Poll::Ready(Some(frame.to_json()));
                }
                Poll::Ready(Some(frame)) => this.queue(frame),
                Poll::Ready(None) => {
                    let frame = this.context.no_end();
                    this.queue(frame);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for ChatFrames {
    fn drop(&mut self) {
        self.finished.cancel();
    }
}

/// The spoken chat's frames: what the speech pipeline hands out, in its order, while the events
/// are read meanwhile (so synthesis runs ahead while a sentence's audio is awaited).
fn spoken_frames(
    events: ChatEvents,
    speech: Speech<ServerFrame>,
    context: FrameContext,
) -> impl Stream<Item = ServerFrame> + Send {
    struct State {
        events: ChatEvents,
        speech: Speech<ServerFrame>,
        context: FrameContext,
        ended: bool,
    }
    let state = State {
        events,
        speech,
        context,
        ended: false,
    };
    futures::stream::unfold(Some(state), |state| async move {
        let mut state = state?;
        loop {
            tokio::select! {
                // What is ready goes out first.
                biased;
                spoken = state.speech.next() => {
                    let frame = match spoken {
                        Spoken::Frame(frame) => frame,
                        Spoken::Audio { seq, text, data } => ServerFrame::Audio {
                            id: state.context.chat_id.clone(),
                            seq,
                            format: state.speech.format().to_string(),
                            text,
                            data: BASE64.encode(data),
                        },
                        Spoken::Failed(why) => {
                            tracing::warn!(chat = %state.context.chat_id, "speech synthesis failed: {why}");
                            state.context.voice_notice(format!("the answer cannot be spoken: {why}; it goes on as text"))
                        }
                    };
                    let rest = (!is_last(&frame)).then_some(state);
                    return Some((frame, rest));
                }
                event = state.events.next(), if !state.ended => match event {
                    Some(ChatEvent::Text(delta)) => {
                        let frame = state.context.frame(ChatEvent::Text(delta.clone()));
                        state.speech.text(&delta, frame);
                    }
                    Some(event) => {
                        state.ended = event.is_terminal();
                        let frame = state.context.frame(event);
                        state.speech.frame(frame);
                    }
                    None => {
                        state.ended = true;
                        let frame = state.context.no_end();
                        state.speech.frame(frame);
                    }
                },
            }
            if state.ended && state.speech.is_empty() {
                return None;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_frame_made_at_once_is_the_frame_s_own_json() {
        let ids = ["c1", r#"we"ird\id"#, "chat-ü\u{1}</script>"];
        let deltas = [
            "tok0 ",
            "",
            "\"quoted\" and \\ back",
            "line\nbreak\ttab\u{0}\u{1f}",
            "ünïcödé 漢字 🙂",
            "</script><!--",
            "\u{2028}\u{2029}",
        ];
        for id in ids {
            let context = FrameContext::new(id.to_string(), Arc::from("host-1"), 16 * 1024);
            for delta in deltas {
                let expected = context.frame(ChatEvent::Text(delta.to_string())).to_json();
                assert_eq!(context.text_json(delta).as_deref(), Some(expected.as_str()));
            }
        }
    }

    #[test]
    fn a_text_too_big_for_one_frame_is_left_to_be_split() {
        let context = FrameContext::new("c1".into(), Arc::from("host-1"), 1024);
        assert!(context.text_json(&"x".repeat(2000)).is_none());
        assert!(context.text_json(&"x".repeat(100)).is_some());
    }
}
