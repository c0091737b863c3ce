//! Upstream failures become `error` frames with code `upstream` and a useful message; the
//! connection lives on.

use std::time::Duration;

use crate::common::*;
use serde_json::json;

/// Runs one direct chat and returns its error frame's message.
async fn upstream_error(server: &TestServer) -> String {
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"e","input":"hi","enable_tools":false}))
        .await;
    let last = frames.last().unwrap();
    assert_eq!(last["type"], "error", "{frames:?}");
    assert_eq!(last["code"], "upstream");
    assert_eq!(last["id"], "e");
    assert!(
        !frames.iter().any(|f| f["type"] == "done"),
        "a failed chat has no done"
    );
    // The connection still works.
    client.send(json!({"type":"ping"})).await;
    assert_eq!(client.frame().await["type"], "pong");
    last["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn refused_connection() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let server = TestServer::builder()
        .config(|c| {
            c.llm.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
            c.agent.retry.retries = 0;
        })
        .start()
        .await;
    let message = upstream_error(&server).await;
    assert!(
        message.contains("could not connect") && message.contains(&port.to_string()),
        "{message}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn http_401_shows_the_upstream_error_text() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#
            .into(),
    ));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let message = upstream_error(&server).await;
    assert!(
        message.contains("401") && message.contains("Incorrect API key provided"),
        "{message}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn http_500_with_a_text_body() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(500, "model overloaded".into()));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.agent.retry.retries = 0)
        .start()
        .await;
    let message = upstream_error(&server).await;
    assert!(
        message.contains("500") && message.contains("model overloaded"),
        "{message}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn malformed_event() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Sse(vec![Piece::Raw(
        "data: {\"choices\": [oops\n\n".into(),
    )]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let message = upstream_error(&server).await;
    assert!(message.contains("malformed"), "{message}");
    server.shutdown().await;
}

#[tokio::test]
async fn stream_cut_before_done() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Sse(vec![Piece::Raw(chunk(
        json!({"content":"half"}),
    ))]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let message = upstream_error(&server).await;
    assert!(message.contains("ended before"), "{message}");
    server.shutdown().await;
}

#[tokio::test]
async fn first_byte_timeout() {
    let upstream = FakeUpstream::start().await;
    // Not a wait: the upstream's silence before its headers is what the timeout must catch.
    upstream.push(Reply::Delay(
        Duration::from_secs(5),
        Box::new(Reply::text(&["late"])),
    ));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.llm.idle_timeout = Duration::from_millis(300))
        .start()
        .await;
    let started = std::time::Instant::now();
    let message = upstream_error(&server).await;
    assert!(message.contains("timeout"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(3));
    server.shutdown().await;
}

#[tokio::test]
async fn idle_timeout_between_events() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Sse(vec![
        Piece::Raw(chunk(json!({"content":"first "}))),
        Piece::Hang,
    ]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.llm.idle_timeout = Duration::from_millis(300))
        .start()
        .await;
    let message = upstream_error(&server).await;
    assert!(message.contains("timeout"), "{message}");
    server.shutdown().await;
}

#[tokio::test]
async fn keepalive_comments_and_split_events_are_fine() {
    let upstream = FakeUpstream::start().await;
    let event = chunk(json!({"content":"héllo"}));
    let split = event.find('é').unwrap() + 1;
    let (a, b) = event.as_bytes().split_at(split);
    upstream.push(Reply::Sse(vec![
        Piece::Raw(": keep-alive\n\n".into()),
        Piece::Bytes(a.to_vec()),
        Piece::Bytes(b.to_vec()),
        Piece::Raw(": ping\n\n".into()),
        Piece::Raw("data: [DONE]\n\n".into()),
    ]));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["message"]["content"], "héllo");
    server.shutdown().await;
}

