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
//! streamed token under load (docs/performance.md). This reader scans each chunk where it lies
//! and lends an event of one data line (a model's every event) from the chunk itself: a streamed
//! token's bytes are not copied here. Only a line split between chunks is gathered in a buffer,
//! and only an event of several data lines is joined in a string; both are reused.

use std::ops::Range;
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

/// The events of a byte stream of chunks `B`: [`EventStream::poll_event`] lends each event's
/// data.
pub(super) struct EventStream<S, B> {
    body: S,
    /// The chunk being read, and how much of it was taken as lines.
    chunk: Option<B>,
    chunk_taken: usize,
    /// Bytes not read where they lie: a line begun in one chunk and ended in another (and the
    /// chunks after it, until the buffer's lines are all taken), or the first bytes while a
    /// byte-order mark cannot be told yet. Its first `buffer_taken` bytes were taken as lines.
    buffer: Vec<u8>,
    buffer_taken: usize,
    /// The event being read.
    lines: Lines,
    /// The last event handed out when it had several data lines; its buffer and `lines.data`'s
    /// take turns, so joining lines allocates nothing once they have grown to an event's size.
    joined: String,
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

/// The event being read.
#[derive(Default)]
struct Lines {
    /// Its one data line so far, where it lies in the source being scanned (not copied).
    single: Option<Range<usize>>,
    /// Its data when it has several lines (or its line lay in an earlier source): each line
    /// followed by LF.
    data: String,
}

/// What a scan of lines found.
enum Found {
    /// An event of one data line, at this range of the source.
    Lent(Range<usize>),
    /// An event of several lines, in `joined`.
    Joined,
    /// A data line that is not UTF-8.
    Utf8(std::str::Utf8Error),
}

/// Where the event found lies.
enum Source {
    Chunk,
    Buffer,
}

impl<S, B> EventStream<S, B> {
    /// The body being read.
    pub(super) fn body_mut(&mut self) -> &mut S {
        &mut self.body
    }

    /// The events of `body`, which may be at most `limit` bytes long.
    pub(super) fn new(body: S, limit: usize) -> Self {
        Self {
            body,
            chunk: None,
            chunk_taken: 0,
            buffer: Vec::new(),
            buffer_taken: 0,
            lines: Lines::default(),
            joined: String::new(),
            read: 0,
            limit,
            ended: false,
            started: false,
            after_cr: false,
        }
    }
}

impl<S, B, E> EventStream<S, B>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    /// Reads the next event and lends its data; an error ends the stream; `None` at the body's
    /// end.
    pub(super) fn poll_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<&str, EventStreamError<E>>>> {
        let (source, found) = loop {
            if let Some(found) = self.next_in_hand() {
                break found;
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
                        self.chunk = None;
                        self.buffer = Vec::new();
                        self.lines = Lines::default();
                        return Poll::Ready(Some(Err(EventStreamError::TooLarge)));
                    }
                    self.take_chunk(chunk);
                }
                Poll::Ready(Some(Err(error))) => {
                    return Poll::Ready(Some(Err(EventStreamError::Transport(error))))
                }
                Poll::Ready(None) => self.ended = true,
                Poll::Pending => return Poll::Pending,
            }
        };
        let data = match found {
            Found::Utf8(error) => return Poll::Ready(Some(Err(EventStreamError::Utf8(error)))),
            Found::Joined => Ok(self.joined.as_str()),
            // Checked when the line was read; the check again costs little and needs no
            // `unsafe`.
            Found::Lent(range) => {
                std::str::from_utf8(&Self::bytes_of(&self.chunk, &self.buffer, source)[range])
                    .map_err(EventStreamError::Utf8)
            }
        };
        Poll::Ready(Some(data))
    }

    /// The next event complete in the bytes at hand, the buffer's first, and where it lies; the
    /// lines read are taken. `None` when more bytes are needed (an unfinished line is then in
    /// the buffer, and no event's data lies in a source).
    fn next_in_hand(&mut self) -> Option<(Source, Found)> {
        if self.buffer_taken > 0 {
            self.buffer.drain(..self.buffer_taken);
            self.buffer_taken = 0;
        }
        if !self.started {
            let at_hand = match &self.chunk {
                Some(chunk) => &chunk.as_ref()[self.chunk_taken..],
                None => &[][..],
            };
            // A byte-order mark may come split over chunks: wait until it can be told.
            if self.buffer.is_empty() && at_hand.len() >= BOM.len() {
                self.started = true;
                if at_hand.starts_with(BOM) {
                    self.chunk_taken += BOM.len();
                }
            } else {
                self.buffer.extend_from_slice(at_hand);
                self.chunk_taken += at_hand.len();
                if self.buffer.len() < BOM.len() && BOM.starts_with(&self.buffer) && !self.ended {
                    return None;
                }
                self.started = true;
                if self.buffer.starts_with(BOM) {
                    self.buffer.drain(..BOM.len());
                }
            }
        }
        if !self.buffer.is_empty() {
            let (taken, found) = scan(&self.buffer, 0, &mut self.lines, &mut self.after_cr);
            let event = self.event_from(Source::Buffer, found);
            if event.is_some() {
                // Taken at the next call: the event's data may lie in the buffer.
                self.buffer_taken = taken;
            } else {
                self.buffer.drain(..taken);
            }
            return event;
        }
        let chunk = self.chunk.as_ref()?.as_ref();
        if self.chunk_taken >= chunk.len() {
            return None;
        }
        let (taken, found) = scan(chunk, self.chunk_taken, &mut self.lines, &mut self.after_cr);
        self.chunk_taken = taken;
        if found.is_none() {
            // An unfinished line: it waits for the next chunk in the buffer.
            self.buffer.extend_from_slice(&chunk[taken..]);
        }
        let event = self.event_from(Source::Chunk, found);
        if event.is_none() {
            self.chunk = None;
        }
        event
    }

    /// What a scan of `source` found, its event's data moved to `joined` when it was joined;
    /// when nothing was, the one data line read so far is copied out of the source.
    fn event_from(&mut self, source: Source, found: Option<Found>) -> Option<(Source, Found)> {
        match found {
            Some(Found::Joined) => {
                std::mem::swap(&mut self.joined, &mut self.lines.data);
                self.lines.data.clear();
                self.joined.pop(); // the LF after the last line
                Some((source, Found::Joined))
            }
            Some(found) => Some((source, found)),
            None => {
                if let Some(single) = self.lines.single.take() {
                    // Checked as UTF-8 when it was read.
                    let line = std::str::from_utf8(
                        &Self::bytes_of(&self.chunk, &self.buffer, source)[single],
                    );
                    self.lines.data.push_str(line.unwrap_or_default());
                    self.lines.data.push('\n');
                }
                None
            }
        }
    }

    /// The bytes of `source` (the chunk or the buffer), where a lent event's range points.
    fn bytes_of<'a>(chunk: &'a Option<B>, buffer: &'a [u8], source: Source) -> &'a [u8] {
        match source {
            Source::Chunk => chunk.as_ref().map_or(&[][..], |c| c.as_ref()),
            Source::Buffer => buffer,
        }
    }

    /// A chunk of the body, read where it lies unless the buffer holds an unfinished line.
    fn take_chunk(&mut self, chunk: B) {
        let mut skip = 0;
        if self.after_cr && !chunk.as_ref().is_empty() {
            self.after_cr = false;
            if chunk.as_ref()[0] == b'\n' {
                skip = 1; // the LF of a CRLF split between chunks
            }
        }
        if self.buffer.is_empty() {
            self.chunk = Some(chunk);
            self.chunk_taken = skip;
        } else {
            self.buffer.extend_from_slice(&chunk.as_ref()[skip..]);
            self.chunk = None;
            self.chunk_taken = 0;
        }
    }
}

