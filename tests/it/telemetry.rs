//! OpenTelemetry traces (docs/protocol.md §17): a real OTLP/HTTP receiver on 127.0.0.1:0 decodes
//! what the server exports with the official protobuf definitions (`opentelemetry-proto`), and
//! the fake upstream, an http hook and a command hook show the trace context they were given.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::common::*;

/// The upgrade's parent: trace and span id as a caller upstream of hookwire would send them.
const PARENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";

#[derive(Clone, Default)]
pub(crate) struct Received {
    spans: Arc<Mutex<Vec<Span>>>,
    /// Every request the receiver got, whatever its path (the "nothing sent" test counts them).
    requests: Arc<Mutex<usize>>,
    /// The `traceparent` header of each http hook call.
    hook_traceparents: Arc<Mutex<Vec<Option<String>>>>,
}

impl Received {
    pub(crate) fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }
}

/// An OTLP/HTTP receiver (`POST /v1/traces`, protobuf) and an http hook (`POST /hook`).
pub(crate) async fn receiver() -> (String, Received) {
    let received = Received::default();
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/hook", post(hook))
        .fallback(|State(state): State<Received>| async move {
            *state.requests.lock().unwrap() += 1;
            ""
        })
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), received)
}

async fn traces(State(state): State<Received>, body: Bytes) -> Vec<u8> {
    *state.requests.lock().unwrap() += 1;
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf request");
    let mut spans = state.spans.lock().unwrap();
    for resource in request.resource_spans {
        for scope in resource.scope_spans {
            spans.extend(scope.spans);
        }
    }
    Vec::new()
}

async fn hook(State(state): State<Received>, headers: HeaderMap) -> &'static str {
    *state.requests.lock().unwrap() += 1;
    let traceparent = headers
        .get("traceparent")
        .map(|v| v.to_str().unwrap().to_string());
    state.hook_traceparents.lock().unwrap().push(traceparent);
    "{}"
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute(span: &Span, key: &str) -> Option<AnyValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.clone()?.value)
}

fn text(span: &Span, key: &str) -> String {
    match attribute(span, key) {
        Some(AnyValue::StringValue(s)) => s,
        other => panic!("{key} of {}: {other:?}", span.name),
    }
}

fn int(span: &Span, key: &str) -> i64 {
    match attribute(span, key) {
        Some(AnyValue::IntValue(n)) => n,
        other => panic!("{key} of {}: {other:?}", span.name),
    }
}

pub(crate) fn named<'a>(spans: &'a [Span], prefix: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| s.name.starts_with(prefix))
        .collect()
}

/// A long message: `tag` and about 100 tokens of `word`.
fn long(tag: &str, word: &str) -> String {
    format!("{tag} {}", format!("{word} ").repeat(100))
}

/// Three groups, about 400 tokens: over half of a 600-token window, so the chat compacts.
fn history() -> Vec<Value> {
    vec![
        json!({"role":"user","content":long("q1","alpha")}),
        json!({"role":"assistant","content":long("a1","alpha")}),
        json!({"role":"user","content":long("q2","bravo")}),
        json!({"role":"assistant","content":long("a2","bravo")}),
        json!({"role":"user","content":"q3 charlie"}),
        json!({"role":"assistant","content":"a3 charlie"}),
    ]
}