#[tokio::test]
async fn a_stream_split_into_single_bytes_still_parses() {
    let upstream = FakeUpstream::start().await;
    let body = [
        ": keep-alive\n\n".to_string(),
        chunk(json!({"content": "wörds "})),
        chunk(json!({"content": "→ ok"})),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    upstream.push(Reply::Sse(
        body.into_bytes()
            .into_iter()
            .map(|b| Piece::Bytes(vec![b]))
            .collect(),
    ));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(text_of(&frames), "wörds → ok");
    assert_eq!(frames.last().unwrap()["type"], "done");
    server.shutdown().await;
}

/// A URL's credentials never reach the client: not the user name, the password, nor a key in
/// the query, whatever failed.
#[tokio::test]
async fn no_credential_of_the_base_url_reaches_an_error_frame() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let server = TestServer::builder()
        .config(|c| {
            c.llm.base_url = Some(format!(
                "http://canaryuser:canarypass@127.0.0.1:{port}/v1?key=canarykey"
            ));
            c.agent.retry.retries = 0;
        })
        .start()
        .await;
    let message = upstream_error(&server).await;
    assert!(
        message.contains(&format!("http://127.0.0.1:{port}/v1")),
        "the server is named: {message}"
    );
    assert!(!message.contains("canary"), "{message}");
    server.shutdown().await;

    // Through a server that answers: the key stays in the query, after the path; the error the
    // server answers does not quote it.
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::Status(403, "forbidden".into()));
    let base = upstream
        .base_url
        .replace("http://", "http://canaryuser:canarypass@");
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.llm.base_url = Some(format!("{base}?key=canarykey"));
        })
        .start()
        .await;
    let message = upstream_error(&server).await;
    assert!(
        message.contains("403") && !message.contains("canary"),
        "{message}"
    );
    let request = &upstream.requests()[0];
    assert_eq!(request.uri.path(), "/v1/chat/completions");
    assert_eq!(request.uri.query(), Some("key=canarykey"));
    server.shutdown().await;
}

/// A reply longer than `max_stream_bytes` ends with an error once the limit is passed, after the
/// text that came before it.
#[tokio::test]
async fn a_reply_over_the_byte_limit_ends_with_an_error() {
    use futures::StreamExt;
    use hookwire::llm::{
        ChatModel, LlmError, ModelEvent, ModelRequest, OpenAiClient, OpenAiConfig,
    };
    let upstream = FakeUpstream::start().await;
    let piece = |i: usize| Piece::Raw(chunk(json!({"content": format!("piece {i:02} ")})));
    // Three events, then (once the client has read them) 47 more: 10 events' bytes are the
    // limit.
    let gate = Gate::new();
    let mut body: Vec<Piece> = (0..3).map(piece).collect();
    body.push(Piece::Until(gate.clone()));
    body.extend((3..50).map(piece));
    body.push(Piece::Raw("data: [DONE]\n\n".into()));
    upstream.push(Reply::Sse(body));
    let limit = chunk(json!({"content":"piece 00 "})).len() * 10;
    let client = OpenAiClient::new(OpenAiConfig {
        base_url: upstream.base_url.clone(),
        max_stream_bytes: limit,
        ..Default::default()
    })
    .unwrap();
    let request = ModelRequest {
        max_tokens: None,
        model: "fake-model".into(),
        messages: vec![hookwire::Message::user("hi")],
        tools: Vec::new(),
    };
    let mut stream = client.stream(request).await.unwrap();
    let mut texts = 0;
    let mut last = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::Text(_)) => {
                texts += 1;
                if texts == 3 {
                    gate.open();
                }
            }
            other => last = Some(other),
        }
    }
    assert_eq!(
        last,
        Some(Err(LlmError::TooLarge(limit))),
        "after {texts} texts"
    );
    assert!((3..=10).contains(&texts), "{texts} texts before the limit");
}

/// The chats of a plain-HTTP upstream take turns on one kept-alive connection: the reply's end
/// gives the connection back for the next chat.
#[tokio::test]
async fn chats_in_a_row_share_one_upstream_connection() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let upstream = FakeUpstream::start().await;
    let target = upstream.base_url.trim_start_matches("http://");
    let target = target.trim_end_matches("/v1").to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front = listener.local_addr().unwrap();
    let connections = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let target = target.clone();
            tokio::spawn(async move {
                if let Ok(mut server) = tokio::net::TcpStream::connect(&target).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    let server = TestServer::builder()
        .config(move |c| {
            c.llm.base_url = Some(format!("http://{front}/v1"));
            c.agent.context.window_tokens = Some(128_000);
        })
        .start()
        .await;
    let mut client = server.connect().await;
    for n in 0..3 {
        upstream.push(Reply::text(&["reply ", &n.to_string()]));
        let frames = client
            .chat(json!({"type":"chat","id":format!("c{n}"),"input":"hi","enable_tools":false}))
            .await;
        assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
        assert_eq!(text_of(&frames), format!("reply {n}"));
    }
    assert_eq!(upstream.requests().len(), 3);
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "one connection, kept alive"
    );
    server.shutdown().await;
}

/// What a hand-written model server does with each request of a connection.
#[derive(Clone, Copy, PartialEq)]
enum Turn {
    /// Answer with one event and `[DONE]`, the body's end in the same write; keep the
    /// connection.
    Answer,
    /// Answer, then close the connection (its keep-alive ends at once).
    AnswerAndClose,
    /// Answer, but write the chunked body's end only when the test says so.
    AnswerEndLater,
    /// Read the request's head and hang up.
    HangUp,
}

