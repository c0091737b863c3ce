//! The transport every streaming client shares: the HTTP client, the request sent and its status
//! read (an upstream's error text shown as it wrote it), and the Server-Sent Events read to the
//! end honestly: every read bounded by the idle timeout, the body capped, and the stream stopped
//! after its first error or its end. What an event means is the protocol's [`Decoder`]'s job.
//! Dropping the stream drops the response and so the upstream connection; no task is spawned.
//! A plain `http://` upstream without a proxy is read on a connection the chat's task drives
//! itself (`inline/`); any other through reqwest.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::event_stream::{EventStream, EventStreamError};
use super::inline::{closed_before_answer, InlineBody, InlineError, InlinePool};
use futures::Stream;
use serde_json::Value;

use super::{LlmError, ModelEvent, ModelStream};
use crate::types::SideWait;

/// The longest upstream error text shown to the person.
pub(super) const MAX_ERROR_TEXT: usize = 500;

/// The HTTP client of one model client: reqwest's, and for a plain-HTTP upstream that no proxy
/// stands before, the connections its chats drive themselves.
#[derive(Debug, Clone)]
pub(super) struct Upstream {
    pub(super) client: reqwest::Client,
    inline: Option<InlinePool>,
}

/// The HTTP client for requests to `url`, with the connect timeout; fails only without a TLS
/// provider.
pub(super) fn client(url: &reqwest::Url, connect_timeout: Duration) -> Result<Upstream, LlmError> {
    // reqwest panics without a process-wide rustls provider; a second install is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        // HTTP/1.1 only, a connection per streaming reply. Over HTTP/2 (which hosted APIs offer
        // over TLS) every chat would share one connection, and past the server's
        // `SETTINGS_MAX_CONCURRENT_STREAMS` (often 100–256) further chats would wait for a
        // stream to end: hyper opens no second connection (hyperium/hyper#2197). A streaming
        // chat holds its stream for the whole reply, so they would wait for whole replies.
        .http1_only()
        // An idle upstream connection is kept 30 s (reqwest's default is 90 s): long enough to
        // be reused while chats come, short enough that a burst's connections and their
        // buffers are given back within a minute of quiet (docs/performance.md).
        .pool_idle_timeout(super::inline::IDLE_FOR)
        .build()
        .map_err(|e| LlmError::Setup(e.to_string()))?;
    Ok(Upstream {
        client,
        inline: InlinePool::for_url(url, connect_timeout),
    })
}

/// What a protocol makes of the events of one reply.
pub(super) trait Decoder: Send + Unpin + 'static {
    /// One event's data: `None` to read on, `Some` for an event to hand out (a `Finished` ends
    /// the stream) or an error (which ends it too).
    fn event(&mut self, data: &str) -> Option<Result<ModelEvent, LlmError>>;
    /// The body ended without the protocol's last event: finished if the reply said so, else
    /// an error.
    fn end(&mut self) -> Result<ModelEvent, LlmError>;
}

