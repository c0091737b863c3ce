//! Quotas per person and per tenant (docs/protocol.md §20), as people meet them: a chat over a
//! limit ends with `quota_exceeded` and `retry_after_seconds` before any model call (429 with
//! `Retry-After` on the HTTP routes) while other people go on; replicas sharing a real
//! `redis-server` enforce one quota; a Redis that is down is counted around (or refused, when
//! failing closed).

use jsonwebtoken::Algorithm;
use serde_json::{json, Value};

use crate::common::*;
use crate::redis_server::RedisServer;
use crate::sign_in::{connect, rsa_key, sign, Provider};
use hookwire::config::QuotaSettings;
use hookwire::quota::Limits;

/// A token of `sub` in tenant `org`.
fn token(provider: &Provider, sub: &str, org: &str) -> String {
    let mut claims = provider.claims(sub);
    claims["org"] = json!(org);
    sign(&claims, Algorithm::RS256, "rsa-1", &rsa_key())
}

/// A server behind `provider` with these quotas.
async fn server(provider: &Provider, upstream: &FakeUpstream, quotas: QuotaSettings) -> TestServer {
    let settings = provider.settings();
    TestServer::builder()
        .upstream(upstream)
        .config(move |c| {
            c.jwt = Some(settings);
            c.quotas = quotas;
            // Known, so the window is not asked for (the upstream counts requests).
            c.agent.context.window_tokens = Some(32_000);
        })
        .start()
        .await
}

fn tokens_per_day(limit: u64) -> Limits {
    Limits {
        tokens_per_day: Some(limit),
        ..Limits::default()
    }
}

fn concurrent(limit: u64) -> Limits {
    Limits {
        concurrent_chats: Some(limit),
        ..Limits::default()
    }
}

/// A chat `c1` saying "hi" on a new connection without a token.
async fn fresh_chat(server: &TestServer) -> Vec<Value> {
    server
        .connect()
        .await
        .chat(json!({"type": "chat", "id": "c1", "input": "hi"}))
        .await
}

async fn chat_as(server: &TestServer, token: &str) -> Vec<Value> {
    connect(server, token)
        .await
        .chat(json!({"type": "chat", "id": "c1", "input": "hi"}))
        .await
}

