//! Tool approval across a stateless server (docs/protocol.md §11): `tools.require_approval` and
//! hook `ask` end the chat with an `approval` frame and `done` `approval_required`; a chat with
//! `resume` goes on, on any server with the same secret; a changed, expired or foreign state is
//! `bad_frame`.

use base64::Engine;
use serde_json::{json, Value};

use crate::binary::Hookwire;
use crate::common::*;

const SECRET: &str = "approval-secret";

/// A workspace with `a.txt` and `b.txt`, and a server that asks before `read_file`.
async fn server(upstream: &FakeUpstream, hooks: Option<(&str, &str)>) -> TestServer {
    let mut builder = TestServer::builder()
        .upstream(upstream)
        .file("a.txt", "ALPHA CONTENT")
        .file("b.txt", "BRAVO CONTENT")
        .config(|c| {
            c.agent.secret = Some(SECRET.into());
            c.agent.approval.require_approval = vec!["read_file".into()];
        });
    if let Some((name, text)) = hooks {
        builder = builder.hooks_file(name, text);
    }
    builder.start().await
}

const HISTORY: &str = r#"[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]"#;

fn history() -> Vec<Value> {
    serde_json::from_str(HISTORY).unwrap()
}

/// The first chat: a plan, then one round calling `calls`.
async fn ask(
    server: &TestServer,
    upstream: &FakeUpstream,
    calls: &[(&str, &str, Value)],
) -> Vec<Value> {
    upstream.push(Reply::text(&["[NEED_TOOL] read the files"]));
    upstream.push(Reply::tool_calls(calls));
    server
        .connect()
        .await
        .chat(json!({"type":"chat","id":"c1","input":"read the files","messages":history()}))
        .await
}

/// The history the client holds after the first chat (docs/protocol.md §3's rule).
fn after(frames: &[Value]) -> Vec<Value> {
    let mut history = history();
    history.push(json!({"role":"user","content":"read the files"}));
    history.extend(
        frames
            .iter()
            .filter(|f| f["type"] == "hook")
            .map(|f| f["message"].clone()),
    );
    history.push(frames.last().unwrap()["message"].clone());
    history
}

fn resume_frame(frames: &[Value], decisions: Value) -> Value {
    json!({"type":"chat","id":"c2","messages":after(frames),
           "resume":{"state":frame_of(frames, "approval")["state"],"decisions":decisions}})
}

fn tool_result<'a>(request: &'a Recorded, call_id: &str) -> &'a str {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no result for {call_id} in {}", request.body))
}

#[tokio::test]
async fn an_allowed_call_runs_on_resume_and_the_loop_goes_on() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream, None).await;
    let frames = ask(
        &server,
        &upstream,
        &[("r1", "read_file", json!({"path":"a.txt"}))],
    )
    .await;
    assert_eq!(
        types_of(&frames),
        ["start", "plan", "approval", "done"],
        "the call is not shown as running: {frames:#?}"
    );
    let approval = frame_of(&frames, "approval");
    assert_eq!(
        approval["calls"],
        json!([{"call_id":"r1","name":"read_file","arguments":{"path":"a.txt"},
                "reason":"this server asks you before it runs read_file"}])
    );
    assert!(approval["state"].as_str().unwrap().starts_with("v2."));
    let done = frames.last().unwrap();
    assert_eq!(done["reason"], "approval_required");
    assert_eq!(upstream.requests().len(), 2, "nothing ran past the round");

    upstream.push(Reply::text(&["a.txt says ALPHA"]));
    let resumed = server
        .connect()
        .await
        .chat(resume_frame(
            &frames,
            json!([{"call_id":"r1","decision":"allow"}]),
        ))
        .await;
    assert_eq!(
        types_of(&resumed),
        ["start", "tool_call", "tool_result", "text", "done"],
        "{resumed:#?}"
    );
    assert_eq!(
        frame_of(&resumed, "tool_result")["content"],
        "ALPHA CONTENT"
    );
    let done = resumed.last().unwrap();
    assert_eq!(done["reason"], "completed");
    assert_eq!(done["message"]["content"], "a.txt says ALPHA");
    // The round-2 call holds the history, the input, the plan, the call and its result.
    let requests = upstream.requests();
    let round2 = &requests[2];
    assert_eq!(tool_result(round2, "r1"), "ALPHA CONTENT");
    let texts: Vec<String> = round2.messages().into_iter().map(|(_, c)| c).collect();
    for text in ["hi", "hello", "read the files"] {
        assert!(texts.iter().any(|c| c == text), "{text} missing: {texts:?}");
    }
    assert!(round2
        .tool_names()
        .is_some_and(|t| t.contains(&"read_file".to_string())));
}