/// The endpoint under an API root: `segments` appended to the root's path, its query kept
/// (`http://h/v1?key=X` + `chat/completions` → `http://h/v1/chat/completions?key=X`).
pub(crate) fn endpoint(base_url: &str, segments: &[&str]) -> Result<reqwest::Url, LlmError> {
    let not_a_base =
        |why: &str| LlmError::Setup(format!("the base URL {} {why}", redact_url(base_url)));
    let mut url = reqwest::Url::parse(base_url.trim())
        .map_err(|e| not_a_base(&format!("is not an absolute URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(not_a_base("is not http:// or https://"));
    }
    url.set_fragment(None);
    url.path_segments_mut()
        .map_err(|()| not_a_base("cannot have a path"))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// A URL as a client may see it: without user name, password, query and fragment (where keys
/// hide). Text that is not a URL is not quoted at all.
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url.trim()) {
        Ok(url) if url.has_host() => redacted(&url),
        _ => "(not a URL)".into(),
    }
}

/// [`redact_url`] of a parsed URL.
pub(super) fn redacted(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    // Fails only for URLs that cannot have credentials, which then have none.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    let text = url.to_string();
    // `https://h` parses with the path `/`; quote it as written.
    match url.path() {
        "/" => text.trim_end_matches('/').to_string(),
        _ => text,
    }
}

/// Sends `request` and reads its streamed reply with `decoder`. Errors before the first event
/// (connect, HTTP status, no headers within `idle`) come back here; later ones as stream items.
pub(super) async fn stream<D: Decoder>(
    upstream: &Upstream,
    request: reqwest::RequestBuilder,
    url: &reqwest::Url,
    idle: Duration,
    max_bytes: usize,
    decoder: D,
) -> Result<ModelStream, LlmError> {
    let request = crate::telemetry::with_traceparent(request)
        .build()
        .map_err(|error| LlmError::Stream(root_cause(&error.without_url())))?;
    let Some(pool) = &upstream.inline else {
        return stream_pooled(&upstream.client, request, url, idle, max_bytes, decoder).await;
    };
    let reply = match tokio::time::timeout(idle, pool.send(&request)).await {
        Err(_) => return Err(LlmError::Timeout(idle)),
        Ok(Err(InlineError::Connect(reason))) => {
            return Err(LlmError::Connect {
                url: redacted(url),
                reason,
            })
        }
        Ok(Err(error)) if super::inline::unanswered(&error) => {
            return Err(LlmError::NoAnswer(root_cause(&error)))
        }
        Ok(Err(error)) => return Err(LlmError::Stream(root_cause(&error))),
        // reqwest follows redirects (a framework's trailing slash, http → https); so does the
        // request sent again through it. The server only pointed elsewhere: nothing was done.
        Ok(Ok(reply)) if matches!(reply.status.as_u16(), 301 | 302 | 303 | 307 | 308) => {
            drop(reply);
            return stream_pooled(&upstream.client, request, url, idle, max_bytes, decoder).await;
        }
        Ok(Ok(reply)) => reply,
    };
    if !reply.status.is_success() {
        let wait = retry_after(&reply.headers);
        return Err(refusal(reply.status, wait, idle, reply.body.text()).await);
    }
    Ok(reading(reply.body, idle, max_bytes, decoder))
}

/// [`stream`] through reqwest's client and its pool.
async fn stream_pooled<D: Decoder>(
    client: &reqwest::Client,
    request: reqwest::Request,
    url: &reqwest::Url,
    idle: Duration,
    max_bytes: usize,
    decoder: D,
) -> Result<ModelStream, LlmError> {
    let response = match tokio::time::timeout(idle, client.execute(request)).await {
        Err(_) => return Err(LlmError::Timeout(idle)),
        Ok(Err(error)) if error.is_connect() || error.is_timeout() => {
            return Err(LlmError::Connect {
                url: redacted(url),
                reason: root_cause(&error.without_url()),
            })
        }
        Ok(Err(error)) if closed_before_answer(&error) => {
            return Err(LlmError::NoAnswer(root_cause(&error.without_url())))
        }
        Ok(Err(error)) => return Err(LlmError::Stream(root_cause(&error.without_url()))),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if !status.is_success() {
        let wait = retry_after(response.headers());
        return Err(refusal(status, wait, idle, response.text()).await);
    }
    Ok(reading(
        Box::pin(response.bytes_stream()),
        idle,
        max_bytes,
        decoder,
    ))
}

/// An upstream's refusal: its status, the wait it asks for, and its own text (`text`, the body
/// read within `idle`; "(no readable body)" when it could not be).
async fn refusal<E>(
    status: reqwest::StatusCode,
    retry_after: Option<Duration>,
    idle: Duration,
    text: impl Future<Output = Result<String, E>>,
) -> LlmError {
    let body = tokio::time::timeout(idle, text)
        .await
        .ok()
        .and_then(Result::ok);
    LlmError::Status {
        status: status.as_u16(),
        body: body.map_or_else(
            || String::from("(no readable body)"),
            |body| status_body_text(&body),
        ),
        retry_after,
    }
}

/// The events of `body` read with `decoder`, as the model's stream.
fn reading<D, S, B, E>(body: S, idle: Duration, max_bytes: usize, decoder: D) -> ModelStream
where
    D: Decoder,
    S: Stream<Item = Result<B, E>> + ReplyBody + Send + Unpin + 'static,
    B: AsRef<[u8]> + Send + Unpin + 'static,
    E: BodyError + Send + 'static,
{
    let now = tokio::time::Instant::now();
    Box::pin(Reading {
        events: EventStream::new(body, max_bytes),
        decoder,
        idle_timeout: idle,
        idle: Box::pin(tokio::time::sleep_until(now + idle)),
        idle_wait: SideWait::new(),
        last_event: now,
        reading: false,
        max_bytes,
        over: false,
    })
}

/// A reply's body as the reader holds it: told when the protocol's last event was read.
trait ReplyBody {
    fn protocol_ended(&mut self) {}
}

/// Its connection may then go back to the pool before the body's end was read.
impl ReplyBody for InlineBody {
    fn protocol_ended(&mut self) {
        InlineBody::protocol_ended(self);
    }
}

/// reqwest's connection task reads the body's end on its own.
impl<T: ?Sized> ReplyBody for Pin<Box<T>> {}

/// A body's failure, as the person reads it.
trait BodyError {
    fn text(self) -> String;
}

impl BodyError for reqwest::Error {
    fn text(self) -> String {
        root_cause(&self.without_url())
    }
}

impl BodyError for hyper::Error {
    fn text(self) -> String {
        root_cause(&self)
    }
}

/// One streamed reply, read as it is polled: no task, no future per event (an `unfold` of an
/// `async fn` moved this state in and out for every token, docs/performance.md).
struct Reading<D, S, B> {
    events: EventStream<S, B>,
    decoder: D,
    idle_timeout: Duration,
    /// One timer for the whole reply, moved to `last_event + idle_timeout` only when it fires
    /// early: a timer per read (set, then cancelled by the event) was a measurable share of a
    /// streamed token's cost under load (docs/performance.md).
    idle: Pin<Box<tokio::time::Sleep>>,
    /// The timer is polled only when it fired (or was moved), not at every wait: registering
    /// it again per token was a measurable share of a token's cost too.
    idle_wait: SideWait,
    /// When the current read began: silence is counted from each read, as a timeout per read
    /// would count it.
    last_event: tokio::time::Instant,
    /// A read is under way (`last_event` is its start).
    reading: bool,
    max_bytes: usize,
    /// After an error or the end, the stream stops.
    over: bool,
}

impl<D, S, B, E> Stream for Reading<D, S, B>
where
    D: Decoder,
    S: Stream<Item = Result<B, E>> + ReplyBody + Unpin,
    B: AsRef<[u8]> + Unpin,
    E: BodyError,
{
    type Item = Result<ModelEvent, LlmError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.over {
            return Poll::Ready(None);
        }
        let item = loop {
            if !this.reading {
                this.last_event = tokio::time::Instant::now();
                this.reading = true;
            }
            let data = match this.events.poll_event(cx) {
                Poll::Ready(Some(Ok(data))) => data,
                Poll::Ready(Some(Err(error))) => break Err(stream_error(error, this.max_bytes)),
                Poll::Ready(None) => break this.decoder.end(),
                Poll::Pending => {
                    let idle = &mut this.idle;
                    if this
                        .idle_wait
                        .poll(cx, |cx| idle.as_mut().poll(cx))
                        .is_pending()
                    {
                        return Poll::Pending;
                    }
                    let deadline = this.last_event + this.idle_timeout;
                    if deadline <= tokio::time::Instant::now() {
                        break Err(LlmError::Timeout(this.idle_timeout));
                    }
                    this.idle.as_mut().reset(deadline);
                    // A timer that fired and was reset is registered again only when polled.
                    this.idle_wait.look_again();
                    continue;
                }
            };
            this.reading = false;
            if let Some(item) = this.decoder.event(data) {
                break item;
            }
        };
        this.over = !matches!(item, Ok(ModelEvent::Text(_)));
        if matches!(item, Ok(ModelEvent::Finished { .. })) {
            this.events.body_mut().protocol_ended();
        }
        Poll::Ready(Some(item))
    }
}

fn stream_error<E: BodyError>(error: EventStreamError<E>, max_bytes: usize) -> LlmError {
    match error {
        EventStreamError::Utf8(e) => LlmError::Malformed(format!("invalid UTF-8: {e}")),
        EventStreamError::Transport(e) => LlmError::Stream(e.text()),
        EventStreamError::TooLarge => LlmError::TooLarge(max_bytes),
    }
}

/// The wait a failed response asks for: `retry-after-ms` (OpenAI's), else `Retry-After` in
/// seconds. An HTTP date is not read (the back-off applies then).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| number("retry-after"))
        .map(|secs| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// The most specific text of an error's source chain ("Connection refused (os error 111)").
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

/// The message of an `{"error": …}` value (OpenAI's and Anthropic's both have `message`).
pub(super) fn error_message(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string())
}

/// The upstream's own error text: `error.message` of a JSON body, else the body, shortened.
fn status_body_text(body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("error").map(error_message).or_else(|| {
                v.get("message")
                    .and_then(|m| m.as_str())
                    .map(str::to_string)
            })
        });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    if text.chars().count() > MAX_ERROR_TEXT {
        let short: String = text.chars().take(MAX_ERROR_TEXT).collect();
        format!("{short}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_error_text_is_extracted() {
        assert_eq!(
            status_body_text(r#"{"error":{"message":"Incorrect API key","type":"x"}}"#),
            "Incorrect API key"
        );
        // Anthropic's shape.
        assert_eq!(
            status_body_text(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(status_body_text("  plain failure \n"), "plain failure");
        assert_eq!(status_body_text(r#"{"message":"bad model"}"#), "bad model");
        let long = "x".repeat(2000);
        assert_eq!(status_body_text(&long).chars().count(), MAX_ERROR_TEXT + 1);
    }

    #[test]
    fn retry_after_is_read_in_seconds_or_milliseconds() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = reqwest::header::HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, reqwest::header::HeaderValue::from_static(value));
            }
            retry_after(&map)
        };
        assert_eq!(
            headers(&[("retry-after", "2")]),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            headers(&[("retry-after", "1"), ("retry-after-ms", "250")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]),
            None
        );
        assert_eq!(headers(&[("retry-after", "-1")]), None);
        assert_eq!(headers(&[]), None);
    }

    #[test]
    fn endpoints_keep_the_query_after_the_path() {
        let url = |base: &str, segments: &[&str]| endpoint(base, segments).unwrap().to_string();
        assert_eq!(
            url("http://h/v1?key=X", &["chat", "completions"]),
            "http://h/v1/chat/completions?key=X"
        );
        assert_eq!(
            url("http://h:8080/v1/", &["chat", "completions"]),
            "http://h:8080/v1/chat/completions"
        );
        assert_eq!(
            url("https://h", &["v1", "messages"]),
            "https://h/v1/messages"
        );
        for bad in ["", "/v1", "127.0.0.1:8080/v1", "ftp://h/v1", "mailto:a@b"] {
            let error = endpoint(bad, &["x"]).unwrap_err();
            assert!(matches!(error, LlmError::Setup(_)), "{bad}: {error}");
        }
        let error = endpoint("ftp://user:canary@h/v1?key=canary", &["x"]).unwrap_err();
        assert!(!error.to_string().contains("canary"), "{error}");
    }

    #[test]
    fn redaction_drops_credentials_and_queries() {
        assert_eq!(
            redact_url("https://user:pass@h.example/v1?key=K&x=1#frag"),
            "https://h.example/v1"
        );
        assert_eq!(redact_url("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1");
        assert_eq!(redact_url("user:pass with spaces"), "(not a URL)");
    }
}
