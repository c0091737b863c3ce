//! Hooks side by side: Claude Code runs every matching hook of an event in parallel, and so does
//! hookwire for its settings hooks and for a YAML event with `parallel: true`. The answers are
//! merged in declaration order whatever order the hooks finish in.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::*;

const HOOKS: usize = 5;

/// A server on `upstream` whose (trusted) workspace holds `files` (`*.sh` executable).
async fn start(upstream: &FakeUpstream, files: &[(String, String)]) -> TestServer {
    let mut builder = TestServer::builder()
        .workspace(crate::agent::workspace())
        .upstream(upstream)
        .trust_workspace_hooks();
    for (name, body) in files {
        builder = if name.ends_with(".sh") {
            builder.script(name, body)
        } else {
            builder.file(name, body)
        };
    }
    builder.start().await
}

/// A gate script: it marks that hook `$1` started, then waits (a few seconds at most) until
/// every hook has started, which happens only when they all run at once; then it prints its
/// answer (`$2`, with `@N` replaced by its number).
fn gate_script(marks: &Path) -> String {
    format!(
        r#"#!/bin/bash
cat >/dev/null
touch "{marks}/started-$1"
for _ in $(seq 1 150); do
  n=$(ls "{marks}" | grep -c '^started-')
  if [ "$n" -ge {HOOKS} ]; then printf '%s\n' "${{2//@N/$1}}"; exit 0; fi
  sleep 0.02
done
exit 1
"#,
        marks = marks.display()
    )
}

fn claude_event(event: &str, script: &str, answer: &str) -> Value {
    let hooks: Vec<Value> = (1..=HOOKS)
        .map(|i| json!({"type": "command", "timeout": 5, "command": format!("\"$CLAUDE_PROJECT_DIR\"/{script} {i} '{answer}'")}))
        .collect();
    json!({"hooks": {event: [{"hooks": hooks}]}})
}

/// Where each `CTX-i` is in `text`, in hook order (all found).
fn positions(text: &str) -> Vec<usize> {
    (1..=HOOKS)
        .map(|i| {
            text.find(&format!("CTX-{i}."))
                .unwrap_or_else(|| panic!("CTX-{i} missing from {text}"))
        })
        .collect()
}

#[tokio::test]
async fn claude_hooks_of_one_event_run_side_by_side() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["hi"]));
    let marks = tempfile::tempdir().unwrap();
    let settings = claude_event("UserPromptSubmit", "gate.sh", "CTX-@N.");
    let files = [
        (".claude/settings.json".to_string(), settings.to_string()),
        ("gate.sh".to_string(), gate_script(marks.path())),
    ];
    let server = start(&upstream, &files).await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"hello","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    let system = upstream.requests()[0].messages()[0].1.clone();
    let at = positions(&system);
    assert!(at.windows(2).all(|w| w[0] < w[1]), "in order: {system}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_yaml_event_with_parallel_true_runs_its_hooks_side_by_side() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["hi"]));
    let marks = tempfile::tempdir().unwrap();
    let hooks: String = (1..=HOOKS)
        .map(|i| {
            format!(
                "    - command: ./gate.sh {i} '{{\"additional_context\":\"CTX-@N.\"}}'\n      timeout: 5\n"
            )
        })
        .collect();
    let yaml = format!("pre_llm_request:\n  parallel: true\n  hooks:\n{hooks}");
    let files = [
        (".hookwire/hooks.yaml".to_string(), yaml),
        ("gate.sh".to_string(), gate_script(marks.path())),
    ];
    let server = start(&upstream, &files).await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"hello","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    let sent = upstream.requests()[0].body.to_string();
    let at = positions(&sent);
    assert!(at.windows(2).all(|w| w[0] < w[1]), "in order: {sent}");
    server.shutdown().await;
}

/// Hook `$1` sleeps the delay on line `$1` of `delays`, then appends its number to `finished`
/// and answers.
fn delayed_script(dir: &Path) -> String {
    format!(
        r#"#!/bin/bash
cat >/dev/null
sleep "$(sed -n "${{1}}p" "{dir}/delays")"
echo "$1" >> "{dir}/finished"
printf '%s\n' "${{2//@N/$1}}"
"#,
        dir = dir.display()
    )
}

