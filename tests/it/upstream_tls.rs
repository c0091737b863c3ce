//! A model server over TLS, as hosted APIs are: it offers HTTP/2, which takes a limited number of
//! requests at once on one connection (`SETTINGS_MAX_CONCURRENT_STREAMS`, often 100–256). A
//! streaming chat holds its request for the whole reply, so chats must not queue behind each
//! other for a stream: each gets a connection of its own (docs/providers.md).

use std::time::Duration;

use serde_json::json;
use tokio_tungstenite::tungstenite::Message as WsMessage;

use crate::binary::Hookwire;
use crate::common::*;

/// A reply that streams one piece, then waits for `gate` before the rest.
fn held_reply(first: &str, gate: &Gate) -> Reply {
    let Reply::Sse(mut pieces) = Reply::text(&[first, " and the rest"]) else {
        unreachable!("a text reply is SSE");
    };
    // After the role chunk and the first piece.
    pieces.insert(2, Piece::Until(gate.clone()));
    Reply::Sse(pieces)
}

/// The delta of a chat's first `text` frame, or what came instead of it within 10 s.
async fn first_text(client: &mut Client) -> Result<String, String> {
    let mut seen = Vec::new();
    loop {
        match client.next_message(Duration::from_secs(10)).await {
            Some(WsMessage::Text(text)) => {
                let frame: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
                if frame["type"] == "text" {
                    return Ok(frame["delta"].as_str().unwrap_or_default().to_string());
                }
                if frame["type"] == "done" || frame["type"] == "error" {
                    return Err(format!("the chat ended before its text: {seen:?} {frame}"));
                }
                seen.push(frame);
            }
            other => return Err(format!("no text within 10 s: {seen:?} then {other:?}")),
        }
    }
}

#[tokio::test]
async fn streaming_chats_do_not_wait_for_each_other_on_an_http2_model_server() {
    // One request at a time per HTTP/2 connection: the second chat shows at once whether it
    // waits for the first one's stream.
    let upstream = FakeUpstream::start_tls(1).await;
    let (first_gate, second_gate) = (Gate::new(), Gate::new());
    upstream.push(held_reply("one", &first_gate));
    upstream.push(held_reply("two", &second_gate));
    let authority = FakeUpstream::tls_authority();
    let server = Hookwire::start(
        "",
        &[
            ("HOOKWIRE_LLM_BASE_URL", upstream.base_url.as_str()),
            ("HOOKWIRE_LLM_API_KEY", "test-key"),
            // The test's certificate authority, in place of the system's.
            ("SSL_CERT_FILE", authority.to_str().unwrap()),
        ],
    );

    let mut first = server.connect().await;
    first
        .send(json!({"type":"chat","id":"1","input":"go","enable_tools":false}))
        .await;
    assert_eq!(first_text(&mut first).await, Ok("one".to_string()));

    // The first chat is still streaming (its reply waits at its gate).
    let mut second = server.connect().await;
    second
        .send(json!({"type":"chat","id":"2","input":"go","enable_tools":false}))
        .await;
    let second_text = first_text(&mut second).await;
    first_gate.open();
    second_gate.open();
    assert_eq!(
        second_text,
        Ok("two".to_string()),
        "the second chat waited for the first; the log: {:?}",
        server.log()
    );

    for client in [&mut first, &mut second] {
        let frames = client.until_end().await;
        assert_eq!(frame_of(&frames, "done")["type"], "done", "{frames:?}");
        assert_eq!(text_of(&frames), " and the rest", "{frames:?}");
    }
    assert_eq!(upstream.requests().len(), 2);
}
