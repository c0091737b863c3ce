//! The events of realistic chats, checked by the real AG-UI 1.0 packages: each run's events
//! go through `tests/frontends/agui-verify.mjs`, which parses each with `@ag-ui/core`'s
//! `EventSchemas` and passes the stream through `@ag-ui/client`'s `enforceEvents` (no unknown
//! field), `transformChunks` and `verifyEvents` (the order a client accepts).
//!
//! It needs node and npm (the packages are installed with `npm ci` in `tests/frontends` when
//! missing). Without them the test says it was skipped and why; under `CI=true` it fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde_json::{json, Value};

use super::*;

fn frontends() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/frontends")
}

/// Missing tools: a failure under `CI=true`, else a skip (`None`) that says so.
fn missing(what: &str) -> Option<()> {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{what}, and CI=true requires the AG-UI conformance test");
    }
    eprintln!("SKIPPED: the AG-UI conformance test needs node and npm: {what}");
    None
}

/// node on the PATH and the packages installed (once per test binary).
fn ready() -> Option<()> {
    static SETUP: Mutex<Option<Result<(), String>>> = Mutex::new(None);
    let mut setup = SETUP
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let found = setup.get_or_insert_with(set_up).clone();
    drop(setup);
    match found {
        Ok(()) => Some(()),
        Err(what) => missing(&what),
    }
}

/// Finds node, and runs `npm ci` in `tests/frontends` when the packages are missing.
fn set_up() -> Result<(), String> {
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|out| out.status.success()) {
        return Err("node is not installed".into());
    }
    if frontends().join("node_modules/@ag-ui/client").exists() {
        return Ok(());
    }
    let npm = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(frontends())
        .output();
    match npm {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => panic!(
            "npm ci in tests/frontends failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(error) => Err(format!("npm could not run ({error})")),
    }
}

/// The verifier's word on `events`: `Ok` or the reason it refused them.
fn verify(events: &[Value]) -> Result<(), String> {
    script(Value::Array(events.to_vec())).map(drop)
}

/// What the client holds after the run `body` streamed `events`: `{messages, state}`.
fn apply(body: &Value, events: &[Value]) -> Value {
    let out = script(json!({"input": body, "events": events}));
    match out {
        Ok(out) => serde_json::from_str(&out).unwrap(),
        Err(reason) => panic!("{reason}"),
    }
}

/// The script's output for `stdin`, or why it failed.
fn script(stdin: Value) -> Result<String, String> {
    let mut child = Command::new("node")
        .arg("agui-verify.mjs")
        .current_dir(frontends())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| error.to_string())?;
    let text = stdin.to_string();
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn notice() -> ChatEvent {
    ChatEvent::Notice {
        level: NoticeLevel::Info,
        message: "a hook said hello".into(),
        source: "hook".into(),
    }
}

