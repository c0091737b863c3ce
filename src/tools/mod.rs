//! Built-in tools the agent loop can call, behind one [`Tool`] trait (an agent keeps its tools
//! in a `ToolRegistry`).
//!
//! Every path a tool touches is resolved against the [`Workspace`] root; nothing outside it is
//! ever opened. Tool failures are results with `is_error: true` (the model sees them), never
//! errors of the chat.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde_json::Value;

pub use crate::types::{ToolOutput, ToolSpec};

/// Why a tool call cannot go on (bad arguments, a path outside the workspace, a file that
/// cannot be read): its text is the error result the model gets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }
}

/// The message, as text (tests and callers read it like one).
impl std::ops::Deref for ToolError {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for ToolError {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError(message.into())
    }
}

/// A tool the model may call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// What the model is told of the tool. Read once per tool object and shared by every chat
    /// while the object is offered: a tool whose spec changes is a new object (a
    /// [`ToolSource`] that lists a new one).
    fn spec(&self) -> ToolSpec;
    /// Puts the model's arguments in the one form that hooks see and [`Tool::run`] gets (the
    /// built-in tools normalise workspace paths here, so a guard hook cannot be passed by
    /// spelling `.env` as `./.env//`). `Err` answers the call with that error result: neither
    /// hooks nor `run` see it. The default keeps the arguments as they are.
    fn prepare(&self, arguments: Value) -> Result<Value, ToolError> {
        Ok(arguments)
    }
    /// Runs the tool. `arguments` is the JSON object the model sent, after [`Tool::prepare`] and
    /// the hooks.
    async fn run(&self, arguments: Value) -> ToolOutput;
    /// Why every call of this tool waits for the person's approval (the reason the `approval`
    /// frame shows), or `None` when only `tools.require_approval` decides. The tools of an MCP
    /// server say so unless its `auto_approve` lists them.
    fn needs_approval(&self) -> Option<String> {
        None
    }
}

/// Tools that come and go while the server runs (an MCP server's, as it lists them), asked
/// each time the agent needs the tools.
pub trait ToolSource: Send + Sync {
    /// The tools there are now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
    /// The tool named `name` now, if there is one.
    fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools()
            .into_iter()
            .find(|tool| tool.spec().name == name)
    }
}

/// The tools of one `AgentClient`, by name, in a stable order: the registered ones, then those
/// the sources have now (a name taken by a registered tool stays the registered tool's).
#[derive(Clone, Default)]
pub(crate) struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    sources: Vec<Arc<dyn ToolSource>>,
    /// The specs last offered, and the tool objects they were read from.
    specs: Arc<Mutex<Option<OfferedSpecs>>>,
}

/// The specs of a set of tool objects (held, so that no other object can take their place at
/// the same address while the specs are kept).
struct OfferedSpecs {
    tools: Vec<Arc<dyn Tool>>,
    specs: Arc<[ToolSpec]>,
}

impl ToolRegistry {
    pub(crate) fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    pub(crate) fn add_source(&mut self, source: Arc<dyn ToolSource>) {
        self.sources.push(source);
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(tool) = self.tools.get(name) {
            return Some(tool.clone());
        }
        self.sources.iter().find_map(|source| source.tool(name))
    }

    /// Every tool now, by name.
    fn all(&self) -> BTreeMap<String, Arc<dyn Tool>> {
        self.all_of(self.sourced())
    }

    /// The sources' tools now.
    fn sourced(&self) -> Vec<Arc<dyn Tool>> {
        self.sources
            .iter()
            .flat_map(|source| source.tools())
            .collect()
    }

    /// The registered tools and `sourced`, by name.
    fn all_of(&self, sourced: Vec<Arc<dyn Tool>>) -> BTreeMap<String, Arc<dyn Tool>> {
        let mut all = self.tools.clone();
        for tool in sourced {
            all.entry(tool.spec().name).or_insert(tool);
        }
        all
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.all().into_keys().collect()
    }

