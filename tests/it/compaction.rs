//! Context compaction (docs/protocol.md §10 and §13): micro compaction of old tool results in the
//! request the upstream receives, only past `context.micro_threshold`, its hooks, and a reply
//! cut at the model's output limit.

use serde_json::{json, Value};

use crate::common::*;

/// A micro threshold every call is past (one token of the default window).
const ALWAYS: f64 = 1.0 / 128_000.0;

/// A workspace with three files to read and a server whose hook file is `hooks_yaml`, past the
/// micro threshold from the first call.
async fn server(upstream: &FakeUpstream, hooks_yaml: &str) -> TestServer {
    TestServer::builder()
        .upstream(upstream)
        .prepare(write_files)
        .hooks(hooks_yaml)
        .config(|c| c.agent.context.micro_threshold = ALWAYS)
        .start()
        .await
}

/// Three files, each longer than a stub.
fn write_files(dir: &std::path::Path) {
    for (name, word) in [
        ("a.txt", "ALPHA "),
        ("b.txt", "BRAVO "),
        ("c.txt", "CHARLIE "),
    ] {
        std::fs::write(dir.join(name), word.repeat(100)).unwrap();
    }
}

/// Planning, three rounds that each read one file, then the final answer.
fn three_rounds(upstream: &FakeUpstream) {
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    for (id, file) in [("c1", "a.txt"), ("c2", "b.txt"), ("c3", "c.txt")] {
        upstream.push(Reply::tool_calls(&[(
            id,
            "read_file",
            json!({"path": file}),
        )]));
    }
    upstream.push(Reply::text(&["final"]));
}

/// The content of the `tool` message answering `call_id` in a recorded request.
fn tool_content(request: &Recorded, call_id: &str) -> String {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no result for {call_id}"))
        .to_string()
}

const LOG_HOOKS: &str = "\
pre_micro_compact:
  - command: 'cat > input-pre.json; echo pre >> events.log'
post_micro_compact:
  - command: 'cat > input-post.json; echo post >> events.log'
";

#[tokio::test]
async fn micro_compaction_stubs_old_rounds_upstream_only_and_fires_its_hooks_once() {
    let upstream = FakeUpstream::start().await;
    three_rounds(&upstream);
    let server = server(&upstream, LOG_HOOKS).await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"read all three"}))
        .await;
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "completed", "{frames:?}");
    assert_eq!(done["message"]["content"], "final");
    // The client got every result in full.
    let results: Vec<&str> = frames
        .iter()
        .filter(|f| f["type"] == "tool_result")
        .map(|f| f["content"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 3);
    for (result, word) in results.iter().zip(["ALPHA", "BRAVO", "CHARLIE"]) {
        assert!(result.contains(word), "{result}");
    }

    let requests = upstream.requests();
    assert_eq!(requests.len(), 5, "planning, three rounds, the answer");
    // Round 3's call holds two rounds of results: nothing to compact yet.
    assert!(tool_content(&requests[3], "c1").contains("ALPHA"));
    assert!(tool_content(&requests[3], "c2").contains("BRAVO"));
    // The answer's call: round 1 is stubbed, the last two rounds are whole.
    let stub = tool_content(&requests[4], "c1");
    assert!(!stub.contains("ALPHA"), "{stub}");
    assert!(
        stub.contains("read_file") && stub.contains("again"),
        "{stub}"
    );
    assert!(!stub.contains('\n'), "one line: {stub}");
    assert!(tool_content(&requests[4], "c2").contains("BRAVO"));
    assert!(tool_content(&requests[4], "c3").contains("CHARLIE"));

    let root = server.workspace.path();
    let log = std::fs::read_to_string(root.join("events.log")).unwrap();
    assert_eq!(log.lines().collect::<Vec<_>>(), ["pre", "post"]);
    for file in ["input-pre.json", "input-post.json"] {
        let input: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(file)).unwrap()).unwrap();
        let meta = &input["metadata"];
        assert_eq!(input["trigger"], "auto", "{input}");
        assert_eq!(meta["trigger"], "auto");
        assert_eq!(
            meta["context_window_tokens"], 128_000,
            "fake-model: the default"
        );
        assert_eq!(
            meta["compact_threshold_tokens"], 1,
            "the micro threshold that was reached"
        );
        assert_eq!(meta["summarized_message_count"], 1);
        assert_eq!(meta["keep_recent_group_count"], 2);
        let before = meta["estimated_input_tokens"].as_u64().unwrap();
        let after = meta["estimated_post_compact_tokens"].as_u64().unwrap();
        assert!(after > 0 && after < before, "{meta}");
        assert_eq!(input["model"], "fake-model");
        assert!(input["messages"].as_array().is_some_and(|m| !m.is_empty()));
    }
}

