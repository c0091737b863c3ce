//! The agent: [`AgentClient::chat_stream`] runs one chat (a direct call, or the planning round and
//! the agent loop) and streams [`ChatEvent`]s. It never sees axum or JSON frames, and keeps nothing
//! between chats.
//!
//! Inside, one job a module (private, but for `prompts`):
//! - `run`: one chat's state, its setup (hooks, message list, user input) and its end (`done` or
//!   `error`, after `run_completed` / `run_failed`, then `on_run_end` however it ended);
//! - `phases`: the direct call, the planning round and the agent loop, with the checkpoints of
//!   docs/design.md §2 in the order of its table;
//! - `call`: one streamed model call (`pre_llm_request`, the stream, text, usage);
//! - `compact`: auto and manual compaction of the client's history (the summary call, the
//!   `compact` event); `context`: the `context:` settings and micro compaction;
//! - `approval`: the approval settings and the sealed state; `resume`: a chat that stops for
//!   approval and the chat that goes on after it;
//! - `tool_step`: one round's tool calls (cap, tool hooks, panic isolation, cancel);
//! - `sessions`: the connection events (`session_start`, `session_end`) in tasks of their own;
//! - `marker`: the planning reply's marker, decided while it streams; `prompts`: the built-ins;
//! - `stream`: a chat's events, the chat run as they are read; `admission`: a chat's place in
//!   the quotas and its tenant's label.
//!
//! ```no_run
//! use std::sync::Arc;
//! use futures::StreamExt;
//! use hookwire::agent::{AgentClient, AgentConfig, ChatEvent, ChatRequest};
//! use hookwire::hooks::{AgentHook, HookContext, HookResult, LlmRequest, Flow};
//!
//! struct BeBrief;
//!
//! #[async_trait::async_trait]
//! impl AgentHook for BeBrief {
//!     async fn pre_llm_request(&self, _ctx: &mut HookContext, request: &mut LlmRequest) -> HookResult<Flow> {
//!         request.inject_system_context("Answer in one sentence.");
//!         Ok(Flow::Continue)
//!     }
//! }
//!
//! # async fn example() {
//! // No `.model(…)`: the offline demo model.
//! let client = AgentClient::builder()
//!     .hook(Arc::new(BeBrief))
//!     .config(AgentConfig::default())
//!     .build();
//! let mut events = client.chat_stream(ChatRequest::new("c1", "hello"));
//! while let Some(event) = events.next().await {
//!     if let ChatEvent::Text(delta) = event {
//!         print!("{delta}");
//!     }
//! }
//! # }
//! ```

mod admission;
mod approval;
mod call;
mod client_tools;
mod compact;
mod context;
mod marker;
mod phases;
pub(crate) mod prompts;
mod resume;
mod retry;
mod run;
mod series;
mod sessions;
mod stream;
#[cfg(test)]
mod tests;
mod tool_step;
mod turn;

pub use crate::types::{
    ApprovalDecision, ChatError, ChatEvent, ChatRequest, CompactTag, DoneReason, ErrorCode,
    HookMessage, HookTag, HookTrace, Message, NoticeLevel, PendingCall, Person, Resume, Role,
    StepName, ToolCall, Usage,
};
pub use approval::ApprovalSettings;
#[doc(hidden)]
pub use approval::StateCost;
pub use context::{ContextSettings, LearnedWindows};
pub use retry::RetryPolicy;
pub use stream::ChatStream;

use std::path::PathBuf;
use std::sync::Arc;

use crate::hooks::{AgentHook, HookFactory, HookStack, SessionInfo};
use crate::llm::demo::DemoModel;
use crate::llm::ChatModel;
use crate::tools::{Tool, ToolRegistry, ToolSource};