    /// Every tool's spec now, by name. Chats share them: they are read again only when the tool
    /// objects changed (a source listed others).
    pub(crate) fn specs(&self) -> Arc<[ToolSpec]> {
        let sourced = self.sourced();
        let mut offered = self.specs.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.tools.values().chain(&sourced);
        if let Some(offered) = offered.as_ref() {
            if offered.tools.len() == self.tools.len() + sourced.len()
                && offered
                    .tools
                    .iter()
                    .zip(now.clone())
                    .all(|(a, b)| Arc::ptr_eq(a, b))
            {
                return offered.specs.clone();
            }
        }
        let tools: Vec<Arc<dyn Tool>> = now.cloned().collect();
        let specs: Arc<[ToolSpec]> = self.all_of(sourced).values().map(|t| t.spec()).collect();
        *offered = Some(OfferedSpecs {
            tools,
            specs: specs.clone(),
        });
        specs
    }
}

mod list_dir;
mod read_file;
mod search_text;
mod workspace;

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use workspace::Workspace;

/// Bounds on every tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    /// Wall time of one call.
    pub timeout: Duration,
    /// Bytes of output one call may return.
    pub max_output_bytes: usize,
    /// Lines `read_file` returns at most.
    pub max_lines: usize,
    /// Matches `search_text` returns at most.
    pub max_matches: usize,
    /// Entries `list_dir` returns at most.
    pub max_entries: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            max_output_bytes: 100_000,
            max_lines: 2_000,
            max_matches: 200,
            max_entries: 1_000,
        }
    }
}

/// The built-in tools: `read_file`, `list_dir`, `search_text`.
pub fn builtin_tools(workspace: Arc<Workspace>, limits: ToolLimits) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read_file::ReadFile::new(workspace.clone(), limits)),
        Arc::new(list_dir::ListDir::new(workspace.clone(), limits)),
        Arc::new(search_text::SearchText::new(workspace, limits)),
    ]
}

/// Time the blocking work gets past its deadline to report what it has (e.g. `search_text`'s
/// matches so far) before the call counts as timed out.
const REPORT_GRACE: Duration = Duration::from_millis(100);

/// Why blocking tool work has to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// The call's time limit passed.
    Deadline,
    /// Nobody waits for the result any more: the call timed out, or its chat was cancelled or
    /// ended.
    Abandoned,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stopped::Deadline => "the time limit was reached",
            Stopped::Abandoned => "the call was abandoned",
        })
    }
}

impl std::error::Error for Stopped {}

/// Handed to a tool's blocking work, which checks it inside its loops: a thread of the blocking
/// pool cannot be killed, so it has to notice by itself that its work is no longer wanted.
#[derive(Debug, Clone)]
pub(crate) struct StopSignal {
    abandoned: Arc<AtomicBool>,
    deadline: Instant,
}

impl StopSignal {
    pub(crate) fn new(timeout: Duration) -> Self {
        Self {
            abandoned: Arc::new(AtomicBool::new(false)),
            deadline: Instant::now() + timeout,
        }
    }

    /// `Err` once the work should stop.
    pub(crate) fn check(&self) -> Result<(), Stopped> {
        if self.abandoned.load(Ordering::Relaxed) {
            Err(Stopped::Abandoned)
        } else if Instant::now() >= self.deadline {
            Err(Stopped::Deadline)
        } else {
            Ok(())
        }
    }

    fn abandon(&self) {
        self.abandoned.store(true, Ordering::Relaxed);
    }
}

/// Abandons the work when the future awaiting it is dropped, however that happens.
struct AbandonOnDrop(StopSignal);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

/// A reader that fails once its work should stop, so any read loop over it (skipping lines,
/// searching) ends within one buffer of input.
pub(crate) struct StopReader<R> {
    inner: R,
    stop: StopSignal,
}

impl<R> StopReader<R> {
    pub(crate) fn new(inner: R, stop: StopSignal) -> Self {
        Self { inner, stop }
    }
}

