//! Running one hook's handler. Errors are data: every run returns a [`RunResult`], never `Err`,
//! and the chain decides from its variant (a timeout is [`RunResult::Timeout`], not a message).
//!
//! A command hook first ends as a [`CommandRun`] (exit code, stdout, stderr, timed out); its
//! exit-code contract is its dialect's ([`wire::command_result`]). How the command's
//! processes are started, killed and reaped is [`crate::process`].
//!
//! An http hook POSTs the input: redirects are not followed (a 3xx is an error), an answer over
//! [`MAX_HTTP_ANSWER_BYTES`] is an error (read no further), and a hook that is not the
//! operator's (workspace or session level) may only call a URL under `http_hooks.allowed_urls`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use crate::hooks::external::hook::{Dialect, Handler, HookDef, RunResult};
use crate::hooks::external::wire::{self, json_in_text};
use crate::hooks::spend::HookSpend;
use crate::llm::{ChatModel, LlmError, ModelEvent, ModelRequest};
use crate::process::{environment_with, execute, server_variable};
use crate::types::Message;

/// An http hook's answer past this is a failure.
pub(crate) const MAX_HTTP_ANSWER_BYTES: usize = 1024 * 1024;

/// The environment of a command hook: the process layer's clean environment from `lookup` (the
/// server's), with the hook variables of docs/protocol.md §9 for `event` in the workspace `cwd`
/// of the session `session_id` (Gemini CLI's `GEMINI_SESSION_ID`, when the input names one)
/// before the hook's `env:` map.
pub(crate) fn environment(
    lookup: &dyn Fn(&str) -> Option<OsString>,
    event: &str,
    cwd: &Path,
    session_id: Option<&str>,
    own: &BTreeMap<String, String>,
) -> Vec<(String, OsString)> {
    let mut hook = Vec::new();
    for name in ["HOOKWIRE_HOOK_EVENT", "JCLI_HOOK_EVENT"] {
        hook.push((name.to_string(), event.into()));
    }
    let cwd = cwd.as_os_str();
    for name in [
        "HOOKWIRE_CWD",
        "JCLI_CWD",
        "CLAUDE_PROJECT_DIR",
        "GEMINI_PROJECT_DIR",
        "GEMINI_CWD",
    ] {
        hook.push((name.to_string(), cwd.to_os_string()));
    }
    if let Some(session_id) = session_id.filter(|id| !id.is_empty()) {
        hook.push(("GEMINI_SESSION_ID".to_string(), session_id.into()));
    }
    environment_with(lookup, hook, own)
}

/// Who the chat is for, for a command hook: `HOOKWIRE_USER_ID` and (with tenants)
/// `HOOKWIRE_TENANT`. After the hook's `env:`, so a hook file cannot make another user up.
pub(crate) fn person_variables(person: Option<&crate::types::Person>) -> Vec<(String, OsString)> {
    let Some(person) = person else {
        return Vec::new();
    };
    let mut variables = vec![("HOOKWIRE_USER_ID".to_string(), OsString::from(&person.id))];
    if let Some(tenant) = &person.tenant {
        variables.push(("HOOKWIRE_TENANT".to_string(), OsString::from(tenant)));
    }
    variables
}

/// Why a hook agent's sub-run gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SubAgentError {
    /// The sub-run ended with an error (its message).
    #[error("{0}")]
    Failed(String),
    #[error("it ended without an answer")]
    NoAnswer,
}

/// The bounded sub-run behind `agent` hooks: a task in, the agent's final answer out. The agent
/// layer implements it for `AgentClient` (hooks sit below the agent, so they know it only by this
/// trait).
#[async_trait::async_trait]
pub(crate) trait SubAgent: Send + Sync {
    /// The sub-run's answer; its model calls are charged to `spend` (the calling chat's).
    async fn answer(&self, task: String, spend: Arc<HookSpend>) -> Result<String, SubAgentError>;
}

/// What the handlers need from the server.
pub(crate) struct Runner {
    pub(crate) http: reqwest::Client,
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) model_name: String,
    /// The sub-agent of `agent` hooks: read-only tools, no hooks.
    pub(crate) sub_agent: Arc<dyn SubAgent>,
    /// The configured hook agents an `agent` hook may name (`agent: NAME`, as in the OpenHarness
    /// format).
    pub(crate) agents: std::collections::BTreeMap<String, Arc<dyn SubAgent>>,
    pub(crate) cwd: std::path::PathBuf,
    /// Time one chain of hooks may take in all (each hook's own timeout is cut to what is left).
    pub(crate) chain_budget: Duration,
    /// URL prefixes that http hooks other than the server's may call (`http_hooks.allowed_urls`;
    /// empty = none).
    pub(crate) http_hook_urls: Vec<String>,
    /// `limits.max_hook_model_calls`, for `hookwire hooks test`'s runs (a chat's hooks use the
    /// chat's meter, a connection's the connection's).
    pub(crate) max_hook_model_calls: usize,
}

/// The default [`Runner::chain_budget`].
pub(crate) const DEFAULT_CHAIN_BUDGET: Duration = crate::hooks::DEFAULT_HOOK_BUDGET;

