//! The end of the agent loop at a limit (docs/protocol.md §11): `max_steps` or
//! `limits.max_total_tokens`, then one last call without tools for a summary
//! (`limits.summary_on_limit`); and `AgentHook::on_run_end`, which sees every end, a cancel
//! included.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hookwire::agent::ErrorCode;
use hookwire::hooks::{AgentHook, HookContext, HookResult, RunOutcome, RunOutput};

use crate::agent::{workspace, MARKER};
use crate::common::*;
use serde_json::{json, Value};

fn chat(input: &str) -> Value {
    json!({"type":"chat","id":"l1","input":input})
}

/// The planning reply, then rounds that call a tool every time.
fn loop_forever(upstream: &FakeUpstream, rounds: usize) {
    upstream.push(Reply::text(&[&format!("{MARKER} loop")]));
    for i in 0..rounds {
        upstream.push(Reply::tool_calls(&[(
            &format!("c{i}"),
            "list_dir",
            json!({}),
        )]));
    }
}

#[tokio::test]
async fn at_max_steps_a_summary_without_tools_is_the_answer() {
    let upstream = FakeUpstream::start().await;
    loop_forever(&upstream, 2);
    upstream.push(Reply::text(&["Listed the dir", " twice; nothing remains."]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .config(|c| {
            c.agent.max_steps = 2;
            c.agent.summary_prompt = "SUMMARISE".into();
        })
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("loop forever")).await;
    // Text deltas may be merged into fewer frames on the way.
    let mut types = types_of(&frames);
    types.dedup();
    assert_eq!(
        types,
        [
            "start",
            "plan",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "text",
            "done"
        ]
    );
    assert_eq!(text_of(&frames), "Listed the dir twice; nothing remains.");
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "max_steps");
    assert_eq!(
        done["message"]["content"],
        "Listed the dir twice; nothing remains."
    );
    // Planning 10/1, two rounds 20/5 each, the summary 10/2.
    assert_eq!(
        done["usage"],
        json!({"prompt_tokens": 60, "completion_tokens": 13, "hook_calls": 0, "hook_prompt_tokens": 0, "hook_completion_tokens": 0})
    );
    let requests = upstream.requests();
    assert_eq!(requests.len(), 4, "planning + 2 rounds + the summary");
    assert!(requests[2].tool_names().is_some(), "the rounds offer tools");
    let summary = &requests[3];
    assert_eq!(summary.tool_names(), None, "the summary offers no tools");
    assert!(summary.body.get("tool_choice").is_none());
    let messages = summary.messages();
    assert!(
        messages
            .iter()
            .any(|(role, content)| role == "system" && content == "SUMMARISE"),
        "{messages:?}"
    );
    // It sees what the loop did: the last round's tool result is in its request.
    assert_eq!(
        messages.last().map(|(role, _)| role.as_str()),
        Some("system")
    );
    assert!(messages.iter().any(|(role, _)| role == "tool"));
    server.shutdown().await;
}

#[tokio::test]
async fn with_summary_on_limit_off_the_chat_ends_at_max_steps_without_a_call() {
    let upstream = FakeUpstream::start().await;
    loop_forever(&upstream, 3);
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .config(|c| {
            c.agent.max_steps = 2;
            c.agent.summary_on_limit = false;
        })
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("loop forever")).await;
    assert!(
        !types_of(&frames).contains(&"text".to_string()),
        "{frames:?}"
    );
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "max_steps");
    assert_eq!(done["message"]["content"], "");
    assert_eq!(
        done["usage"],
        json!({"prompt_tokens": 50, "completion_tokens": 11, "hook_calls": 0, "hook_prompt_tokens": 0, "hook_completion_tokens": 0})
    );
    assert_eq!(upstream.requests().len(), 3, "planning + 2 rounds");
    server.shutdown().await;
}