/// `POST path` with `body` as the holder of `token`: status, `Retry-After`, body.
async fn post(server: &TestServer, token: &str, path: &str, body: Value) -> (u16, String, Value) {
    let response = reqwest::Client::new()
        .post(server.url(path))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let text = response.text().await.unwrap();
    (
        status,
        retry_after,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn assert_refused(frames: &[Value], limit: &str) -> u64 {
    assert_eq!(types_of(frames), ["error"], "{frames:#?}");
    let error = &frames[0];
    assert_eq!(error["code"], "quota_exceeded", "{error}");
    assert_eq!(error["id"], "c1", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains(limit),
        "{error}"
    );
    let seconds = error["retry_after_seconds"].as_u64().unwrap();
    assert!(seconds >= 1, "{error}");
    seconds
}

#[tokio::test]
async fn a_spent_token_quota_refuses_the_next_chat_before_the_model_is_called_while_another_user_goes_on(
) {
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    let quotas = QuotaSettings {
        per_user: tokens_per_day(5),
        ..QuotaSettings::default()
    };
    let server = server(&provider, &upstream, quotas).await;
    let alice = token(&provider, "alice", "acme");
    upstream.push(Reply::text(&["hello"]));
    let first = chat_as(&server, &alice).await;
    assert_eq!(frame_of(&first, "done")["usage"]["prompt_tokens"], 10);

    // Alice spent 11 of her 5 tokens: her next chat, on any wire, never reaches the model.
    let refused = chat_as(&server, &alice).await;
    let seconds = assert_refused(&refused, "tokens_per_day");
    assert!(seconds <= 86_400, "{refused:?}");
    let (status, retry_after, body) = post(
        &server,
        &alice,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 429, "{body}");
    let retry_after: u64 = retry_after.parse().unwrap();
    assert!((1..=86_400).contains(&retry_after), "{retry_after}");
    assert_eq!(body["error"]["code"], "quota_exceeded", "{body}");
    assert_eq!(body["error"]["retry_after_seconds"], retry_after, "{body}");
    let (status, _, body) = post(
        &server,
        &alice,
        "/api/chat",
        json!({"messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
    )
    .await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        upstream.requests().len(),
        1,
        "a refused chat reached the model"
    );

    // Bob has a quota of his own.
    upstream.push(Reply::text(&["hi bob"]));
    let bob = chat_as(&server, &token(&provider, "bob", "acme")).await;
    assert_eq!(text_of(&bob), "hi bob", "{bob:#?}");
}

#[tokio::test]
async fn chats_at_once_are_counted_for_the_tenant_and_a_place_frees_when_a_chat_ends() {
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    let quotas = QuotaSettings {
        per_tenant: concurrent(1),
        ..QuotaSettings::default()
    };
    let server = server(&provider, &upstream, quotas).await;
    let gate = Gate::new();
    upstream.push(Reply::After(
        gate.clone(),
        Box::new(Reply::text(&["alice's"])),
    ));
    let mut alice = connect(&server, &token(&provider, "alice", "acme")).await;
    alice
        .send(json!({"type": "chat", "id": "c1", "input": "hi"}))
        .await;
    assert!(
        eventually(std::time::Duration::from_secs(10), || async {
            !upstream.requests().is_empty()
        })
        .await
    );

    // Bob is in Alice's tenant, whose one place she holds; Carol's tenant is another.
    let bob = token(&provider, "bob", "acme");
    assert_refused(&chat_as(&server, &bob).await, "concurrent_chats");
    upstream.push(Reply::text(&["carol's"]));
    let carol = chat_as(&server, &token(&provider, "carol", "globex")).await;
    assert_eq!(text_of(&carol), "carol's", "{carol:#?}");

    gate.open();
    let frames = alice.until_end().await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    upstream.push(Reply::text(&["bob's"]));
    let frames = chat_as(&server, &bob).await;
    assert_eq!(text_of(&frames), "bob's", "{frames:#?}");
}

#[tokio::test]
async fn without_sign_in_everyone_with_the_static_token_is_one_person() {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.quotas.per_user = tokens_per_day(5);
            c.agent.context.window_tokens = Some(32_000);
        })
        .start()
        .await;
    upstream.push(Reply::text(&["hello"]));
    let first = fresh_chat(&server).await;
    assert_eq!(first.last().unwrap()["type"], "done", "{first:#?}");
    let second = fresh_chat(&server).await;
    assert_refused(&second, "tokens_per_day");
    assert_eq!(upstream.requests().len(), 1);
}

#[tokio::test]
async fn two_replicas_with_one_redis_server_enforce_one_quota() {
    let Some(redis) =
        RedisServer::start("two_replicas_with_one_redis_server_enforce_one_quota").await
    else {
        return;
    };
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    let quotas = QuotaSettings {
        per_user: Limits {
            tokens_per_day: Some(5),
            concurrent_chats: Some(1),
            ..Limits::default()
        },
        shared_state: Some(format!("redis://127.0.0.1:{}/0", redis.port)),
        ..QuotaSettings::default()
    };
    let first = server(&provider, &upstream, quotas.clone()).await;
    let second = server(&provider, &upstream, quotas).await;
    let alice = token(&provider, "alice", "acme");

    // Chats at once: Alice's chat on one replica holds her place on the other.
    let gate = Gate::new();
    upstream.push(Reply::After(
        gate.clone(),
        Box::new(Reply::text(&["hello"])),
    ));
    let mut running = connect(&first, &alice).await;
    running
        .send(json!({"type": "chat", "id": "c1", "input": "hi"}))
        .await;
    assert!(
        eventually(std::time::Duration::from_secs(10), || async {
            !upstream.requests().is_empty()
        })
        .await
    );
    assert_refused(&chat_as(&second, &alice).await, "concurrent_chats");
    gate.open();
    let frames = running.until_end().await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");

    // Tokens: what she spent on the first replica is spent on the second.
    assert_refused(&chat_as(&second, &alice).await, "tokens_per_day");
    assert_eq!(upstream.requests().len(), 1);
    upstream.push(Reply::text(&["hi bob"]));
    let bob = chat_as(&second, &token(&provider, "bob", "acme")).await;
    assert_eq!(text_of(&bob), "hi bob", "{bob:#?}");
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_redis_that_cannot_be_reached_is_counted_around_in_memory_or_refused_when_failing_closed()
{
    let upstream = FakeUpstream::start().await;
    let down = format!("redis://127.0.0.1:{}/0", closed_port());
    let open = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.quotas.per_user = tokens_per_day(5);
            c.quotas.shared_state = Some(down.clone());
            c.agent.context.window_tokens = Some(32_000);
        })
        .start()
        .await;
    upstream.push(Reply::text(&["hello"]));
    let frames = fresh_chat(&open).await;
    assert_eq!(text_of(&frames), "hello", "{frames:#?}");
    // Counted in memory meanwhile: the quota still holds on this replica.
    let frames = fresh_chat(&open).await;
    assert_refused(&frames, "tokens_per_day");
    let (_, metrics) = http_get(open.addr, "/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("hookwire_shared_state_errors_total{operation=\"admit\"}")),
        "{metrics}"
    );

    let closed = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.quotas.per_user = tokens_per_day(5);
            c.quotas.shared_state = Some(down);
            c.quotas.fail_closed = true;
            c.agent.context.window_tokens = Some(32_000);
        })
        .start()
        .await;
    let frames = fresh_chat(&closed).await;
    assert_eq!(types_of(&frames), ["error"], "{frames:#?}");
    assert_eq!(frames[0]["code"], "unavailable");
    let response = reqwest::Client::new()
        .post(closed.url("/v1/chat/completions"))
        .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(upstream.requests().len(), 1);
}

