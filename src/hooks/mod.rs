//! The one in-process hook runtime (after the Python agent-hooks design): the [`AgentHook`] trait, the [`HookContext`] every
//! hook sees, the per-call values it may change, and the `HookStack` that runs them.
//!
//! Every other kind of hook (skill prompt hooks, command/HTTP/LLM hooks from YAML) is an adapter
//! that implements [`AgentHook`]; the agent loop knows hooks only through this trait.

mod context;
pub(crate) mod external;
pub(crate) mod prompt;
pub mod record;
pub(crate) mod run_metrics;
pub(crate) mod signing;
pub(crate) mod spend;
mod stack;
pub(crate) mod stats;
pub(crate) mod sync;
pub(crate) mod system_prompt;

pub(crate) use context::LateEvents;
pub use context::{
    CallPhase, CompactInfo, HookContext, LlmRequest, LlmResponse, RunConfig, RunOutcome, RunOutput,
    Step, ToolCallInfo, ToolResultInfo,
};
pub use external::hook_schemas;
pub(crate) use stack::{HookStack, DEFAULT_HOOK_BUDGET};

use std::sync::Arc;

use async_trait::async_trait;

use crate::types::{ChatError, ChatRequest, PendingCall};

/// What a hook's failure looks like: any error; it is logged and counted, and the chat goes on.
pub type HookError = Box<dyn std::error::Error + Send + Sync>;
pub type HookResult<T = ()> = Result<T, HookError>;

/// Go on, or end the chat (before the model ran: `error` `hook_blocked`; after: `done` `stopped`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Flow {
    #[default]
    Continue,
    Stop {
        reason: String,
    },
    /// The step does not happen and the chat goes on without it (docs/hooks.md, `action:
    /// skip`): at `pre_send_message` the input is not sent (the chat ends `completed`); at
    /// `pre_llm_request` the call is not made (a planning call gives way to the agent loop,
    /// another ends the chat `completed`); at `pre_auto_compact` / `pre_micro_compact` the
    /// compaction is not done. Elsewhere it is `Continue`.
    Skip {
        reason: String,
    },
    /// Go on, with `feedback` as a user message of the model call the step precedes
    /// (`retry_feedback`): after the input at `pre_send_message`, at the end of the request at
    /// `pre_llm_request` and `pre_micro_compact` (whose compaction is then not done), after the
    /// conversation in the summary call at `pre_auto_compact`. Elsewhere it is `Continue`.
    Retry {
        feedback: String,
    },
}

/// What may follow a model response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ResponseAction {
    #[default]
    Continue,
    /// Discard this step's outcome and ask the model again, with `feedback` as a user message.
    Retry {
        feedback: String,
    },
    Stop {
        reason: String,
    },
}

/// What happens to a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ToolAction {
    #[default]
    Run,
    /// The tool does not run; the model sees `reason` as the tool's (error) result.
    Skip {
        reason: String,
    },
    Stop {
        reason: String,
    },
    /// The call waits for the person's approval (docs/protocol.md §11): the chat ends with an
    /// `approval` frame once the round's other calls ran; `reason` is shown with the call.
    Ask {
        reason: String,
    },
}

/// What happens when the agent is about to finish.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StopAction {
    #[default]
    Finish,
    /// The model goes on: `feedback` is added as a user message (none when it is empty) and
    /// the model is asked again.
    Continue { feedback: String },
    /// The chat ends here with `done` reason `stopped` (the answer is kept; `reason` is shown
    /// as a `notice`): no later stop hook may send the model on.
    Stop { reason: String },
}

/// A WebSocket session, for `session_start` / `session_end`.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub session_id: String,
    /// The model calls of the connection's own hooks (those of `session_start` and
    /// `session_end`, which belong to no chat): one meter for the whole connection, with a
    /// chat's limits (docs/protocol.md §15). The agent gives each session its own.
    hook_spend: Arc<spend::HookSpend>,
}

impl SessionInfo {
    pub fn new(session_id: impl Into<String>) -> Self {
        Self {
            session_id: session_id.into(),
            hook_spend: Default::default(),
        }
    }

    /// The connection's hook model calls (see [`spend`]).
    pub(crate) fn hook_spend(&self) -> &Arc<spend::HookSpend> {
        &self.hook_spend
    }

    /// The same session, metered by `spend`.
    pub(crate) fn with_hook_spend(mut self, spend: Arc<spend::HookSpend>) -> Self {
        self.hook_spend = spend;
        self
    }
}