impl<R: Read> Read for StopReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.stop.check().map_err(std::io::Error::other)?;
        self.inner.read(buf)
    }
}

/// Runs blocking tool work off the async threads, bounded by the call's time limit. The work
/// gets a [`StopSignal`]: it stops at the deadline, and as soon as this future is dropped (the
/// call timed out, or the chat was cancelled or ended).
pub(crate) async fn run_bounded(
    name: &str,
    limits: ToolLimits,
    work: impl FnOnce(&StopSignal) -> Result<String, ToolError> + Send + 'static,
) -> ToolOutput {
    let stop = StopSignal::new(limits.timeout);
    let _abandon_on_drop = AbandonOnDrop(stop.clone());
    let task = tokio::task::spawn_blocking({
        let stop = stop.clone();
        move || work(&stop)
    });
    let timed_out = || {
        ToolOutput::error(format!(
            "{name} timed out after {}s",
            limits.timeout.as_secs_f64()
        ))
    };
    match tokio::time::timeout(limits.timeout + REPORT_GRACE, task).await {
        Err(_) => timed_out(),
        Ok(Err(join)) => ToolOutput::error(format!("{name} failed: {join}")),
        Ok(Ok(Ok(content))) => ToolOutput::ok(cap_output(content, limits.max_output_bytes)),
        // The work gave up at its deadline (with nothing to show): say so plainly.
        Ok(Ok(Err(_))) if stop.check() == Err(Stopped::Deadline) => timed_out(),
        Ok(Ok(Err(error))) => ToolOutput::error(error.to_string()),
    }
}

/// The message a panic carried, for the error result of a tool that panicked.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Cuts `text` at a character boundary past `max` bytes, saying so.
pub(crate) fn cap_output(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!("\n[truncated: output cut at {max} bytes]"));
    text
}

/// The arguments object, or an error naming what was wrong.
pub(crate) fn arguments_object(
    arguments: &Value,
) -> Result<&serde_json::Map<String, Value>, ToolError> {
    arguments
        .as_object()
        .ok_or_else(|| ToolError::new("arguments must be a JSON object"))
}

/// `arguments` with its string `key` (when present) in the workspace's one spelling
/// ([`workspace::normalize`]); `refuse_folder` also refuses a path that can only name a folder
/// (`a/`, `a/.`).
pub(crate) fn normalize_path_argument(
    mut arguments: Value,
    key: &str,
    refuse_folder: bool,
) -> Result<Value, ToolError> {
    let Some(Value::String(path)) = arguments.get_mut(key) else {
        return Ok(arguments); // absent or not a string: `run` reports it
    };
    if refuse_folder && workspace::names_a_folder(path) {
        return Err(ToolError::new(format!(
            "{path} ends in '/': it names a folder; use list_dir to see what is in it"
        )));
    }
    *path = workspace::normalize(path)?;
    Ok(arguments)
}

/// An optional string argument.
pub(crate) fn optional_str<'a>(
    args: &'a serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolError::new(format!(
            "argument \"{key}\" must be a string"
        ))),
    }
}