#[tokio::test]
async fn answers_merge_in_declaration_order_whatever_order_the_hooks_finish_in() {
    let upstream = FakeUpstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let settings = claude_event("UserPromptSubmit", "delayed.sh", "CTX-@N.");
    let files = [
        (".claude/settings.json".to_string(), settings.to_string()),
        ("delayed.sh".to_string(), delayed_script(dir.path())),
    ];
    let server = start(&upstream, &files).await;
    let mut systems = Vec::new();
    let mut orders = std::collections::BTreeSet::new();
    // A different finishing order each run: the delays are a permutation, rotated and reversed.
    for run in 0..20 {
        let mut delays: Vec<usize> = (0..HOOKS).collect();
        delays.rotate_left(run % HOOKS);
        if run % 2 == 1 {
            delays.reverse();
        }
        let lines: String = delays.iter().map(|d| format!("0.{:02}\n", d * 4)).collect();
        std::fs::write(dir.path().join("delays"), lines).unwrap();
        let _ = std::fs::remove_file(dir.path().join("finished"));
        upstream.push(Reply::text(&["hi"]));
        let frames = server
            .connect()
            .await
            .chat(json!({"type":"chat","input":"hello","enable_tools":false}))
            .await;
        assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
        orders.insert(std::fs::read_to_string(dir.path().join("finished")).unwrap());
        let system = upstream.requests().last().unwrap().messages()[0].1.clone();
        let at = positions(&system);
        assert!(at.windows(2).all(|w| w[0] < w[1]), "in order: {system}");
        systems.push(system);
    }
    assert!(orders.len() > 1, "the hooks finished in several orders");
    assert!(
        systems.windows(2).all(|w| w[0] == w[1]),
        "the same merged result every time"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_deny_wins_over_allows_and_rewrites_apply_in_order() {
    let upstream = FakeUpstream::start().await;
    tool_round(
        &upstream,
        &[("c1", "read_file", json!({"path": "README.md"}))],
        "done",
    );
    tool_round(
        &upstream,
        &[("c2", "read_file", json!({"path": "README.md"}))],
        "end",
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("delays"), "0.08\n0.06\n0.04\n0.02\n0\n").unwrap();
    let allow = |path: &str| {
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"file_path": path}}}).to_string()
    };
    // Round one: hooks 2 and 4 rewrite the path (4 is declared last: its path is read); round
    // two (a marker file present): hook 5 denies, which wins over the allows before it.
    let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "DENIED-BY-5"}}).to_string();
    let answers = [
        "{}".to_string(),
        allow("README.md"),
        "{}".to_string(),
        allow("b.txt"),
        "{}".to_string(),
    ];
    let hooks: Vec<Value> = answers
        .iter()
        .enumerate()
        .map(|(i, answer)| {
            let i = i + 1;
            let command = if i == 5 {
                format!(
                    "\"$CLAUDE_PROJECT_DIR\"/delayed.sh 5 \"$([ -e \"{}/second\" ] && echo '{deny}' || echo '{{}}')\"",
                    dir.path().display()
                )
            } else {
                format!("\"$CLAUDE_PROJECT_DIR\"/delayed.sh {i} '{answer}'")
            };
            json!({"type": "command", "command": command})
        })
        .collect();
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": hooks}]}});
    let files = [
        (".claude/settings.json".to_string(), settings.to_string()),
        ("delayed.sh".to_string(), delayed_script(dir.path())),
    ];
    let server = start(&upstream, &files).await;
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"read"}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    let results = tool_results(&upstream.requests()[2]);
    assert!(results[0].contains("bee"), "hook 4's path: {results:?}");
    std::fs::write(dir.path().join("second"), "").unwrap();
    let frames = server
        .connect()
        .await
        .chat(json!({"type":"chat","input":"read again"}))
        .await;
    let results = tool_results(&upstream.requests()[5]);
    assert!(!results.is_empty(), "{frames:#?}");
    assert!(results[0].contains("DENIED-BY-5"), "{results:?}");
    server.shutdown().await;
}