#[tokio::test]
async fn max_total_tokens_ends_the_loop_with_max_tokens_and_a_summary() {
    let upstream = FakeUpstream::start().await;
    loop_forever(&upstream, 1);
    upstream.push(Reply::text(&["Summary."]));
    // 36 tokens after the first round (planning 11 + 25): the second round does not start.
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .config(|c| c.agent.max_total_tokens = Some(30))
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("loop forever")).await;
    assert_eq!(
        frames.iter().filter(|f| f["type"] == "tool_result").count(),
        1
    );
    assert_eq!(text_of(&frames), "Summary.");
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "max_tokens");
    assert_eq!(done["message"]["content"], "Summary.");
    assert_eq!(
        done["usage"],
        json!({"prompt_tokens": 40, "completion_tokens": 7, "hook_calls": 0, "hook_prompt_tokens": 0, "hook_completion_tokens": 0})
    );
    let requests = upstream.requests();
    assert_eq!(requests.len(), 3, "planning + 1 round + the summary");
    assert_eq!(requests[2].tool_names(), None);
    server.shutdown().await;
}

#[tokio::test]
async fn max_total_tokens_without_summary_ends_with_max_tokens_only() {
    let upstream = FakeUpstream::start().await;
    loop_forever(&upstream, 5);
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .config(|c| {
            c.agent.max_total_tokens = Some(30);
            c.agent.summary_on_limit = false;
        })
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client.chat(chat("loop forever")).await;
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "max_tokens");
    assert_eq!(
        done["usage"],
        json!({"prompt_tokens": 30, "completion_tokens": 6, "hook_calls": 0, "hook_prompt_tokens": 0, "hook_completion_tokens": 0})
    );
    assert_eq!(upstream.requests().len(), 2, "planning + 1 round");
    server.shutdown().await;
}

/// Records the chat ends it sees: `run_completed`, `run_failed`, `on_run_end` and its outcome.
#[derive(Default)]
struct Ends(Mutex<Vec<String>>);

impl Ends {
    fn log(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

#[async_trait]
impl AgentHook for Ends {
    async fn run_completed(&self, _: &mut HookContext, output: &mut RunOutput) -> HookResult {
        self.0
            .lock()
            .unwrap()
            .push(format!("run_completed:{}", output.reason.as_str()));
        Ok(())
    }
    async fn run_failed(
        &self,
        _: &mut HookContext,
        error: &hookwire::agent::ChatError,
    ) -> HookResult {
        self.0
            .lock()
            .unwrap()
            .push(format!("run_failed:{}", error.code.as_str()));
        Ok(())
    }
    async fn on_run_end(&self, ctx: &mut HookContext, outcome: &mut RunOutcome) -> HookResult {
        let line = match outcome {
            RunOutcome::Done(output) => {
                format!(
                    "end:{}:{}:{}",
                    ctx.run_id,
                    output.reason.as_str(),
                    output.content
                )
            }
            RunOutcome::Failed(error) => {
                format!("end:{}:error:{}", ctx.run_id, error.code.as_str())
            }
            _ => "end:other".into(),
        };
        self.0.lock().unwrap().push(line);
        Ok(())
    }
}

#[tokio::test]
async fn on_run_end_sees_a_cancelled_chat_a_completed_one_and_a_failed_one() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::endless());
    upstream.push(Reply::text(&["fine"]));
    upstream.push(Reply::Status(400, "bad request".into()));
    let ends = Arc::new(Ends::default());
    let hook = ends.clone();
    let server = TestServer::builder()
        .upstream(&upstream)
        .agent(move |b| b.hook(hook))
        .start()
        .await;
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","id":"c1","input":"go","enable_tools":false}))
        .await;
    assert_eq!(client.frame().await["type"], "start");
    assert_eq!(client.frame().await["type"], "text");
    client.send(json!({"type":"cancel","id":"c1"})).await;
    let frames = client.until_end().await;
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "cancelled");
    let streamed = done["message"]["content"].as_str().unwrap().to_string();
    // The hook ran before `done` was sent: it is in the log already.
    assert_eq!(ends.log(), [format!("end:c1:cancelled:{streamed}")]);

    let frames = client
        .chat(json!({"type":"chat","id":"c2","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    let frames = client
        .chat(json!({"type":"chat","id":"c3","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "error");
    assert_eq!(
        ends.log()[1..],
        [
            "run_completed:completed".to_string(),
            "end:c2:completed:fine".into(),
            format!("run_failed:{}", ErrorCode::Upstream.as_str()),
            "end:c3:error:upstream".into(),
        ]
    );
    server.shutdown().await;
}
