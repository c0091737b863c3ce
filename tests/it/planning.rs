//! `agent.planning` (docs/protocol.md §14): `native` offers the tools in the first call (a tool
//! call there is round 1 of the agent loop, a plain answer ends the chat, no marker); `off`
//! goes straight to the agent loop. Asserted on the requests the model got.

use hookwire::agent::Planning;
use serde_json::{json, Value};

use crate::common::*;

fn types(frames: &[Value]) -> Vec<&str> {
    frames
        .iter()
        .map(|f| f["type"].as_str().unwrap())
        .filter(|t| *t != "notice")
        .collect()
}

/// Every text of a request's messages, joined.
fn all_text(request: &Recorded) -> String {
    request
        .messages()
        .into_iter()
        .map(|(_, content)| content)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn native_planning_offers_the_tools_and_a_call_is_round_one() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::tool_calls(&[(
        "c1",
        "list_dir",
        json!({"path": "."}),
    )]));
    upstream.push(Reply::text(&["two files"]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.agent.planning = Planning::Native;
            c.agent.native_planning_prompt = "NATIVE-PROMPT".into();
            c.agent.each_step_prompt = "EACH-PROMPT".into();
        })
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"what is here?"})).await;
    assert_eq!(
        types(&frames),
        ["start", "tool_call", "tool_result", "text", "done"],
        "{frames:?}"
    );
    assert_eq!(text_of(&frames), "two files");
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert!(first
        .tool_names()
        .unwrap()
        .contains(&"list_dir".to_string()));
    assert_eq!(first.body["tool_choice"], "auto");
    let text = all_text(first);
    assert!(text.contains("NATIVE-PROMPT"), "{text}");
    assert!(!text.contains("[NEED_TOOL]"), "no marker: {text}");
    // The next call is round 2: the result, the tools, the each-step prompt.
    let second = &requests[1];
    assert!(second.tool_names().is_some());
    assert_eq!(tool_results(second).len(), 1);
    let text = all_text(second);
    assert!(
        text.contains("EACH-PROMPT") && !text.contains("NATIVE-PROMPT"),
        "{text}"
    );
    server.shutdown().await;
}

/// The native planning prompt speaks of the tools offered: it goes with the system prompt, before
/// the conversation, in both styles. After the input (a trailing system message, or strict
/// style's reminder in the input's turn) a small model answered it instead of the person
/// (tests/it/real_model.rs).
#[tokio::test]
async fn native_planning_prompt_goes_with_the_system_prompt_in_both_styles() {
    use hookwire::config::MessageStyleSetting;
    for style in [MessageStyleSetting::Openai, MessageStyleSetting::Strict] {
        let upstream = FakeUpstream::start().await;
        upstream.push(Reply::text(&["hello"]));
        let server = TestServer::builder()
            .upstream(&upstream)
            .config(move |c| {
                c.agent.planning = Planning::Native;
                c.agent.native_planning_prompt = "NATIVE-PROMPT".into();
                c.llm.message_style = style;
            })
            .start()
            .await;
        let history = json!([{"role":"user","content":"earlier"},
                             {"role":"assistant","content":"answer"}]);
        let frames = chat(
            &server,
            json!({"type":"chat","input":"what is here?","messages":history}),
        )
        .await;
        assert_eq!(types(&frames).last(), Some(&"done"), "{frames:?}");
        let messages = upstream.requests()[0].messages();
        let at = messages
            .iter()
            .position(|(_, content)| content.contains("NATIVE-PROMPT"))
            .unwrap_or_else(|| panic!("{style:?}: no prompt in {messages:?}"));
        let first_user = messages.iter().position(|(role, _)| role == "user");
        assert_eq!(messages[at].0, "system", "{style:?}: {messages:?}");
        assert!(
            first_user.is_some_and(|u| at < u),
            "{style:?}: {messages:?}"
        );
        assert_eq!(
            messages.last().map(|(_, content)| content.as_str()),
            Some("what is here?"),
            "{style:?}: the input ends the request as the person wrote it"
        );
        server.shutdown().await;
    }
}

#[tokio::test]
async fn native_planning_ends_with_a_plain_answer() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["hello ", "there"]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| c.agent.planning = Planning::Native)
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"hi"})).await;
    assert_eq!(
        types(&frames),
        ["start", "text", "text", "done"],
        "{frames:?}"
    );
    assert_eq!(frames.last().unwrap()["message"]["content"], "hello there");
    assert_eq!(upstream.requests().len(), 1);
    assert!(upstream.requests()[0].tool_names().is_some());
    server.shutdown().await;
}

#[tokio::test]
async fn planning_off_starts_with_the_agent_loop() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::tool_calls(&[(
        "c1",
        "list_dir",
        json!({"path": "."}),
    )]));
    upstream.push(Reply::text(&["done looking"]));
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.agent.planning = Planning::Off;
            c.agent.first_step_prompt = "FIRST-PROMPT".into();
        })
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"what is here?"})).await;
    assert_eq!(
        types(&frames),
        ["start", "tool_call", "tool_result", "text", "done"],
        "{frames:?}"
    );
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2);
    let text = all_text(&requests[0]);
    assert!(requests[0].tool_names().is_some());
    assert!(
        text.contains("FIRST-PROMPT") && !text.contains("[NEED_TOOL]"),
        "{text}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_demo_model_takes_every_planning_mode() {
    for planning in [Planning::Marker, Planning::Native, Planning::Off] {
        let server = TestServer::builder()
            .config(|c| c.agent.planning = planning)
            .start()
            .await;
        let frames = chat(&server, json!({"type":"chat","input":"list the files"})).await;
        let kinds = types(&frames);
        assert!(
            kinds.contains(&"tool_call") && kinds.last() == Some(&"done"),
            "{planning:?}: {kinds:?}"
        );
        assert_eq!(
            kinds.contains(&"plan"),
            planning == Planning::Marker,
            "{planning:?}: {kinds:?}"
        );
        let frames = chat(&server, json!({"type":"chat","input":"hi"})).await;
        let kinds = types(&frames);
        assert!(!kinds.contains(&"tool_call"), "{planning:?}: {kinds:?}");
        assert_eq!(kinds.last(), Some(&"done"));
        server.shutdown().await;
    }
}
