//! OpenTelemetry traces (docs/protocol.md §17): the exporter ([`Telemetry`], OTLP/HTTP protobuf,
//! batched on the SDK's own thread, flushed at shutdown) and the spans of a chat.
//!
//! Nothing here exists unless an endpoint is configured: [`Telemetry::off`] holds no provider,
//! a chat then gets no span and no context, and every helper below is a no-op that allocates
//! nothing. When it is on, the chat's span and the tracer travel in the OpenTelemetry
//! [`Context`] attached to the chat's future ([`ChatSpan::run`]); the code below it (model calls,
//! tools, hooks, processes) finds both with [`Context::current`], so no layer passes them along.

mod http;

use std::borrow::Cow;
use std::future::Future;
use std::time::Duration;

use futures::future::Either;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{Link, SpanContext, SpanKind, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracer};
use opentelemetry_sdk::trace::{SdkTracerProvider, TracerProviderBuilder};
use opentelemetry_sdk::Resource;

pub use opentelemetry::KeyValue as Attribute;

/// The `telemetry:` settings (and `OTEL_EXPORTER_OTLP_ENDPOINT`, which wins).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TelemetrySettings {
    /// The OTLP/HTTP base URL (`/v1/traces` is added), as `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub otlp_endpoint: Option<String>,
    /// Message content (prompts, answers, tool arguments and results) on the spans.
    pub capture_content: bool,
    /// How long finished spans wait for their batch; `None` = `OTEL_BSP_SCHEDULE_DELAY` or the
    /// SDK's 5 s.
    pub batch_delay: Option<Duration>,
    /// What a client's `traceparent` becomes.
    pub client_trace_context: ClientTraceContext,
}

/// What a client's W3C `traceparent` becomes (`telemetry.client_trace_context`). Either way its
/// `sampled` flag decides nothing: a client cannot keep its chats out of the operator's traces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientTraceContext {
    /// The chat span's parent: the chat joins the client's trace (clients the operator trusts).
    #[default]
    Parent,
    /// A link from the chat span, which starts a trace of its own (clients that may not choose
    /// the trace their chats are recorded in).
    Link,
}

/// The exporter, or nothing. Cheap to clone.
#[derive(Clone, Default)]
pub struct Telemetry {
    on: Option<On>,
}

#[derive(Clone)]
struct On {
    provider: SdkTracerProvider,
    scope: Scope,
    client_trace_context: ClientTraceContext,
}

/// What the spans of a chat need, carried in its [`Context`].
#[derive(Clone)]
struct Scope {
    tracer: SdkTracer,
    capture_content: bool,
}

/// Why the exporter could not be built (the server then runs without traces).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    #[error("the OTLP HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("the OTLP sender's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("the OTLP sender's thread: {0}")]
    Thread(#[source] std::io::Error),
    #[error("the OTLP exporter: {0}")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
}

impl Telemetry {
    /// No exporter: no span, no context, nothing sent.
    pub fn off() -> Telemetry {
        Telemetry { on: None }
    }

