//! Tool calls are bounded: work stops at the deadline or when the chat ends, a round runs at most
//! `max_tool_calls_per_round` calls, and a panicking custom tool is an error result.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hookwire::tools::{builtin_tools, Tool, ToolLimits, ToolOutput, ToolSpec, Workspace};
use serde_json::{json, Value};

use crate::agent::workspace;
use crate::common::*;

/// A sparse file of `gib` GiB: a few text lines, then a hole read as NUL bytes (text to
/// `read_file`, which checks only the head for binary data). Reading it all takes many seconds.
fn huge_sparse_file(dir: &Path, gib: u64) -> PathBuf {
    use std::io::Write;
    let path = dir.join("huge.log");
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all("a text line\n".repeat(1000).as_bytes())
        .unwrap();
    file.set_len(gib << 30).unwrap();
    path.canonicalize().unwrap()
}

/// Whether the process `pid` holds `path` open: the tool still works on it.
fn holds_open(pid: &str, path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    entries
        .flatten()
        .any(|entry| std::fs::read_link(entry.path()).is_ok_and(|target| target == path))
}

/// Planning, one round calling `tool` with `args`, then a final answer.
fn one_tool_round(upstream: &FakeUpstream, tool: &str, args: Value) {
    upstream.push(Reply::text(&["[NEED_TOOL] go"]));
    upstream.push(Reply::tool_calls(&[("c1", tool, args)]));
    upstream.push(Reply::text(&["final"]));
}

fn result_of(frames: &[Value]) -> &Value {
    frames
        .iter()
        .find(|f| f["type"] == "tool_result")
        .expect("a tool_result frame")
}

/// Runs one chat whose tool call works on `file` until its time limit: the tool holds the file
/// open while it works, reports `timed out`, and lets go of the file at once after that.
async fn assert_stops_at_its_deadline(server: &TestServer, file: &Path, timed_out: &str) {
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","id":"t","input":"work hard"}))
        .await;
    while client.frame().await["type"] != "tool_call" {}
    let working = eventually(Duration::from_secs(5), || async {
        holds_open("self", file)
    })
    .await;
    assert!(working, "the tool never opened {}", file.display());
    let mut result = client.frame().await;
    while result["type"] != "tool_result" {
        result = client.frame().await;
    }
    let answered = Instant::now();
    assert_eq!(
        (result["content"].as_str(), result["is_error"].as_bool()),
        (Some(timed_out), Some(true))
    );
    let stopped = eventually(Duration::from_millis(500), || async {
        !holds_open("self", file)
    })
    .await;
    assert!(
        stopped,
        "the tool still works on the file 0.5 s after it timed out"
    );
    eprintln!(
        "the tool let go of the file {:?} after its result",
        answered.elapsed()
    );
    assert_eq!(
        client.until_end().await.last().unwrap()["reason"],
        "completed"
    );
}

/// Tool limits with a short time limit.
/// The built-in tools on `dir`, each with a time limit of half a second.
fn quick_tools(dir: &Path) -> Vec<Arc<dyn Tool>> {
    let limits = ToolLimits {
        timeout: Duration::from_millis(500),
        ..ToolLimits::default()
    };
    builtin_tools(Arc::new(Workspace::new(dir).unwrap()), limits)
}

#[tokio::test]
async fn read_file_stops_skipping_a_huge_file_at_its_deadline() {
    let upstream = FakeUpstream::start().await;
    one_tool_round(
        &upstream,
        "read_file",
        json!({"path":"huge.log","offset":1_000_000_000_000_000u64}),
    );
    let dir = tempfile::tempdir().unwrap();
    let huge = huge_sparse_file(dir.path(), 4);
    let tools = quick_tools(dir.path());
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .agent(move |b| b.tools(tools))
        .start()
        .await;
    assert_stops_at_its_deadline(&server, &huge, "read_file timed out after 0.5s").await;
    server.shutdown().await;
}

#[tokio::test]
async fn search_text_stops_inside_a_big_file_at_its_deadline() {
    let upstream = FakeUpstream::start().await;
    // No literal to look for: the regex engine looks at every byte (seconds for this file).
    one_tool_round(
        &upstream,
        "search_text",
        json!({"pattern":"[a-z]{10}[0-9]{10}"}),
    );
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.txt");
    let line = "the quick brown fox jumps over the lazy dog; hello world 0123456789\n";
    std::fs::write(&big, line.repeat(300_000)).unwrap();
    let big = big.canonicalize().unwrap();
    let tools = quick_tools(dir.path());
    let server = TestServer::builder()
        .workspace(dir)
        .upstream(&upstream)
        .agent(move |b| b.tools(tools))
        .start()
        .await;
    assert_stops_at_its_deadline(&server, &big, "search_text timed out after 0.5s").await;
    server.shutdown().await;
}

