//! (16) What recording hook traffic costs (`hooks.record`, docs/protocol.md §21): a chat whose five
//! events each run one hook (an `http` hook answering `{}` from a local endpoint, so the hooks
//! themselves cost little and the recording's share shows), carrying a 20-message history, on a
//! server that records every chat vs the same server without recording, interleaved. Goal: within
//! 1.03×.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::common::{self, FakeUpstream, Reply, TestServer};
use super::median;

const CHATS: usize = 300;

/// Five events, one hook each, all to `url`.
fn hooks(url: &str) -> String {
    [
        "pre_send_message",
        "post_send_message",
        "pre_llm_request",
        "post_llm_response",
        "run_completed",
    ]
    .iter()
    .map(|event| format!("{event}:\n  - type: http\n    url: {url}\n"))
    .collect()
}

fn history() -> Vec<Value> {
    (0..10)
        .flat_map(|n| {
            [
                json!({"role": "user", "content": format!("question {n}: how does the parser handle nested blocks?")}),
                json!({"role": "assistant", "content": format!("answer {n}: it keeps a stack of open blocks and closes them in order.")}),
            ]
        })
        .collect()
}

async fn one_chat(ws: &mut common::Client, upstream: &FakeUpstream, n: usize) -> Duration {
    upstream.push(Reply::text(&["fine"]));
    let started = Instant::now();
    let frames = ws
        .chat(
            json!({"type": "chat", "id": format!("r{n}"), "input": "and now?",
                     "enable_tools": false, "messages": history()}),
        )
        .await;
    let elapsed = started.elapsed();
    assert_eq!(
        frames.last().map(|f| f["type"].clone()),
        Some(json!("done"))
    );
    elapsed
}

pub async fn bench_record() {
    let Some(addr) = super::answering("{}").await else {
        println!("hook recording: cannot bind the hook endpoint; skipped");
        return;
    };
    let url = format!("http://{addr}/hook");
    let records = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            println!("hook recording: no temp dir ({error}); skipped");
            return;
        }
    };
    let (up_on, up_off) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let settings = hookwire::hooks::record::RecordSettings::new(records.path());
    let allowed = vec![url.clone()];
    let on = TestServer::builder()
        .upstream(&up_on)
        .hooks(&hooks(&url))
        .config({
            let allowed = allowed.clone();
            move |c| {
                c.hook_record = Some(settings);
                c.http_hook_urls = allowed;
                c.agent.context.window_tokens = Some(32_000);
            }
        })
        .start()
        .await;
    let off = TestServer::builder()
        .upstream(&up_off)
        .hooks(&hooks(&url))
        .config(move |c| {
            c.http_hook_urls = allowed;
            c.agent.context.window_tokens = Some(32_000);
        })
        .start()
        .await;
    let (mut ws_on, mut ws_off) = (on.connect().await, off.connect().await);
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    for n in 0..CHATS {
        baseline.push(one_chat(&mut ws_off, &up_off, n).await);
        ours.push(one_chat(&mut ws_on, &up_on, n).await);
    }
    on.shutdown().await;
    off.shutdown().await;
    let lines: usize = std::fs::read_dir(records.path())
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    std::fs::read_to_string(e.path())
                        .unwrap_or_default()
                        .lines()
                        .count()
                })
                .sum()
        })
        .unwrap_or(0);
    let (ours, baseline) = (median(ours), median(baseline));
    println!(
        "hook recording (median of {CHATS} chats, five hook events each, {lines} lines recorded): recording {ours:?}, off {baseline:?}, ratio {:.3} (target ≤ 1.03)",
        ours.as_secs_f64() / baseline.as_secs_f64()
    );
}
