//! The context window a local model server states (docs/providers.md, "The context window"):
//! llama.cpp's `/props`, vLLM's `/v1/models`, Ollama's `/api/show`. hookwire asks at the first
//! chat, then compacts by that window and limits each reply to a quarter of it.

use serde_json::{json, Value};

use crate::common::*;

/// About `n` hundred tokens of text.
fn hundreds(n: usize) -> String {
    "word ".repeat(100 * n)
}

/// A history of `groups` turns of about 300 tokens each.
fn history(groups: usize) -> Vec<Value> {
    (0..groups)
        .flat_map(|n| {
            [
                json!({"role":"user","content":format!("q{n} {}", hundreds(1))}),
                json!({"role":"assistant","content":format!("a{n} {}", hundreds(2))}),
            ]
        })
        .collect()
}

async fn chat(server: &TestServer, messages: Vec<Value>) -> Vec<Value> {
    server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"go on","enable_tools":false,"messages":messages}))
        .await
}

/// llama.cpp runs the model with `-c 2048`: a history of about 1 800 tokens is past 80 % of
/// that window (it is nothing to the 128 000 the name would give), and each reply may hold a
/// quarter of the window.
#[tokio::test]
async fn a_local_servers_stated_window_rules_compaction_and_reply_length() {
    let upstream = FakeUpstream::start().await;
    upstream.answer_json(
        "/props",
        json!({"default_generation_settings":{"n_ctx":2048},"total_slots":1}),
    );
    let server = TestServer::builder().upstream(&upstream).start().await;
    let frames = chat(&server, Vec::new()).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    assert_eq!(upstream.requests()[0].body["max_tokens"], 512);

    upstream.push(Reply::text(&["SUMMARY of the early turns"]));
    let frames = chat(&server, history(6)).await;
    assert_eq!(
        types_of(&frames).iter().filter(|t| *t == "compact").count(),
        1,
        "{frames:#?}"
    );
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    let answered = upstream.requests().last().unwrap().body.clone();
    let limit = answered["max_tokens"].as_u64().unwrap();
    assert!(
        (64..=512).contains(&limit),
        "a quarter of the window at most, no more than what the input leaves: {limit}"
    );
}

/// A server that states nothing keeps today's behaviour: the name's window, no `max_tokens`.
#[tokio::test]
async fn a_server_that_states_no_window_gets_no_reply_limit() {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder().upstream(&upstream).start().await;
    let frames = chat(&server, history(6)).await;
    assert!(
        !types_of(&frames).contains(&"compact".to_string()),
        "{frames:#?}"
    );
    assert_eq!(upstream.requests().len(), 1);
    assert!(upstream.requests()[0].body.get("max_tokens").is_none());
}

/// vLLM states `max_model_len` in `/v1/models`, Ollama `num_ctx` in `/api/show`; a configured
/// `context.window_tokens` wins over any of them (and no reply limit is sent).
#[tokio::test]
async fn vllm_and_ollama_state_theirs_and_a_configured_window_wins() {
    for (path, body) in [
        (
            "/v1/models",
            json!({"object":"list","data":[{"id":"fake-model","object":"model","max_model_len":4096}]}),
        ),
        (
            "/api/show",
            json!({"parameters":"temperature 0.7\nnum_ctx 4096","model_info":{"llama.context_length":131072}}),
        ),
    ] {
        let upstream = FakeUpstream::start().await;
        upstream.answer_json(path, body);
        let server = TestServer::builder().upstream(&upstream).start().await;
        chat(&server, Vec::new()).await;
        assert_eq!(upstream.requests()[0].body["max_tokens"], 1024, "{path}");
    }
    let upstream = FakeUpstream::start().await;
    upstream.answer_json(
        "/props",
        json!({"default_generation_settings":{"n_ctx":2048}}),
    );
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.agent.context.window_tokens = Some(100_000))
        .start()
        .await;
    let frames = chat(&server, history(6)).await;
    assert!(
        !types_of(&frames).contains(&"compact".to_string()),
        "{frames:#?}"
    );
    assert!(upstream.requests()[0].body.get("max_tokens").is_none());
}
