//! The agent core: planning round, agent loop, tools, OpenAI message order, max_steps.

use crate::common::*;
use serde_json::{json, Value};

/// A workspace with a README and a second file.
pub fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("README.md"),
        "# Demo\nhello from the readme\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("b.txt"), "bee\n").unwrap();
    dir
}

pub const MARKER: &str = "[NEED_TOOL]";

fn chat(input: &str) -> Value {
    json!({"type":"chat","id":"a1","input":input})
}

fn roles(request: &Recorded) -> Vec<String> {
    request
        .messages()
        .into_iter()
        .map(|(role, _)| role)
        .collect()
}

#[tokio::test]
async fn a_direct_planning_answer_is_one_call_without_tools() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["Hi", " there"]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("hello")).await;
    assert_eq!(types_of(&frames), ["start", "text", "done"]);
    assert_eq!(text_of(&frames), "Hi there");
    let requests = upstream.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].body.get("tools").is_none(),
        "the planning round sends no tools"
    );
    let messages = requests[0].messages();
    let (role, prompt) = messages.last().unwrap();
    assert_eq!(role, "system");
    assert!(
        prompt.contains(MARKER),
        "the planning prompt comes last: {prompt}"
    );
    assert_eq!(
        messages[messages.len() - 2],
        ("user".to_string(), "hello".to_string())
    );
    server.shutdown().await;
}

#[tokio::test]
async fn marker_gives_a_plan_then_rounds_with_tools_in_openai_order() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["  [NEED_", "TOOL] read the readme"]));
    upstream.push(Reply::tool_calls(&[(
        "call_1",
        "read_file",
        json!({"path":"README.md"}),
    )]));
    upstream.push(Reply::text(&["It says ", "hello."]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("what is in the readme?")).await;
    assert_eq!(
        types_of(&frames),
        ["start", "plan", "tool_call", "tool_result", "text", "done"]
    );
    let plan = &frames[1];
    assert_eq!(plan["content"], "read the readme");
    assert_eq!(frames[2]["arguments"], json!({"path":"README.md"}));
    assert_eq!(
        (frames[2]["call_id"].as_str(), frames[2]["name"].as_str()),
        (Some("call_1"), Some("read_file"))
    );
    let result = &frames[3];
    assert_eq!(result["is_error"], false);
    assert!(result["content"]
        .as_str()
        .unwrap()
        .contains("hello from the readme"));
    let done = frames.last().unwrap();
    assert_eq!(
        (done["reason"].as_str(), done["message"]["content"].as_str()),
        (Some("completed"), Some("It says hello."))
    );
    assert_eq!(
        done["usage"],
        json!({"prompt_tokens": 40, "completion_tokens": 9, "hook_calls": 0, "hook_prompt_tokens": 0, "hook_completion_tokens": 0})
    );

    let requests = upstream.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].tool_names(), None);
    let tools = requests[1].tool_names().unwrap();
    assert_eq!(
        tools,
        ["list_dir", "read_file", "register_hook", "search_text"]
    );
    // Round 1: the plan is in the list, the first-step prompt comes last, the planning prompt is gone.
    let round1 = requests[1].messages();
    assert!(!round1
        .iter()
        .any(|(_, c)| c.contains("start your reply with [NEED_TOOL]")));
    assert!(round1
        .iter()
        .any(|(r, c)| r == "assistant" && c == "read the readme"));
    assert!(round1.last().unwrap().1.starts_with("Carry out the plan"));
    // Round 2: assistant with tool_calls, then the tool message, then the each-step prompt.
    let round2 = &requests[2];
    let messages = round2.body["messages"].as_array().unwrap();
    let call_index = messages
        .iter()
        .position(|m| m.get("tool_calls").is_some())
        .unwrap();
    let call = &messages[call_index];
    assert_eq!(call["role"], "assistant");
    assert_eq!(call["tool_calls"][0]["id"], "call_1");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(messages[call_index + 1]["role"], "tool");
    assert_eq!(messages[call_index + 1]["tool_call_id"], "call_1");
    assert!(messages[call_index + 1]["content"]
        .as_str()
        .unwrap()
        .contains("hello from the readme"));
    assert_eq!(roles(round2).last().unwrap(), "system");
    assert!(round2
        .messages()
        .last()
        .unwrap()
        .1
        .starts_with("Continue with the task"));
    assert!(
        !round2
            .messages()
            .iter()
            .any(|(_, c)| c.starts_with("Carry out the plan")),
        "step prompts are for their call only"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn several_tool_calls_in_one_round() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] two files"]));
    upstream.push(Reply::tool_calls(&[
        ("c_a", "read_file", json!({"path":"README.md"})),
        ("c_b", "read_file", json!({"path":"b.txt"})),
    ]));
    upstream.push(Reply::text(&["done"]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("read both")).await;
    let calls: Vec<&str> = frames
        .iter()
        .filter(|f| f["type"] == "tool_call")
        .map(|f| f["call_id"].as_str().unwrap())
        .collect();
    let results: Vec<&str> = frames
        .iter()
        .filter(|f| f["type"] == "tool_result")
        .map(|f| f["call_id"].as_str().unwrap())
        .collect();
    assert_eq!((calls, results), (vec!["c_a", "c_b"], vec!["c_a", "c_b"]));
    let last = upstream.requests().pop().unwrap();
    let messages = last.body["messages"].as_array().unwrap();
    let index = messages
        .iter()
        .position(|m| m.get("tool_calls").is_some())
        .unwrap();
    assert_eq!(messages[index]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(messages[index + 1]["tool_call_id"], "c_a");
    assert_eq!(messages[index + 2]["tool_call_id"], "c_b");
    assert!(messages[index + 2]["content"]
        .as_str()
        .unwrap()
        .contains("bee"));
    server.shutdown().await;
}

#[tokio::test]
async fn max_steps_ends_the_chat_after_the_last_rounds_tools() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] loop"]));
    for i in 0..3 {
        upstream.push(Reply::tool_calls(&[(
            &format!("c{i}"),
            "list_dir",
            json!({}),
        )]));
    }
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .config(
            // Without the summary call (limits.rs has it).
            |c| {
                c.agent.max_steps = 2;
                c.agent.summary_on_limit = false;
            },
        )
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("loop forever")).await;
    assert_eq!(
        frames.iter().filter(|f| f["type"] == "tool_result").count(),
        2,
        "the last round's tools still run"
    );
    assert_eq!(frames.last().unwrap()["reason"], "max_steps");
    assert_eq!(upstream.requests().len(), 3, "planning + 2 rounds");
    server.shutdown().await;
}

