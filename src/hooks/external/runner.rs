//! Running one hook's handler. Errors are data: every run returns a [`RunResult`], never `Err`,
//! and the chain decides from its variant (a timeout is [`RunResult::Timeout`], not a message).
//!
//! A command hook first ends as a [`CommandRun`] (exit code, stdout, stderr, timed out); its
//! exit-code contract is written once, in [`CommandRun::result`]: exit 0 → stdout is the result
//! (empty or `{}` = no change); exit 2 → block, stderr is the reason; anything else → an error
//! (logged, the chain goes on unless `on_error: abort`). A command that runs past its timeout is
//! killed with its whole process group.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::config::Handler;
use super::protocol::json_in_text;
use crate::llm::{ChatModel, ModelEvent, ModelRequest};
use crate::types::Message;

/// Output past this is not kept (the process may go on writing; it is drained).
const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// How one run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunResult {
    /// The result JSON (`Null` = no change).
    Output(Value),
    /// Exit 2: blocked, with the reason.
    Block(String),
    /// The handler failed: could not run, answered badly, exited with another code.
    Error(String),
    /// The handler ran past its timeout (a command was killed).
    Timeout,
}

/// How a command ended, before the contract gives it a meaning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandRun {
    /// `None` when a signal ended the shell (or it was killed at its timeout).
    pub exit_code: Option<i32>,
    /// Capped at [`MAX_OUTPUT_BYTES`], lossily decoded.
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl CommandRun {
    /// The exit-code contract of command hooks (see the module doc).
    pub fn result(self) -> RunResult {
        if self.timed_out {
            return RunResult::Timeout;
        }
        let stderr = self.stderr.trim();
        match self.exit_code {
            Some(0) => {
                let stdout = self.stdout.trim();
                if stdout.is_empty() {
                    return RunResult::Output(Value::Null);
                }
                match serde_json::from_str(stdout) {
                    Ok(value) => RunResult::Output(value),
                    Err(error) => RunResult::Error(format!(
                        "stdout is not JSON ({error}): {:?}",
                        self.stdout.chars().take(200).collect::<String>()
                    )),
                }
            }
            Some(2) if stderr.is_empty() => RunResult::Block("blocked by a hook".into()),
            Some(2) => RunResult::Block(stderr.to_string()),
            Some(code) => RunResult::Error(format!(
                "exit code {code}: {}",
                stderr.chars().take(300).collect::<String>()
            )),
            None => RunResult::Error("killed by a signal".into()),
        }
    }
}

/// The bounded sub-run behind `agent` hooks: a task in, the agent's final answer out. The agent
/// layer implements it for `AgentClient` (hooks sit below the agent, so they know it only by this
/// trait).
#[async_trait::async_trait]
pub trait SubAgent: Send + Sync {
    async fn answer(&self, task: String) -> Result<String, String>;
}

/// What the handlers need from the server.
pub struct Runner {
    pub http: reqwest::Client,
    pub model: Arc<dyn ChatModel>,
    pub model_name: String,
    /// The sub-agent of `agent` hooks: read-only tools, no hooks.
    pub sub_agent: Arc<dyn SubAgent>,
    pub cwd: std::path::PathBuf,
    /// Time one chain of hooks may take in all (each hook's own timeout is cut to what is left).
    pub chain_budget: Duration,
}

/// The default [`Runner::chain_budget`].
pub const DEFAULT_CHAIN_BUDGET: Duration = crate::hooks::DEFAULT_HOOK_BUDGET;

const JSON_INSTRUCTION: &str = "\n\nReply with exactly one JSON object and nothing else. Use only the fields you need: \
\"action\" (\"stop\" or \"skip\"), \"reason\", \"retry_feedback\", \"system_message\", \"additional_context\", \
\"user_input\", \"tool_arguments\", \"tool_result\", \"assistant_output\". Reply {} for no change.";

