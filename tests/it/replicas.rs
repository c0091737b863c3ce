//! Replicas behind a real load balancer: three `hookwire serve` processes sharing one secret,
//! Debian's nginx on loopback running the shipped `deploy/nginx.conf` (round-robin), and one
//! conversation that a client carries from replica to replica — as a page does when it
//! reconnects. Everything a later chat needs travels with the client, signed, so every replica
//! must accept what another one signed. Then one replica dies between chats, and another is
//! stopped with SIGTERM during a chat: the conversation goes on, the chat finishes. On the way, a
//! chat that waits for approval is resumed on another replica, and a history compacted on one
//! replica comes back to another with its summary.
//!
//! Without nginx the test says it was skipped (outside CI); under `CI=true` it fails.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::binary::Hookwire;
use crate::common::*;
use crate::nginx::{self, Nginx};

/// The text of the skill's persistent hook; every copy of it in a request is counted.
const PERSISTENT: &str = "REPLICA-MARK: answer in one line.";
/// The session hook's prompt; its llm judge call starts with it.
const JUDGE: &str = "JUDGE:";

/// A replica: the process and the id it reports in `/api/info` and in `start`.
struct Replica {
    server: Hookwire,
    instance: String,
}

fn write_skill(skills: &Path) {
    let hooks = skills.join("terse/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(
        skills.join("terse/SKILL.md"),
        "---\nname: terse\ndescription: Short answers.\n---\n",
    )
    .unwrap();
    std::fs::write(hooks.join("one-line.md"), PERSISTENT).unwrap();
    std::fs::write(
        hooks.join("hooks.json"),
        r#"{"hooks":[{"name":"one-line","file":"one-line.md","timing":"after_user_input","role":"system","persistent":true}]}"#,
    )
    .unwrap();
}

/// Every replica's config: `list_dir` waits for approval; a 4 000-token window, compacted at
/// half of it, keeping the last group; the `openai` message style, so the request shows each
/// persistent hook message as its own system message.
const CONFIG: &str = "\
upstream:
  message_style: openai
tools:
  require_approval: [list_dir]
context:
  window_tokens: 4000
  compact_threshold: 0.5
  keep_recent_groups: 1
";

/// Starts a replica: its own process, the shared secret, config, skills and upstream.
async fn start_replica(upstream: &FakeUpstream, skills: &Path, workspace: &Path) -> Replica {
    start_replica_with(upstream, skills, workspace, CONFIG, &[]).await
}

/// A replica with this config file and these variables besides the shared ones.
async fn start_replica_with(
    upstream: &FakeUpstream,
    skills: &Path,
    workspace: &Path,
    config_text: &str,
    variables: &[(&str, &str)],
) -> Replica {
    let config = workspace.join("replica-config.yaml");
    std::fs::write(&config, config_text).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookwire"));
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env_clear()
        .env("HOOKWIRE_CONFIG", &config)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOKWIRE_WORKSPACE", workspace)
        .env("HOOKWIRE_SKILLS_DIR", skills)
        .env("HOOKWIRE_SECRET", "one secret for every replica")
        .env("HOOKWIRE_LLM_BASE_URL", &upstream.base_url)
        .env("HOOKWIRE_LLM_API_KEY", "test-key")
        .env("HOOKWIRE_MODEL", "fake-model")
        .envs(variables.iter().copied());
    let server = Hookwire::launch(command, workspace.to_path_buf(), None);
    let (status, body) = http_get(server.addr, "/api/info").await;
    assert_eq!(status, 200, "{body}");
    let info: Value = serde_json::from_str(&body).unwrap();
    let instance = info["instance"].as_str().unwrap().to_string();
    Replica { server, instance }
}

/// What a client keeps between chats (docs/page.md, "building your own front end").
#[derive(Default)]
struct Conversation {
    messages: Vec<Value>,
    session_hooks: Vec<Value>,
}

