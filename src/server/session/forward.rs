//! The forwarder: one chat's events as frames (fitted to `limits.max_frame_bytes`), spoken
//! sentences put back in order among them, into the session's data channel.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::Outbound;
use crate::server::frames::ServerFrame;
use crate::types::{ChatEvent, ErrorCode, NoticeLevel};
use crate::voice::pipeline::{Speech, Spoken};

/// Where one chat's frames go.
pub(super) struct Forward {
    pub(super) chat_id: String,
    pub(super) instance: Arc<str>,
    pub(super) out: mpsc::Sender<Outbound>,
    pub(super) max_frame_bytes: usize,
}

type ChatEvents = crate::agent::ChatStream;

impl Forward {
    /// Sends one frame (fitted); `false` once the writer is gone.
    async fn send(&self, frame: ServerFrame) -> bool {
        for frame in crate::server::fit::fit(frame, self.max_frame_bytes) {
            if self
                .out
                .send(Outbound::Frame(Box::new(frame)))
                .await
                .is_err()
            {
                return false; // the writer is gone: nobody is left to tell
            }
        }
        true
    }

    fn frame(&self, event: ChatEvent) -> ServerFrame {
        ServerFrame::from_event(&self.chat_id, event).with_instance(&self.instance)
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

    fn voice_notice(&self, message: String) -> ServerFrame {
        ServerFrame::Notice {
            id: self.chat_id.clone(),
            level: NoticeLevel::Warn,
            message,
            source: "voice".into(),
        }
    }

    /// Every event as its frame, in order. `voice_asked`: the chat asked for voice, which is
    /// not configured; a notice after `start` says so and the chat goes on as text.
    pub(super) async fn unspoken(self, mut events: ChatEvents, voice_asked: bool) {
        let mut ended = false;
        while let Some(event) = events.next().await {
            ended = event.is_terminal();
            let started = matches!(event, ChatEvent::Started { .. });
            if !self.send(self.frame(event)).await {
                return;
            }
            if started && voice_asked {
                let notice = self.voice_notice(
                    "voice was asked for, but this server has no voice.tts configured; the \
                     answer comes as text only"
                        .into(),
                );
                if !self.send(notice).await {
                    return;
                }
            }
            if ended {
                return;
            }
        }
        if !ended {
            let _ = self.send(self.no_end()).await;
        }
    }

    /// The events as frames with the answer's `audio` frames among them, in the order of
    /// [`crate::voice::pipeline`]; everything is sent before the last frame.
    pub(super) async fn spoken(self, mut events: ChatEvents, mut speech: Speech<ServerFrame>) {
        let mut ended = false;
        loop {
            tokio::select! {
                // What is ready goes out first; the events are read meanwhile, so synthesis runs
                // ahead while a sentence's audio is awaited.
                biased;
                spoken = speech.next() => {
                    let (frame, last) = match spoken {
                        Spoken::Frame(frame) => {
                            let last = matches!(frame, ServerFrame::Done { .. } | ServerFrame::Error(_));
                            (frame, last)
                        }
                        Spoken::Audio { seq, text, data } => (ServerFrame::Audio {
                            id: self.chat_id.clone(),
                            seq,
                            format: speech.format().to_string(),
                            text,
                            data: BASE64.encode(data),
                        }, false),
                        Spoken::Failed(why) => {
                            tracing::warn!(chat = %self.chat_id, "speech synthesis failed: {why}");
                            (self.voice_notice(format!("the answer cannot be spoken: {why}; it goes on as text")), false)
                        }
                    };
                    if !self.send(frame).await || last {
                        return;
                    }
                }
                event = events.next(), if !ended => match event {
                    Some(ChatEvent::Text(delta)) => {
                        let frame = self.frame(ChatEvent::Text(delta.clone()));
                        speech.text(&delta, frame);
                    }
                    Some(event) => {
                        ended = event.is_terminal();
                        speech.frame(self.frame(event));
                    }
                    None => {
                        ended = true;
                        speech.frame(self.no_end());
                    }
                },
            }
            if ended && speech.is_empty() {
                return;
            }
        }
    }
}