/// How the agent behaves. Every prompt has a default written for real models.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// The model name sent upstream.
    pub model: String,
    pub system_prompt: String,
    /// The planning round's prompt; `{marker}` and `{tools}` are filled in.
    pub planning_prompt: String,
    /// A planning reply that starts with this (after whitespace) asks for the agent loop.
    pub marker: String,
    pub first_step_prompt: String,
    pub each_step_prompt: String,
    /// The last call's prompt when the loop reached a limit (see `summary_on_limit`).
    pub summary_prompt: String,
    /// Agent rounds before the chat ends with `max_steps`.
    pub max_steps: usize,
    /// The chat's summed usage (prompt + completion) at which the loop ends with `max_tokens`,
    /// checked before each agent round; `None` = no limit.
    pub max_total_tokens: Option<u64>,
    /// Model calls the hooks of one chat may make (`llm`, `prompt`, `agent` handlers, retries
    /// included); past it, such hooks are skipped with one notice (docs/protocol.md §15).
    pub max_hook_model_calls: usize,
    /// At `max_steps` or `max_total_tokens`, one last call without tools asks the model for a
    /// summary of what was done and what remains; it streams as text and is the kept answer.
    pub summary_on_limit: bool,
    /// How often hooks may send the model back with feedback in one chat.
    pub max_retries: usize,
    /// Tool calls run in one round; further calls get an `is_error` result instead.
    pub max_tool_calls_per_round: usize,
    /// A tool result longer than this (in characters) is cut in the chat's `turn`, with a
    /// marker saying how much was left out (the `ToolResult` event has it whole).
    pub history_tool_result_chars: usize,
    /// How long one hook call may take (a hook that never answers cannot hang a chat).
    pub hook_timeout: std::time::Duration,
    /// The workspace root (the `cwd` hooks see).
    pub workspace: PathBuf,
    /// Key that signs persistent hook messages; `None` = history is trusted as sent.
    pub secret: Option<String>,
    /// The `context:` settings: the window, and how much of it the loop keeps (micro
    /// compaction).
    pub context: ContextSettings,
    /// Which tool calls wait for the person's approval, and how long a decision may take.
    pub approval: ApprovalSettings,
    /// Retries and fallback models of a model call that failed before it streamed anything.
    pub retry: RetryPolicy,
    /// How a chat with tools decides whether it needs them (`agent.planning`).
    pub planning: Planning,
    /// The prompt of the `native` planning call (it offers the tools; no marker).
    pub native_planning_prompt: String,
}

/// `agent.planning`: how a chat with tools decides whether it needs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Planning {
    /// A planning call without tools; a reply that starts with the marker asks for the agent
    /// loop, any other reply is the answer.
    #[default]
    Marker,
    /// The first call offers the tools (`tool_choice: "auto"`): a tool call there is the agent
    /// loop's round 1, a plain answer ends the chat. For models trained for tool calling, which
    /// decide that way on their own (small models rarely write a marker).
    Native,
    /// No planning call: the agent loop from round 1, with the tools.
    Off,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            model: "gpt-4o-mini".into(),
            system_prompt: prompts::DEFAULT_SYSTEM_PROMPT.into(),
            planning_prompt: prompts::DEFAULT_PLANNING_PROMPT.into(),
            marker: prompts::DEFAULT_MARKER.into(),
            first_step_prompt: prompts::DEFAULT_FIRST_STEP_PROMPT.into(),
            each_step_prompt: prompts::DEFAULT_EACH_STEP_PROMPT.into(),
            summary_prompt: prompts::DEFAULT_SUMMARY_PROMPT.into(),
            max_steps: 8,
            max_total_tokens: None,
            max_hook_model_calls: crate::hooks::spend::DEFAULT_MAX_HOOK_MODEL_CALLS,
            summary_on_limit: true,
            max_retries: 2,
            max_tool_calls_per_round: 16,
            history_tool_result_chars: 16_000,
            hook_timeout: crate::hooks::DEFAULT_HOOK_BUDGET,
            workspace: PathBuf::from("."),
            secret: None,
            context: ContextSettings::default(),
            approval: ApprovalSettings::default(),
            retry: RetryPolicy::default(),
            planning: Planning::default(),
            native_planning_prompt: prompts::DEFAULT_NATIVE_PLANNING_PROMPT.into(),
        }
    }
}