    /// An exporter when `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
    /// `settings.otlp_endpoint` names one; else [`Telemetry::off`]. The other `OTEL_*` variables (headers, sampler,
    /// service name, batch sizes) are read by the SDK as the specification says.
    pub fn start(settings: &TelemetrySettings) -> Result<Telemetry, TelemetryError> {
        let from_env = [
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|value| !value.trim().is_empty()));
        let configured = settings
            .otlp_endpoint
            .as_deref()
            .filter(|endpoint| !endpoint.trim().is_empty());
        if !from_env && configured.is_none() {
            return Ok(Telemetry::off());
        }
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_http_client(http::ReqwestClient::new()?);
        if let (false, Some(base)) = (from_env, configured) {
            exporter =
                exporter.with_endpoint(format!("{}/v1/traces", base.trim().trim_end_matches('/')));
        }
        let exporter = exporter.build().map_err(TelemetryError::Exporter)?;
        let mut batch = BatchConfigBuilder::default();
        if let Some(delay) = settings.batch_delay {
            batch = batch.with_scheduled_delay(delay);
        }
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch.build())
            .build();
        let mut resource = Resource::builder();
        if std::env::var("OTEL_SERVICE_NAME").is_err() {
            resource = resource.with_service_name("hookwire");
        }
        let provider = TracerProviderBuilder::default()
            .with_span_processor(processor)
            .with_resource(resource.build())
            .build();
        let tracer = opentelemetry::trace::TracerProvider::tracer_with_scope(
            &provider,
            opentelemetry::InstrumentationScope::builder("hookwire")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
        );
        Ok(Telemetry {
            on: Some(On {
                provider,
                scope: Scope {
                    tracer,
                    capture_content: settings.capture_content,
                },
                client_trace_context: settings.client_trace_context,
            }),
        })
    }

    pub fn is_on(&self) -> bool {
        self.on.is_some()
    }

    /// `future` with the exporter in its context but under no span, for work outside chats (an
    /// MCP server's start): a [`Span`] started in it is the root of a trace of its own.
    pub fn run_outside_chats<F: Future>(&self, future: F) -> impl Future<Output = F::Output> {
        match &self.on {
            Some(on) => {
                Either::Left(future.with_context(Context::new().with_value(on.scope.clone())))
            }
            None => Either::Right(future),
        }
    }

    /// The span of one chat, the child of (or linked to, as configured) `traceparent` (W3C)
    /// when one is given and valid; `user_id`: who it is for (`enduser.id`), when signed in.
    pub fn chat(
        &self,
        chat_id: &str,
        conversation_id: Option<&str>,
        traceparent: Option<&str>,
        user_id: Option<&str>,
    ) -> ChatSpan {
        let Some(on) = &self.on else {
            return ChatSpan { cx: None };
        };
        // Marked sampled: whether a chat is recorded is the operator's sampler's choice, not
        // the client's.
        let remote = traceparent.and_then(parse_traceparent).map(|remote| {
            SpanContext::new(
                remote.trace_id(),
                remote.span_id(),
                remote.trace_flags().with_sampled(true),
                true,
                remote.trace_state().clone(),
            )
        });
        let (parent, links) = match (remote, on.client_trace_context) {
            (Some(remote), ClientTraceContext::Parent) => {
                (Context::new().with_remote_span_context(remote), Vec::new())
            }
            (Some(remote), ClientTraceContext::Link) => {
                (Context::new(), vec![Link::with_context(remote)])
            }
            (None, _) => (Context::new(), Vec::new()),
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", "hookwire"),
            KeyValue::new("hookwire.chat_id", chat_id.to_string()),
        ];
        if let Some(conversation) = conversation_id {
            attributes.push(KeyValue::new(
                "gen_ai.conversation.id",
                conversation.to_string(),
            ));
        }
        if let Some(user_id) = user_id {
            attributes.push(KeyValue::new("enduser.id", user_id.to_string()));
        }
        let span = on
            .scope
            .tracer
            .span_builder("invoke_agent hookwire")
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .with_links(links)
            .start_with_context(&on.scope.tracer, &parent);
        ChatSpan {
            cx: Some(parent.with_span(span).with_value(on.scope.clone())),
        }
    }

    /// Exports what is left and stops the exporter (its thread waits for the last batch, so it
    /// runs off the async threads).
    pub async fn shutdown(&self) {
        let Some(on) = &self.on else { return };
        let provider = on.provider.clone();
        let flushed = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(error)) = flushed {
            tracing::warn!(%error, "telemetry: the last spans were not all exported");
        }
    }
}

/// One chat's span and the context its work runs in; empty when telemetry is off.
pub struct ChatSpan {
    cx: Option<Context>,
}

