//! The values hooks see and change: the chat-wide [`HookContext`] and the per-call copies.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::system_prompt;
use crate::tools::ToolSpec;
use crate::types::{ChatError, ChatEvent, DoneReason, HookMessage, NoticeLevel};
use crate::types::{Message, Role, ToolCall, Usage};

/// Which model call of a chat this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallPhase {
    /// The one call of a chat without tools.
    Direct,
    /// The planning round (no tools sent).
    Planning,
    /// An agent round, counted from 1.
    Agent { round: usize },
    /// The last call of a chat that reached a limit (`limits.summary_on_limit`): no tools sent.
    Summary,
    /// The summary call of a history compaction (docs/protocol.md §10): no tools, no text
    /// streamed, no `pre_llm_request` / `post_llm_response` (the compaction hooks are its hooks).
    Compaction,
}

/// One finished step of the chat, newest last.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Step {
    #[non_exhaustive]
    Assistant {
        content: String,
        tool_calls: Vec<ToolCall>,
        /// The tokens of the model call that made it, as the upstream reported them.
        usage: Usage,
    },
    #[non_exhaustive]
    Tool {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
        /// How long the tool ran (zero for a call that did not run on the server: skipped,
        /// refused, or a client tool's).
        duration: Duration,
    },
}

/// Everything a hook can see and change about the running chat. Lives as long as the chat.
///
/// The chat's record — [`steps`](Self::steps), [`usage`](Self::usage),
/// [`tool_calls_count`](Self::tool_calls_count) — is kept by the agent loop: a hook reads it but
/// cannot change it.
///
/// ```
/// fn spent(ctx: &hookwire::hooks::HookContext) -> u64 {
///     ctx.usage().prompt_tokens + ctx.usage().completion_tokens
/// }
/// ```
///
/// ```compile_fail,E0616
/// fn reset(ctx: &mut hookwire::hooks::HookContext) {
///     ctx.usage = Default::default();
/// }
/// ```
#[derive(Debug)]
pub struct HookContext {
    pub session_id: String,
    /// Who the chat is for, when the server signs people in (`auth.jwt`).
    pub person: Option<crate::types::Person>,
    /// The chat's id (the OpenHarness format's `run_id`).
    pub run_id: String,
    /// The persistent message list (`full_messages`): changes here persist for later calls.
    pub messages: Vec<Message>,
    /// The model name sent upstream.
    pub model: String,
    /// The skills enabled for this chat.
    pub skills: Vec<String>,
    /// The workspace root the tools work in.
    pub cwd: PathBuf,
    /// The current agent round (0 before the loop).
    pub iteration: usize,
    pub max_steps: usize,
    /// Free-form state shared by all hooks of this chat.
    pub store: Map<String, Value>,
    // The chat's record, kept by the agent loop: private, so a hook can read it (`steps()`,
    // `usage()`, `tool_calls_count()`) but not make the `done` usage or a later hook's view lie.
    steps: Vec<Step>,
    usage: Usage,
    /// What the chat's hooks spent on model calls (shared with the chains, the async queue and
    /// `agent` hooks' sub-agents), and what they may still spend.
    hook_spend: std::sync::Arc<super::spend::HookSpend>,
    tool_calls_count: usize,
    tools: std::sync::Arc<[ToolSpec]>,
    disabled_tools: BTreeSet<String>,
    outbox: Vec<ChatEvent>,
    /// The chat's event channel, for work that outlives a hook call (an `async` hook's
    /// notice); weak, so it never keeps the chat's stream open.
    late_events: Option<LateEvents>,
    next_injection: u64,
    /// The client asked for `hook_trace` events.
    trace: bool,
    config: RunConfig,
    /// An approval resume is rebuilding the chat's start (see [`HookContext::replaying`]).
    replaying: bool,
    /// Text hooks added at a compaction to keep after its summary (Claude Code's `SessionStart`
    /// with source `compact`), taken by the compaction.
    after_summary: Vec<String>,
}