#[tokio::test]
async fn a_chat_whose_client_went_away_gives_its_place_back_at_once() {
    let upstream = FakeUpstream::start().await;
    let server = TestServer::builder()
        .upstream(&upstream)
        .config(|c| {
            c.quotas.per_user = concurrent(1);
            c.agent.context.window_tokens = Some(32_000);
        })
        .start()
        .await;
    upstream.push(Reply::endless());
    let response = reqwest::Client::new()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"stream": true, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let mut body = response.bytes_stream();
    futures::StreamExt::next(&mut body).await.unwrap().unwrap();
    drop(body);

    // Well before the lease (a minute) would lapse.
    let freed = eventually(std::time::Duration::from_secs(10), || async {
        upstream.push(Reply::text(&["again"]));
        let frames = server
            .connect()
            .await
            .chat(json!({"type": "chat", "id": "c1", "input": "hi"}))
            .await;
        text_of(&frames) == "again"
    })
    .await;
    assert!(freed, "the dropped chat kept its place");
}

#[tokio::test]
async fn a_tenant_chooses_the_skills_hook_files_tools_and_quotas_of_its_people() {
    use hookwire::config::Tenant;
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    // The tenant's hook file lies outside the workspace: the operator's, trusted as the config.
    let operator = tempfile::tempdir().unwrap();
    let acme_hooks = operator.path().join("acme-hooks.yaml");
    std::fs::write(
        &acme_hooks,
        "pre_send_message:\n  - command: 'cat > acme-audit.json'\n",
    )
    .unwrap();
    let settings = provider.settings();
    let server = TestServer::builder()
        .upstream(&upstream)
        .prepare(|root| {
            let skills = root.join("skills");
            for name in ["house-style", "audit"] {
                crate::skills::write_skill(
                    &skills,
                    name,
                    &[(name, "after_user_input", "system", false, None)],
                );
            }
        })
        .skills("skills")
        .config(move |c| {
            c.jwt = Some(settings);
            c.agent.context.window_tokens = Some(32_000);
            // The first call offers the tools.
            c.agent.planning = hookwire::agent::Planning::Off;
            c.tenants.insert(
                "acme".into(),
                Tenant {
                    skills: Some(vec!["house-style".into()]),
                    hooks: vec![acme_hooks],
                    tools: Some(vec!["read_file".into()]),
                    per_user: Some(tokens_per_day(5)),
                    per_tenant: None,
                },
            );
        })
        .start()
        .await;
    let alice = token(&provider, "alice", "acme");
    let bob = token(&provider, "bob", "globex");
    let tools = |request: &Recorded| -> Vec<String> {
        request.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let texts = |request: &Recorded| -> String {
        request
            .messages()
            .into_iter()
            .map(|(_, content)| content)
            .collect::<Vec<_>>()
            .join("\n")
    };

    // Alice (acme): its skill only, its hook file, its one tool.
    upstream.push(Reply::text(&["for acme"]));
    let frames = chat_as(&server, &alice).await;
    assert_eq!(text_of(&frames), "for acme", "{frames:#?}");
    let request = &upstream.requests()[0];
    let prompt = texts(request);
    assert!(prompt.contains("TEXT:house-style"), "{prompt}");
    assert!(!prompt.contains("TEXT:audit"), "{prompt}");
    assert_eq!(tools(request), ["read_file"]);
    let audit = std::fs::read_to_string(server.workspace.path().join("acme-audit.json")).unwrap();
    assert!(audit.contains("\"alice\""), "{audit}");
    std::fs::remove_file(server.workspace.path().join("acme-audit.json")).unwrap();

    // A skill acme does not get is unknown to its people, and its skill list shows none.
    let frames = connect(&server, &token(&provider, "ann", "acme"))
        .await
        .chat(json!({"type": "chat", "id": "c1", "input": "hi", "skills": ["audit"]}))
        .await;
    assert_eq!(
        frames.last().unwrap()["code"],
        "unknown_skill",
        "{frames:#?}"
    );
    let listed: Value = reqwest::Client::new()
        .get(server.url("/api/skills"))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["house-style"], "{listed}");

    // Acme's quota override: Alice's 11 tokens spent her 5.
    assert_refused(&chat_as(&server, &alice).await, "tokens_per_day");

    // Bob's tenant is not listed: the defaults (every skill, every tool, no quota, no hook).
    for _ in 0..2 {
        upstream.push(Reply::text(&["for globex"]));
        let frames = chat_as(&server, &bob).await;
        assert_eq!(text_of(&frames), "for globex", "{frames:#?}");
    }
    let requests = upstream.requests();
    let request = requests.last().unwrap();
    let prompt = texts(request);
    assert!(
        prompt.contains("TEXT:house-style") && prompt.contains("TEXT:audit"),
        "{prompt}"
    );
    assert!(!server.workspace.path().join("acme-audit.json").exists());
    let offered = tools(request);
    assert!(
        offered.len() > 1 && offered.contains(&"read_file".to_string()),
        "{offered:?}"
    );
}

