//! Server-Sent Events read from a response body, as the HTML standard's "interpreting an event
//! stream" says, keeping what the model protocols read: each event's data (OpenAI's and
//! Anthropic's events both carry their kind inside the JSON).
//!
//! Lines end at CRLF, LF or CR; a blank line dispatches the event; a line starting with `:` is a
//! comment; `data:` lines are joined with LF (one space after the colon is dropped); other fields
//! (`event`, `id`, `retry`) change nothing here; an event whose data is empty is not dispatched,
//! nor is one the body ends in the middle of; a leading byte-order mark is skipped.
//!
//! Written here rather than taken from `eventsource-stream`: that crate re-allocated its buffer
//! for every line and built each event's type and id strings, about 5% of the server's CPU per
//! streamed token under load (docs/performance.md). This reader scans each chunk once and lends
//! each event's data from buffers it reuses.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;

/// The UTF-8 byte-order mark, skipped at the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What can go wrong reading events.
#[derive(Debug)]
pub(super) enum EventStreamError<E> {
    /// A data line is not UTF-8.
    Utf8(std::str::Utf8Error),
    /// The body failed.
    Transport(E),
    /// The body passed the byte limit.
    TooLarge,
}

/// The events of a byte stream: [`EventStream::poll_event`] lends each event's data.
pub(super) struct EventStream<S> {
    body: S,
    /// Bytes read and not yet taken as lines.
    buffer: Vec<u8>,
    /// The data of the event being read, each line followed by LF.
    data: String,
    /// The last event handed out; its buffer and `data`'s take turns, so reading an event
    /// allocates nothing once they have grown to an event's size.
    event: String,
    /// Bytes of the body read so far, and the most it may have.
    read: usize,
    limit: usize,
    /// The body has ended.
    ended: bool,
    /// Whether the first bytes were seen (a byte-order mark may open the stream).
    started: bool,
    /// The last line ended in CR: an LF opening the next chunk belongs to it.
    after_cr: bool,
}

impl<S> EventStream<S> {
    /// The events of `body`, which may be at most `limit` bytes long.
    pub(super) fn new(body: S, limit: usize) -> Self {
        Self {
            body,
            buffer: Vec::new(),
            data: String::new(),
            event: String::new(),
            read: 0,
            limit,
            ended: false,
            started: false,
            after_cr: false,
        }
    }
}

impl<S, B, E> EventStream<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    /// The data of the event [`EventStream::poll_event`] last read.
    pub(super) fn event(&self) -> &str {
        &self.event
    }

    /// Reads the next event (its data is then [`EventStream::event`]); an error ends the
    /// stream; `None` at the body's end.
    pub(super) fn poll_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<(), EventStreamError<E>>>> {
        loop {
            match self.next_in_buffer() {
                Some(Ok(())) => return Poll::Ready(Some(Ok(()))),
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                None => {}
            }
            if self.ended {
                // An event the body ended in the middle of is not dispatched.
                return Poll::Ready(None);
            }
            match Pin::new(&mut self.body).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    // Checked as the bytes come, not as events end: a line that never ends
                    // cannot grow the buffer past the limit.
                    self.read = self.read.saturating_add(chunk.as_ref().len());
                    if self.read > self.limit {
                        self.ended = true;
                        self.buffer.clear();
                        self.data.clear();
                        return Poll::Ready(Some(Err(EventStreamError::TooLarge)));
                    }
                    self.take_chunk(chunk.as_ref());
                }
                Poll::Ready(Some(Err(error))) => {
                    return Poll::Ready(Some(Err(EventStreamError::Transport(error))))
                }
                Poll::Ready(None) => self.ended = true,
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// Moves the next event complete in the buffer, if any, to `event`; the lines read are
    /// removed.
    fn next_in_buffer(&mut self) -> Option<Result<(), EventStreamError<E>>> {
        if !self.started {
            // A byte-order mark may come split over chunks: wait until it can be told.
            if self.buffer.len() < BOM.len() && BOM.starts_with(&self.buffer) && !self.ended {
                return None;
            }
            self.started = true;
            if self.buffer.starts_with(BOM) {
                self.buffer.drain(..BOM.len());
            }
        }
        let mut start = 0;
        let mut found = None;
        while let Some(offset) = self.buffer[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = start + offset;
            let line_start = start;
            start = end + 1;
            let ends_in_cr = self.buffer[end] == b'\r';
            if ends_in_cr && start < self.buffer.len() && self.buffer[start] == b'\n' {
                start += 1; // CRLF
            }
            self.after_cr = ends_in_cr && start == self.buffer.len();
            let line = &self.buffer[line_start..end];
            if line.is_empty() {
                if !self.data.is_empty() {
                    std::mem::swap(&mut self.event, &mut self.data);
                    self.data.clear();
                    self.event.pop(); // the LF after the last line
                    found = Some(Ok(()));
                    break;
                }
            } else if let Err(error) = add_line(&mut self.data, line) {
                found = Some(Err(EventStreamError::Utf8(error)));
                break;
            }
        }
        self.buffer.drain(..start);
        found
    }

    /// Adds a chunk of the body to the buffer.
    fn take_chunk(&mut self, mut chunk: &[u8]) {
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..]; // the LF of a CRLF split between chunks
            }
        }
        self.buffer.extend_from_slice(chunk);
    }
}