/// An optional positive integer argument.
pub(crate) fn optional_count(
    args: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<usize>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => Err(ToolError::new(format!(
                "argument \"{key}\" must be a whole number of at least 1"
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool named `name`; a source of such tools that lists what it is given.
    struct Named(&'static str);

    #[async_trait]
    impl Tool for Named {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: self.0.into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
            }
        }
        async fn run(&self, _: Value) -> ToolOutput {
            ToolOutput::error("unused")
        }
    }

    struct Listed(Mutex<Vec<Arc<dyn Tool>>>);

    impl ToolSource for Listed {
        fn tools(&self) -> Vec<Arc<dyn Tool>> {
            self.0.lock().unwrap().clone()
        }
    }

    /// Chats share the specs until a source lists other tool objects; the registered tool keeps
    /// its name against a source's.
    #[test]
    fn specs_are_shared_until_the_tools_change() {
        let mut registry = ToolRegistry::default();
        registry.register(Arc::new(Named("b")));
        let listed = Arc::new(Listed(Mutex::new(vec![Arc::new(Named("a")) as _])));
        registry.add_source(listed.clone());
        let names = |specs: &[ToolSpec]| specs.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        let first = registry.specs();
        assert_eq!(names(&first), ["a", "b"]);
        assert!(Arc::ptr_eq(&first, &registry.specs()));
        *listed.0.lock().unwrap() = vec![Arc::new(Named("c")), Arc::new(Named("b"))];
        let second = registry.specs();
        assert_eq!(names(&second), ["b", "c"]);
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(Arc::ptr_eq(&second, &registry.clone().specs()));
    }

    #[test]
    fn cap_output_respects_char_boundaries() {
        let capped = cap_output("ééé".into(), 3);
        assert!(
            capped.starts_with('é') && capped.contains("[truncated: output cut at 3 bytes]"),
            "{capped}"
        );
        assert_eq!(cap_output("short".into(), 10), "short");
    }

    #[tokio::test]
    async fn bounded_runs_time_out() {
        let limits = ToolLimits {
            timeout: Duration::from_millis(50),
            ..ToolLimits::default()
        };
        let output = run_bounded("slow", limits, |_| {
            std::thread::sleep(Duration::from_millis(300));
            Ok(String::new())
        })
        .await;
        assert_eq!(output, ToolOutput::error("slow timed out after 0.05s"));
    }

    /// Works until told to stop, then says why and when.
    fn busy_until_stopped(
        report: std::sync::mpsc::Sender<(Stopped, Instant)>,
        result: Result<String, ToolError>,
    ) -> impl FnOnce(&StopSignal) -> Result<String, ToolError> {
        move |stop| loop {
            if let Err(why) = stop.check() {
                let _ = report.send((why, Instant::now()));
                return result;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[tokio::test]
    async fn work_stops_at_its_deadline_and_keeps_what_it_found() {
        let limits = ToolLimits {
            timeout: Duration::from_millis(50),
            ..ToolLimits::default()
        };
        let (report, stopped) = std::sync::mpsc::channel();
        let partial = run_bounded(
            "search",
            limits,
            busy_until_stopped(report.clone(), Ok("found so far".into())),
        )
        .await;
        assert_eq!(partial, ToolOutput::ok("found so far"));
        assert_eq!(
            stopped.try_recv().map(|(why, _)| why),
            Ok(Stopped::Deadline)
        );
        let nothing = run_bounded(
            "read",
            limits,
            busy_until_stopped(report, Err("cannot read: stopped".into())),
        )
        .await;
        assert_eq!(nothing, ToolOutput::error("read timed out after 0.05s"));
    }

    #[tokio::test]
    async fn dropping_the_call_stops_its_work_at_once() {
        let limits = ToolLimits {
            timeout: Duration::from_secs(60),
            ..ToolLimits::default()
        };
        let (report, stopped) = std::sync::mpsc::channel();
        let call = run_bounded(
            "busy",
            limits,
            busy_until_stopped(report, Ok(String::new())),
        );
        // The chat is cancelled while the call runs: its future is dropped.
        assert!(tokio::time::timeout(Duration::from_millis(50), call)
            .await
            .is_err());
        let dropped = Instant::now();
        let (why, at) = stopped.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(why, Stopped::Abandoned);
        assert!(at.duration_since(dropped) < Duration::from_millis(100));
    }

    #[test]
    fn a_stop_reader_fails_once_stopped() {
        let stop = StopSignal::new(Duration::from_secs(60));
        let mut reader = StopReader::new(&b"abc"[..], stop.clone());
        let mut buf = [0u8; 1];
        assert_eq!(reader.read(&mut buf).unwrap(), 1);
        stop.abandon();
        let error = reader.read(&mut buf).unwrap_err();
        assert_eq!(error.to_string(), "the call was abandoned");
    }
}