#[tokio::test]
async fn a_denied_call_reaches_the_model_with_the_reason() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream, None).await;
    let frames = ask(
        &server,
        &upstream,
        &[("r1", "read_file", json!({"path":"a.txt"}))],
    )
    .await;
    upstream.push(Reply::text(&["ok, I will not read it"]));
    let resumed = server
        .connect()
        .await
        .chat(resume_frame(
            &frames,
            json!([{"call_id":"r1","decision":"deny","reason":"that file is private"}]),
        ))
        .await;
    let result = frame_of(&resumed, "tool_result");
    assert_eq!(result["is_error"], true);
    assert!(!result["content"].as_str().unwrap().contains("ALPHA"));
    let seen = tool_result(&upstream.requests()[2], "r1").to_string();
    assert!(
        seen.contains("denied") && seen.contains("that file is private"),
        "{seen}"
    );
    assert_eq!(resumed.last().unwrap()["reason"], "completed");
}

#[tokio::test]
async fn in_a_mixed_round_the_free_calls_run_and_only_the_others_wait() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream, None).await;
    let frames = ask(
        &server,
        &upstream,
        &[
            ("l1", "list_dir", json!({"path":"."})),
            ("r1", "read_file", json!({"path":"a.txt"})),
            ("r2", "read_file", json!({"path":"b.txt"})),
        ],
    )
    .await;
    assert_eq!(
        types_of(&frames),
        [
            "start",
            "plan",
            "tool_call",
            "tool_result",
            "approval",
            "done"
        ]
    );
    assert_eq!(frame_of(&frames, "tool_call")["call_id"], "l1");
    let calls: Vec<&str> = frame_of(&frames, "approval")["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["r1", "r2"]);

    upstream.push(Reply::text(&["done reading"]));
    let resumed = server
        .connect()
        .await
        .chat(resume_frame(
            &frames,
            json!([{"call_id":"r2","decision":"allow"},{"call_id":"r1","decision":"deny"}]),
        ))
        .await;
    let ran: Vec<&str> = resumed
        .iter()
        .filter(|f| f["type"] == "tool_result")
        .map(|f| f["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ran,
        ["r1", "r2"],
        "in the order they were asked, l1 not again"
    );
    let round2 = &upstream.requests()[2];
    assert!(
        tool_result(round2, "l1").contains("a.txt"),
        "the free call's result is kept"
    );
    assert!(tool_result(round2, "r1").contains("no reason given"));
    assert_eq!(tool_result(round2, "r2"), "BRAVO CONTENT");
}

/// The state's key as docs/protocol.md §16 derives it: HKDF-SHA256 over the secret.
fn state_key(secret: &str) -> chacha20poly1305::XChaCha20Poly1305 {
    use chacha20poly1305::KeyInit;
    let mut key = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::new(Some(b"hookwire"), secret.as_bytes())
        .expand(b"hookwire approval_state v2 xchacha20poly1305", &mut key)
        .unwrap();
    chacha20poly1305::XChaCha20Poly1305::new(&key.into())
}

/// The JSON of a state sealed with `secret`'s key.
fn opened(state: &str, secret: &str) -> Value {
    use chacha20poly1305::aead::{Aead, Payload};
    let mut parts = state.splitn(3, '.');
    let (version, kind, payload) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    let (nonce, sealed) = bytes.split_at(24);
    let aad = format!("approval_state\n{version}.{kind}");
    let plain = state_key(secret)
        .decrypt(
            chacha20poly1305::XNonce::from_slice(nonce),
            Payload {
                msg: sealed,
                aad: aad.as_bytes(),
            },
        )
        .unwrap();
    let json = match kind {
        "j" => plain,
        _ => {
            use std::io::Read;
            let mut out = Vec::new();
            flate2::read::DeflateDecoder::new(&plain[..])
                .read_to_end(&mut out)
                .unwrap();
            out
        }
    };
    serde_json::from_slice(&json).unwrap()
}

/// Opens a state, changes it with `edit`, and seals it again with `secret`'s key.
fn re_sealed(state: &str, secret: &str, edit: impl FnOnce(&mut Value)) -> String {
    use chacha20poly1305::aead::{Aead, AeadCore, OsRng, Payload};
    let mut value = opened(state, SECRET);
    edit(&mut value);
    let nonce = chacha20poly1305::XChaCha20Poly1305::generate_nonce(&mut OsRng);
    let json = value.to_string();
    let sealed = state_key(secret)
        .encrypt(
            &nonce,
            Payload {
                msg: json.as_bytes(),
                aad: b"approval_state\nv2.j",
            },
        )
        .unwrap();
    let mut bytes = nonce.to_vec();
    bytes.extend(sealed);
    format!(
        "v2.j.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

#[tokio::test]
async fn a_decoded_state_shows_no_prompt_text_and_a_changed_one_is_refused() {
    const PROMPT: &str = "OPERATOR-PROMPT-CANARY: never tell the user about project Bluebird";
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .upstream(&upstream)
        .file("a.txt", "ALPHA")
        .config(|c| {
            c.agent.secret = Some(SECRET.into());
            c.agent.system_prompt = PROMPT.into();
            c.agent.approval.require_approval = vec!["read_file".into()];
        })
        .start()
        .await;
    let frames = ask(
        &server,
        &upstream,
        &[("r1", "read_file", json!({"path":"a.txt"}))],
    )
    .await;
    let state = frame_of(&frames, "approval")["state"]
        .as_str()
        .unwrap()
        .to_string();
    // What a client can do with the text: split it, base64-decode it, inflate it.
    let mut readable = state.clone();
    for part in state.split('.') {
        let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part) else {
            continue;
        };
        readable.push_str(&String::from_utf8_lossy(&bytes));
        for skip in [0, 24] {
            use std::io::Read;
            let mut out = Vec::new();
            let _ = flate2::read::DeflateDecoder::new(bytes.get(skip..).unwrap_or_default())
                .read_to_end(&mut out);
            readable.push_str(&String::from_utf8_lossy(&out));
        }
    }
    for secret_text in ["OPERATOR-PROMPT-CANARY", "Bluebird", "read the files"] {
        assert!(
            !readable.contains(secret_text),
            "{secret_text} readable in the state"
        );
    }
    // The server (holding the secret) still reads it: the prompt is in it.
    assert!(opened(&state, SECRET)["system"]
        .as_str()
        .unwrap()
        .contains("Bluebird"));
    // One byte of the ciphertext flipped: refused.
    let mut bytes = state.into_bytes();
    let at = bytes.len() - 5;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(bytes).unwrap();
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","id":"c2","messages":after(&frames),
                     "resume":{"state":flipped,"decisions":[{"call_id":"r1","decision":"allow"}]}}))
        .await;
    let last = frames.last().unwrap();
    assert_eq!(
        (&last["type"], &last["code"]),
        (&json!("error"), &json!("bad_frame")),
        "{frames:#?}"
    );
    assert!(
        last["message"].as_str().unwrap().contains("was changed"),
        "{last}"
    );
}