/// Two values are the same session when their ids are.
impl PartialEq for SessionInfo {
    fn eq(&self, other: &Self) -> bool {
        self.session_id == other.session_id
    }
}

impl Eq for SessionInfo {}

/// A hook into every step of a chat. Every method has a default that does nothing, so a hook
/// implements only what it needs. Hooks are called in the order they were added (shared hooks,
/// then each factory's, see [`AgentClientBuilder::hook`](crate::AgentClientBuilder::hook));
/// `ctx.messages` changes persist for the rest of the chat, changes to per-call values
/// ([`LlmRequest`], [`ToolCallInfo`], …) affect that call only.
///
/// An error or a panic in a hook is logged and counted, and the chat goes on as if the hook had
/// returned the default.
#[allow(unused_variables)]
#[async_trait]
pub trait AgentHook: Send + Sync {
    /// A name for logs and metrics.
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }

    /// A WebSocket session opened (notify only). It runs in a task of its own: nothing of the
    /// connection waits for it, and the session's first chat may start before it is over.
    async fn session_start(&self, session: &SessionInfo) -> HookResult {
        Ok(())
    }
    /// A WebSocket session closed (notify only). It runs in a task of its own, after the
    /// session's `session_start`; the connection is closed by then.
    async fn session_end(&self, session: &SessionInfo) -> HookResult {
        Ok(())
    }

    /// Before the user input enters the conversation: may rewrite it, or stop the chat.
    async fn pre_send_message(
        &self,
        ctx: &mut HookContext,
        input: &mut String,
    ) -> HookResult<Flow> {
        Ok(Flow::Continue)
    }
    /// The user input is in `ctx.messages` (the skill prompt hooks' `after_user_input` checkpoint).
    async fn post_send_message(&self, ctx: &mut HookContext) -> HookResult {
        Ok(())
    }

    /// Checkpoint: right before the planning call.
    async fn before_planning(&self, ctx: &mut HookContext) -> HookResult {
        Ok(())
    }
    /// Checkpoint: right after the planning call (the end of the planning scope).
    async fn after_planning(&self, ctx: &mut HookContext) -> HookResult {
        Ok(())
    }
    /// Checkpoint: at the start of agent round 1 (after `before_each_agent`).
    async fn before_first_agent(&self, ctx: &mut HookContext) -> HookResult {
        Ok(())
    }
    /// Checkpoint: at the start of every agent round.
    async fn before_each_agent(&self, ctx: &mut HookContext) -> HookResult {
        Ok(())
    }
    /// Checkpoint: a round's tools ran and their results are in `ctx.messages`. `tool_names`:
    /// the tools of the round's calls that went through their hooks (each once); every call is
    /// in [`HookContext::steps`] (after an approval resume, the round's calls that ran before the
    /// approval are only in `ctx.messages`).
    async fn after_tool_call(&self, ctx: &mut HookContext, tool_names: &[String]) -> HookResult {
        Ok(())
    }
    /// Checkpoint: the agent loop ended (the end of the loop scope).
    async fn after_agent_loop(&self, ctx: &mut HookContext) -> HookResult {
        Ok(())
    }

    /// Before each model call: `request` is a copy for this call only.
    async fn pre_llm_request(
        &self,
        ctx: &mut HookContext,
        request: &mut LlmRequest,
    ) -> HookResult<Flow> {
        Ok(Flow::Continue)
    }
    /// After each model call: may rewrite the output that is kept, retry with feedback, or stop.
    async fn post_llm_response(
        &self,
        ctx: &mut HookContext,
        response: &mut LlmResponse,
    ) -> HookResult<ResponseAction> {
        Ok(ResponseAction::Continue)
    }

    /// Before the oldest groups of the history are summarised (auto compaction; docs/protocol.md
    /// §10): may add to the instructions of the summary call (`summary_prompt`), or skip the
    /// compaction with `Flow::Stop` (the chat goes on).
    async fn pre_auto_compact(
        &self,
        ctx: &mut HookContext,
        info: &CompactInfo,
        summary_prompt: &mut String,
    ) -> HookResult<Flow> {
        Ok(Flow::Continue)
    }
    /// The summary was made: may rewrite it (what the model and the client get).
    async fn post_auto_compact(
        &self,
        ctx: &mut HookContext,
        info: &CompactInfo,
        summary: &mut String,
    ) -> HookResult {
        Ok(())
    }

    /// A compaction inside the chat (before a model call after the input) replaced the client's
    /// history in `ctx.messages`: the list is assembled anew before the next model call (the
    /// OpenHarness format's `before_context_build` and `after_context_build` fire here, as at
    /// the chat's start). May change `ctx.messages`.
    async fn context_rebuilt(&self, ctx: &mut HookContext) -> HookResult {
        Ok(())
    }

    /// The chat ends waiting for the person's approval of `calls` (notify; Claude Code's and
    /// Gemini CLI's `Notification`).
    async fn approval_required(&self, ctx: &mut HookContext, calls: &[PendingCall]) -> HookResult {
        Ok(())
    }

    /// Before tool results of older agent rounds are stubbed in this call's request (micro
    /// compaction): `Flow::Stop` skips that compaction (the chat goes on).
    async fn pre_micro_compact(
        &self,
        ctx: &mut HookContext,
        info: &CompactInfo,
    ) -> HookResult<Flow> {
        Ok(Flow::Continue)
    }
    /// Micro compaction was done (notify only).
    async fn post_micro_compact(&self, ctx: &mut HookContext, info: &CompactInfo) -> HookResult {
        Ok(())
    }

    /// Before a tool runs: may change the arguments, skip the call, or stop.
    async fn pre_tool_execution(
        &self,
        ctx: &mut HookContext,
        call: &mut ToolCallInfo,
    ) -> HookResult<ToolAction> {
        Ok(ToolAction::Run)
    }
    /// A tool succeeded: may rewrite its result.
    async fn post_tool_execution(
        &self,
        ctx: &mut HookContext,
        call: &ToolCallInfo,
        result: &mut ToolResultInfo,
    ) -> HookResult<Flow> {
        Ok(Flow::Continue)
    }
    /// A tool failed (or was skipped): may rewrite the error text.
    async fn post_tool_execution_failure(
        &self,
        ctx: &mut HookContext,
        call: &ToolCallInfo,
        result: &mut ToolResultInfo,
    ) -> HookResult<Flow> {
        Ok(Flow::Continue)
    }

    /// The agent is about to finish with `output`: may make the model go on with feedback.
    async fn stop(&self, ctx: &mut HookContext, output: &str) -> HookResult<StopAction> {
        Ok(StopAction::Finish)
    }
    /// The chat ended normally: may replace the output the client keeps.
    async fn run_completed(&self, ctx: &mut HookContext, output: &mut RunOutput) -> HookResult {
        Ok(())
    }
    /// The chat failed (notify only).
    async fn run_failed(&self, ctx: &mut HookContext, error: &ChatError) -> HookResult {
        Ok(())
    }
    /// The chat ended, however it ended (notify only): the last event of every chat that
    /// started, after `run_completed` or `run_failed`, and after a cancel too (which calls
    /// neither), with the outcome the client gets (`done` with its reason, or `error`). The
    /// place for cleanup that must run once per chat. A chat refused before `start` has no
    /// events; one whose [`ChatStream`](crate::agent::ChatStream) is dropped is aborted where it
    /// stands and gets none. A hook may change the outcome's output (a `done`'s message): the
    /// client gets it as the hooks left it (the kind of the end, `done` or `error`, stays).
    async fn on_run_end(&self, ctx: &mut HookContext, outcome: &mut RunOutcome) -> HookResult {
        Ok(())
    }
}