/// CPU time (user + system) the process `pid` has used, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name: state is the 3rd field, utime the 14th, stime the 15th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Kills the server subprocess however the test ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The symptom of the issue, in a server process of its own so no other test's work is counted:
/// after a chat is cancelled during a long read, the server goes idle at once.
#[tokio::test]
async fn a_cancelled_chat_leaves_no_tool_work_burning_cpu() {
    let upstream = FakeUpstream::start().await;
    one_tool_round(
        &upstream,
        "read_file",
        json!({"path":"huge.log","offset":1_000_000_000_000_000u64}),
    );
    let dir = tempfile::tempdir().unwrap();
    let huge = huge_sparse_file(dir.path(), 64);
    let workspace = dir.path().to_str().unwrap();
    let (child, addr) = crate::cli::spawn_server(
        &["serve", "--addr", "127.0.0.1:0"],
        &[
            ("HOOKWIRE_WORKSPACE", workspace),
            ("HOOKWIRE_LLM_BASE_URL", &upstream.base_url),
            ("HOOKWIRE_LLM_API_KEY", "test-key"),
        ],
    );
    let server = KillOnDrop(child);
    let pid = server.0.id();
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .unwrap();
    let mut client = Client { ws };
    client
        .send(json!({"type":"chat","id":"big","input":"skip far"}))
        .await;
    while client.frame().await["type"] != "tool_call" {}
    let reading = eventually(Duration::from_secs(5), || async {
        holds_open(&pid.to_string(), &huge)
    })
    .await;
    assert!(reading, "the tool never opened the file");
    client.send(json!({"type":"cancel","id":"big"})).await;
    let frames = client.until_end().await;
    assert_eq!(frames.last().unwrap()["reason"], "cancelled");
    // SAFETY: sysconf only reads a constant of the system.
    let ticks_per_second = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap();
    let window = Duration::from_millis(300);
    // A tool thread still at work would use the whole window; allow a tenth of it for noise.
    let allowed = (ticks_per_second * window.as_millis() as u64 / 1000 / 10).max(1);
    let used = std::sync::Mutex::new(Vec::new());
    let idle = eventually(Duration::from_secs(1), || async {
        let before = cpu_ticks(pid);
        // Not a wait for a condition: the window is what the CPU use is measured over.
        tokio::time::sleep(window).await;
        let ticks = cpu_ticks(pid) - before;
        used.lock().unwrap().push(ticks);
        ticks <= allowed
    })
    .await;
    assert!(
        idle,
        "the server keeps using CPU after the chat was cancelled: {:?} of {ticks_per_second} \
         ticks a second in each {window:?}",
        used.lock().unwrap()
    );
    let closed = eventually(Duration::from_millis(100), || async {
        !holds_open(&pid.to_string(), &huge)
    })
    .await;
    assert!(closed, "the tool still holds the file open");
    drop(server);
}

/// A custom tool with a bug.
struct Explosive;

#[async_trait]
impl Tool for Explosive {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "explosive".into(),
            description: "panics".into(),
            parameters: json!({"type":"object","properties":{}}),
        }
    }
    async fn run(&self, _arguments: Value) -> ToolOutput {
        panic!("the fuse was lit");
    }
}

#[tokio::test]
async fn a_panicking_custom_tool_is_an_error_result_and_the_chat_goes_on() {
    let upstream = FakeUpstream::start().await;
    one_tool_round(&upstream, "explosive", json!({}));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .agent(|b| b.tool(Arc::new(Explosive)))
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"p","input":"light it"}))
        .await;
    assert_eq!(
        types_of(&frames),
        ["start", "plan", "tool_call", "tool_result", "text", "done"]
    );
    let result = result_of(&frames);
    assert_eq!(result["is_error"], true);
    assert_eq!(
        result["content"],
        "the tool explosive failed unexpectedly: the fuse was lit"
    );
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    // The model saw the error as the tool's result.
    let last = upstream.requests().pop().unwrap();
    let messages = last.body["messages"].as_array().unwrap();
    assert!(messages.iter().any(|m| m["role"] == "tool"
        && m["tool_call_id"] == "c1"
        && m["content"] == "the tool explosive failed unexpectedly: the fuse was lit"));
    let (_, metrics) = http_get(server.addr, "/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("hookwire_tool_calls_total")
                && l.contains("tool=\"explosive\"")
                && l.contains("outcome=\"panic\"")),
        "{metrics}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_round_runs_at_most_max_tool_calls_per_round() {
    let upstream = FakeUpstream::start().await;
    upstream.push(Reply::text(&["[NEED_TOOL] many"]));
    let ids: Vec<String> = (1..=20).map(|i| format!("c{i}")).collect();
    let calls: Vec<(&str, &str, Value)> = ids
        .iter()
        .map(|id| (id.as_str(), "read_file", json!({"path":"b.txt"})))
        .collect();
    upstream.push(Reply::tool_calls(&calls));
    upstream.push(Reply::text(&["read them"]));
    let server = TestServer::builder()
        .workspace(workspace())
        .upstream(&upstream)
        .start()
        .await;
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","id":"m","input":"read a lot"}))
        .await;
    let shown: Vec<&str> = frames
        .iter()
        .filter(|f| f["type"] == "tool_call")
        .map(|f| f["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(shown, ids, "every call is shown to the client");
    let results: Vec<&Value> = frames
        .iter()
        .filter(|f| f["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 20);
    for (index, result) in results.iter().enumerate() {
        assert_eq!(result["call_id"], ids[index]);
        if index < 16 {
            assert_eq!(
                (result["is_error"].as_bool(), result["content"].as_str()),
                (Some(false), Some("bee\n"))
            );
        } else {
            assert_eq!(result["is_error"], true, "{result}");
            assert_eq!(
                result["content"],
                "the tool did not run: a round runs at most 16 tool calls \
                 (limits.max_tool_calls_per_round); call it again in the next round"
            );
        }
    }
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    // OpenAI order: the assistant message's 20 calls, then one tool message for each, in order.
    let requests = upstream.requests();
    assert_eq!(requests.len(), 3);
    let messages = requests[2].body["messages"].as_array().unwrap();
    let at = messages
        .iter()
        .position(|m| m.get("tool_calls").is_some())
        .unwrap();
    assert_eq!(messages[at]["tool_calls"].as_array().unwrap().len(), 20);
    let answered: Vec<&str> = messages[at + 1..at + 21]
        .iter()
        .map(|m| {
            assert_eq!(m["role"], "tool");
            m["tool_call_id"].as_str().unwrap()
        })
        .collect();
    assert_eq!(answered, ids);
    server.shutdown().await;
}