/// A model server over raw TCP that does `turns(connection, request)` (both counted from 0)
/// with each request; how many connections it accepted, and `end_now` to release the body's
/// end of an `AnswerEndLater` (then `ended` is notified).
struct RawUpstream {
    addr: std::net::SocketAddr,
    connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    closed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    end_now: std::sync::Arc<tokio::sync::Notify>,
    ended: std::sync::Arc<tokio::sync::Notify>,
}

impl RawUpstream {
    async fn start(turns: fn(usize, usize) -> Turn) -> RawUpstream {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = RawUpstream {
            addr: listener.local_addr().unwrap(),
            connections: Arc::new(AtomicUsize::new(0)),
            closed: Arc::new(AtomicUsize::new(0)),
            end_now: Arc::new(tokio::sync::Notify::new()),
            ended: Arc::new(tokio::sync::Notify::new()),
        };
        let (connections, closed) = (upstream.connections.clone(), upstream.closed.clone());
        let (end_now, ended) = (upstream.end_now.clone(), upstream.ended.clone());
        tokio::spawn(async move {
            let event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"fresh\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
            while let Ok((mut socket, _)) = listener.accept().await {
                let connection = connections.fetch_add(1, Ordering::SeqCst);
                let (closed, end_now, ended) = (closed.clone(), end_now.clone(), ended.clone());
                tokio::spawn(async move {
                    let mut read = Vec::new();
                    let mut buffer = [0u8; 8192];
                    for request in 0.. {
                        let head_end = loop {
                            if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
                                break end + 4;
                            }
                            match socket.read(&mut buffer).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => read.extend_from_slice(&buffer[..n]),
                            }
                        };
                        let turn = turns(connection, request);
                        if turn == Turn::HangUp {
                            return;
                        }
                        let head = String::from_utf8_lossy(&read[..head_end]).to_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .and_then(|value| value.trim().parse().ok())
                            .unwrap_or(0);
                        while read.len() < head_end + length {
                            match socket.read(&mut buffer).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => read.extend_from_slice(&buffer[..n]),
                            }
                        }
                        read.drain(..head_end + length);
                        let mut reply = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
                            event.len()
                        );
                        if turn != Turn::AnswerEndLater {
                            reply.push_str("0\r\n\r\n");
                        }
                        if socket.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                        match turn {
                            Turn::AnswerAndClose => {
                                drop(socket);
                                closed.fetch_add(1, Ordering::SeqCst);
                                return;
                            }
                            Turn::AnswerEndLater => {
                                end_now.notified().await;
                                if socket.write_all(b"0\r\n\r\n").await.is_err() {
                                    return;
                                }
                                ended.notify_one();
                            }
                            Turn::Answer | Turn::HangUp => {}
                        }
                    }
                });
            }
        });
        upstream
    }

    async fn server(&self) -> TestServer {
        let addr = self.addr;
        TestServer::builder()
            .config(move |c| {
                c.llm.base_url = Some(format!("http://{addr}/v1"));
                c.agent.context.window_tokens = Some(128_000);
            })
            .start()
            .await
    }

    fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Runs chat `n` on `client`: its frames, which must end with `done` and the server's text.