/// What every chat of one client shares.
pub(crate) struct AgentInner {
    pub(crate) config: AgentConfig,
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) tools: ToolRegistry,
    pub(crate) hooks: HookStack,
    /// The shared hooks and the connection hooks: what `session_start` / `session_end` call.
    pub(crate) session_hooks: HookStack,
    pub(crate) factories: Vec<Arc<dyn HookFactory>>,
    /// Seals approval states: the key derived from the secret, or (without a secret) a random
    /// one of this process, so only it can resume its own states.
    pub(crate) approval_key: approval::StateKey,
    /// The connection events' runs.
    pub(crate) sessions: sessions::SessionEvents,
    /// The trace exporter (off unless configured).
    pub(crate) telemetry: crate::telemetry::Telemetry,
    /// What people and tenants may spend; `None` = no quotas.
    pub(crate) quotas: Option<Arc<crate::quota::Quotas>>,
    /// The tenants the operator listed, with the tools their people are offered (`None` =
    /// every tool).
    pub(crate) tenants: std::collections::BTreeMap<String, Option<Vec<String>>>,
}

impl AgentInner {
    async fn learn_window(&self, model: &str) {
        let settings = &self.config.context;
        if settings.window_tokens.is_some() || !settings.learned.start_asking(model) {
            return;
        }
        let stated = self.model.server_window(model).await;
        match stated {
            Some(window) => tracing::info!(
                model,
                tokens = window.tokens,
                "the model's server states a context window of {} tokens ({}); compaction and reply limits follow it (context.window_tokens overrides)",
                window.tokens,
                window.source
            ),
            None => tracing::debug!(model, "the model's server states no context window; the window is taken from the model's name"),
        }
        settings
            .learned
            .record(model, stated.map(|window| window.tokens));
    }
}

/// Runs chats. Cheap to clone; one per server.
#[derive(Clone)]
pub struct AgentClient {
    inner: Arc<AgentInner>,
}

impl AgentClient {
    /// Asks the model's server for the context window it runs `model` with, unless
    /// `context.window_tokens` is set or it was asked already (docs/providers.md). The server
    /// calls it at start so that the first chat does not wait; a chat calls it too.
    pub async fn learn_window(&self, model: &str) {
        self.inner.learn_window(model).await;
    }

    pub fn builder() -> AgentClientBuilder {
        AgentClientBuilder::default()
    }

    pub fn config(&self) -> &AgentConfig {
        &self.inner.config
    }

    /// The names of the tools the model may be offered.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.tools.names()
    }

    /// Refuses client tools whose name is a server tool's (or the same name twice): a request
    /// with them is `bad_frame` / HTTP 400 before its chat starts (docs/protocol.md §19).
    pub fn check_client_tools(&self, tools: &[crate::types::ToolSpec]) -> Result<(), ChatError> {
        check_client_tools(&self.inner.tools, tools)
    }

    /// Runs one chat. The stream starts with [`ChatEvent::Started`] once the chat is accepted and
    /// ends with exactly one `Done` or `Error` — even when a tool, the model or a hook panics
    /// (then `Error` with code `internal`). Dropping it stops the chat and drops the upstream
    /// request at once.
    pub fn chat_stream(&self, request: ChatRequest) -> ChatStream {
        let chat_id = request.id.clone();
        let inner = self.inner.clone();
        let span = self.inner.telemetry.chat(
            &request.id,
            request.conversation_id.as_deref(),
            request.traceparent.as_deref(),
            request.person.as_ref().map(|person| person.id.as_str()),
        );
        let log_span = run::log_span(&request);
        // Boxed once: each layer of the chat's future holds a pointer, not a copy of it.
        let request = Box::new(request);
        ChatStream::new(chat_id, move |tx, late| async move {
            let trace = span.run(tracing::Instrument::instrument(
                async {
                    inner.session_started(&request).await;
                    run::run_chat(inner, request, tx, late, None, span.trace_id()).await
                },
                log_span,
            ));
            let outcome = trace.await;
            span.end(outcome);
        })
    }

    /// Tells every hook that a WebSocket session opened. Returns at once: the hooks run in a
    /// task of their own, and a chat of the session waits for them only when its hooks use
    /// what they leave ([`HookFactory::uses_session_start`]).
    pub async fn session_started(&self, session: &SessionInfo) {
        let hooks = self.inner.session_hooks.clone();
        let config = &self.inner.config;
        let spend = Arc::new(crate::hooks::spend::HookSpend::new(
            config.max_hook_model_calls,
            config.max_total_tokens,
        ));
        self.inner.sessions.start(hooks, session.clone(), spend);
    }

    /// Tells every hook that a WebSocket session closed. Returns at once: the hooks run in a
    /// task of their own, after the session's `session_start` hooks.
    pub async fn session_ended(&self, session: &SessionInfo) {
        let hooks = self.inner.session_hooks.clone();
        self.inner.sessions.end(hooks, session.clone());
    }

    /// Exports the spans still waiting and stops the exporter (the server's last step).
    pub async fn shutdown_telemetry(&self) {
        self.inner.telemetry.shutdown().await;
    }

    /// Lets the connection hooks still running finish within `grace`, then ends them (a
    /// command hook's processes are killed). The server calls it when it stops.
    pub async fn finish_session_hooks(&self, grace: std::time::Duration) {
        self.inner.sessions.shutdown(grace).await;
    }
}