impl Runner {
    pub fn new(
        model: Arc<dyn ChatModel>,
        model_name: String,
        sub_agent: Arc<dyn SubAgent>,
        cwd: std::path::PathBuf,
    ) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .unwrap_or_default();
        Self {
            http,
            model,
            model_name,
            sub_agent,
            cwd,
            chain_budget: DEFAULT_CHAIN_BUDGET,
        }
    }

    /// Sets the time one chain may take in all.
    pub fn with_chain_budget(mut self, budget: Duration) -> Self {
        self.chain_budget = budget;
        self
    }

    pub async fn run(
        &self,
        handler: &Handler,
        event: &str,
        input: &Value,
        timeout: Duration,
    ) -> RunResult {
        match handler {
            Handler::Command { command } => {
                run_command(command, event, &self.cwd, input, timeout).await
            }
            Handler::Http { url, headers } => self.run_http(url, headers, input, timeout).await,
            Handler::Llm { prompt, model } => {
                let prompt = format!("{}{JSON_INSTRUCTION}", render(prompt, input));
                let model = model.clone().unwrap_or_else(|| self.model_name.clone());
                match tokio::time::timeout(timeout, self.ask_with_retry(&prompt, &model)).await {
                    Err(_) => RunResult::Timeout,
                    Ok(result) => result,
                }
            }
            Handler::Agent { prompt } => {
                match tokio::time::timeout(timeout, self.run_agent(prompt, input)).await {
                    Err(_) => RunResult::Timeout,
                    Ok(result) => result,
                }
            }
        }
    }

    async fn run_http(
        &self,
        url: &str,
        headers: &std::collections::BTreeMap<String, String>,
        input: &Value,
        timeout: Duration,
    ) -> RunResult {
        let mut request = self.http.post(url).timeout(timeout).json(input);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) if error.is_timeout() => return RunResult::Timeout,
            Err(error) => return RunResult::Error(format!("POST {url} failed: {error}")),
        };
        let status = response.status();
        let body = match response.text().await {
            Ok(body) => body,
            Err(error) if error.is_timeout() => return RunResult::Timeout,
            Err(error) => {
                return RunResult::Error(format!("reading the answer of {url} failed: {error}"))
            }
        };
        if !status.is_success() {
            let short: String = body.chars().take(300).collect();
            return RunResult::Error(format!("{url} answered HTTP {}: {short}", status.as_u16()));
        }
        if body.trim().is_empty() {
            return RunResult::Output(Value::Null);
        }
        match serde_json::from_str(&body) {
            Ok(value) => RunResult::Output(value),
            Err(error) => RunResult::Error(format!("{url} answered with invalid JSON: {error}")),
        }
    }

    /// Asks the model; one retry when the call fails or the answer holds no JSON.
    async fn ask_with_retry(&self, prompt: &str, model: &str) -> RunResult {
        let mut last = String::new();
        for _ in 0..2 {
            match self
                .ask(prompt, model)
                .await
                .and_then(|text| json_in_text(&text))
            {
                Ok(value) => return RunResult::Output(value),
                Err(error) => last = error,
            }
        }
        RunResult::Error(format!("the model's answer was not usable: {last}"))
    }

    async fn ask(&self, prompt: &str, model: &str) -> Result<String, String> {
        let request = ModelRequest {
            model: model.to_string(),
            messages: vec![Message::user(prompt)],
            tools: Vec::new(),
        };
        let mut stream = self
            .model
            .stream(request)
            .await
            .map_err(|e| e.to_string())?;
        let mut text = String::new();
        while let Some(event) = stream.next().await {
            match event.map_err(|e| e.to_string())? {
                ModelEvent::Text(delta) => text.push_str(&delta),
                ModelEvent::Finished { .. } => return Ok(text),
            }
        }
        Err("the model stream ended early".into())
    }

    async fn run_agent(&self, prompt: &str, input: &Value) -> RunResult {
        let task = format!(
            "{}\n\nThe event:\n{}{JSON_INSTRUCTION}",
            render(prompt, input),
            input
        );
        match self.sub_agent.answer(task).await {
            Ok(content) => match json_in_text(&content) {
                Ok(value) => RunResult::Output(value),
                Err(error) => {
                    RunResult::Error(format!("the agent's answer was not usable: {error}"))
                }
            },
            Err(error) => RunResult::Error(format!("the agent failed: {error}")),
        }
    }
}