impl Runner {
    pub(crate) fn new(
        model: Arc<dyn ChatModel>,
        model_name: String,
        sub_agent: Arc<dyn SubAgent>,
        cwd: std::path::PathBuf,
    ) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // No redirect is followed: a 302 would turn the POST into a GET to wherever it points.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_else(|error| {
                tracing::error!(%error, "cannot build the http hook client; http hooks will fail");
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .unwrap_or_default()
            });
        Self {
            http,
            model,
            model_name,
            sub_agent,
            agents: Default::default(),
            cwd,
            chain_budget: DEFAULT_CHAIN_BUDGET,
            http_hook_urls: Vec::new(),
            max_hook_model_calls: crate::hooks::spend::DEFAULT_MAX_HOOK_MODEL_CALLS,
        }
    }

    /// Sets the model calls the hooks of one `hookwire hooks test` run may make.
    pub(crate) fn with_max_hook_model_calls(mut self, calls: usize) -> Self {
        self.max_hook_model_calls = calls;
        self
    }

    /// Sets the URL prefixes that workspace-level http hooks may call.
    pub(crate) fn with_http_hook_urls(mut self, urls: Vec<String>) -> Self {
        self.http_hook_urls = urls;
        self
    }

    /// Adds a hook agent that `agent` hooks may name (`agent: NAME`).
    pub(crate) fn with_agent(mut self, name: impl Into<String>, agent: Arc<dyn SubAgent>) -> Self {
        self.agents.insert(name.into(), agent);
        self
    }

    /// Sets the time one chain may take in all.
    pub(crate) fn with_chain_budget(mut self, budget: Duration) -> Self {
        self.chain_budget = budget;
        self
    }

    /// Runs `hook`'s handler with `input` within `timeout`; its model calls (if it makes any)
    /// are charged to `spend`, the chat's.
    pub(crate) async fn run(
        &self,
        hook: &HookDef,
        input: &Value,
        timeout: Duration,
        spend: &Arc<HookSpend>,
        person: Option<&crate::types::Person>,
    ) -> RunResult {
        match &hook.handler {
            Handler::Command { command, env } => {
                // Gemini CLI gives its hooks the session's id in the environment too.
                let session_id = (hook.dialect == Dialect::Gemini)
                    .then(|| input.get("session_id").and_then(Value::as_str))
                    .flatten();
                let event = hook.event.as_str();
                let mut env = environment(&server_variable, event, &self.cwd, session_id, env);
                env.extend(person_variables(person));
                match execute(command, &env, &self.cwd, input, timeout).await {
                    Ok(run) => wire::command_result(hook.dialect, run),
                    Err(error) => RunResult::Error(error.to_string()),
                }
            }
            Handler::Http { url, headers } => {
                if hook.level != "server" && !url_allowed(url, &self.http_hook_urls) {
                    return RunResult::Error(format!(
                        "{} is not under an entry of http_hooks.allowed_urls ({} hooks may only call those); not called",
                        crate::types::redact::url(url),
                        hook.level
                    ));
                }
                self.run_http(url, headers, input, timeout).await
            }
            Handler::Llm {
                prompt,
                model,
                envelope,
            } => {
                let prompt = wire::task(hook.dialect, prompt, *envelope, input);
                let model = model.clone().unwrap_or_else(|| self.model_name.clone());
                // The model wrote a registered hook: one call, never a retry (each hook run of
                // the model's costs the operator one call at most).
                let attempts = if hook.is_registered() { 1 } else { 2 };
                let asked = self.ask_with_retry(&prompt, &model, attempts, spend);
                match tokio::time::timeout(timeout, asked).await {
                    Err(_) => RunResult::Timeout,
                    Ok(result) => result,
                }
            }
            Handler::Agent { prompt, agent } => {
                let sub_agent = match agent {
                    None => self.sub_agent.clone(),
                    Some(name) => match self.agents.get(name) {
                        Some(agent) => agent.clone(),
                        None => {
                            return RunResult::Error(format!(
                                "no hook agent named {name:?} is configured"
                            ))
                        }
                    },
                };
                let task = wire::task(hook.dialect, prompt, true, input);
                let asked = run_agent(sub_agent.as_ref(), task, spend.clone());
                match tokio::time::timeout(timeout, asked).await {
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
        // What logs, traces and notices say of the URL: no userinfo, query values or tokens.
        let shown = crate::types::redact::url(url);
        let mut request = crate::telemetry::with_traceparent(self.http.post(url))
            .timeout(timeout)
            .json(input);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(error) if error.is_timeout() => return RunResult::Timeout,
            Err(error) => {
                let error = error.without_url();
                return RunResult::Error(format!("POST {shown} failed: {error}"));
            }
        };
        let status = response.status();
        if status.is_redirection() {
            return RunResult::Error(format!(
                "{shown} answered HTTP {} (redirects are not followed)",
                status.as_u16()
            ));
        }
        let too_big = || {
            RunResult::Error(format!(
                "the answer of {shown} is over {MAX_HTTP_ANSWER_BYTES} bytes; not read further"
            ))
        };
        if response
            .content_length()
            .is_some_and(|length| length > MAX_HTTP_ANSWER_BYTES as u64)
        {
            return too_big();
        }
        // Read in chunks, so an endless answer costs at most the cap.
        let mut bytes = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) if bytes.len() + chunk.len() > MAX_HTTP_ANSWER_BYTES => {
                    return too_big()
                }
                Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(error) if error.is_timeout() => return RunResult::Timeout,
                Err(error) => {
                    let error = error.without_url();
                    return RunResult::Error(format!(
                        "reading the answer of {shown} failed: {error}"
                    ));
                }
            }
        }
        let body = String::from_utf8_lossy(&bytes);
        if !status.is_success() {
            let short: String = body.chars().take(300).collect();
            return RunResult::Error(format!(
                "{shown} answered HTTP {}: {short}",
                status.as_u16()
            ));
        }
        if body.trim().is_empty() {
            return RunResult::Output(Value::Null);
        }
        match serde_json::from_str(&body) {
            Ok(value) => RunResult::Output(value),
            Err(error) => RunResult::Error(format!("{shown} answered with invalid JSON: {error}")),
        }
    }

    /// Asks the model up to `attempts` times: again when the call fails or the answer holds
    /// no JSON. Each call takes a slot of `spend` first; none left, no call.
    async fn ask_with_retry(
        &self,
        prompt: &str,
        model: &str,
        attempts: usize,
        spend: &HookSpend,
    ) -> RunResult {
        let mut last = String::new();
        for _ in 0..attempts {
            if let Err(exhausted) = spend.try_call() {
                return RunResult::Error(format!("not asked: {exhausted}"));
            }
            let answer = match self.ask(prompt, model, spend).await {
                Ok(text) => json_in_text(&text).map_err(|e| e.to_string()),
                Err(error) => Err(error.to_string()),
            };
            match answer {
                Ok(value) => return RunResult::Output(value),
                Err(error) => last = error,
            }
        }
        RunResult::Error(format!("the model's answer was not usable: {last}"))
    }

    async fn ask(&self, prompt: &str, model: &str, spend: &HookSpend) -> Result<String, AskError> {
        let request = ModelRequest {
            max_tokens: None,
            model: model.to_string(),
            messages: vec![Message::user(prompt)],
            tools: Vec::new(),
        };
        let mut stream = self.model.stream(request).await?;
        let mut text = String::new();
        while let Some(event) = stream.next().await {
            match event? {
                ModelEvent::Text(delta) => text.push_str(&delta),
                ModelEvent::Finished { usage, .. } => {
                    spend.record(usage.unwrap_or_default());
                    return Ok(text);
                }
            }
        }
        Err(AskError::EndedEarly)
    }
}