#[tokio::test]
async fn a_changed_expired_foreign_or_mismatched_state_is_bad_frame_saying_which() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream, None).await;
    let frames = ask(
        &server,
        &upstream,
        &[("r1", "read_file", json!({"path":"a.txt"}))],
    )
    .await;
    let state = frame_of(&frames, "approval")["state"]
        .as_str()
        .unwrap()
        .to_string();
    let allow = json!([{"call_id":"r1","decision":"allow"}]);
    let attempt = |state: String, messages: Vec<Value>, decisions: Value| json!({"type":"chat","id":"c2","messages":messages,"resume":{"state":state,"decisions":decisions}});
    let cases = [
        (
            // The arguments changed to another file, sealed without the secret.
            attempt(
                re_sealed(&state, "not the secret", |v| {
                    v["pending"][0]["arguments"]["path"] = json!("b.txt")
                }),
                after(&frames),
                allow.clone(),
            ),
            "was changed",
        ),
        (
            attempt(
                re_sealed(&state, SECRET, |v| v["expires"] = json!(1)),
                after(&frames),
                allow.clone(),
            ),
            "expired",
        ),
        (
            attempt(
                re_sealed(&state, "another replica's secret", |_| {}),
                after(&frames),
                allow.clone(),
            ),
            "was changed",
        ),
        (
            {
                let mut other = after(&frames);
                other[1]["content"] = json!("HELLO, something else");
                attempt(state.clone(), other, allow.clone())
            },
            "history does not match",
        ),
        (
            attempt(state.clone(), after(&frames), json!([])),
            "no decision for the call \"r1\"",
        ),
        (
            attempt(
                state.clone(),
                after(&frames),
                json!([{"call_id":"r1","decision":"allow"},{"call_id":"zz","decision":"allow"}]),
            ),
            "\"zz\", which does not wait",
        ),
    ];
    for (frame, expected) in cases {
        let frames = server.connect().await.chat(frame).await;
        let last = frames.last().unwrap();
        assert_eq!(last["type"], "error", "{frames:#?}");
        assert_eq!(last["code"], "bad_frame");
        assert!(
            last["message"].as_str().unwrap().contains(expected),
            "{expected}: {last}"
        );
    }
    assert_eq!(upstream.requests().len(), 2, "no resume reached the model");
    // A resume frame with an input is refused as it is parsed.
    let frames = server
        .connect()
        .await
        .chat(
            json!({"type":"chat","id":"c3","input":"x","resume":{"state":state,"decisions":allow}}),
        )
        .await;
    assert_eq!(frames.last().unwrap()["code"], "bad_frame");
}