impl AgentInner {
    /// A chat sent while its session's `session_start` hooks still run waits for them when its
    /// hooks use what they leave, at most the hook budget (or until the chat is cancelled).
    async fn session_started(&self, request: &ChatRequest) {
        let session = request.session_id.as_str();
        if !self.sessions.is_starting(session)
            || !self.factories.iter().any(|f| f.uses_session_start())
        {
            return;
        }
        let limit = self.config.hook_timeout + std::time::Duration::from_secs(1);
        tokio::select! {
            started = self.sessions.started(session, limit) => {
                if !started {
                    tracing::warn!(chat = %request.id, "the session's session_start hooks did not finish in time; the chat starts without what they leave");
                }
            }
            _ = request.cancel.cancelled() => {}
        }
    }
}

/// `agent` hooks run a bounded sub-chat of their own: the final answer is the hook's result.
#[async_trait::async_trait]
impl crate::hooks::external::SubAgent for AgentClient {
    /// Its model calls are the calling chat's hook calls: each takes a slot of `spend` (none
    /// left: the sub-run fails) and adds its tokens there.
    async fn answer(
        &self,
        task: String,
        spend: Arc<crate::hooks::spend::HookSpend>,
    ) -> Result<String, crate::hooks::external::SubAgentError> {
        use crate::hooks::external::SubAgentError;
        use futures::StreamExt;
        let mut request = ChatRequest::new(format!("hook-{}", uuid::Uuid::new_v4().simple()), task);
        request.skills = Some(Vec::new());
        let chat_id = request.id.clone();
        let inner = self.inner.clone();
        let mut events = ChatStream::new(chat_id, move |tx, late| async move {
            run::run_chat(inner, Box::new(request), tx, late, Some(spend), None).await;
        });
        while let Some(event) = events.next().await {
            match event {
                ChatEvent::Done { content, .. } => return Ok(content),
                ChatEvent::Error(error) => return Err(SubAgentError::Failed(error.message)),
                _ => {}
            }
        }
        Err(SubAgentError::NoAnswer)
    }
}

impl AgentConfig {
    /// The config of the sub-agent behind `agent` hooks: at most `max_steps` rounds, and no
    /// signing (its history never reaches a client).
    pub(crate) fn for_hook_agent(&self, max_steps: usize) -> AgentConfig {
        AgentConfig {
            max_steps,
            secret: None,
            // A hook agent's answer is the hook's JSON result: a prose summary at its step
            // limit would only be a bad result.
            summary_on_limit: false,
            // Nobody is there to approve a hook agent's calls.
            approval: ApprovalSettings::default(),
            ..self.clone()
        }
    }
}