/// Fills `{{variable}}` from the input JSON (strings as they are, other values as JSON).
pub fn render(template: &str, input: &Value) -> String {
    let mut out = template.to_string();
    for key in [
        "event",
        "user_input",
        "tool_name",
        "tool_arguments",
        "tool_result",
        "assistant_output",
        "model",
        "cwd",
        "tool_error",
        "session_id",
    ] {
        let placeholder = format!("{{{{{key}}}}}");
        if out.contains(&placeholder) {
            let value = match input.get(key) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            out = out.replace(&placeholder, &value);
        }
    }
    out
}

/// Runs `sh -c command` in its own process group and applies the exit-code contract.
pub async fn run_command(
    command: &str,
    event: &str,
    cwd: &std::path::Path,
    input: &Value,
    timeout: Duration,
) -> RunResult {
    match execute(command, event, cwd, input, timeout).await {
        Ok(run) => run.result(),
        Err(error) => RunResult::Error(error),
    }
}

/// Runs `sh -c command` in its own process group: JSON on stdin (written while stdout is read,
/// so a large input cannot deadlock), stdout and stderr capped. `Err` only when the shell could
/// not be started or waited for; how the command itself ended is the [`CommandRun`].
pub async fn execute(
    command: &str,
    event: &str,
    cwd: &std::path::Path,
    input: &Value,
    timeout: Duration,
) -> Result<CommandRun, String> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("HOOKWIRE_HOOK_EVENT", event)
        .env("HOOKWIRE_CWD", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| format!("cannot start `sh -c {command}`: {error}"))?;
    let group = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .ok_or_else(|| format!("`sh -c {command}` has no process id"))?;
    let (mut stdin, mut stdout, mut stderr) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take());
    // If the run ends before the shell does (timeout, or this future dropped because the chat was
    // cancelled), dropping `process` kills the whole group and reaps it.
    let mut process = HookProcess {
        child: Some(child),
        group,
    };
    let payload = input.to_string().into_bytes();
    let work = async {
        let write = async {
            if let Some(mut stdin) = stdin.take() {
                // A hook that does not read its input closes the pipe early; that is fine.
                let _ = stdin.write_all(&payload).await;
                let _ = stdin.shutdown().await;
            }
        };
        let (_, out, err, status) = tokio::join!(
            write,
            read_capped(stdout.as_mut()),
            read_capped(stderr.as_mut()),
            process.wait()
        );
        (out, err, status)
    };
    let Ok((out, err, status)) = tokio::time::timeout(timeout, work).await else {
        drop(process);
        return Ok(CommandRun {
            timed_out: true,
            ..CommandRun::default()
        });
    };
    process.finished();
    let status = status.map_err(|error| format!("waiting for the hook failed: {error}"))?;
    Ok(CommandRun {
        exit_code: status.code(),
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        timed_out: false,
    })
}

async fn read_capped<R: tokio::io::AsyncRead + Unpin>(reader: Option<&mut R>) -> Vec<u8> {
    let Some(reader) = reader else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
}

/// A hook's shell, leader of its own process group.
struct HookProcess {
    /// `None` once the shell exited by itself and was waited for.
    child: Option<tokio::process::Child>,
    group: i32,
}

impl HookProcess {
    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self.child.as_mut() {
            Some(child) => child.wait().await,
            None => Err(std::io::Error::other("the hook's process is gone")),
        }
    }

    /// The shell exited and was reaped: nothing is killed. (What it left running in the
    /// background is left alone, as before.)
    fn finished(&mut self) {
        self.child = None;
    }
}

impl Drop for HookProcess {
    /// Kills the group and reaps it, so no `<defunct>` process is left behind: the shell, and
    /// the hook's other processes if they were handed to us (hookwire as PID 1 of a container,
    /// or a subreaper, inherits the orphans of the killed shell).
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        kill_group(self.group);
        let group = self.group;
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    // The shell first, through tokio, which owns its pid; then the rest.
                    let _ = child.wait().await;
                    let _ = tokio::task::spawn_blocking(move || reap_group(group)).await;
                });
            }
            // No runtime: the process is ending; tokio reaps the shell if it can.
            Err(_) => drop(child),
        }
    }
}