/// One non-blank line into the event's data (only `data` fields count).
fn add_line(data: &mut String, line: &[u8]) -> Result<(), std::str::Utf8Error> {
    if line.first() == Some(&b':') {
        return Ok(()); // a comment
    }
    let (field, value) = match line.iter().position(|&b| b == b':') {
        Some(colon) => {
            let value = &line[colon + 1..];
            (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
        }
        None => (line, &b""[..]),
    };
    if field == b"data" {
        data.push_str(std::str::from_utf8(value)?);
        data.push('\n');
    }
    Ok(())
}

/// Each event's data as an owned string (the tests read it so).
#[cfg(test)]
impl<S, B, E> Stream for EventStream<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    type Item = Result<String, EventStreamError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        this.poll_event(cx)
            .map(|event| event.map(|read| read.map(|()| this.event.clone())))
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    /// The data of every event of `chunks`, and the error that ended them, if any.
    async fn read(chunks: &[&[u8]]) -> (Vec<String>, Option<String>) {
        let body = futures::stream::iter(
            chunks
                .iter()
                .map(|chunk| Ok::<_, std::io::Error>(chunk.to_vec()))
                .collect::<Vec<_>>(),
        );
        let mut events = EventStream::new(body, usize::MAX);
        let mut data = Vec::new();
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => data.push(event),
                Err(EventStreamError::Utf8(error)) => return (data, Some(error.to_string())),
                Err(EventStreamError::Transport(error)) => return (data, Some(error.to_string())),
                Err(EventStreamError::TooLarge) => return (data, Some("too large".into())),
            }
        }
        (data, None)
    }

    #[tokio::test]
    async fn a_body_over_the_limit_ends_even_inside_a_line_that_never_ends() {
        let long_line = format!("data: {}", "x".repeat(100));
        let chunks: Vec<&[u8]> = vec![b"data: a\n\n", long_line.as_bytes(), long_line.as_bytes()];
        let body = futures::stream::iter(
            chunks
                .iter()
                .map(|chunk| Ok::<_, std::io::Error>(chunk.to_vec()))
                .collect::<Vec<_>>(),
        );
        let mut events = EventStream::new(body, 150);
        assert_eq!(events.next().await.unwrap().unwrap(), "a");
        assert!(matches!(
            events.next().await,
            Some(Err(EventStreamError::TooLarge))
        ));
        assert!(events.next().await.is_none());
    }

    #[tokio::test]
    async fn events_end_at_a_blank_line_whatever_the_line_ends() {
        for stream in [
            &b"data: a\n\ndata: b\n\n"[..],
            b"data: a\r\n\r\ndata: b\r\n\r\n",
            b"data: a\r\rdata: b\r\r",
            b"data: a\n\r\ndata: b\r\n\n",
        ] {
            assert_eq!(read(&[stream]).await, (vec!["a".into(), "b".into()], None));
        }
    }

    #[tokio::test]
    async fn events_split_anywhere_between_chunks_read_the_same() {
        let stream =
            "\u{feff}data: {\"x\":\"é\"}\r\n: keep-alive\r\n\r\ndata: two\r\n\r\n".as_bytes();
        let whole = read(&[stream]).await;
        assert_eq!(
            whole,
            (vec![r#"{"x":"é"}"#.to_string(), "two".into()], None)
        );
        for cut in 0..stream.len() {
            for second in cut..stream.len() {
                let parts = [&stream[..cut], &stream[cut..second], &stream[second..]];
                assert_eq!(read(&parts).await, whole, "cut at {cut} and {second}");
            }
        }
    }

    #[tokio::test]
    async fn data_lines_join_with_a_newline_and_other_fields_change_nothing() {
        let stream =
            b"event: delta\nid: 7\nretry: 10\ndata:first\ndata:  second\ndata\nunknown: x\n\n";
        assert_eq!(
            read(&[stream]).await,
            (vec!["first\n second\n".into()], None)
        );
    }

    #[tokio::test]
    async fn comments_empty_events_and_an_unfinished_event_are_not_dispatched() {
        let stream = b": comment\n\nevent: ping\n\ndata: kept\n\ndata: cut off";
        assert_eq!(read(&[stream]).await, (vec!["kept".into()], None));
    }

    #[tokio::test]
    async fn invalid_utf8_in_data_is_an_error_after_the_events_before_it() {
        let (data, error) = read(&[b"data: ok\n\ndata: \xff\xfe\n\n"]).await;
        assert_eq!(data, vec!["ok".to_string()]);
        assert!(error.is_some_and(|e| e.contains("utf-8")));
    }
}
