//! The HTTP endpoints.

use crate::common::*;
use serde_json::Value;

#[tokio::test]
async fn healthz_info_skills_metrics_and_page() {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder().upstream(&upstream).start().await;

    assert_eq!(
        http_get(server.addr, "/healthz").await,
        (200, "ok".to_string())
    );

    let (status, body) = http_get(server.addr, "/api/info").await;
    assert_eq!(status, 200);
    let info: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(info["model"], "fake-model");
    assert_eq!(info["demo"], false);
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    assert!(info["tools"].as_array().is_some());
    assert!(info["default_skills"].as_array().is_some());

    let (status, body) = http_get(server.addr, "/api/skills").await;
    assert_eq!(status, 200);
    assert!(serde_json::from_str::<Value>(&body).unwrap().is_array());

    let (status, body) = http_get(server.addr, "/").await;
    assert_eq!(status, 200);
    assert!(body.contains("<title>hookwire</title>"), "{body}");

    // One chat so the chat metrics exist.
    let mut client = server.connect().await;
    client
        .chat(serde_json::json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    let (status, body) = http_get(server.addr, "/metrics").await;
    assert_eq!(status, 200);
    for name in [
        "hookwire_connections_open",
        "hookwire_chats_total",
        "hookwire_llm_calls_total",
        "hookwire_text_deltas_total",
        "hookwire_llm_first_token_seconds_bucket",
    ] {
        assert!(body.contains(name), "{name} missing from /metrics:\n{body}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn demo_model_is_reported_and_answers() {
    let server = TestServer::builder().start().await;
    let (_, body) = http_get(server.addr, "/api/info").await;
    let info: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(info["demo"], true);
    let mut client = server.connect().await;
    let frames = client
        .chat(serde_json::json!({"type":"chat","id":"d","input":"hello","enable_tools":false}))
        .await;
    assert_eq!(types_of(&frames), ["start", "text", "done"]);
    let text = text_of(&frames);
    assert!(
        text.contains("demo model") && text.contains("OPENAI_API_KEY"),
        "{text}"
    );
    // Streamed word by word, so streaming is visible.
    assert!(frames.iter().filter(|f| f["type"] == "text").count() > 10);
    assert_eq!(frames.last().unwrap()["message"]["content"], text);
    server.shutdown().await;
}

#[tokio::test]
async fn session_cap_answers_503_before_the_upgrade() {
    let server = TestServer::builder()
        .config(|c| c.limits.max_connections = 1)
        .start()
        .await;
    let _first = server.connect().await;
    let second = tokio_tungstenite::connect_async(format!("ws://{}/ws", server.addr)).await;
    match second {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 503)
        }
        other => panic!("expected HTTP 503, got {other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test]
async fn origin_allowlist_refuses_other_origins() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let server = TestServer::builder()
        .config(|c| c.allowed_origins = Some(vec!["http://good.test".into()]))
        .start()
        .await;
    let url = format!("ws://{}/ws", server.addr);
    let mut bad = url.clone().into_client_request().unwrap();
    bad.headers_mut()
        .insert("origin", "http://evil.test".parse().unwrap());
    match tokio_tungstenite::connect_async(bad).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 403)
        }
        other => panic!("expected HTTP 403, got {other:?}"),
    }
    let mut good = url.into_client_request().unwrap();
    good.headers_mut()
        .insert("origin", "http://good.test".parse().unwrap());
    assert!(tokio_tungstenite::connect_async(good).await.is_ok());
    server.shutdown().await;
}
