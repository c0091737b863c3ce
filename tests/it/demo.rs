//! The built-in demo model with the repository's own skills on (the default): it plans, calls the
//! tool it planned with arguments taken from the person's words, and answers from the result.

use crate::common::*;
use serde_json::{json, Value};

/// A workspace with four entries and three `TODO`s in two files.
pub fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("README.md"), "# Demo\nhello from the readme\n").unwrap();
    std::fs::write(root.join("notes.txt"), "TODO: write the docs\nbuy milk\n").unwrap();
    std::fs::create_dir(root.join("docs")).unwrap();
    std::fs::write(root.join("docs/guide.md"), "nothing to do here\n").unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    // TODO: handle errors\n    run();\n    // TODO: log\n}\n",
    )
    .unwrap();
    dir
}

pub fn skills_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills")
}

/// The demo model with the repository's `skills/`, every skill on by default.
async fn demo_server() -> TestServer {
    TestServer::builder()
        .workspace(workspace())
        .skills(skills_dir())
        .start()
        .await
}

/// Every line of every hook file of the repository's skills.
fn hook_lines() -> Vec<String> {
    let mut lines = Vec::new();
    for skill in std::fs::read_dir(skills_dir()).unwrap() {
        let hooks = skill.unwrap().path().join("hooks");
        for file in std::fs::read_dir(hooks).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(path).unwrap();
                lines.extend(
                    text.lines()
                        .map(str::trim)
                        .filter(|l| l.len() > 20)
                        .map(str::to_string),
                );
            }
        }
    }
    assert!(lines.len() >= 5, "the skills have hook texts: {lines:?}");
    lines
}

/// What the person sees of the model: the plan, the streamed text and the kept answer.
fn assert_no_hook_text(frames: &[Value]) {
    let shown: Vec<String> = frames
        .iter()
        .filter_map(|f| match f["type"].as_str() {
            Some("plan") => f["content"].as_str().map(str::to_string),
            Some("done") => f["message"]["content"].as_str().map(str::to_string),
            _ => None,
        })
        .chain([text_of(frames)])
        .collect();
    for line in hook_lines() {
        for text in &shown {
            assert!(
                !text.contains(&line),
                "hook text {line:?} leaked into {text:?}"
            );
        }
    }
}

fn answer_of(frames: &[Value]) -> String {
    let done = frames.last().unwrap();
    assert_eq!(done["type"], "done", "{frames:?}");
    assert_eq!(done["reason"], "completed", "{done}");
    done["message"]["content"].as_str().unwrap().to_string()
}

fn tool_calls(frames: &[Value]) -> Vec<(String, Value)> {
    frames
        .iter()
        .filter(|f| f["type"] == "tool_call")
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["arguments"].clone(),
            )
        })
        .collect()
}

/// The history the page keeps after a chat: input, hook messages, the answer.
fn history_after(input: &str, frames: &[Value]) -> Vec<Value> {
    let mut history = vec![json!({"role":"user","content":input})];
    history.extend(
        frames
            .iter()
            .filter(|f| f["type"] == "hook")
            .map(|f| f["message"].clone()),
    );
    history.push(frames.last().unwrap()["message"].clone());
    history
}

#[tokio::test]
async fn list_the_files_lists_the_workspace_and_counts_its_entries() {
    let server = demo_server().await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"list the files"}))
        .await;
    let kinds = types_of(&frames);
    assert!(kinds.contains(&"plan".to_string()), "{kinds:?}");
    assert!(
        !kinds.contains(&"hook".to_string()),
        "the default skills add no persistent hook: {kinds:?}"
    );
    assert_eq!(
        tool_calls(&frames),
        [("list_dir".to_string(), json!({"path":"."}))]
    );
    let answer = answer_of(&frames);
    assert!(
        answer.starts_with("The workspace has 4 entries: "),
        "{answer}"
    );
    for entry in ["README.md", "docs/", "notes.txt", "src/"] {
        assert!(answer.contains(entry), "{entry} in {answer}");
    }
    assert_no_hook_text(&frames);
    server.shutdown().await;
}