/// The chat's settings, as its hooks may read them (`ctx.config()`); a hook cannot change them.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RunConfig {
    /// The model name sent upstream.
    pub model: String,
    /// Agent rounds before the chat ends with `max_steps`.
    pub max_steps: usize,
    /// The summed usage at which the loop ends with `max_tokens`; `None` = no limit.
    pub max_total_tokens: Option<u64>,
    /// How often hooks may send the model back with feedback in one chat.
    pub max_retries: usize,
    /// Tool calls run in one round.
    pub max_tool_calls_per_round: usize,
    /// A last call asks for a summary at a limit.
    pub summary_on_limit: bool,
}

impl RunConfig {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        model: String,
        max_steps: usize,
        max_total_tokens: Option<u64>,
        max_retries: usize,
        max_tool_calls_per_round: usize,
        summary_on_limit: bool,
    ) -> Self {
        Self {
            model,
            max_steps,
            max_total_tokens,
            max_retries,
            max_tool_calls_per_round,
            summary_on_limit,
        }
    }
}

/// Events for a chat's client from work that runs beside the chat (an `async: true` hook's
/// `systemMessage`): they reach the client only while the chat runs. The sender is weak, so
/// once the chat's task ends nothing is sent; and a stream ends at `done` or `error`, so what
/// arrives after it is never shown.
///
/// A late event wakes the chat's stream if it waits (see [`crate::types::EventSender`]).
#[derive(Debug, Clone)]
pub(crate) struct LateEvents {
    events: crate::types::WeakEventSender,
}

impl LateEvents {
    pub(crate) fn new(events: &crate::types::EventSender) -> Self {
        Self {
            events: events.downgrade(),
        }
    }
    /// Sends a notice if the chat still runs (never waits; at most one notice per async hook
    /// run, whose queue is bounded, so a slow client cannot make them pile up).
    pub(crate) fn notify(&self, level: NoticeLevel, message: String, source: String) -> bool {
        let Some(events) = self.events.upgrade() else {
            return false;
        };
        let notice = ChatEvent::Notice {
            level,
            message,
            source,
        };
        events.send(notice).is_ok()
    }
}

impl HookContext {
    pub fn new(
        session_id: String,
        run_id: String,
        model: String,
        tools: impl Into<std::sync::Arc<[ToolSpec]>>,
    ) -> Self {
        Self {
            session_id,
            person: None,
            run_id,
            messages: Vec::new(),
            model,
            skills: Vec::new(),
            cwd: PathBuf::new(),
            iteration: 0,
            max_steps: 0,
            store: Map::new(),
            steps: Vec::new(),
            usage: Usage::default(),
            hook_spend: Default::default(),
            tool_calls_count: 0,
            tools: tools.into(),
            disabled_tools: BTreeSet::new(),
            outbox: Vec::new(),
            late_events: None,
            next_injection: 0,
            trace: false,
            config: RunConfig::default(),
            replaying: false,
            after_summary: Vec::new(),
        }
    }

    // ─── the chat's record (read-only to hooks) ───

