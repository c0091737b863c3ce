//! The baseline for short chats: the least a WebSocket-to-OpenAI relay can do. axum's WebSocket,
//! reqwest, serde_json; TCP_NODELAY on; no agent, no hooks, no limits. On a `chat` frame it
//! sends `start`, streams the upstream's SSE deltas as `text` frames and ends with `done` —
//! the same frames a hookwire client reads for a chat without tools.

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::serve::ListenerExt;
use axum::Router;
use futures::StreamExt;
use serde_json::{json, Value};

#[derive(Clone)]
struct Relay {
    client: reqwest::Client,
    url: String,
}

/// Serves the relay on a free loopback port; returns its address.
pub async fn start(upstream_base_url: &str) -> std::io::Result<std::net::SocketAddr> {
    let state = Relay {
        client: reqwest::Client::new(),
        url: format!("{upstream_base_url}/chat/completions"),
    };
    let app = Router::new().route("/ws", get(upgrade)).with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}

async fn upgrade(State(relay): State<Relay>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| session(socket, relay))
}

async fn session(mut socket: WebSocket, relay: Relay) {
    while let Some(Ok(Message::Text(text))) = socket.recv().await {
        let Ok(frame) = serde_json::from_str::<Value>(text.as_str()) else {
            return;
        };
        let id = frame["id"].clone();
        if send(&mut socket, json!({"type":"start","id":id}))
            .await
            .is_err()
        {
            return;
        }
        let body = json!({"model":"m","stream":true,"messages":[{"role":"user","content":frame["input"]}]});
        let Ok(response) = relay.client.post(&relay.url).json(&body).send().await else {
            return;
        };
        let mut bytes = response.bytes_stream();
        let mut buffer = String::new();
        let mut answer = String::new();
        while let Some(Ok(chunk)) = bytes.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                let Some(data) = event.trim().strip_prefix("data: ") else {
                    continue;
                };
                let Ok(data) = serde_json::from_str::<Value>(data) else {
                    continue;
                };
                if let Some(delta) = data["choices"][0]["delta"]["content"].as_str() {
                    if !delta.is_empty() {
                        answer.push_str(delta);
                        let frame = json!({"type":"text","id":id,"delta":delta});
                        if send(&mut socket, frame).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
        let done = json!({"type":"done","id":id,"reason":"completed","message":{"role":"assistant","content":answer}});
        if send(&mut socket, done).await.is_err() {
            return;
        }
    }
}

async fn send(socket: &mut WebSocket, frame: Value) -> Result<(), axum::Error> {
    socket.send(Message::text(frame.to_string())).await
}