async fn connect_with(server: &TestServer, traceparent: &str) -> Client {
    let mut request = format!("ws://{}/ws", server.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("traceparent", traceparent.parse().unwrap());
    let (ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    Client { ws }
}

#[tokio::test]
async fn a_chat_exports_its_span_tree_and_passes_its_trace_on() {
    let (base, received) = receiver().await;
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["SUMMARY of alpha and bravo"]));
    upstream.push(Reply::text(&["[NEED_TOOL] look"]));
    upstream.push(Reply::tool_calls(&[(
        "call_1",
        "list_dir",
        json!({"path":"."}),
    )]));
    upstream.push(Reply::tool_calls(&[(
        "call_2",
        "read_file",
        json!({"path":"a.txt"}),
    )]));
    upstream.push(Reply::text(&["SECRET-ANSWER"]));
    let seen = tempfile::tempdir().unwrap();
    let seen_file = seen.path().join("traceparent.log");
    let hooks = format!(
        "pre_send_message:\n  - type: http\n    url: {base}/hook\npre_tool_execution:\n  - command: 'printf \"%s\\n\" \"$TRACEPARENT\" >> {}; echo \"{{}}\"'\n",
        seen_file.display()
    );
    let endpoint = base.clone();
    let server = TestServer::builder()
        .upstream(&upstream)
        .hooks_file("hooks.yaml", &hooks)
        .prepare(|dir| std::fs::write(dir.join("a.txt"), "alpha").unwrap())
        .config(move |c| {
            c.agent.context.window_tokens = Some(600);
            c.agent.context.compact_threshold = 0.5;
            c.agent.context.keep_recent_groups = 1;
            c.telemetry.otlp_endpoint = Some(endpoint);
            c.telemetry.batch_delay = Some(Duration::from_millis(50));
        })
        .start()
        .await;
    let mut client = connect_with(&server, &format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01")).await;
    let frames = client
        .chat(
            json!({"type":"chat","id":"c1","input":"SECRET-INPUT","messages":history(),
                     "conversation_id":"conv-7"}),
        )
        .await;
    let done = frames.last().unwrap();
    assert_eq!(done["type"], "done", "{frames:#?}");
    assert!(
        types_of(&frames).contains(&"compact".to_string()),
        "{frames:#?}"
    );
    // The start frame names the trace: the caller's, continued.
    assert_eq!(frame_of(&frames, "start")["trace_id"], PARENT_TRACE);

    // The chat's span ends last; once it is in, everything is.
    assert!(
        eventually(Duration::from_secs(10), || async {
            !named(&received.spans(), "invoke_agent").is_empty()
        })
        .await,
        "no chat span exported"
    );
    let spans = received.spans();
    let chat = named(&spans, "invoke_agent")[0];
    assert_eq!(hex(&chat.trace_id), PARENT_TRACE);
    assert_eq!(
        hex(&chat.parent_span_id),
        PARENT_SPAN,
        "the upgrade's traceparent is the parent"
    );
    assert_eq!(text(chat, "hookwire.chat_id"), "c1");
    assert_eq!(text(chat, "gen_ai.conversation.id"), "conv-7");
    for span in &spans {
        assert_eq!(hex(&span.trace_id), PARENT_TRACE, "{}", span.name);
    }

    // One compaction, its summary call beneath it.
    let compact = named(&spans, "compact");
    assert_eq!(compact.len(), 1);
    assert_eq!(compact[0].parent_span_id, chat.span_id);
    let calls = named(&spans, "chat ");
    assert_eq!(calls.len(), 5, "summary, planning, two rounds, answer");
    let under_compact: Vec<_> = calls
        .iter()
        .filter(|s| s.parent_span_id == compact[0].span_id)
        .collect();
    assert_eq!(under_compact.len(), 1, "the summary call");
    let mut input_tokens = 0;
    let mut output_tokens = 0;
    for call in &calls {
        if call.parent_span_id != compact[0].span_id {
            assert_eq!(call.parent_span_id, chat.span_id, "{}", call.name);
        }
        let model = text(call, "gen_ai.request.model");
        assert_eq!(call.name, format!("chat {model}"));
        assert_eq!(text(call, "gen_ai.operation.name"), "chat");
        assert_eq!(text(call, "gen_ai.provider.name"), "openai");
        assert_eq!(text(call, "gen_ai.response.model"), model);
        assert!(attribute(call, "gen_ai.response.finish_reasons").is_some());
        input_tokens += int(call, "gen_ai.usage.input_tokens");
        output_tokens += int(call, "gen_ai.usage.output_tokens");
    }
    assert_eq!(
        input_tokens,
        done["usage"]["prompt_tokens"].as_i64().unwrap()
    );
    assert_eq!(
        output_tokens,
        done["usage"]["completion_tokens"].as_i64().unwrap()
    );

    // Two tool calls under the chat.
    let tools = named(&spans, "execute_tool");
    let mut names: Vec<_> = tools.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["execute_tool list_dir", "execute_tool read_file"]);
    for tool in &tools {
        assert_eq!(tool.parent_span_id, chat.span_id);
        assert_eq!(text(tool, "gen_ai.operation.name"), "execute_tool");
        let expected = if tool.name.ends_with("list_dir") {
            "call_1"
        } else {
            "call_2"
        };
        assert_eq!(text(tool, "gen_ai.tool.call.id"), expected);
    }

    // The hooks: the http one once, the command one before each tool.
    let command_hooks = named(&spans, "hook pre_tool_execution");
    assert_eq!(command_hooks.len(), 2);
    let http_hooks = named(&spans, "hook pre_send_message");
    assert_eq!(http_hooks.len(), 1);
    for hook in command_hooks.iter().chain(&http_hooks) {
        assert_eq!(hook.parent_span_id, chat.span_id);
        assert_eq!(text(hook, "hookwire.hook.level"), "server");
        assert_eq!(text(hook, "hookwire.hook.dialect"), "hookwire");
        assert_eq!(text(hook, "hookwire.hook.outcome"), "success");
        assert!(!text(hook, "hookwire.hook.name").is_empty());
        assert_eq!(
            text(hook, "hookwire.hook.event"),
            hook.name.trim_start_matches("hook ")
        );
    }

    // No message content by default.
    for span in &spans {
        for kv in &span.attributes {
            let shown = format!("{:?}", kv.value);
            assert!(
                !shown.contains("SECRET") && !shown.contains("alpha"),
                "{} {}: {shown}",
                span.name,
                kv.key
            );
        }
    }

    // The context went on: each upstream request carries its model call's span.
    let requests = upstream.requests();
    assert_eq!(requests.len(), 5);
    for request in &requests {
        let traceparent = request.headers["traceparent"].to_str().unwrap();
        assert!(
            traceparent.starts_with(&format!("00-{PARENT_TRACE}-")),
            "{traceparent}"
        );
        let parent = &traceparent[36..52];
        assert!(
            calls.iter().any(|call| hex(&call.span_id) == parent),
            "the upstream request's parent is a model call span"
        );
    }
    let hook_seen = received.hook_traceparents.lock().unwrap().clone();
    assert_eq!(hook_seen.len(), 1);
    let hook_parent = hook_seen[0]
        .as_deref()
        .expect("the http hook got a traceparent");
    assert_eq!(
        hook_parent,
        format!("00-{PARENT_TRACE}-{}-01", hex(&http_hooks[0].span_id))
    );
    let command_seen = std::fs::read_to_string(&seen_file).unwrap();
    let lines: Vec<_> = command_seen.lines().collect();
    assert_eq!(lines.len(), 2, "{command_seen}");
    for line in lines {
        assert!(line.starts_with(&format!("00-{PARENT_TRACE}-")), "{line}");
        assert!(command_hooks
            .iter()
            .any(|hook| line.contains(&hex(&hook.span_id))));
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_chat_frame_traceparent_is_the_parent_and_content_is_captured_only_when_asked() {
    let (base, received) = receiver().await;
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["THE-ANSWER"]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.telemetry.otlp_endpoint = Some(base);
            c.telemetry.capture_content = true;
            // A long delay: the shutdown has to flush what is waiting.
            c.telemetry.batch_delay = Some(Duration::from_secs(600));
        })
        .start()
        .await;
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let frames = chat(
        &server,
        json!({"type":"chat","id":"c2","input":"THE-QUESTION","enable_tools":false,
               "traceparent": format!("00-{trace}-b7ad6b7169203331-01")}),
    )
    .await;
    assert_eq!(frame_of(&frames, "start")["trace_id"], trace);
    server.shutdown().await;
    let spans = received.spans();
    let chat_span = named(&spans, "invoke_agent")[0];
    assert_eq!(hex(&chat_span.parent_span_id), "b7ad6b7169203331");
    let call = named(&spans, "chat ")[0];
    assert!(text(call, "gen_ai.input.messages").contains("THE-QUESTION"));
    assert!(text(call, "gen_ai.output.messages").contains("THE-ANSWER"));
}