/// Realistic chats: a name, the run's request, the chat's events.
fn chats() -> Vec<(&'static str, Value, Vec<ChatEvent>)> {
    let answer = |text: &str| ChatEvent::Text(text.into());
    let mut resumed = hello();
    resumed["messages"] = json!([
        {"id": "u1", "role": "user", "content": "delete a"},
        {"id": "a1", "role": "assistant", "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "delete", "arguments": "{}"}}]}
    ]);
    vec![
        (
            "plain answer",
            hello(),
            vec![
                started(),
                ChatEvent::StepStarted(StepName::Answer),
                answer("Hello"),
                answer(", world"),
                done(DoneReason::Completed),
            ],
        ),
        (
            "planning, a server tool and the answer",
            hello(),
            vec![
                started(),
                hook("be brief"),
                ChatEvent::StepStarted(StepName::Planning),
                ChatEvent::Plan("I will search.".into()),
                ChatEvent::StepStarted(StepName::Round(1)),
                call("c1", "search"),
                result("c1"),
                notice(),
                ChatEvent::StepStarted(StepName::Round(2)),
                answer("\n\n"),
                answer("Found it."),
                ChatEvent::SessionHook(json!({"name": "remember"})),
                done(DoneReason::Completed),
            ],
        ),
        (
            "a client tool pending",
            hello(),
            vec![
                started(),
                ChatEvent::StepStarted(StepName::Round(1)),
                answer("Let me check."),
                call("c1", "get_location"),
                ChatEvent::Done {
                    reason: DoneReason::ToolCalls,
                    content: String::new(),
                    usage: Usage::default(),
                    turn: Vec::new(),
                    pending_tool_calls: vec!["c1".into()],
                },
            ],
        ),
        (
            "an approval interrupt",
            hello(),
            vec![
                started(),
                ChatEvent::StepStarted(StepName::Round(1)),
                call("c0", "search"),
                result("c0"),
                ChatEvent::Approval {
                    calls: vec![pending("c1"), pending("c2")],
                    state: "S".into(),
                    expires: 1_800_000_000,
                },
                done(DoneReason::ApprovalRequired),
            ],
        ),
        (
            "the resumed run",
            resumed,
            vec![
                started(),
                call("c1", "delete"),
                result("c1"),
                ChatEvent::StepStarted(StepName::Round(2)),
                answer("Deleted."),
                done(DoneReason::Completed),
            ],
        ),
        (
            "an error mid-text",
            hello(),
            vec![
                started(),
                ChatEvent::StepStarted(StepName::Answer),
                answer("Half an ans"),
                ChatEvent::Error(ChatError::new(ErrorCode::Upstream, "the model went away")),
            ],
        ),
        (
            "a refused chat",
            hello(),
            vec![ChatEvent::Error(ChatError::new(
                ErrorCode::BadFrame,
                "no such skill",
            ))],
        ),
        (
            "a cancelled chat",
            hello(),
            vec![
                started(),
                ChatEvent::StepStarted(StepName::Answer),
                answer("Sto"),
                done(DoneReason::Cancelled),
            ],
        ),
    ]
}

#[test]
fn realistic_chats_pass_the_ag_ui_client() {
    if ready().is_none() {
        return;
    }
    for (name, body, chat) in chats() {
        let events = encode(body, chat);
        if let Err(reason) = verify(&events) {
            panic!(
                "{name}: {reason}\n{}",
                serde_json::to_string_pretty(&events).unwrap()
            );
        }
    }
}

/// The check is real: a stream the client refuses is refused.
#[test]
fn the_verifier_refuses_a_broken_stream() {
    if ready().is_none() {
        return;
    }
    let mut events = encode(
        hello(),
        vec![
            started(),
            ChatEvent::Text("hi".into()),
            done(DoneReason::Completed),
        ],
    );
    // The text message's start goes missing.
    events.remove(1);
    let reason = verify(&events).unwrap_err();
    assert!(reason.contains("TEXT_MESSAGE_CONTENT"), "{reason}");
    let extra = vec![
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "extra": 1}),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
    ];
    assert!(verify(&extra).unwrap_err().contains("unrecognised"));
}

/// The next run, as the client makes it from what it holds after `events` of `body`.
fn next_run(body: &Value, events: &[Value], more: Value) -> Value {
    let held = apply(body, events);
    let mut messages = held["messages"].as_array().unwrap().clone();
    messages.extend(more.as_array().unwrap().iter().cloned());
    json!({"threadId": "t1", "runId": "r2", "messages": messages, "state": held["state"]})
}

#[test]
fn the_client_holds_what_makes_the_next_run_a_valid_chat() {
    if ready().is_none() {
        return;
    }
    // A new turn: the hook message goes back after the input it followed.
    let chat = vec![
        started(),
        hook("be brief"),
        ChatEvent::StepStarted(StepName::Round(1)),
        ChatEvent::Text("Let me look.".into()),
        call("c1", "search"),
        result("c1"),
        ChatEvent::StepStarted(StepName::Round(2)),
        ChatEvent::Text("Found.".into()),
        done(DoneReason::Completed),
    ];
    let events = encode(hello(), chat);
    let next = next_run(
        &hello(),
        &events,
        json!([{"id": "u2", "role": "user", "content": "thanks"}]),
    );
    let request = input(next).into_request(&Limits::default(), None).unwrap();
    let contents: Vec<&str> = request
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        contents,
        ["hi", "be brief", "Let me look.", "found", "Found."]
    );
    assert!(request.messages[1].hook.is_some());
    assert_eq!(request.messages[2].tool_calls[0].id, "c1");
    assert_eq!(request.input, "thanks");

    // A client tool: its result continues the chat.
    let (_, body, chat) = chats().swap_remove(2);
    let events = encode(body.clone(), chat);
    let result = json!([{"id": "t9", "role": "tool", "toolCallId": "c1", "content": "Paris"}]);
    let request = input(next_run(&body, &events, result))
        .into_request(&Limits::default(), None)
        .unwrap();
    assert!(request.continues_after_client_tools());
    assert_eq!(
        request.messages.last().unwrap().tool_name.as_deref(),
        Some("get_location")
    );

    // An approval: the resume answers the interrupts with the sealed state.
    let (_, body, chat) = chats().swap_remove(3);
    let events = encode(body.clone(), chat);
    let mut resume = next_run(&body, &events, json!([]));
    resume["resume"] = json!([
        {"interruptId": "c1", "status": "resolved", "payload": {"approved": true}},
        {"interruptId": "c2", "status": "cancelled"}
    ]);
    let request = input(resume)
        .into_request(&Limits::default(), None)
        .unwrap();
    let resume = request.resume.unwrap();
    assert_eq!(resume.state, "S");
    assert_eq!(resume.decisions.len(), 2);
}