#[tokio::test]
async fn another_server_process_with_the_same_secret_resumes_and_one_without_it_cannot() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream, None).await;
    let frames = ask(
        &server,
        &upstream,
        &[("r1", "read_file", json!({"path":"a.txt"}))],
    )
    .await;
    let start = |secret: &'static str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "ALPHA ON THE OTHER REPLICA").unwrap();
        std::fs::write(
            dir.path().join("config.yaml"),
            "tools:\n  require_approval: read_file\n",
        )
        .unwrap();
        let config = dir.path().join("config.yaml");
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_hookwire"));
        command
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOOKWIRE_WORKSPACE", dir.path())
            .env("HOOKWIRE_CONFIG", &config)
            .env("HOOKWIRE_LLM_BASE_URL", &upstream.base_url)
            .env("HOOKWIRE_LLM_API_KEY", "test-key")
            .env("HOOKWIRE_MODEL", "fake-model")
            .env("HOOKWIRE_SECRET", secret);
        let root = dir.path().to_path_buf();
        Hookwire::launch(command, root, Some(dir))
    };
    let other = start("a different secret");
    let refused = other
        .connect()
        .await
        .chat(resume_frame(
            &frames,
            json!([{"call_id":"r1","decision":"allow"}]),
        ))
        .await;
    assert_eq!(refused.last().unwrap()["code"], "bad_frame", "{refused:#?}");

    let replica = start(SECRET);
    upstream.push(Reply::text(&["resumed elsewhere"]));
    let resumed = replica
        .connect()
        .await
        .chat(resume_frame(
            &frames,
            json!([{"call_id":"r1","decision":"allow"}]),
        ))
        .await;
    assert_eq!(
        resumed.last().unwrap()["reason"],
        "completed",
        "{resumed:#?}"
    );
    assert_eq!(
        frame_of(&resumed, "tool_result")["content"],
        "ALPHA ON THE OTHER REPLICA",
        "the call ran on the replica"
    );
}

#[tokio::test]
async fn without_a_secret_only_the_same_server_can_resume() {
    let upstream = FakeUpstream::start().await;
    let start = || {
        TestServer::builder()
            .upstream(&upstream)
            .config(|c| {
                c.agent.approval.require_approval = vec!["*".into()];
            })
            .start()
    };
    let (first, second) = (start().await, start().await);
    upstream.push(Reply::text(&["[NEED_TOOL] list"]));
    upstream.push(Reply::tool_calls(&[(
        "l1",
        "list_dir",
        json!({"path":"."}),
    )]));
    let frames = first
        .connect()
        .await
        .chat(json!({"type":"chat","id":"c1","input":"read the files","messages":history()}))
        .await;
    assert_eq!(
        frame_of(&frames, "approval")["calls"][0]["name"],
        "list_dir"
    );
    let resume = resume_frame(&frames, json!([{"call_id":"l1","decision":"allow"}]));
    let refused = second.connect().await.chat(resume.clone()).await;
    assert_eq!(refused.last().unwrap()["code"], "bad_frame");
    upstream.push(Reply::text(&["listed"]));
    let resumed = first.connect().await.chat(resume).await;
    assert_eq!(resumed.last().unwrap()["reason"], "completed");
}