/// Reaps every child of ours left in the killed `group`, blocking until none is left (they were
/// all sent SIGKILL, so this is quick). Without a subreaper role there is none: the group's
/// orphans belong to init.
fn reap_group(group: i32) {
    loop {
        let mut status = 0;
        // SAFETY: waitpid(2) with a negative pid waits for our children in that process group;
        // it writes only the status we pass.
        let reaped = unsafe { libc::waitpid(-group, &mut status, 0) };
        if reaped > 0 {
            continue;
        }
        if reaped < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        // ECHILD: no child of ours is left in the group.
        return;
    }
}

/// Kills the hook's whole process group (the shell and everything it started).
fn kill_group(group: i32) {
    // SAFETY: kill(2) with a negative pid signals the process group we created with
    // process_group(0); it touches no memory of ours.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn exit_codes() {
        let cwd = std::env::temp_dir();
        let cases = [
            (
                "cat >/dev/null; echo '{\"user_input\":\"x\"}'",
                "e",
                RunResult::Output(json!({"user_input":"x"})),
            ),
            ("true", "e", RunResult::Output(Value::Null)),
            (
                "echo 'not allowed' >&2; exit 2",
                "e",
                RunResult::Block("not allowed".into()),
            ),
            (
                "echo boom >&2; exit 3",
                "e",
                RunResult::Error("exit code 3: boom".into()),
            ),
            (
                "printf '{\"e\":\"%s\"}' \"$HOOKWIRE_HOOK_EVENT\"",
                "stop",
                RunResult::Output(json!({"e":"stop"})),
            ),
        ];
        for (command, event, expected) in cases {
            let result =
                run_command(command, event, &cwd, &json!({}), Duration::from_secs(5)).await;
            assert_eq!(result, expected, "{command}");
        }
    }

    #[tokio::test]
    async fn a_command_past_its_timeout_is_a_timeout_not_an_error() {
        let cwd = std::env::temp_dir();
        let run = execute("sleep 5", "e", &cwd, &json!({}), Duration::from_millis(100)).await;
        assert_eq!(
            run,
            Ok(CommandRun {
                timed_out: true,
                ..CommandRun::default()
            })
        );
        assert_eq!(run.map(CommandRun::result), Ok(RunResult::Timeout));
    }

    #[test]
    fn the_exit_code_contract() {
        let ended = |exit_code: Option<i32>, stdout: &str, stderr: &str| {
            CommandRun {
                exit_code,
                stdout: stdout.into(),
                stderr: stderr.into(),
                timed_out: false,
            }
            .result()
        };
        assert_eq!(ended(Some(0), " {} \n", ""), RunResult::Output(json!({})));
        assert_eq!(
            ended(Some(0), "\n", "noise"),
            RunResult::Output(Value::Null)
        );
        assert!(
            matches!(ended(Some(0), "nope", ""), RunResult::Error(e) if e.starts_with("stdout is not JSON"))
        );
        assert_eq!(
            ended(Some(2), "{}", " \n"),
            RunResult::Block("blocked by a hook".into())
        );
        assert_eq!(ended(Some(2), "", "no\n"), RunResult::Block("no".into()));
        assert_eq!(
            ended(Some(1), "", "x"),
            RunResult::Error("exit code 1: x".into())
        );
        assert_eq!(
            ended(None, "", ""),
            RunResult::Error("killed by a signal".into())
        );
        let late = CommandRun {
            exit_code: Some(0),
            timed_out: true,
            ..CommandRun::default()
        };
        assert_eq!(late.result(), RunResult::Timeout);
    }

    #[tokio::test]
    async fn large_input_does_not_deadlock() {
        let big = json!({"messages": "x".repeat(300_000)});
        let result = run_command(
            "wc -c | awk '{print \"{\\\"n\\\":\" $1 \"}\"}'",
            "e",
            &std::env::temp_dir(),
            &big,
            Duration::from_secs(10),
        )
        .await;
        let RunResult::Output(value) = result else {
            panic!("{result:?}")
        };
        assert!(value["n"].as_u64().unwrap() > 300_000);
    }

    #[test]
    fn templates_fill_variables() {
        let input =
            json!({"tool_name":"read_file","tool_arguments":"{\"path\":\"a\"}","model":"m"});
        assert_eq!(
            render(
                "{{tool_name}} {{tool_arguments}} {{model}} {{user_input}}!",
                &input
            ),
            "read_file {\"path\":\"a\"} m !"
        );
    }
}