impl ChatSpan {
    /// The trace's id (32 hex digits), for the `start` frame.
    pub fn trace_id(&self) -> Option<String> {
        let cx = self.cx.as_ref()?;
        let span = cx.span();
        let context = span.span_context();
        context.is_valid().then(|| context.trace_id().to_string())
    }

    /// `future` with the chat's context attached on every poll (or as it is when off).
    pub fn run<F: Future>(&self, future: F) -> impl Future<Output = F::Output> {
        match &self.cx {
            Some(cx) => Either::Left(future.with_context(cx.clone())),
            None => Either::Right(future),
        }
    }

    /// Ends the span with how the chat ended (`done` reason or error code).
    pub fn end(&self, outcome: &str) {
        if let Some(cx) = &self.cx {
            let span = cx.span();
            span.set_attribute(KeyValue::new("hookwire.chat.outcome", outcome.to_string()));
            span.end();
        }
    }
}

/// A span under the current context (a model call, a tool call, a hook run, a compaction); a
/// no-op when the current context carries no telemetry.
pub struct Span {
    cx: Option<Context>,
}

impl Span {
    /// Starts `name()` with `attributes()` as a child of the current span; neither closure runs
    /// when telemetry is off.
    pub fn start(
        name: impl FnOnce() -> String,
        kind: SpanKind,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Span {
        let current = Context::current();
        let Some(scope) = current.get::<Scope>() else {
            return Span { cx: None };
        };
        let span = scope
            .tracer
            .span_builder(name())
            .with_kind(kind)
            .with_attributes(attributes())
            .start_with_context(&scope.tracer, &current);
        Span {
            cx: Some(current.with_span(span)),
        }
    }

    pub fn is_recording(&self) -> bool {
        self.cx.is_some()
    }

    /// Whether message content may go on spans (`telemetry.capture_content`).
    pub fn captures_content(&self) -> bool {
        self.cx
            .as_ref()
            .and_then(|cx| cx.get::<Scope>())
            .is_some_and(|scope| scope.capture_content)
    }

    /// Sets attributes made only when the span records.
    pub fn set(&self, attributes: impl FnOnce() -> Vec<KeyValue>) {
        if let Some(cx) = &self.cx {
            let span = cx.span();
            for attribute in attributes() {
                span.set_attribute(attribute);
            }
        }
    }

    /// Sets message content, only with `capture_content`.
    pub fn set_content(&self, key: &'static str, value: impl FnOnce() -> String) {
        if self.captures_content() {
            self.set(|| vec![KeyValue::new(key, value())]);
        }
    }

    /// Marks the span failed with `message`.
    pub fn error(&self, message: impl FnOnce() -> String) {
        if let Some(cx) = &self.cx {
            let message = message();
            let span = cx.span();
            span.set_attribute(KeyValue::new("error.type", "hookwire.error"));
            span.set_status(opentelemetry::trace::Status::error(Cow::Owned(message)));
        }
    }

    /// `future` run as this span's child (its requests and processes carry this span's
    /// `traceparent`).
    pub fn run<F: Future>(&self, future: F) -> impl Future<Output = F::Output> {
        match &self.cx {
            Some(cx) => Either::Left(future.with_context(cx.clone())),
            None => Either::Right(future),
        }
    }

    pub fn end(self) {
        if let Some(cx) = &self.cx {
            cx.span().end();
        }
    }
}

pub use opentelemetry::trace::SpanKind as Kind;

/// A model call's attributes known before it (GenAI semantic conventions).
pub fn model_call_attributes(provider: &'static str, model: &str) -> Vec<KeyValue> {
    vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", provider),
        KeyValue::new("gen_ai.request.model", model.to_string()),
    ]
}