#[tokio::test]
async fn search_for_todo_after_an_earlier_chat_searches_and_counts_the_matches() {
    let server = demo_server().await;
    let mut client = server.connect().await;
    let first = client
        .chat(json!({"type":"chat","input":"list the files"}))
        .await;
    let history = history_after("list the files", &first);
    let frames = client
        .chat(json!({"type":"chat","input":"search for TODO","messages":history}))
        .await;
    assert_eq!(
        tool_calls(&frames),
        [("search_text".to_string(), json!({"pattern":"TODO"}))]
    );
    let answer = answer_of(&frames);
    assert!(answer.starts_with("Found 3 matches for TODO: "), "{answer}");
    for place in ["notes.txt:1", "src/main.rs:2", "src/main.rs:4"] {
        assert!(answer.contains(place), "{place} in {answer}");
    }
    assert!(!answer.contains("guide.md"), "{answer}");
    assert_no_hook_text(&frames);
    server.shutdown().await;
}

#[tokio::test]
async fn read_a_named_file_reads_it_and_quotes_it() {
    let server = demo_server().await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"please read notes.txt"}))
        .await;
    assert_eq!(
        tool_calls(&frames),
        [("read_file".to_string(), json!({"path":"notes.txt"}))]
    );
    let answer = answer_of(&frames);
    assert!(
        answer.contains("notes.txt") && answer.contains("TODO: write the docs"),
        "{answer}"
    );
    assert_no_hook_text(&frames);
    server.shutdown().await;
}

#[tokio::test]
async fn hello_is_answered_directly_without_tools() {
    let server = demo_server().await;
    let mut client = server.connect().await;
    let frames = client.chat(json!({"type":"chat","input":"hello"})).await;
    let kinds = types_of(&frames);
    assert!(
        !kinds.iter().any(|k| k == "plan" || k == "tool_call"),
        "{kinds:?}"
    );
    let answer = answer_of(&frames);
    assert!(
        answer.contains("demo model") && answer.contains("You said: \"hello\""),
        "{answer}"
    );
    assert_no_hook_text(&frames);
    server.shutdown().await;
}

/// A compaction against the demo model gets a summary of what it summarised (not the demo's
/// greeting), and an `llm` hook's prompt gets `{}`: the example hooks' judge passes every chat
/// at once instead of failing twice (a usable answer on the first call, no retry, no error).
#[tokio::test]
async fn the_demo_answers_summary_calls_and_hook_prompts() {
    let dir = workspace();
    let hooks = dir.path().join("server-hooks.yaml");
    std::fs::write(
        &hooks,
        "stop:\n  - name: judge\n    type: llm\n    prompt: |\n      Question: {{user_input}}\n      Answer: {{assistant_output}}\n      Reply {} when the answer addresses the question.\n",
    )
    .unwrap();
    let server = TestServer::builder()
        .workspace(dir)
        .config(move |c| {
            c.skills_dir = skills_dir();
            c.hooks_file = Some(hooks);
            c.agent.context.keep_recent_groups = 1;
        })
        .start()
        .await;
    let mut client = server.connect().await;
    let history = json!([
        {"role":"user","content":"list the files"},{"role":"assistant","content":"The workspace has 4 entries."},
        {"role":"user","content":"search for TODO"},{"role":"assistant","content":"Found 3 matches."},
        {"role":"user","content":"hello"},{"role":"assistant","content":"Hello!"},
    ]);
    let frames = client
        .chat(json!({"type":"compact","id":"k1","messages":history}))
        .await;
    let summary = frame_of(&frames, "compact")["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        summary.starts_with(
            "<summary of the earlier conversation>\nThe user asked: \"list the files\"; \"search for TODO\"."
        )
            && !summary.contains("demo model: I run offline"),
        "{summary}"
    );

    let frames = client
        .chat(json!({"type":"chat","id":"c1","messages":[],"input":"hello","enable_tools":false,"trace":true}))
        .await;
    let judge: Vec<&Value> = frames
        .iter()
        .filter(|f| {
            f["type"] == "hook_trace" && f["hook"].as_str().is_some_and(|h| h.contains("judge"))
        })
        .collect();
    assert_eq!(judge.len(), 1, "the judge ran once: {frames:#?}");
    assert_eq!(judge[0]["outcome"], "success", "{:?}", judge[0]);
    assert!(
        !frames.iter().any(|f| f["type"] == "notice"),
        "no hook failure to tell: {frames:#?}"
    );
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    server.shutdown().await;
}