impl Conversation {
    /// Runs one chat on a new connection to `addr`: the frames, and the instance that served it.
    async fn chat(&mut self, addr: SocketAddr, id: &str, input: &str, tools: bool) -> Served {
        let frames = send_chat(addr, self.frame(id, input, tools)).await;
        self.keep(input, &frames);
        Served::from(frames)
    }

    fn frame(&self, id: &str, input: &str, tools: bool) -> Value {
        json!({"type":"chat","id":id,"input":input,"skills":["terse"],"enable_tools":tools,
               "messages":self.messages,"session_hooks":self.session_hooks})
    }

    /// The history rule: the input, each `hook` frame's message, then `done.message`; and every
    /// `session_hook` frame's hook.
    fn keep(&mut self, input: &str, frames: &[Value]) {
        let done = frames.last().unwrap();
        assert_eq!(done["type"], "done", "{frames:#?}");
        self.messages.push(json!({"role":"user","content":input}));
        for frame in frames {
            match frame["type"].as_str() {
                Some("hook") => self.messages.push(frame["message"].clone()),
                Some("session_hook") => self.session_hooks.push(frame["hook"].clone()),
                _ => {}
            }
        }
        self.messages.push(done["message"].clone());
    }
}

async fn send_chat(addr: SocketAddr, frame: Value) -> Vec<Value> {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .unwrap();
    Client { ws }.chat(frame).await
}

/// A finished chat.
struct Served {
    instance: String,
    frames: Vec<Value>,
}

impl From<Vec<Value>> for Served {
    fn from(frames: Vec<Value>) -> Served {
        assert_eq!(frames[0]["type"], "start", "{frames:#?}");
        let instance = frames[0]["instance"].as_str().unwrap().to_string();
        Served { instance, frames }
    }
}

/// The model's side of one chat without tools: the answer, then the session hook's judge.
fn answer_and_judge(upstream: &FakeUpstream, answer: &str) {
    upstream.push(Reply::text(&[answer]));
    upstream.push(Reply::text(&["{}"]));
}

/// Checks what the replica that served chat number `n` (1-based) accepted from the client:
/// the `n - 1` persistent hook messages other replicas signed (plus the one this chat added)
/// reached the model, and the session hook another replica signed ran on `answer`.
fn assert_signed_state_accepted(requests: &[Recorded], n: usize, answer: &str) {
    let main = requests
        .iter()
        .find(|r| !r.messages()[0].1.starts_with(JUDGE))
        .expect("the chat's model call");
    let copies = main
        .messages()
        .iter()
        .filter(|(role, content)| role == "system" && content == PERSISTENT)
        .count();
    assert_eq!(
        copies,
        n,
        "chat {n}: the persistent hook from every earlier chat, and this chat's own: {:#?}",
        main.messages()
    );
    let judged = requests
        .iter()
        .any(|r| r.messages()[0].1.lines().next() == Some(format!("{JUDGE} {answer}").as_str()));
    assert!(
        judged,
        "chat {n}: the session hook did not run: {requests:#?}"
    );
}