/// A model call's attributes from its reply. The reply's own model name is not read from the
/// stream, so `gen_ai.response.model` is the model asked for.
pub fn model_reply_attributes(
    model: &str,
    input_tokens: u64,
    output_tokens: u64,
    finish_reason: Option<&str>,
) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("gen_ai.response.model", model.to_string()),
        KeyValue::new(
            "gen_ai.usage.input_tokens",
            i64::try_from(input_tokens).unwrap_or(i64::MAX),
        ),
        KeyValue::new(
            "gen_ai.usage.output_tokens",
            i64::try_from(output_tokens).unwrap_or(i64::MAX),
        ),
    ];
    if let Some(reason) = finish_reason {
        attributes.push(KeyValue::new(
            "gen_ai.response.finish_reasons",
            opentelemetry::Value::Array(
                vec![opentelemetry::StringValue::from(reason.to_string())].into(),
            ),
        ));
    }
    attributes
}

/// A tool call's attributes.
pub fn tool_attributes(name: &str, call_id: &str) -> Vec<KeyValue> {
    vec![
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", name.to_string()),
        KeyValue::new("gen_ai.tool.call.id", call_id.to_string()),
    ]
}

/// An MCP server's start (the MCP semantic conventions' `initialize`); a stdio server gets the
/// span's `TRACEPARENT`.
pub fn mcp_start_attributes(server: &str, stdio: bool) -> Vec<KeyValue> {
    vec![
        KeyValue::new("mcp.method.name", "initialize"),
        KeyValue::new("network.transport", if stdio { "pipe" } else { "tcp" }),
        KeyValue::new("hookwire.mcp.server", server.to_string()),
    ]
}

/// A compaction's attributes.
pub fn compaction_attributes(trigger: &'static str, estimated_tokens: u64) -> Vec<KeyValue> {
    vec![
        KeyValue::new("hookwire.compaction.trigger", trigger),
        KeyValue::new(
            "hookwire.compaction.estimated_tokens",
            i64::try_from(estimated_tokens).unwrap_or(i64::MAX),
        ),
    ]
}

/// A hook run's attributes (its outcome is set when it ends).
pub fn hook_attributes(
    name: &str,
    event: &'static str,
    level: &'static str,
    dialect: &'static str,
) -> Vec<KeyValue> {
    vec![
        KeyValue::new("hookwire.hook.name", name.to_string()),
        KeyValue::new("hookwire.hook.event", event),
        KeyValue::new("hookwire.hook.level", level),
        KeyValue::new("hookwire.hook.dialect", dialect),
    ]
}

/// The current span's W3C `traceparent`, when the current context carries telemetry.
pub fn current_traceparent() -> Option<String> {
    let current = Context::current();
    current.get::<Scope>()?;
    let span = current.span();
    let context = span.span_context();
    context.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        )
    })
}

/// `request` with the current `traceparent` header, if any.
pub fn with_traceparent(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    match current_traceparent() {
        Some(traceparent) => request.header("traceparent", traceparent),
        None => request,
    }
}

/// A W3C `traceparent` (version 00, or a later one read as 00 says): its remote span context.
pub fn parse_traceparent(value: &str) -> Option<opentelemetry::trace::SpanContext> {
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    let mut parts = value.trim().split('-');
    let version = parts.next()?;
    let trace_id = parts.next()?;
    let span_id = parts.next()?;
    let flags = parts.next()?;
    if version.len() != 2 || version == "ff" || (version == "00" && parts.next().is_some()) {
        return None;
    }
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !hex(version, 2) || !hex(trace_id, 32) || !hex(span_id, 16) || !hex(flags, 2) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace_id).ok()?;
    let span_id = SpanId::from_hex(span_id).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let context = SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags & 1),
        true,
        TraceState::default(),
    );
    context.is_valid().then_some(context)
}

#[cfg(test)]
mod tests {
    use super::parse_traceparent;

    #[test]
    fn a_traceparent_is_read_as_w3c_says() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = parse_traceparent(good).expect("valid");
        assert_eq!(
            context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(context.is_sampled());
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad:?}");
        }
    }
}
