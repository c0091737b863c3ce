//! One chat's speech: the assistant's text cut into sentences, each synthesized in a task of its
//! own (at most `concurrency` at once, ahead of the one being sent), and everything the chat
//! sends put back in one order.
//!
//! The order is the chat's own, with each sentence's audio where its text ended: a `hook` frame
//! that came after a sentence comes after that sentence's audio, so a client that plays the
//! audio in order reaches the hook at the point it was sent. Only `text` frames move ahead of
//! audio that is still being made (the text shows at once); they never pass another frame.
//! Any frame other than text ends the sentence in progress (a round's text before a tool call
//! is spoken before it).
//!
//! A synthesis that fails ends speech for the chat: [`Spoken::Failed`] once, the audio still
//! queued dropped, nothing more synthesized. Cancelling the chat's token stops every synthesis
//! at once (a command's processes are killed) and drops their audio.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::split::Sentences;
use super::tts::Tts;

/// What to send next, in order.
#[derive(Debug)]
pub(crate) enum Spoken<T> {
    Frame(T),
    Audio {
        seq: u64,
        text: String,
        data: Vec<u8>,
    },
    /// The first synthesis that failed, and why: speech is over for this chat.
    Failed(String),
}

enum Slot<T> {
    Frame(T),
    Audio {
        seq: u64,
        text: String,
        task: AbortOnDropHandle<Result<Vec<u8>, super::VoiceError>>,
    },
}

pub(crate) struct Speech<T> {
    tts: Arc<Tts>,
    sentences: Sentences,
    queue: VecDeque<Slot<T>>,
    permits: Arc<Semaphore>,
    cancel: CancellationToken,
    next_seq: u64,
    failed: bool,
}

impl<T> Speech<T> {
    /// Speech for one chat; `cancel` is the chat's.
    pub(crate) fn new(tts: Arc<Tts>, cancel: CancellationToken) -> Self {
        let permits = Arc::new(Semaphore::new(tts.concurrency()));
        Speech {
            tts,
            sentences: Sentences::default(),
            queue: VecDeque::new(),
            permits,
            cancel,
            next_seq: 0,
            failed: false,
        }
    }

    /// The format of the audio.
    pub(crate) fn format(&self) -> &str {
        self.tts.format()
    }

    /// A `text` frame carrying `delta`: queued after the last frame that is not audio, and the
    /// sentences it completes queued for synthesis.
    pub(crate) fn text(&mut self, delta: &str, frame: T) {
        let at = self
            .queue
            .iter()
            .rposition(|slot| matches!(slot, Slot::Frame(_)))
            .map_or(0, |last| last + 1);
        self.queue.insert(at, Slot::Frame(frame));
        for sentence in self.sentences.push(delta) {
            self.speak(sentence);
        }
    }

    /// Any other frame: the sentence in progress ends before it.
    pub(crate) fn frame(&mut self, frame: T) {
        if let Some(sentence) = self.sentences.flush() {
            self.speak(sentence);
        }
        self.queue.push_back(Slot::Frame(frame));
    }

    fn speak(&mut self, text: String) {
        if self.failed || self.cancel.is_cancelled() {
            return;
        }
        let (tts, permits, cancel) = (self.tts.clone(), self.permits.clone(), self.cancel.clone());
        let sentence = text.clone();
        let task = tokio::spawn(async move {
            tokio::select! {
                _ = cancel.cancelled() => Err(super::VoiceError::from("cancelled")),
                audio = async {
                    // The semaphore is never closed.
                    let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
                    tts.synthesize(&sentence).await
                } => audio,
            }
        });
        self.queue.push_back(Slot::Audio {
            seq: self.next_seq,
            text,
            task: AbortOnDropHandle::new(task),
        });
        self.next_seq += 1;
    }

    /// The next thing to send, once it is ready; pending for ever while nothing is queued (so it
    /// can wait beside the chat's events). Cancel-safe.
    pub(crate) async fn next(&mut self) -> Spoken<T> {
        loop {
            let stopped = self.failed || self.cancel.is_cancelled();
            match self.queue.front_mut() {
                None => std::future::pending::<()>().await,
                Some(Slot::Frame(_)) => {
                    if let Some(Slot::Frame(frame)) = self.queue.pop_front() {
                        return Spoken::Frame(frame);
                    }
                }
                // Dropping the slot aborts its synthesis.
                Some(Slot::Audio { .. }) if stopped => drop(self.queue.pop_front()),
                Some(Slot::Audio { task, .. }) => {
                    let result = tokio::select! {
                        result = task => result,
                        _ = self.cancel.cancelled() => continue,
                    };
                    let Some(Slot::Audio { seq, text, .. }) = self.queue.pop_front() else {
                        continue;
                    };
                    match result {
                        Ok(Ok(data)) => return Spoken::Audio { seq, text, data },
                        _ if self.cancel.is_cancelled() => {}
                        Ok(Err(why)) => {
                            // The client hears what failed; what the engine said, the log only.
                            if let Some(detail) = why.detail() {
                                tracing::warn!(%why, detail, "speech synthesis failed");
                            }
                            return self.fail(why.to_string());
                        }
                        Err(join) => return self.fail(format!("the synthesis failed: {join}")),
                    }
                }
            }
        }
    }

    fn fail(&mut self, why: String) -> Spoken<T> {
        self.failed = true;
        self.queue.retain(|slot| matches!(slot, Slot::Frame(_)));
        Spoken::Failed(why)
    }

    /// Nothing is left to send.
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}