/// A chat that waits for approval on one replica is resumed on the next (the signed `state`);
/// a history compacted on one replica comes back to another with its summary (user text).
async fn approval_and_compaction_cross_replicas(lb: SocketAddr, upstream: &FakeUpstream) {
    let history = json!([{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]);
    upstream.push(Reply::text(&["[NEED_TOOL] list the files"]));
    upstream.push(Reply::tool_calls(&[(
        "l1",
        "list_dir",
        json!({"path":"."}),
    )]));
    let asked = Served::from(
        send_chat(
            lb,
            json!({"type":"chat","id":"a1","input":"what is here?","skills":[],"messages":history}),
        )
        .await,
    );
    let approval = asked
        .frames
        .iter()
        .find(|f| f["type"] == "approval")
        .unwrap_or_else(|| panic!("{:#?}", asked.frames));
    assert_eq!(asked.frames.last().unwrap()["reason"], "approval_required");
    let mut messages = history.as_array().unwrap().clone();
    messages.push(json!({"role":"user","content":"what is here?"}));
    messages.push(asked.frames.last().unwrap()["message"].clone());
    upstream.push(Reply::text(&["It holds the replica config."]));
    let resumed = Served::from(
        send_chat(
            lb,
            json!({"type":"chat","id":"a2","skills":[],"messages":messages,
                   "resume":{"state":approval["state"],"decisions":[{"call_id":"l1","decision":"allow"}]}}),
        )
        .await,
    );
    assert_ne!(
        resumed.instance, asked.instance,
        "resumed on another replica"
    );
    let result = resumed
        .frames
        .iter()
        .find(|f| f["type"] == "tool_result")
        .unwrap_or_else(|| panic!("{:#?}", resumed.frames));
    assert!(result["content"]
        .as_str()
        .unwrap()
        .contains("replica-config.yaml"));
    assert_eq!(resumed.frames.last().unwrap()["reason"], "completed");

    // Two long groups: over half the window, so the first is summarised.
    let long = |tag: &str| format!("{tag} {}", "lorem ipsum ".repeat(500));
    let history = json!([
        {"role":"user","content":long("q1")},{"role":"assistant","content":long("a1")},
        {"role":"user","content":"q2"},{"role":"assistant","content":"a2"},
    ]);
    upstream.push(Reply::text(&["SUMMARY: q1 was answered at length."]));
    upstream.push(Reply::text(&["compacted answer"]));
    let compacted = Served::from(
        send_chat(
            lb,
            json!({"type":"chat","id":"k1","input":"q3","skills":[],"enable_tools":false,"messages":history}),
        )
        .await,
    );
    let frame = compacted
        .frames
        .iter()
        .find(|f| f["type"] == "compact")
        .unwrap_or_else(|| panic!("{:#?}", compacted.frames));
    assert_eq!(frame["count"], 2);
    let mut messages = vec![frame["message"].clone()];
    messages.extend(history.as_array().unwrap()[2..].iter().cloned());
    messages.push(json!({"role":"user","content":"q3"}));
    messages.push(compacted.frames.last().unwrap()["message"].clone());
    upstream.push(Reply::text(&["next answer"]));
    let before = upstream.requests().len();
    let next = Served::from(
        send_chat(
            lb,
            json!({"type":"chat","id":"k2","input":"q4","skills":[],"enable_tools":false,"messages":messages}),
        )
        .await,
    );
    assert_ne!(
        next.instance, compacted.instance,
        "the summary went to another replica"
    );
    let sent = upstream.requests()[before].messages();
    assert!(
        sent.iter().any(|(role, content)| role == "user"
            && content
                == "<summary of the earlier conversation>\nSUMMARY: q1 was answered at length.\n</summary of the earlier conversation>"),
        "the summary was accepted: {sent:#?}"
    );
}

#[tokio::test]
async fn a_conversation_moves_across_replicas_behind_nginx_and_survives_their_loss() {
    let Some(nginx_binary) = nginx::required("the replica test") else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    let skills = tempfile::tempdir().unwrap();
    write_skill(skills.path());
    let workspace = tempfile::tempdir().unwrap();
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(start_replica(&upstream, skills.path(), workspace.path()).await);
    }
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.server.addr).collect();
    let nginx = Nginx::start(&nginx_binary, &addrs).await;
    let lb = nginx.addr;
    let mut conversation = Conversation::default();

    // Chat 1: the model registers a session hook (an llm judge on `stop`); the skill's
    // persistent hook comes back as a `hook` frame. Both are signed by the replica that served.
    upstream.push(Reply::text(&["[NEED_TOOL] register a judge"]));
    upstream.push(Reply::tool_calls(&[(
        "r1",
        "register_hook",
        json!({"event":"stop","prompt":format!("{JUDGE} {{{{assistant_output}}}}")}),
    )]));
    upstream.push(Reply::text(&["registered"]));
    let first = conversation
        .chat(lb, "c1", "judge your answers", true)
        .await;
    assert_eq!(conversation.session_hooks.len(), 1, "{:#?}", first.frames);
    let mut served_by = vec![first.instance];

    // Chats 2 to 7: each reaches another replica than the one before (round-robin), which must
    // accept the hook messages and the session hook the others signed.
    for n in 2..=7 {
        let answer = format!("answer {n}");
        answer_and_judge(&upstream, &answer);
        let before = upstream.requests().len();
        let served = conversation
            .chat(lb, &format!("c{n}"), &format!("question {n}"), false)
            .await;
        assert_ne!(
            Some(&served.instance),
            served_by.last(),
            "chat {n} stayed on its replica: {served_by:?}"
        );
        assert_eq!(
            served.frames.last().unwrap()["message"]["content"],
            answer.as_str()
        );
        assert_signed_state_accepted(&upstream.requests()[before..], n, &answer);
        served_by.push(served.instance);
    }
    let mut seen = served_by.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 3, "every replica served: {served_by:?}");
    approval_and_compaction_cross_replicas(lb, &upstream).await;

    // One replica dies between chats: the one round-robin picks next, so nginx meets the
    // refused connection and passes the chat on to the next replica. (After chat 7, the four
    // chats above moved the rotation on by a full turn and one step.)
    let next = served_by[served_by.len() - 2].clone();
    let dead = replicas.iter().position(|r| r.instance == next).unwrap();
    let mut killed = replicas.remove(dead);
    killed.server.child.kill().unwrap();
    killed.server.child.wait().unwrap();
    let mut n = served_by.len();
    for _ in 0..2 {
        n += 1;
        let answer = format!("answer {n}");
        answer_and_judge(&upstream, &answer);
        let before = upstream.requests().len();
        let served = conversation
            .chat(lb, &format!("c{n}"), &format!("question {n}"), false)
            .await;
        assert_ne!(served.instance, killed.instance);
        assert_signed_state_accepted(&upstream.requests()[before..], n, &answer);
        served_by.push(served.instance);
    }
    assert!(
        nginx
            .log()
            .iter()
            .any(|line| line.contains("connect() failed")
                && line.contains(&killed.server.addr.to_string())),
        "nginx never tried the dead replica: {:#?}",
        nginx.log()
    );

    // A replica gets SIGTERM during a chat: the chat finishes there; meanwhile new chats go to
    // the other replica, and the conversation goes on there.
    let gate = Gate::new();
    upstream.push(Reply::Sse(vec![
        Piece::Raw(chunk(json!({"role":"assistant","content":"finished "}))),
        Piece::Until(gate.clone()),
        Piece::Raw(chunk(json!({"content":"while draining"}))),
        Piece::Raw("data: [DONE]\n\n".into()),
    ]));
    n += 1;
    let input = format!("question {n}");
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{lb}/ws"))
        .await
        .unwrap();
    let mut draining_client = Client { ws };
    draining_client
        .send(conversation.frame(&format!("c{n}"), &input, false))
        .await;
    let start = draining_client.frame().await;
    assert_eq!(start["type"], "start", "{start}");
    let stopping = replicas
        .iter()
        .position(|r| start["instance"] == r.instance.as_str())
        .unwrap();
    let pid = rustix::process::Pid::from_child(&replicas[stopping].server.child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let stopping_addr = replicas[stopping].server.addr;
    let draining = eventually(Duration::from_secs(5), || async {
        http_get(stopping_addr, "/healthz").await == (503, "draining".to_string())
    })
    .await;
    assert!(draining, "{:?}", replicas[stopping].server.log());

    // Another client, meanwhile: served by the replica that is not draining (nginx passes an
    // upgrade refused with 503 on to it).
    let other = &replicas[1 - stopping];
    upstream.push(Reply::text(&["served elsewhere"]));
    for _ in 0..2 {
        let frames = send_chat(
            lb,
            json!({"type":"chat","input":"hello","enable_tools":false}),
        )
        .await;
        let served = Served::from(frames);
        assert_eq!(served.instance, other.instance, "{:#?}", served.frames);
        assert_eq!(served.frames.last().unwrap()["type"], "done");
    }

    // The chat on the draining replica finishes, then its connection closes with 1001.
    upstream.push(Reply::text(&["{}"])); // its session hook's judge
    gate.open();
    let mut frames = vec![start];
    frames.extend(draining_client.until_end().await);
    assert_eq!(
        frames.last().unwrap()["message"]["content"],
        "finished while draining",
        "{frames:#?}"
    );
    assert_eq!(
        draining_client.close_code(Duration::from_secs(5)).await,
        Some(1001)
    );
    conversation.keep(&input, &frames);
    let mut stopped = replicas.remove(stopping);
    let exited = eventually(Duration::from_secs(10), || {
        std::future::ready(matches!(stopped.server.child.try_wait(), Ok(Some(_))))
    })
    .await;
    assert!(exited, "{:?}", stopped.server.log());

    // The conversation goes on, on the last replica.
    n += 1;
    let answer = format!("answer {n}");
    answer_and_judge(&upstream, &answer);
    let before = upstream.requests().len();
    let served = conversation
        .chat(lb, &format!("c{n}"), &format!("question {n}"), false)
        .await;
    assert_eq!(served.instance, replicas[0].instance);
    assert_signed_state_accepted(&upstream.requests()[before..], n, &answer);
}

