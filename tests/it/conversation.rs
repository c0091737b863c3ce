//! The conversation carries the agent's work (docs/protocol.md §13): `done.turn` holds the tool
//! calls and results, the next chat sends them back and the model sees them; `error.turn` keeps
//! what happened before a failure; a cut plan, a hook registered mid-chat, and an approval
//! resume that rebuilds the chat's request-scoped hooks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use hookwire::hooks::{AgentHook, HookContext, HookResult};
use serde_json::{json, Value};

use crate::agent::workspace;
use crate::common::*;

fn done(frames: &[Value]) -> &Value {
    let last = frames.last().unwrap();
    assert_eq!(last["type"], "done", "{frames:?}");
    last
}

/// `role`, and for tool traffic the call ids, of each message: a turn at a glance.
fn shape(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap_or("?");
            match (m["tool_calls"].as_array(), m["tool_call_id"].as_str()) {
                (Some(calls), _) => format!(
                    "{role}[{}]",
                    calls
                        .iter()
                        .map(|c| c["id"].as_str().unwrap_or("?"))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                (None, Some(id)) => format!("{role}({id})"),
                _ => role.to_string(),
            }
        })
        .collect()
}

#[tokio::test]
async fn the_next_chat_sends_the_first_chats_tool_calls_and_results_upstream() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("call_ls", "list_dir", json!({"path": "."}))],
        "There are two files.",
    );
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"one","input":"list the files"}))
        .await;
    let first = done(&frames);
    assert_eq!(first["message"]["content"], "There are two files.");
    let turn = &first["turn"];
    assert_eq!(
        shape(turn),
        [
            "user",
            "assistant",
            "assistant[call_ls]",
            "tool(call_ls)",
            "assistant"
        ]
    );
    assert_eq!(turn[0]["content"], "list the files");
    assert_eq!(turn[1]["content"], "go");
    let call = &turn[2]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "list_dir");
    // Arguments as OpenAI writes them: a JSON string.
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"path": "."}));
    assert_eq!(turn[3]["name"], "list_dir");
    assert!(turn[3]["content"].as_str().unwrap().contains("b.txt"));
    assert_eq!(turn[4]["content"], "There are two files.");

    // The second chat: the history is the first chat's turn, as the client keeps it.
    upstream.push(Reply::text(&["It says bee."]));
    let frames = client
        .chat(
            json!({"type":"chat","id":"two","input":"open the second one",
                     "messages": turn.clone()}),
        )
        .await;
    assert_eq!(done(&frames)["message"]["content"], "It says bee.");
    let request = upstream.requests().pop().unwrap();
    let body = &request.body["messages"];
    let sent = shape(body);
    let at = sent.iter().position(|s| s == "assistant[call_ls]").unwrap();
    assert_eq!(sent[at + 1], "tool(call_ls)", "{sent:?}");
    let messages = body.as_array().unwrap();
    assert_eq!(
        messages[at]["tool_calls"][0]["function"]["name"], "list_dir",
        "{body}"
    );
    assert!(messages[at + 1]["content"]
        .as_str()
        .unwrap()
        .contains("b.txt"));
    assert_eq!(
        messages[at + 2],
        json!({"role":"assistant","content":"There are two files."})
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_long_tool_result_is_cut_in_the_turn_but_whole_in_its_frame() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": "README.md"}))],
        "read",
    );
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .config(|c| c.agent.history_tool_result_chars = 8)
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"read it"})).await;
    let whole = frame_of(&frames, "tool_result")["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(whole.contains("hello from the readme"), "{whole}");
    let turn = &done(&frames)["turn"];
    let kept = turn[3]["content"].as_str().unwrap();
    let left_out = whole.chars().count() - 8;
    assert!(
        kept.starts_with(&whole.chars().take(8).collect::<String>()),
        "{kept}"
    );
    assert!(
        kept.contains(&format!("{left_out} more characters")),
        "{kept}"
    );
    assert!(kept.contains("limits.history_tool_result_chars"), "{kept}");
    server.shutdown().await;
}