/// The page's history after a chat: what it sent, then `done.turn`.
fn history_with_turn(mut history: Vec<Value>, frames: &[Value]) -> Vec<Value> {
    let done = frames.last().unwrap();
    assert_eq!(done["type"], "done", "{frames:?}");
    history.extend(done["turn"].as_array().unwrap().iter().cloned());
    history
}

/// Every tool call id of a history, in order.
fn call_ids(history: &[Value]) -> Vec<String> {
    history
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_starter_prompts_one_after_another_keep_the_conversation_going() {
    // The page's three starters, then the first again, each carrying the turns before it as the
    // page does: a repeated tool call id would make every later chat a `bad_frame`.
    let server = demo_server().await;
    let mut client = server.connect().await;
    let mut history: Vec<Value> = Vec::new();
    for input in [
        "list the files",
        "read README.md",
        "search for TODO",
        "list the files",
    ] {
        let frames = client
            .chat(json!({"type":"chat","id":input,"input":input,"messages":history}))
            .await;
        answer_of(&frames);
        assert_eq!(tool_calls(&frames).len(), 1, "{input}: {frames:?}");
        history = history_with_turn(history, &frames);
    }
    let ids = call_ids(&history);
    assert_eq!(ids.len(), 4, "{history:?}");
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "ids repeat: {ids:?}");
    server.shutdown().await;
}

/// The page's starter prompts, as `static/transcript.js` lists them (`STARTERS`).
fn page_starters() -> Vec<String> {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static/transcript.js"),
    )
    .unwrap();
    let line = page
        .lines()
        .find(|line| line.starts_with("export const STARTERS = "))
        .expect("static/transcript.js exports STARTERS");
    let list = line["export const STARTERS = ".len()..].trim_end_matches(';');
    serde_json::from_str(&list.replace('\'', "\"")).unwrap()
}

/// `cargo run` serves the repository itself: each of the page's starter prompts calls its tool
/// there and answers from what the repository holds, not mostly from the demo model's own source
/// (where "search for TODO" found nearly all of its matches); the demo's greeting names the same
/// prompts.
#[tokio::test]
async fn the_starter_prompts_answer_from_the_repository_the_demo_serves() {
    let repository = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let server = TestServer::builder()
        .config(|c| c.workspace = repository)
        .start()
        .await;
    let starters = page_starters();
    assert_eq!(starters.len(), 3, "{starters:?}");
    for starter in &starters {
        let frames = chat(&server, json!({"type":"chat","input":starter})).await;
        assert_eq!(tool_calls(&frames).len(), 1, "{starter}: {frames:?}");
        let answer = answer_of(&frames);
        assert!(
            !answer.starts_with("Found no matches"),
            "{starter}: {answer}"
        );
        // The places the answer names (`file:line`, before its code block): the demo's own
        // source (which names the prompts in its greeting) is at most a few of them.
        let first_line = answer.lines().next().unwrap_or_default();
        let places: Vec<&str> = first_line
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|place| place.contains(':'))
            .collect();
        let own = places
            .iter()
            .filter(|place| place.starts_with("src/llm/demo/"))
            .count();
        assert!(own * 4 <= places.len(), "{starter}: {answer}");
    }
    let greeting = answer_of(&chat(&server, json!({"type":"chat","input":"hello"})).await);
    for starter in &starters {
        assert!(
            greeting.contains(&format!("\"{starter}\"")),
            "{starter} in {greeting}"
        );
    }
}