    /// The finished steps of the chat, newest last.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }
    /// Tokens used so far by every model call of this chat, its hooks' included (and
    /// itemised: `hook_calls`, `hook_prompt_tokens`, `hook_completion_tokens`).
    pub fn usage(&self) -> Usage {
        let mut usage = self.usage;
        usage += self.hook_spend.usage();
        usage
    }
    /// Prompt and completion tokens of every model call so far, its hooks' included (seed
    /// 002's `total_tokens`).
    pub fn total_tokens(&self) -> u64 {
        let usage = self.usage();
        usage.prompt_tokens + usage.completion_tokens
    }
    /// The meter of the hooks' model calls (see [`super::spend`]).
    pub(crate) fn hook_spend(&self) -> &std::sync::Arc<super::spend::HookSpend> {
        &self.hook_spend
    }
    /// The chat's limits on its hooks' model calls (`limits.max_hook_model_calls`,
    /// `limits.max_total_tokens`); set before any hook runs.
    pub(crate) fn set_hook_spend(&mut self, spend: std::sync::Arc<super::spend::HookSpend>) {
        self.hook_spend = spend;
    }
    /// The newest step (the Python agent-hooks design's `get_last_step()`).
    pub fn last_step(&self) -> Option<&Step> {
        self.steps.last()
    }
    /// The newest model step: during `post_llm_response`, the response being handled.
    pub fn last_assistant_step(&self) -> Option<&Step> {
        self.steps
            .iter()
            .rev()
            .find(|step| matches!(step, Step::Assistant { .. }))
    }
    /// The newest tool step.
    pub fn last_tool_step(&self) -> Option<&Step> {
        self.steps
            .iter()
            .rev()
            .find(|step| matches!(step, Step::Tool { .. }))
    }
    /// The tool steps, oldest first; only those of `tool_name` when given.
    pub fn tool_steps(&self, tool_name: Option<&str>) -> Vec<&Step> {
        self.steps
            .iter()
            .filter(|step| match step {
                Step::Tool { name, .. } => tool_name.is_none_or(|wanted| wanted == name),
                Step::Assistant { .. } => false,
            })
            .collect()
    }
    /// The results of the tool steps (of `tool_name` when given), oldest first, empty ones left
    /// out (the Python agent-hooks design's `get_tool_results`).
    pub fn tool_results(&self, tool_name: Option<&str>) -> Vec<&str> {
        self.tool_steps(tool_name)
            .into_iter()
            .filter_map(|step| match step {
                Step::Tool { content, .. } if !content.is_empty() => Some(content.as_str()),
                _ => None,
            })
            .collect()
    }
    /// Tool calls answered after their hooks so far (run, skipped by a hook, or failed); calls
    /// past the round's cap, which never reach their hooks, do not count.
    pub fn tool_calls_count(&self) -> usize {
        self.tool_calls_count
    }
    /// The agent loop records a finished step.
    pub(crate) fn record_step(&mut self, step: Step) {
        self.steps.push(step);
    }
    /// The agent loop replaces the step at `index` (a model step that `post_llm_response`
    /// rewrote after it was recorded).
    pub(crate) fn update_step(&mut self, index: usize, step: Step) {
        if let Some(slot) = self.steps.get_mut(index) {
            *slot = step;
        }
    }
    /// The agent loop adds one model call's usage.
    pub(crate) fn record_usage(&mut self, usage: Usage) {
        self.usage += usage;
        self.hook_spend.record_chat(usage);
    }
    /// The agent loop counts one handled tool call.
    pub(crate) fn count_tool_call(&mut self) {
        self.tool_calls_count += 1;
    }

    // ─── tools ───