#[tokio::test]
async fn orphan_results_and_unanswered_calls_are_bad_frames_naming_the_id() {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let mut client = server.connect().await;
    let call = |id: &str| {
        json!({"role":"assistant","content":null,
               "tool_calls":[{"id":id,"type":"function","function":{"name":"list_dir","arguments":"{}"}}]})
    };
    let result =
        |id: &str| json!({"role":"tool","tool_call_id":id,"name":"list_dir","content":"a.txt"});
    let user = json!({"role":"user","content":"list"});
    let cases = [
        // A result for a call nobody made.
        (vec![user.clone(), result("ghost_1")], "ghost_1"),
        // A call left without an answer before the next user message.
        (vec![user.clone(), call("lost_2"), user.clone()], "lost_2"),
        // … or at the end of the history.
        (vec![user.clone(), call("open_3")], "open_3"),
        // A result that comes before its call.
        (
            vec![user.clone(), result("late_4"), call("late_4")],
            "late_4",
        ),
    ];
    for (messages, id) in cases {
        let frames = client
            .chat(json!({"type":"chat","id":"bad","input":"next","messages":messages}))
            .await;
        assert_eq!(types_of(&frames), ["error"], "{frames:?}");
        assert_eq!(frames[0]["code"], "bad_frame");
        assert_eq!(frames[0]["id"], "bad");
        let message = frames[0]["message"].as_str().unwrap();
        assert!(message.contains(id), "{id}: {message}");
    }
    assert!(upstream.requests().is_empty());
    // Answered in order, the same history is fine.
    upstream.push(Reply::text(&["fine"]));
    let messages = vec![
        user.clone(),
        call("ok_5"),
        result("ok_5"),
        json!({"role":"assistant","content":"done"}),
    ];
    let frames = client
        .chat(json!({"type":"chat","input":"next","messages":messages}))
        .await;
    assert_eq!(done(&frames)["message"]["content"], "fine");
    server.shutdown().await;
}

#[tokio::test]
async fn a_failure_in_round_three_keeps_rounds_one_and_two_in_error_turn() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] look around"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "list_dir",
        json!({"path": "."}),
    )]));
    upstream.push(Reply::tool_calls(&[(
        "r2",
        "read_file",
        json!({"path": "b.txt"}),
    )]));
    upstream.push(Reply::Status(
        400,
        "{\"error\":{\"message\":\"bad request\"}}".into(),
    ));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"look"})).await;
    let error = frames.last().unwrap();
    assert_eq!(error["type"], "error", "{frames:?}");
    assert_eq!(error["code"], "upstream");
    assert_eq!(
        shape(&error["turn"]),
        [
            "user",
            "assistant",
            "assistant[r1]",
            "tool(r1)",
            "assistant[r2]",
            "tool(r2)"
        ]
    );
    assert!(error["turn"][5]["content"]
        .as_str()
        .unwrap()
        .contains("bee"));
    // A chat that fails before anything was shown has no turn.
    upstream.push(Reply::Status(400, "{}".into()));
    let frames = chat(&server, json!({"type":"chat","input":"again"})).await;
    assert_eq!(frames.last().unwrap()["type"], "error");
    assert!(frames.last().unwrap().get("turn").is_none(), "{frames:?}");
    server.shutdown().await;
}

/// A planning reply that stops at the output limit (`finish_reason: "length"`).
fn cut_reply(text: &str) -> Reply {
    Reply::Sse(vec![
        Piece::Raw(chunk(json!({"role":"assistant","content":""}))),
        Piece::Raw(chunk(json!({"content": text}))),
        Piece::Raw(format!(
            "data: {}\n\ndata: [DONE]\n\n",
            json!({"id":"x","object":"chat.completion.chunk","model":"fake",
                   "choices":[{"index":0,"delta":{},"finish_reason":"length"}]})
        )),
    ])
}