async fn fresh_chat(client: &mut Client, n: usize) -> Vec<serde_json::Value> {
    let frames = client
        .chat(json!({"type":"chat","id":format!("c{n}"),"input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    assert_eq!(text_of(&frames), "fresh");
    frames
}

fn notices(frames: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    frames.iter().filter(|f| f["type"] == "notice").collect()
}

/// A kept-alive connection that the upstream closed while it waited is not used again: the
/// next chat goes out on a new connection, with no failure and no retry.
#[tokio::test]
async fn a_kept_alive_connection_closed_by_the_upstream_is_not_used_again() {
    let upstream = RawUpstream::start(|_, _| Turn::AnswerAndClose).await;
    let server = upstream.server().await;
    let mut client = server.connect().await;
    let first = fresh_chat(&mut client, 0).await;
    assert!(notices(&first).is_empty(), "{first:?}");
    let closed = eventually(Duration::from_secs(5), || async {
        upstream.closed.load(std::sync::atomic::Ordering::SeqCst) == 1
    })
    .await;
    assert!(closed, "the upstream closed its connection");
    let second = fresh_chat(&mut client, 1).await;
    assert!(notices(&second).is_empty(), "{second:?}");
    assert_eq!(upstream.connections(), 2);
    server.shutdown().await;
}

/// A kept-alive connection on which the upstream hangs up once it read the request may have
/// been answered in part: the call is not sent again unseen, but retried as any call that got
/// no answer, with its notice (PROTOCOL section 14).
#[tokio::test]
async fn a_request_hung_up_on_a_kept_alive_connection_is_retried_with_a_notice() {
    let upstream = RawUpstream::start(|_, request| {
        if request == 1 {
            Turn::HangUp
        } else {
            Turn::Answer
        }
    })
    .await;
    let server = upstream.server().await;
    let mut client = server.connect().await;
    fresh_chat(&mut client, 0).await;
    let frames = fresh_chat(&mut client, 1).await;
    let notices = notices(&frames);
    assert_eq!(notices.len(), 1, "{frames:?}");
    let message = notices[0]["message"].as_str().unwrap();
    assert!(
        message.contains("closed the connection before answering"),
        "{message}"
    );
    assert_eq!(
        upstream.connections(),
        2,
        "the first connection was tried again"
    );
    server.shutdown().await;
}

/// A server that writes the body's end on its own, after the protocol's last event (the reader
/// stops at the event): the connection is still used again once the end came.
#[tokio::test]
async fn a_connection_is_reused_when_the_body_ends_after_the_last_event() {
    let upstream = RawUpstream::start(|_, request| {
        if request == 0 {
            Turn::AnswerEndLater
        } else {
            Turn::Answer
        }
    })
    .await;
    let server = upstream.server().await;
    let mut client = server.connect().await;
    fresh_chat(&mut client, 0).await;
    let ended = upstream.ended.notified();
    upstream.end_now.notify_one();
    ended.await;
    fresh_chat(&mut client, 1).await;
    assert_eq!(upstream.connections(), 1, "one connection, kept alive");
    server.shutdown().await;
}

/// A model server behind a redirect (a framework's trailing slash, a front that moved it) is
/// reached as before: the redirect is followed.
#[tokio::test]
async fn a_redirect_of_the_model_endpoint_is_followed() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["moved ", "along"]));
    let target = format!("{}/chat/completions", upstream.base_url);
    let front = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || {
            let target = target.clone();
            async move { axum::response::Redirect::temporary(&target) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, front).await;
    });
    let server = TestServer::builder()
        .config(move |c| {
            c.llm.base_url = Some(format!("http://{addr}/v1"));
            c.agent.context.window_tokens = Some(128_000);
        })
        .start()
        .await;
    let frames = chat(
        &server,
        json!({"type":"chat","id":"r","input":"hi","enable_tools":false}),
    )
    .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    assert_eq!(text_of(&frames), "moved along");
    assert_eq!(upstream.requests().len(), 1);
    server.shutdown().await;
}

/// An HTTP proxy named in the environment carries the model's requests to a plain-HTTP upstream
/// (the variables curl and reqwest read): such requests do not go to the upstream directly.
#[tokio::test]
async fn an_http_proxy_in_the_environment_carries_the_model_requests() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["through ", "the proxy"]));
    let target = upstream.base_url.trim_start_matches("http://");
    let target = target.trim_end_matches("/v1").to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = listener.local_addr().unwrap();
    // Everything the clients sent the proxy, every request of every connection.
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let log = sent.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let (target, log) = (target.clone(), log.clone());
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(&target).await else {
                    return;
                };
                let (mut from_client, mut to_client) = client.into_split();
                let (mut from_server, mut to_server) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
                });
                // Absolute-form request lines pass on as they are: the upstream takes them.
                let mut buffer = [0u8; 4096];
                while let Ok(n @ 1..) = from_client.read(&mut buffer).await {
                    log.lock().unwrap().extend_from_slice(&buffer[..n]);
                    if to_server.write_all(&buffer[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let workspace = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_hookwire"));
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOKWIRE_WORKSPACE", workspace.path())
        .env("HOOKWIRE_LLM_BASE_URL", &upstream.base_url)
        .env("HOOKWIRE_MODEL", "fake-model")
        .env("HTTP_PROXY", format!("http://{proxy}"));
    let root = workspace.path().to_path_buf();
    let server = crate::binary::Hookwire::launch(command, root, Some(workspace));
    let frames = server.chat("hi").await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:?}");
    assert_eq!(text_of(&frames), "through the proxy");
    let completions = format!("POST {}/chat/completions HTTP/1.1", upstream.base_url);
    let sent = String::from_utf8_lossy(&sent.lock().unwrap()).into_owned();
    assert!(sent.contains(&completions), "the proxy was sent {sent}");
}