#[tokio::test]
async fn micro_keep_rounds_is_read_from_the_config() {
    let upstream = FakeUpstream::start().await;
    three_rounds(&upstream);
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path());
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .config(|c| {
            c.agent.context.micro_keep_rounds = 1;
            c.agent.context.micro_threshold = ALWAYS;
        })
        .start()
        .await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"read all three"}))
        .await;
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    let requests = upstream.requests();
    assert!(tool_content(&requests[3], "c1").contains("read_file again"));
    assert!(tool_content(&requests[3], "c2").contains("BRAVO"));
    assert!(!tool_content(&requests[4], "c2").contains("BRAVO"));
    assert!(tool_content(&requests[4], "c3").contains("CHARLIE"));
}

#[tokio::test]
async fn a_pre_micro_compact_stop_skips_it_and_the_chat_goes_on() {
    let upstream = FakeUpstream::start().await;
    three_rounds(&upstream);
    let yaml = "\
pre_micro_compact:
  - command: 'echo pre >> events.log; echo \"{\\\"action\\\":\\\"stop\\\"}\"'
post_micro_compact:
  - command: 'echo post >> events.log'
";
    let server = server(&upstream, yaml).await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"read all three"}))
        .await;
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "completed", "{frames:?}");
    assert_eq!(done["message"]["content"], "final");
    let requests = upstream.requests();
    assert_eq!(requests.len(), 5);
    assert!(
        tool_content(&requests[4], "c1").contains("ALPHA"),
        "not compacted"
    );
    let log = std::fs::read_to_string(server.workspace.path().join("events.log")).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        ["pre"],
        "no post after a skip"
    );
}

/// Micro compaction follows the estimate, not the rounds: with one round kept, a call under
/// `micro_threshold` × window sends every result whole, and only the call past it gets stubs
/// (naming the tool, its arguments and the size cut).
#[tokio::test]
async fn micro_stubs_appear_only_past_the_threshold() {
    let upstream = FakeUpstream::start().await;
    three_rounds(&upstream);
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path());
    // The third file is large: only the answer's call (with its result) is past 3 000 tokens.
    let large = format!("CHARLIE {}", "word ".repeat(4_000));
    std::fs::write(dir.path().join("c.txt"), &large).unwrap();
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .config(|c| {
            c.agent.context.window_tokens = Some(10_000);
            c.agent.context.compact_threshold = 1.0;
            c.agent.context.micro_threshold = 0.3;
            c.agent.context.micro_keep_rounds = 1;
        })
        .start()
        .await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"read all three"}))
        .await;
    assert_eq!(frames.last().unwrap()["reason"], "completed", "{frames:?}");
    let requests = upstream.requests();
    assert_eq!(requests.len(), 5);
    // Round 3's call: two rounds, one kept, but far under the threshold: nothing stubbed.
    assert!(tool_content(&requests[3], "c1").contains("ALPHA"));
    assert!(tool_content(&requests[3], "c2").contains("BRAVO"));
    // The answer's call is past it: the rounds before the last one are stubbed.
    let stub = tool_content(&requests[4], "c1");
    assert!(
        stub.starts_with(r#"[the result of read_file {"path":"a.txt"} ("#)
            && stub.contains(" characters) was removed to save context"),
        "{stub}"
    );
    assert!(!tool_content(&requests[4], "c2").contains("BRAVO"));
    let last = tool_content(&requests[4], "c3");
    assert!(
        last.contains("CHARLIE") && last.len() >= large.len() - 1,
        "whole"
    );
}

/// A text reply the upstream ends with `finish_reason: "length"`.
fn cut_reply(text: &str) -> Reply {
    let finish = json!({"id":"chatcmpl-1","object":"chat.completion.chunk","model":"fake","choices":[{"index":0,"delta":{},"finish_reason":"length"}]});
    Reply::Sse(vec![
        Piece::Raw(chunk(json!({"role":"assistant","content":""}))),
        Piece::Raw(chunk(json!({"content": text}))),
        Piece::Raw(format!("data: {finish}\n\n")),
        Piece::Raw("data: [DONE]\n\n".into()),
    ])
}

#[tokio::test]
async fn a_reply_cut_at_the_length_limit_ends_with_a_warning_and_reason_length() {
    let upstream = FakeUpstream::start().await;
    upstream.push(cut_reply("a long answer that was cu"));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"tell me everything"}))
        .await;
    let notice = frames
        .iter()
        .find(|f| f["type"] == "notice")
        .unwrap_or_else(|| panic!("no notice: {frames:?}"));
    assert_eq!(notice["level"], "warn");
    assert!(notice["message"].as_str().unwrap().contains("length"));
    let done = frames.last().unwrap();
    assert_eq!(done["type"], "done");
    assert_eq!(done["reason"], "length");
    assert_eq!(done["message"]["content"], "a long answer that was cu");
    assert_eq!(text_of(&frames), "a long answer that was cu");
    assert_eq!(upstream.requests().len(), 1, "the model is not asked again");
}

#[tokio::test]
async fn a_cut_agent_round_ends_the_loop_with_reason_length() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(cut_reply("reading"));
    let server = TestServer::builder().upstream(&upstream).start().await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"read"}))
        .await;
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "length", "{frames:?}");
    assert_eq!(done["message"]["content"], "reading");
    assert!(!frames.iter().any(|f| f["type"] == "tool_call"));
}