#[tokio::test]
async fn a_plan_cut_at_the_output_limit_is_kept() {
    let upstream = FakeUpstream::start().await;
    upstream.push(cut_reply("[NEED_TOOL] 1. list the files 2. open the"));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"plan it"})).await;
    let done = done(&frames);
    assert_eq!(done["reason"], "length");
    assert_eq!(done["message"]["content"], "1. list the files 2. open the");
    assert_eq!(shape(&done["turn"]), ["user", "assistant"]);
    assert_eq!(done["turn"][1]["content"], "1. list the files 2. open the");
    assert_eq!(upstream.requests().len(), 1, "the loop does not run");
    server.shutdown().await;
}

#[tokio::test]
async fn a_hook_registered_in_round_one_runs_in_round_two() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] register, then list"]));
    upstream.push(Reply::tool_calls(&[(
        "reg",
        "register_hook",
        json!({"event":"pre_tool_execution","prompt":"JUDGE {{tool_name}}"}),
    )]));
    upstream.push(Reply::tool_calls(&[(
        "ls",
        "list_dir",
        json!({"path": "."}),
    )]));
    // The registered llm hook's question about round 2's call.
    upstream.push(Reply::text(&["{}"]));
    upstream.push(Reply::text(&["listed"]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let frames = chat(&server, json!({"type":"chat","input":"judge my tools"})).await;
    assert_eq!(done(&frames)["message"]["content"], "listed", "{frames:?}");
    assert_eq!(
        frame_of(&frames, "session_hook")["hook"]["event"],
        "pre_tool_execution"
    );
    let requests = upstream.requests();
    assert_eq!(requests.len(), 5, "{requests:?}");
    let judge = requests[3].messages();
    assert_eq!(
        judge[0].1.lines().next(),
        Some("JUDGE list_dir"),
        "{judge:?}"
    );
    server.shutdown().await;
}

/// Counts its `post_send_message` runs (a Rust hook's run start).
#[derive(Default)]
struct RunStarts(Arc<AtomicUsize>);

#[async_trait]
impl AgentHook for RunStarts {
    async fn post_send_message(&self, _: &mut HookContext) -> HookResult {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A skill `s` whose hooks last for the request only (`TEXT:aui` after the input, `TEXT:bfa`
/// in round 1), and one persistent hook (`TEXT:keep`).
fn write_skill(skills: &std::path::Path) {
    let hooks = skills.join("s/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let defs = [
        ("aui", "after_user_input", false),
        ("keep", "after_user_input", true),
        ("bfa", "before_first_agent", false),
    ];
    let entries: Vec<Value> = defs
        .iter()
        .map(|(name, timing, persistent)| {
            std::fs::write(hooks.join(format!("{name}.md")), format!("TEXT:{name}")).unwrap();
            json!({"name": name, "file": format!("{name}.md"), "timing": timing, "role": "system", "persistent": persistent})
        })
        .collect();
    std::fs::write(
        hooks.join("hooks.json"),
        json!({"hooks": entries}).to_string(),
    )
    .unwrap();
}

#[tokio::test]
async fn a_resume_injects_the_original_request_scoped_hooks_again() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] read"]));
    upstream.push(Reply::tool_calls(&[(
        "rd",
        "read_file",
        json!({"path": "b.txt"}),
    )]));
    upstream.push(Reply::text(&["it says bee"]));
    let dir = workspace();
    let skills = dir.path().join("skills");
    write_skill(&skills);
    let starts = Arc::new(AtomicUsize::new(0));
    let hook = Arc::new(RunStarts(starts.clone()));
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .config(move |c| {
            c.skills_dir = skills;
            c.agent.approval.require_approval = vec!["read_file".into()];
        })
        .agent(move |b| b.hook(hook))
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"c1","input":"read b","skills":["s"]}))
        .await;
    let first = done(&frames);
    assert_eq!(first["reason"], "approval_required");
    // The call waits: the turn ends with it, unanswered.
    assert_eq!(
        shape(&first["turn"]),
        ["user", "system", "assistant", "assistant[rd]"]
    );
    let round1 = upstream.requests()[1].clone();
    for text in ["TEXT:aui", "TEXT:bfa", "TEXT:keep"] {
        assert_eq!(injected(&round1, text), 1, "{text} in round 1");
    }
    let state = frame_of(&frames, "approval")["state"].clone();
    let frames = client
        .chat(
            json!({"type":"chat","id":"c2","skills":["s"],"messages":first["turn"].clone(),
                     "resume":{"state":state,"decisions":[{"call_id":"rd","decision":"allow"}]}}),
        )
        .await;
    let resumed = done(&frames);
    assert_eq!(resumed["message"]["content"], "it says bee");
    assert_eq!(shape(&resumed["turn"]), ["tool(rd)", "assistant"]);
    let round2 = upstream.requests()[2].clone();
    // Request-scoped hooks are back once; the persistent one is not doubled.
    for text in ["TEXT:aui", "TEXT:bfa", "TEXT:keep"] {
        assert_eq!(injected(&round2, text), 1, "{text} in the resumed round");
    }
    assert!(!frames.iter().any(|f| f["type"] == "hook"), "{frames:?}");
    assert_eq!(starts.load(Ordering::SeqCst), 2, "the run start ran again");
    server.shutdown().await;
}