/// Reads the lines of `source` from `from` until one ends an event: where the lines taken end,
/// and the event (or the error) found. The event's data is in `lines` (one line lent at its
/// range of `source`, or several joined in `lines.data`).
fn scan(
    source: &[u8],
    from: usize,
    lines: &mut Lines,
    after_cr: &mut bool,
) -> (usize, Option<Found>) {
    let mut start = from;
    while let Some(offset) = source[start..]
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
    {
        let end = start + offset;
        let line_start = start;
        start = end + 1;
        let ends_in_cr = source[end] == b'\r';
        if ends_in_cr && start < source.len() && source[start] == b'\n' {
            start += 1; // CRLF
        }
        *after_cr = ends_in_cr && start == source.len();
        if line_start == end {
            if let Some(single) = lines.single.take() {
                return (start, Some(Found::Lent(single)));
            }
            if !lines.data.is_empty() {
                return (start, Some(Found::Joined));
            }
            continue;
        }
        let Some(value) = data_value(&source[line_start..end]) else {
            continue;
        };
        let value = line_start + value.start..line_start + value.end;
        if let Err(error) = std::str::from_utf8(&source[value.clone()]) {
            return (start, Some(Found::Utf8(error)));
        }
        if lines.single.is_none() && lines.data.is_empty() {
            lines.single = Some(value);
            continue;
        }
        for line in lines.single.take().into_iter().chain([value]) {
            // Both checked as UTF-8 above.
            let text = std::str::from_utf8(&source[line]).unwrap_or_default();
            lines.data.push_str(text);
            lines.data.push('\n');
        }
    }
    (start, None)
}

/// Where the value of a non-blank line lies in it when it is a `data` field (not a comment, not
/// another field).
fn data_value(line: &[u8]) -> Option<Range<usize>> {
    if line.first() == Some(&b':') {
        return None; // a comment
    }
    let (field, value) = match line.iter().position(|&b| b == b':') {
        Some(colon) => {
            let after = colon + 1;
            let space = usize::from(line.get(after) == Some(&b' '));
            (&line[..colon], after + space..line.len())
        }
        None => (line, line.len()..line.len()),
    };
    (field == b"data").then_some(value)
}

/// Each event's data as an owned string (the tests read it so).
#[cfg(test)]
impl<S, B, E> Stream for EventStream<S, B>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]> + Unpin,
{
    type Item = Result<String, EventStreamError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.poll_event(cx)
            .map(|event| event.map(|read| read.map(str::to_owned)))
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
    async fn lent_and_joined_events_read_the_same_split_anywhere() {
        // One-line events (lent from the chunk), joined ones, an empty one, every line ending.
        let stream = b"data: one\n\ndata: a\rdata: b\r\rdata:\n\n: note\ndata: {\"k\": 1}\r\n\r\ndata: x\ndata: y\n\ndata: last\n\n";
        let whole = read(&[stream]).await;
        assert_eq!(
            whole,
            (
                ["one", "a\nb", "", r#"{"k": 1}"#, "x\ny", "last"]
                    .map(String::from)
                    .to_vec(),
                None
            )
        );
        for cut in 0..stream.len() {
            for second in cut..stream.len() {
                let parts = [&stream[..cut], &stream[cut..second], &stream[second..]];
                assert_eq!(read(&parts).await, whole, "cut at {cut} and {second}");
            }
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(read(&bytes).await, whole, "one byte a chunk");
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