/// Every replica's config in the quota test: one person (the token's holder) may run one chat
/// at once and spend 5 tokens a day; the window is known, so no replica asks the upstream.
const QUOTA_CONFIG: &str = "\
quotas:
  per_user: {tokens_per_day: 5, concurrent_chats: 1}
context:
  window_tokens: 32000
";

#[tokio::test]
async fn three_replicas_behind_nginx_enforce_one_quota_counted_in_redis() {
    let Some(nginx_binary) = nginx::required("the replica quota test") else {
        return;
    };
    let Some(redis) = crate::redis_server::RedisServer::start("the replica quota test").await
    else {
        return;
    };
    let upstream = FakeUpstream::start().await;
    let skills = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let shared_state = format!("redis://127.0.0.1:{}/0", redis.port);
    let variables = [("HOOKWIRE_SHARED_STATE", shared_state.as_str())];
    let mut replicas = Vec::new();
    for _ in 0..3 {
        let replica = start_replica_with(
            &upstream,
            skills.path(),
            workspace.path(),
            QUOTA_CONFIG,
            &variables,
        )
        .await;
        replicas.push(replica);
    }
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.server.addr).collect();
    let nginx = Nginx::start(&nginx_binary, &addrs).await;
    let chat = json!({"type":"chat","id":"q","input":"hi","enable_tools":false});
    let refused = |frames: &[Value], limit: &str| {
        assert_eq!(frames.len(), 1, "{frames:#?}");
        assert_eq!(frames[0]["code"], "quota_exceeded", "{frames:#?}");
        assert!(
            frames[0]["message"].as_str().unwrap().contains(limit),
            "{frames:#?}"
        );
    };

    // A chat through nginx holds the one place; the two other replicas refuse a second one.
    let gate = Gate::new();
    upstream.push(Reply::After(
        gate.clone(),
        Box::new(Reply::text(&["hello"])),
    ));
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", nginx.addr))
        .await
        .unwrap();
    let mut running = Client { ws };
    running.send(chat.clone()).await;
    let start = running.frame().await;
    assert_eq!(start["type"], "start", "{start}");
    let held = start["instance"].as_str().unwrap().to_string();
    let others: Vec<&Replica> = replicas.iter().filter(|r| r.instance != held).collect();
    assert_eq!(others.len(), 2);
    for other in &others {
        refused(
            &send_chat(other.server.addr, chat.clone()).await,
            "concurrent_chats",
        );
    }
    gate.open();
    let frames = running.until_end().await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");

    // Its 11 tokens spent the day's 5 on every replica, through nginx or not.
    for replica in &replicas {
        refused(
            &send_chat(replica.server.addr, chat.clone()).await,
            "tokens_per_day",
        );
    }
    refused(&send_chat(nginx.addr, chat.clone()).await, "tokens_per_day");
    assert_eq!(
        upstream.requests().len(),
        1,
        "a refused chat reached the model"
    );
}