/// A client's `sampled` flag does not decide what the operator sees: a chat whose `traceparent`
/// says "not sampled" is still exported (in the client's trace). With
/// `client_trace_context: link` the chat starts a trace of its own that links to the client's.
#[tokio::test]
async fn a_client_cannot_keep_its_chats_out_of_the_traces() {
    for link in [false, true] {
        let (base, received) = receiver().await;
        let upstream = FakeUpstream::start().await;
        upstream.push(Reply::text(&["ok"]));
        let server = TestServer::builder()
            .upstream(&upstream)
            .config(move |c| {
                c.telemetry.otlp_endpoint = Some(base);
                c.telemetry.batch_delay = Some(Duration::from_secs(600));
                if link {
                    c.telemetry.client_trace_context =
                        hookwire::telemetry::ClientTraceContext::Link;
                }
            })
            .start()
            .await;
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
        let frames = chat(
            &server,
            json!({"type":"chat","id":"c3","input":"hi","enable_tools":false,
                   "traceparent": format!("00-{trace}-00f067aa0ba902b7-00")}),
        )
        .await;
        let shown_trace = frame_of(&frames, "start")["trace_id"].clone();
        server.shutdown().await;
        let spans = received.spans();
        let chat_span = named(&spans, "invoke_agent");
        assert_eq!(chat_span.len(), 1, "link={link}: the chat span is exported");
        let chat_span = chat_span[0];
        assert_eq!(shown_trace, hex(&chat_span.trace_id), "link={link}");
        if link {
            assert_ne!(hex(&chat_span.trace_id), trace);
            assert!(chat_span.parent_span_id.is_empty());
            assert_eq!(chat_span.links.len(), 1);
            assert_eq!(hex(&chat_span.links[0].trace_id), trace);
            assert_eq!(hex(&chat_span.links[0].span_id), "00f067aa0ba902b7");
        } else {
            assert_eq!(hex(&chat_span.trace_id), trace);
            assert_eq!(hex(&chat_span.parent_span_id), "00f067aa0ba902b7");
        }
    }
}