    /// Every tool of the chat, enabled or not.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }
    /// The tools the next model call will be offered.
    pub fn active_tools(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| !self.disabled_tools.contains(&t.name))
            .cloned()
            .collect()
    }
    pub fn is_tool_enabled(&self, name: &str) -> bool {
        !self.disabled_tools.contains(name) && self.tools.iter().any(|t| t.name == name)
    }
    pub fn disable_tool(&mut self, name: &str) {
        self.disabled_tools.insert(name.to_string());
    }
    pub fn enable_tool(&mut self, name: &str) {
        self.disabled_tools.remove(name);
    }
    pub fn disable_all_tools(&mut self) {
        self.disabled_tools = self.tools.iter().map(|t| t.name.clone()).collect();
    }
    pub fn enable_all_tools(&mut self) {
        self.disabled_tools.clear();
    }

    // ─── messages ───

    /// The first system message (the system prompt), if any.
    pub fn system_prompt(&self) -> Option<&str> {
        self.system_message().map(|m| m.content.as_str())
    }
    /// The message that holds the system prompt (the Python agent-hooks design's `get_system_message`).
    pub fn system_message(&self) -> Option<&Message> {
        system_prompt::find(&self.messages)
    }
    /// Sets or replaces the system prompt (persistent).
    pub fn set_system_prompt(&mut self, content: impl Into<String>) {
        system_prompt::set(&mut self.messages, content.into());
    }
    /// Appends to the system prompt, separated by a blank line (persistent).
    pub fn append_to_system_prompt(&mut self, content: &str) {
        self.append_to_system_prompt_with(content, "\n\n");
    }
    /// Appends to the system prompt after `separator`, or makes `content` the system prompt
    /// when there is none (persistent).
    pub fn append_to_system_prompt_with(&mut self, content: &str, separator: &str) {
        system_prompt::append(&mut self.messages, content, separator);
    }
    /// Puts `content` before the system prompt, separated by a blank line, or makes it the
    /// system prompt when there is none (persistent).
    pub fn prepend_to_system_prompt(&mut self, content: &str) {
        self.prepend_to_system_prompt_with(content, "\n\n");
    }
    /// Puts `content` and `separator` before the system prompt, or makes `content` the
    /// system prompt when there is none (persistent).
    pub fn prepend_to_system_prompt_with(&mut self, content: &str, separator: &str) {
        system_prompt::prepend(&mut self.messages, content, separator);
    }
    /// The chat's settings (read-only).
    pub fn config(&self) -> &RunConfig {
        &self.config
    }
    pub(crate) fn set_config(&mut self, config: RunConfig) {
        self.config = config;
    }
    pub fn last_user_message(&self) -> Option<&Message> {
        self.messages.iter().rev().find(|m| m.role == Role::User)
    }
    /// The messages with `role`, in order (the Python agent-hooks design's `get_messages_by_role`).
    pub fn messages_by_role(&self, role: Role) -> Vec<&Message> {
        self.messages.iter().filter(|m| m.role == role).collect()
    }
    /// A fresh mark for messages a hook injects, so it can remove exactly those later.
    pub fn new_injection_id(&mut self) -> u64 {
        self.next_injection += 1;
        self.next_injection
    }
    /// Removes every message carrying the injection mark `id`.
    pub fn remove_injected(&mut self, id: u64) {
        self.messages.retain(|m| m.injection != Some(id));
    }

    // ─── events for the client ───

    /// A `notice` frame for the person.
    pub fn notify(
        &mut self,
        level: NoticeLevel,
        message: impl Into<String>,
        source: impl Into<String>,
    ) {
        self.outbox.push(ChatEvent::Notice {
            level,
            message: message.into(),
            source: source.into(),
        });
    }
    /// A `hook` frame: the client appends `message` to its history.
    pub fn emit_hook(&mut self, message: HookMessage) {
        self.outbox.push(ChatEvent::Hook(message));
    }
    /// `true` while an approval resume rebuilds the chat as it was (docs/protocol.md §13):
    /// `post_send_message` and `before_first_agent` run again so that what lasts only for the
    /// request is there again; what the client or the chat already keeps (persistent hook
    /// messages, additions to the system prompt, which the resumed state carries) must not be
    /// added a second time.
    pub fn replaying(&self) -> bool {
        self.replaying
    }
    /// During a compaction's hooks: `text` is kept after the summary, as a user message of the
    /// history (in this chat's list, and for the client in the `compact` frame's `context`).
    pub(crate) fn keep_after_summary(&mut self, text: &str) {
        self.after_summary.push(text.to_string());
    }

    /// What hooks asked to keep after the summary (the compaction takes it).
    pub(crate) fn take_after_summary(&mut self) -> Vec<String> {
        std::mem::take(&mut self.after_summary)
    }

    pub(crate) fn set_replaying(&mut self, on: bool) {
        self.replaying = on;
    }
    /// Whether the client asked for `hook_trace` events.
    pub fn tracing(&self) -> bool {
        self.trace
    }
    pub(crate) fn set_tracing(&mut self, on: bool) {
        self.trace = on;
    }
    /// A `hook_trace` event, when the client asked for them.
    pub(crate) fn trace(&mut self, trace: crate::types::HookTrace) {
        if self.trace {
            self.outbox.push(ChatEvent::HookTrace(trace));
        }
    }
    /// The events hooks emitted since the last call; the agent sends them out.
    pub(crate) fn take_outbox(&mut self) -> Vec<ChatEvent> {
        std::mem::take(&mut self.outbox)
    }
    /// The agent gives the chat's event channel and the waker of its reader, for events that
    /// come after a hook call ended.
    pub(crate) fn set_late_events(&mut self, late: LateEvents) {
        self.late_events = Some(late);
    }
    /// Where events from work beside the chat go; `None` outside a chat.
    pub(crate) fn late_events(&self) -> Option<LateEvents> {
        self.late_events.clone()
    }
}