#[tokio::test]
async fn tool_errors_are_results_the_model_sees() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] try"]));
    upstream.push(Reply::tool_calls(&[
        ("c1", "read_file", json!({"path":"missing.txt"})),
        ("c2", "read_file", json!({"path":"../outside.txt"})),
        ("c3", "no_such_tool", json!({})),
    ]));
    upstream.push(Reply::text(&["sorry"]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("read missing")).await;
    let results: Vec<&Value> = frames
        .iter()
        .filter(|f| f["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r["is_error"] == true));
    assert!(
        results[1]["content"].as_str().unwrap().contains("outside"),
        "{}",
        results[1]["content"]
    );
    assert!(results[2]["content"]
        .as_str()
        .unwrap()
        .contains("no_such_tool"));
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    let last = upstream.requests().pop().unwrap();
    let tool_messages: Vec<(String, String)> = last
        .messages()
        .into_iter()
        .filter(|(r, _)| r == "tool")
        .collect();
    assert_eq!(tool_messages.len(), 3);
    server.shutdown().await;
}

#[tokio::test]
async fn enable_tools_false_is_one_direct_call() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] would plan"]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"x","enable_tools":false}))
        .await;
    // No planning round, so the marker is ordinary text.
    assert_eq!(text_of(&frames), "[NEED_TOOL] would plan");
    assert_eq!(upstream.requests().len(), 1);
    assert!(!upstream.requests()[0]
        .messages()
        .iter()
        .any(|(_, c)| c.contains("start your reply with")));
    server.shutdown().await;
}

#[tokio::test]
async fn the_demo_model_shows_the_whole_loop() {
    let server = TestServer::builder().workspace(workspace()).start().await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("please read README.md")).await;
    assert_eq!(
        types_of(&frames),
        ["start", "plan", "tool_call", "tool_result", "text", "done"]
    );
    assert!(text_of(&frames).contains("hello from the readme"));
    server.shutdown().await;
}

#[tokio::test]
async fn tool_arguments_that_are_not_json_are_an_error_result() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::Sse(vec![
        Piece::Raw(chunk(json!({"tool_calls":[{"index":0,"id":"bad","type":"function","function":{"name":"read_file","arguments":"{\"path\": README"}}]}))),
        Piece::Raw("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n".into()),
        Piece::Raw("data: [DONE]\n\n".into()),
    ]));
    upstream.push(Reply::text(&["sorry"]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("go")).await;
    let result = frames.iter().find(|f| f["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{result}"
    );
    // The model sees its own arguments as they were, and the error.
    let last = upstream.requests().pop().unwrap();
    let messages = last.body["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .find(|m| m.get("tool_calls").is_some())
        .unwrap();
    assert_eq!(
        call["tool_calls"][0]["function"]["arguments"],
        "{\"path\": README"
    );
    server.shutdown().await;
}