/// `()` is the hook that does nothing.
impl AgentHook for () {
    fn name(&self) -> &str {
        "noop"
    }
}

/// Makes the per-chat hooks (skill prompt hooks, session hooks, …) for one chat. Hooks that keep
/// state for a chat come from a factory; stateless ones are registered directly.
pub trait HookFactory: Send + Sync {
    /// Fails with a client-visible error (e.g. `unknown_skill`) when the request cannot run.
    fn hooks_for(&self, request: &ChatRequest) -> Result<Vec<Arc<dyn AgentHook>>, ChatError>;

    /// Whether the hooks this factory makes use what the session's `session_start` hooks left
    /// (context for the system prompt, say). `session_start` runs beside the session; when this
    /// is `true`, a chat sent while it still runs waits for it (at most the hook budget) before
    /// `hooks_for` is asked. Default: `false` (the chat never waits).
    fn uses_session_start(&self) -> bool {
        false
    }

    /// The hooks a session hook registered during the chat (`register_hook`'s `spec`) adds to
    /// it, from the chat's next event on (docs/protocol.md §13); `request.session_hooks` are the
    /// ones the chat already runs. Default: none.
    fn hooks_for_registered(
        &self,
        request: &ChatRequest,
        spec: &serde_json::Value,
    ) -> Vec<Arc<dyn AgentHook>> {
        let _ = (request, spec);
        Vec::new()
    }
}