/// How many messages of a request hold `text`.
fn injected(request: &Recorded, text: &str) -> usize {
    request
        .messages()
        .iter()
        .filter(|(_, content)| content.contains(text))
        .count()
}

/// A reply whose calls carry no id at all (some servers send none: each becomes `call_<index>`).
fn calls_without_ids(calls: &[(&str, Value)]) -> Reply {
    let mut body = vec![chunk(json!({"role":"assistant","content":null}))];
    for (index, (name, arguments)) in calls.iter().enumerate() {
        body.push(chunk(json!({"tool_calls":[{"index":index,"type":"function","function":{"name":name,"arguments":arguments.to_string()}}]})));
    }
    body.push(format!(
        "data: {}\n\n",
        json!({"id":"x","object":"chat.completion.chunk","model":"fake","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})
    ));
    body.push("data: [DONE]\n\n".into());
    Reply::Sse(body.into_iter().map(Piece::Raw).collect())
}

#[tokio::test]
async fn a_model_that_repeats_call_ids_still_leaves_a_conversation_that_goes_on() {
    let upstream = FakeUpstream::start().await;
    // Chat one: two rounds, both calls named `call_0` (no id sent), then the answer.
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(calls_without_ids(&[("list_dir", json!({"path": "."}))]));
    upstream.push(calls_without_ids(&[(
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    upstream.push(Reply::text(&["done one"]));
    // Chat two: the same model, the same id again, in one round twice.
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[
        ("call_0", "list_dir", json!({"path": "."})),
        ("call_0", "read_file", json!({"path": "a.txt"})),
    ]));
    upstream.push(Reply::text(&["done two"]));
    upstream.push(Reply::text(&["done three"]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let mut client = server.connect().await;
    let mut history: Vec<Value> = Vec::new();
    for (input, answer) in [
        ("one", "done one"),
        ("two", "done two"),
        ("three", "done three"),
    ] {
        let frames = client
            .chat(json!({"type":"chat","id":input,"input":input,"messages":history}))
            .await;
        let done = done(&frames);
        assert_eq!(done["message"]["content"], answer, "{frames:?}");
        // The ids the tool frames name are the ids the turn records.
        let framed: Vec<&str> = frames
            .iter()
            .filter(|f| f["type"] == "tool_result")
            .map(|f| f["call_id"].as_str().unwrap())
            .collect();
        let recorded: Vec<&str> = done["turn"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["tool_call_id"].as_str())
            .collect();
        assert_eq!(framed, recorded, "{frames:?}");
        history.extend(done["turn"].as_array().unwrap().iter().cloned());
    }
    let ids: Vec<String> = history
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 4, "{history:?}");
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), 4, "{ids:?}");
    // Upstream, each tool message answers the call it follows.
    let last = upstream.requests().pop().unwrap();
    let shapes = shape(&last.body["messages"]);
    assert!(
        shapes.iter().filter(|s| s.starts_with("tool(")).count() == 4,
        "{shapes:?}"
    );
    server.shutdown().await;
}