/// Why a hook's question to the model got no answer.
#[derive(Debug, thiserror::Error)]
enum AskError {
    #[error(transparent)]
    Model(#[from] LlmError),
    #[error("the model stream ended early")]
    EndedEarly,
}

async fn run_agent(agent: &dyn SubAgent, task: String, spend: Arc<HookSpend>) -> RunResult {
    match agent.answer(task, spend).await {
        Ok(content) => match json_in_text(&content) {
            Ok(value) => RunResult::Output(value),
            Err(error) => RunResult::Error(format!("the agent's answer was not usable: {error}")),
        },
        Err(error) => RunResult::Error(format!("the agent failed: {error}")),
    }
}

/// Whether a hook that is not the operator's may call `url`: its normalised form starts with
/// an entry of `allowed`, and has that entry's scheme, host and port (so that an entry
/// `http://h:80` lets neither `http://h:8000/` nor `http://h:80@elsewhere/` through), and no
/// user or password.
pub(crate) fn url_allowed(url: &str, allowed: &[String]) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return false;
    }
    // An escaped `/`, `\` or `.` in the path could climb out of the allowed prefix on a server
    // that decodes it (`/api/..%2fadmin`).
    let path = parsed.path().to_ascii_lowercase();
    if ["%2f", "%5c", "%2e"]
        .iter()
        .any(|escaped| path.contains(escaped))
    {
        return false;
    }
    allowed.iter().any(|entry| {
        let Ok(prefix) = reqwest::Url::parse(entry.trim()) else {
            return false;
        };
        let same_origin = prefix.scheme() == parsed.scheme()
            && prefix.host_str() == parsed.host_str()
            && prefix.port_or_known_default() == parsed.port_or_known_default();
        same_origin && parsed.as_str().starts_with(prefix.as_str())
    })
}

/// Runs `sh -c command` with `env` (see [`crate::process`]) and applies the exit-code contract
/// (the runner does both steps itself, with the hook's dialect in between).
#[cfg(test)]
pub(crate) async fn run_command(
    command: &str,
    env: &[(String, std::ffi::OsString)],
    cwd: &std::path::Path,
    input: &Value,
    timeout: Duration,
) -> RunResult {
    match execute(command, env, cwd, input, timeout).await {
        Ok(run) => wire::command_result(crate::hooks::external::hook::Dialect::Hookwire, run),
        Err(error) => RunResult::Error(error.to_string()),
    }
}

#[cfg(test)]
mod tests;