/// The front-end wires (docs/protocol.md §19) take the request's `traceparent` header as the
/// parent of the chat's span, as `/ws` takes the upgrade's.
#[tokio::test]
async fn an_http_wire_s_traceparent_header_is_the_parent_of_its_chat() {
    let (base, received) = receiver().await;
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.telemetry.otlp_endpoint = Some(base);
            c.telemetry.batch_delay = Some(Duration::from_secs(600));
        })
        .start()
        .await;
    let http = reqwest::Client::new();
    let parents = [
        (
            "/v1/chat/completions",
            "1111111111111111",
            json!({"model": "hookwire", "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/api/chat",
            "2222222222222222",
            json!({"messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
        ),
        (
            "/ag-ui",
            "3333333333333333",
            json!({"threadId": "t", "runId": "r", "state": {}, "tools": [], "context": [],
                "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": "hi"}]}),
        ),
    ];
    for (path, parent, body) in &parents {
        upstream.push(Reply::text(&["hello"]));
        let response = http
            .post(server.url(path))
            .header(
                "traceparent",
                format!("00-0af7651916cd43dd8448eb211c80319c-{parent}-01"),
            )
            .json(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        let _ = response.text().await.unwrap();
    }
    server.shutdown().await;
    let spans = received.spans();
    let chats = named(&spans, "invoke_agent");
    for (path, parent, _) in &parents {
        assert!(
            chats
                .iter()
                .any(|span| hex(&span.parent_span_id) == *parent),
            "{path}: no chat span with the parent {parent}"
        );
    }
}

#[tokio::test]
async fn with_no_endpoint_nothing_is_built_or_sent() {
    let (base, received) = receiver().await;
    // The server's own settings say nothing: no exporter exists.
    assert!(std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").is_err());
    let off = hookwire::telemetry::Telemetry::start(&Default::default()).unwrap();
    assert!(!off.is_on());
    let upstream = FakeUpstream::start().await;
    let seen = tempfile::tempdir().unwrap();
    let seen_file = seen.path().join("env.log");
    let hooks = format!(
        "pre_send_message:\n  - type: http\n    url: {base}/hook\n  - command: 'printf \"[%s]\\n\" \"${{TRACEPARENT-unset}}\" >> {}; echo \"{{}}\"'\n",
        seen_file.display()
    );
    let server = TestServer::builder()
        .upstream(&upstream)
        .hooks_file("hooks.yaml", &hooks)
        .start()
        .await;
    let mut client = connect_with(&server, &format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01")).await;
    let frames = client
        .chat(json!({"type":"chat","id":"c3","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    assert!(frame_of(&frames, "start").get("trace_id").is_none());
    server.shutdown().await;
    assert!(upstream.requests()[0].headers.get("traceparent").is_none());
    assert_eq!(*received.hook_traceparents.lock().unwrap(), [None]);
    assert_eq!(
        *received.requests.lock().unwrap(),
        1,
        "only the hook's call"
    );
    assert_eq!(std::fs::read_to_string(&seen_file).unwrap(), "[unset]\n");
}

/// An MCP stdio server starts with the server, outside any chat: its start is a trace of its own
/// (an `initialize` span), and the process gets that span's context as `TRACEPARENT`.
#[tokio::test]
async fn an_mcp_stdio_server_started_outside_chats_gets_the_traceparent_of_its_start() {
    use hookwire::mcp::{McpOrigin, McpServerSettings, McpServerSpec};
    let (base, received) = receiver().await;
    let upstream = FakeUpstream::start().await;
    let seen = tempfile::tempdir().unwrap();
    let seen_file = seen.path().join("traceparent");
    // The test MCP server, started by a shell that first writes down what it was given.
    let script = format!(
        "printf '%s' \"$TRACEPARENT\" > '{}'; exec '{}'",
        seen_file.display(),
        crate::mcp::server_binary().display()
    );
    let spec = McpServerSpec {
        command: Some("sh".into()),
        args: vec!["-c".into(), script],
        ..McpServerSpec::default()
    };
    let settings = McpServerSettings::new("test", spec, McpOrigin::Config).unwrap();
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(move |c| {
            c.mcp_servers = vec![settings];
            c.telemetry.otlp_endpoint = Some(base);
            c.telemetry.batch_delay = Some(Duration::from_millis(50));
        })
        .start()
        .await;
    crate::mcp::running(&server, 1).await;
    assert!(
        eventually(Duration::from_secs(10), || async {
            !named(&received.spans(), "initialize").is_empty()
        })
        .await,
        "no span for the MCP server's start"
    );
    let spans = received.spans();
    let start = named(&spans, "initialize")[0];
    assert!(start.parent_span_id.is_empty(), "a trace of its own");
    assert_eq!(text(start, "hookwire.mcp.server"), "test");
    assert_eq!(text(start, "network.transport"), "pipe");
    assert_eq!(
        std::fs::read_to_string(&seen_file).unwrap(),
        format!("00-{}-{}-01", hex(&start.trace_id), hex(&start.span_id))
    );
    server.shutdown().await;
}