#[tokio::test]
async fn a_cancel_while_waiting_changes_nothing_and_the_conversation_goes_on() {
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream, None).await;
    upstream.push(Reply::text(&["[NEED_TOOL] read"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "read_file",
        json!({"path":"a.txt"}),
    )]));
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"c1","input":"read the files","messages":history()}))
        .await;
    assert_eq!(frames.last().unwrap()["reason"], "approval_required");
    // The person gives up: the page sends cancel; nothing runs, so nothing answers.
    client.send(json!({"type":"cancel","id":"c1"})).await;
    client.send(json!({"type":"ping","id":"p"})).await;
    assert_eq!(client.frame().await, json!({"type":"pong","id":"p"}));
    // The next chat needs no decision: the waiting calls are simply not in the history.
    upstream.push(Reply::text(&["something else then"]));
    let next = client
        .chat(json!({"type":"chat","id":"c2","input":"never mind","messages":after(&frames)}))
        .await;
    assert_eq!(next.last().unwrap()["reason"], "completed", "{next:#?}");

    // A resumed chat can be cancelled like any chat.
    upstream.push(Reply::Delay(
        std::time::Duration::from_secs(30),
        Box::new(Reply::text(&["late"])),
    ));
    client
        .send(resume_frame(
            &frames,
            json!([{"call_id":"r1","decision":"allow"}]),
        ))
        .await;
    let mut seen = Vec::new();
    loop {
        let frame = client.frame().await;
        if frame["type"] == "tool_result" {
            client.send(json!({"type":"cancel","id":"c2"})).await;
        }
        let end = frame["type"] == "done" || frame["type"] == "error";
        seen.push(frame);
        if end {
            break;
        }
    }
    assert_eq!(seen.last().unwrap()["reason"], "cancelled", "{seen:#?}");
}

#[tokio::test]
async fn a_hook_that_asks_makes_the_call_wait_and_notification_hooks_hear_of_it() {
    let yaml = "\
pre_tool_execution:
  - command: 'echo \"{\\\"action\\\":\\\"ask\\\",\\\"reason\\\":\\\"b.txt is sensitive\\\"}\"'
    matcher: list_dir
Notification:
  - command: 'cat > notification.json'
";
    let upstream = FakeUpstream::start().await;
    let server = server(&upstream, Some(("hooks.yaml", yaml))).await;
    let frames = ask(
        &server,
        &upstream,
        &[("l1", "list_dir", json!({"path":"."}))],
    )
    .await;
    let approval = frame_of(&frames, "approval");
    assert_eq!(approval["calls"][0]["reason"], "b.txt is sensitive");
    let path = server.workspace.path().join("notification.json");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Notification");
    assert_eq!(input["notification_type"], "permission_prompt");

    // Claude Code's `permissionDecision: "ask"` does the same.
    let claude = json!({"hooks":{"PreToolUse":[{"matcher":"LS","hooks":[{"type":"command",
        "command":"echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"confirm the listing\"}}'"}]}]}});
    let upstream = FakeUpstream::start().await;
    let server = self::server(&upstream, Some(("settings.json", &claude.to_string()))).await;
    let frames = ask(
        &server,
        &upstream,
        &[("l1", "list_dir", json!({"path":"."}))],
    )
    .await;
    assert_eq!(
        frame_of(&frames, "approval")["calls"][0]["reason"],
        "confirm the listing"
    );
    assert_eq!(frames.last().unwrap()["reason"], "approval_required");
}

/// A chat that switched to a fallback model before it asked keeps that model: its approval
/// resumes (it was refused as "another model's" state) and the loop goes on with the fallback.
#[tokio::test]
async fn an_approval_asked_after_a_fallback_switch_resumes_with_the_fallback() {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .upstream(&upstream)
        .file("a.txt", "ALPHA CONTENT")
        .config(|c| {
            c.agent.secret = Some(SECRET.into());
            c.agent.approval.require_approval = vec!["read_file".into()];
            c.agent.retry.retries = 0;
            c.agent.retry.fallback_models = vec!["backup-model".into()];
        })
        .start()
        .await;
    // The planning call fails over to the backup, which plans and calls the tool.
    upstream.push(Reply::Status(503, "busy".into()));
    let frames = ask(
        &server,
        &upstream,
        &[("r1", "read_file", json!({"path":"a.txt"}))],
    )
    .await;
    assert_eq!(
        frame_of(&frames, "done")["reason"],
        "approval_required",
        "{frames:#?}"
    );
    upstream.push(Reply::text(&["a.txt says ALPHA"]));
    let resumed = server
        .connect()
        .await
        .chat(resume_frame(
            &frames,
            json!([{"call_id":"r1","decision":"allow"}]),
        ))
        .await;
    assert_eq!(
        frame_of(&resumed, "done")["reason"],
        "completed",
        "{resumed:#?}"
    );
    let last = upstream.requests().last().cloned().unwrap();
    assert_eq!(last.body["model"], "backup-model");
    assert_eq!(tool_result(&last, "r1"), "ALPHA CONTENT");
}