/// Builds an [`AgentClient`]: the model, the tools, the hooks, the config.
#[derive(Default)]
pub struct AgentClientBuilder {
    config: Option<AgentConfig>,
    model: Option<Arc<dyn ChatModel>>,
    tools: ToolRegistry,
    hooks: HookStack,
    connection_hooks: Vec<Arc<dyn AgentHook>>,
    factories: Vec<Arc<dyn HookFactory>>,
    telemetry: crate::telemetry::Telemetry,
    quotas: Option<Arc<crate::quota::Quotas>>,
    tenants: std::collections::BTreeMap<String, Option<Vec<String>>>,
}

impl AgentClientBuilder {
    /// Where chats' spans go (docs/protocol.md §17); off by default.
    pub fn telemetry(mut self, telemetry: crate::telemetry::Telemetry) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Chats are admitted against these quotas first (docs/protocol.md §20): one over a limit
    /// ends with `quota_exceeded` before any hook or model call.
    pub fn quotas(mut self, quotas: Arc<crate::quota::Quotas>) -> Self {
        self.quotas = Some(quotas);
        self
    }

    /// A tenant the operator lists, and the tools its people's model is offered (`None` = every
    /// tool). Listed tenants are also the labels of `hookwire_tenant_tokens_total`.
    pub fn tenant(mut self, name: impl Into<String>, tools: Option<Vec<String>>) -> Self {
        self.tenants.insert(name.into(), tools);
        self
    }

    /// The model; without one, the offline demo model.
    pub fn model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = Some(model);
        self
    }

    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = Some(config);
        self
    }

    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.register(tool);
        self
    }

    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        for tool in tools {
            self.tools.register(tool);
        }
        self
    }

    /// Tools that come and go (an MCP server's): asked for the tools each time a chat starts,
    /// and for a tool each time one is called.
    pub fn tool_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.tools.add_source(source);
        self
    }

    /// A hook shared by every chat; hooks run in the order they were added.
    pub fn hook(mut self, hook: Arc<dyn AgentHook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// A hook for the connection events only (`session_start`, `session_end`): a chat never
    /// calls it, so its metrics count connection events alone.
    pub fn connection_hook(mut self, hook: Arc<dyn AgentHook>) -> Self {
        self.connection_hooks.push(hook);
        self
    }

    /// A source of per-chat hooks; they run after the shared hooks, in the order added.
    pub fn hook_factory(mut self, factory: Arc<dyn HookFactory>) -> Self {
        self.factories.push(factory);
        self
    }

    pub fn build(mut self) -> AgentClient {
        let config = self.config.unwrap_or_default();
        self.hooks.set_budget(config.hook_timeout);
        let mut session_hooks = self.hooks.clone();
        session_hooks.extend(std::mem::take(&mut self.connection_hooks));
        let model = self
            .model
            .unwrap_or_else(|| Arc::new(DemoModel::new(&config.marker)));
        let approval_key = match config.secret.as_deref() {
            Some(secret) => approval::StateKey::from_secret(secret),
            None => approval::StateKey::random(),
        };
        AgentClient {
            inner: Arc::new(AgentInner {
                approval_key,
                config,
                model,
                tools: self.tools,
                session_hooks,
                hooks: self.hooks,
                factories: self.factories,
                sessions: Default::default(),
                telemetry: self.telemetry,
                quotas: self.quotas,
                tenants: self.tenants,
            }),
        }
    }
}

/// A client tool named like a server tool, or two client tools of one name: refused.
pub(crate) fn check_client_tools(
    server: &ToolRegistry,
    tools: &[crate::types::ToolSpec],
) -> Result<(), ChatError> {
    if tools.is_empty() {
        // Most chats send no tools: the server's are not even looked at.
        return Ok(());
    }
    let server = server.specs();
    for (index, tool) in tools.iter().enumerate() {
        if server.iter().any(|spec| spec.name == tool.name) {
            return Err(ChatError::new(
                ErrorCode::BadFrame,
                format!(
                    "the client tool {:?} has the name of a server tool; rename it",
                    tool.name
                ),
            ));
        }
        if tools[..index].iter().any(|other| other.name == tool.name) {
            return Err(ChatError::new(
                ErrorCode::BadFrame,
                format!("the client tool {:?} is declared twice", tool.name),
            ));
        }
    }
    Ok(())
}