#[tokio::test]
async fn a_tenant_hook_file_inside_the_workspace_runs_only_once_trusted() {
    use hookwire::config::Tenant;
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    for trusted in [false, true] {
        let settings = provider.settings();
        let server = TestServer::builder()
            .upstream(&upstream)
            .file(
                "tenant-hooks.yaml",
                "pre_send_message:\n  - command: 'touch ran'\n",
            )
            .config_in(move |c, root| {
                c.jwt = Some(settings);
                c.agent.context.window_tokens = Some(32_000);
                c.trust_workspace_hooks = trusted;
                c.tenants.insert(
                    "acme".into(),
                    Tenant {
                        hooks: vec![root.join("tenant-hooks.yaml")],
                        ..Tenant::default()
                    },
                );
            })
            .start()
            .await;
        upstream.push(Reply::text(&["hi"]));
        let frames = chat_as(&server, &token(&provider, "alice", "acme")).await;
        assert_eq!(text_of(&frames), "hi", "{frames:#?}");
        let ran = server.workspace.path().join("ran").exists();
        assert_eq!(ran, trusted, "trusted: {trusted}");
    }
}

#[tokio::test]
async fn the_hooks_model_calls_count_against_the_tokens_of_the_day() {
    let upstream = FakeUpstream::start().await;
    // A chat's own call takes 11 tokens, its hook's call 11 more: 22 of 15.
    let server = TestServer::builder()
        .upstream(&upstream)
        .hooks("pre_send_message:\n  - type: llm\n    prompt: 'SCREEN {{user_input}}'\n")
        .config(|c| {
            c.quotas.per_user = tokens_per_day(15);
            c.agent.context.window_tokens = Some(32_000);
        })
        .start()
        .await;
    upstream.push(Reply::text(&["{}"]));
    upstream.push(Reply::text(&["hello"]));
    let first = fresh_chat(&server).await;
    let usage = &frame_of(&first, "done")["usage"];
    assert_eq!(usage["hook_calls"], 1, "{first:#?}");
    let second = fresh_chat(&server).await;
    assert_refused(&second, "tokens_per_day");
    assert_eq!(upstream.requests().len(), 2);
}