/// What a context compaction is about to do, or did (docs/protocol.md §10's hook metadata).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CompactInfo {
    /// `auto` (hookwire decided it) or `manual` (the client asked).
    pub trigger: String,
    pub context_window_tokens: u64,
    /// The window times `compact_threshold`.
    pub compact_threshold_tokens: u64,
    /// The estimated input of the model call before compaction.
    pub estimated_input_tokens: u64,
    /// And after it.
    pub estimated_post_compact_tokens: u64,
    /// Messages compacted (micro compaction: the tool results stubbed).
    pub summarized_message_count: usize,
    /// Groups kept as they are (micro compaction: the agent rounds kept in full).
    pub keep_recent_group_count: usize,
    /// The configured number of groups to keep (`context.keep_recent_groups`; micro
    /// compaction: `micro_keep_rounds`): more than are kept when the history has fewer.
    pub configured_recent_group_count: usize,
    /// Auto and manual compaction: the place (0-based) in the client's history, as the chat
    /// frame sent it, of the last message the summary replaces.
    pub compact_through: Option<usize>,
    /// Auto and manual compaction: the first message of the history kept as it is (none when
    /// every group is summarised).
    pub boundary: Option<crate::types::Message>,
}

/// The request about to be sent to the model: a copy, so changes affect this call only.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmRequest {
    pub phase: CallPhase,
    pub messages: Vec<Message>,
    /// Empty = no tools offered.
    pub tools: Vec<ToolSpec>,
}

impl LlmRequest {
    /// Adds a message for this call only: before the last user message, or at the end.
    pub fn inject_message(
        &mut self,
        role: Role,
        content: impl Into<String>,
        before_last_user: bool,
    ) {
        let message = Message::new(role, content);
        let position = before_last_user
            .then(|| self.messages.iter().rposition(|m| m.role == Role::User))
            .flatten();
        match position {
            Some(index) => self.messages.insert(index, message),
            None => self.messages.push(message),
        }
    }
    /// Appends to the system prompt for this call only.
    pub fn inject_system_context(&mut self, content: &str) {
        system_prompt::append(&mut self.messages, content, "\n\n");
    }
}

/// What the model answered in one call.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmResponse {
    pub phase: CallPhase,
    /// The assistant text (for the planning round: the whole reply, marker included).
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Usage,
}

/// A tool call about to run; hooks may change its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallInfo {
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
}

impl ToolCallInfo {
    /// Sets one argument (the Python agent-hooks design's `update_argument`); arguments that are not a JSON object
    /// become one.
    pub fn update_argument(&mut self, key: &str, value: Value) {
        if !self.arguments.is_object() {
            self.arguments = Value::Object(Map::new());
        }
        if let Value::Object(arguments) = &mut self.arguments {
            arguments.insert(key.to_string(), value);
        }
    }
}

/// A tool's outcome; hooks may rewrite it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultInfo {
    pub call_id: String,
    pub name: String,
    pub content: String,
    pub is_error: bool,
    pub duration: Duration,
}

/// The end of a chat as the client will see it in `done`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput {
    pub reason: DoneReason,
    pub content: String,
    pub usage: Usage,
}

/// How a chat ended, as the client sees it: for [`AgentHook::on_run_end`](super::AgentHook::on_run_end).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunOutcome {
    /// `done`, whatever its reason (`cancelled` included).
    Done(RunOutput),
    /// `error`.
    Failed(ChatError),
}

#[cfg(test)]
mod tests;
