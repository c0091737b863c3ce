//! [`ExternalHooks`]: a fixed set of YAML hooks as one [`AgentHook`].
//!
//! Every method takes one path, [`ExternalHooks::fire`]: when the event has no hooks it returns
//! the default at once (nothing is copied); otherwise it reads the event's values from the call
//! ([`Call::state`]), runs the chain, sends the chain's notices, writes what the hooks changed
//! back where it came from ([`Call::write_back`]) and turns the chain's decision into the
//! method's answer ([`Decision`]). Which values an event carries is the table in
//! [`Call::state`]; which of them a hook may change is [`super::chain`]'s `apply`.
//!
//! What lives as long as a chat is kept by its run id ([`ChatState`]): Claude Code's
//! transcript file (removed when the chat ends, and when the adapter is dropped, which for the
//! hook files' per-chat snapshot is the end of the chat however it ended), whether a stop hook
//! already sent the model back (`stop_hook_active`), and messages that follow the user input.
//! What a session's `session_start` hooks left ([`SessionCarry`]) goes into each of its chats.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use super::chain::{Background, Chain, ChainControl, ChainOutcome};
use super::dialect::transcript::Transcript;
use super::event::{Dialect, Event};
use super::protocol::{workspace_id, Envelope, EventState};
use super::queue::AsyncHooks;
use super::runner::Runner;
use super::HookSet;
use crate::hooks::spend::HookSpend;
use crate::hooks::{
    AgentHook, CompactInfo, Flow, HookContext, HookResult, LateEvents, LlmRequest, LlmResponse,
    ResponseAction, RunOutput, SessionInfo, StopAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use crate::types::{ChatError, Message, NoticeLevel, PendingCall, Role};

/// The adapter for one fixed set: the hook files as a chat started with them (see
/// [`super::HookFiles`]), or a chat's session hooks.
pub(crate) struct ExternalHooks {
    pub(super) set: Arc<HookSet>,
    runner: Arc<Runner>,
    /// Set for per-chat session hooks: their origin in logs.
    label: &'static str,
    /// What the session's `session_start` hooks left for its chats.
    carry: Option<Arc<SessionCarry>>,
    /// Where `async: true` hooks run; `None`: in line, like the others.
    queue: Option<Arc<AsyncHooks>>,
    /// The state of each running chat, by run id.
    chats: Mutex<HashMap<String, ChatState>>,
}

/// What `session_start` hooks left for the session's chats: messages each chat starts with
/// (seed 001 `inject_messages`, after the system prompt, so its first call and every later one
/// sees them) and context for its system prompt (Claude Code's and Gemini CLI's
/// `additionalContext`, or a Claude hook's plain stdout).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SessionCarry {
    pub(crate) messages: Vec<Message>,
    pub(crate) context: Vec<String>,
}

impl SessionCarry {
    pub(crate) fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.context.is_empty()
    }
}

/// What lives as long as one chat.
#[derive(Debug, Default)]
struct ChatState {
    /// Claude Code's `transcript_path`, made when a Claude-dialect hook first needs it.
    transcript: Option<Transcript>,
    /// A stop hook sent the model back in this chat.
    stop_hook_active: bool,
    /// User messages that follow the input (a `pre_send_message` hook's `retry_feedback`).
    after_input: Vec<Message>,
}

impl ExternalHooks {
    pub(crate) fn new(set: HookSet, runner: Arc<Runner>) -> Self {
        Self::of(Arc::new(set), runner)
    }

    pub(super) fn of(set: Arc<HookSet>, runner: Arc<Runner>) -> Self {
        Self {
            set,
            runner,
            label: "external",
            carry: None,
            queue: None,
            chats: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn with_label(mut self, label: &'static str) -> Self {
        self.label = label;
        self
    }

    /// The chats of this adapter start with what their session's `session_start` hooks left.
    pub(crate) fn with_carry(mut self, carry: Option<Arc<SessionCarry>>) -> Self {
        self.carry = carry;
        self
    }

    /// Its `async: true` hooks run from `queue`.
    pub(crate) fn with_queue(mut self, queue: Option<Arc<AsyncHooks>>) -> Self {
        self.queue = queue;
        self
    }

    fn chats(&self) -> MutexGuard<'_, HashMap<String, ChatState>> {
        match self.chats.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// `event`'s chain; `None` when the event has no hooks. Its async hooks' notices go to
    /// `notices` (the chat's).
    fn chain(
        &self,
        event: Event,
        notices: Option<LateEvents>,
        spend: &Arc<HookSpend>,
    ) -> Option<Chain<'_>> {
        self.chain_of(event, self.set.hooks(event), notices, spend)
    }

    /// A chain of `hooks` (all or some of `event`'s).
    fn chain_of<'a>(
        &'a self,
        event: Event,
        hooks: &'a [Arc<super::config::HookDef>],
        notices: Option<LateEvents>,
        spend: &Arc<HookSpend>,
    ) -> Option<Chain<'a>> {
        (!hooks.is_empty()).then(|| Chain {
            event,
            hooks,
            budget: self.runner.chain_budget,
            background: self.queue.as_deref().map(|queue| Background {
                queue,
                notices,
                source: self.label,
            }),
            spend: spend.clone(),
        })
    }

    /// The one path of every chat event (see the module doc). Never `Err`: a hook's failure is
    /// the chain's to log.
    async fn fire<A: Decision>(&self, ctx: &mut HookContext, call: Call<'_>) -> HookResult<A> {
        let event = call.event();
        let all = self.set.hooks(event);
        // After a compaction, only Claude Code's `SessionStart` hooks fire (with source
        // `compact`): the other dialects have no such source.
        let claude: Vec<_>;
        let hooks = if matches!(call, Call::SessionStartAfterCompact(_)) {
            claude = all
                .iter()
                .filter(|hook| hook.dialect == Dialect::Claude)
                .cloned()
                .collect();
            &claude[..]
        } else {
            all
        };
        let Some(chain) = self.chain_of(event, hooks, ctx.late_events(), ctx.hook_spend()) else {
            return Ok(A::default());
        };
        let mut state = call.state(ctx);
        let envelope = self.envelope(ctx, &chain, &state);
        let mut outcome = chain.run(self.runner.as_ref(), &envelope, &mut state).await;
        let runs = std::mem::take(&mut outcome.ran);
        let traced = if ctx.tracing() { runs } else { Vec::new() };
        for run in traced {
            let event_name = chain
                .hooks
                .iter()
                .find(|hook| hook.name == run.name)
                .map_or_else(
                    || event.as_str().to_string(),
                    |hook| hook.event_name.clone(),
                );
            ctx.trace(crate::types::HookTrace {
                event: event_name,
                hook: run.name,
                level: run.level.into(),
                ms: (run.ms * 10.0).round() / 10.0,
                outcome: run.ran.label().into(),
                changed: run.changed.into_iter().map(str::to_string).collect(),
            });
        }
        for message in std::mem::take(&mut outcome.notices) {
            ctx.notify(NoticeLevel::Info, message, self.label);
        }
        for message in std::mem::take(&mut outcome.warnings) {
            ctx.notify(NoticeLevel::Warn, message, self.label);
        }
        if event == Event::Stop
            && outcome.control.is_none()
            && !outcome.additional_context.is_empty()
        {
            // Context from a `stop` hook that neither retries nor stops would reach no model
            // call: the model goes on with it, as Claude Code goes on with a Stop hook's
            // additionalContext (bounded by `max_retries`).
            let context = std::mem::take(&mut outcome.additional_context).join("\n\n");
            outcome.control = Some(ChainControl::Retry(context));
        }
        if let Some(ChainControl::Retry(feedback)) = &outcome.control {
            let mut chats = self.chats();
            let chat = chats.entry(ctx.run_id.clone()).or_default();
            match event {
                Event::Stop => chat.stop_hook_active = true,
                Event::PreSendMessage => chat.after_input.push(Message::user(feedback.clone())),
                _ => {}
            }
        }
        call.write_back(ctx, state, &outcome);
        Ok(decide(outcome.control))
    }

    /// The envelope of a chat event; when a Claude-dialect hook is in the chain, the chat's
    /// transcript is (re)written first (at `stop`, with the answer being stopped on).
    fn envelope(&self, ctx: &HookContext, chain: &Chain<'_>, state: &EventState) -> Envelope {
        let mut envelope = Envelope {
            session_id: ctx.session_id.clone(),
            run_id: Some(ctx.run_id.clone()),
            cwd: ctx.cwd.display().to_string(),
            model: ctx.model.clone(),
            workspace_id: workspace_id(&ctx.cwd),
            ..Envelope::default()
        };
        let claude = chain
            .hooks
            .iter()
            .any(|hook| hook.dialect == Dialect::Claude);
        let mut chats = self.chats();
        if claude {
            chats.entry(ctx.run_id.clone()).or_default();
        }
        let Some(chat) = chats.get_mut(&ctx.run_id) else {
            return envelope;
        };
        envelope.stop_hook_active = chat.stop_hook_active;
        if claude {
            let last = state
                .assistant_output
                .as_deref()
                .filter(|_| chain.event == Event::Stop);
            envelope.transcript_path = write_transcript(chat, ctx, last);
        }
        envelope
    }

    /// The chat ended: its transcript is removed and its state forgotten.
    fn end_chat(&self, ctx: &mut HookContext) {
        self.chats().remove(&ctx.run_id);
    }

    /// The start of a chat, before anything else: the session's carry goes in, then seed 004's
    /// `before_context_build` fires.
    async fn start_chat(&self, ctx: &mut HookContext) -> HookResult {
        if let Some(carry) = &self.carry {
            // After the leading system message: the session's start comes before its history.
            let at = ctx
                .messages
                .iter()
                .position(|m| m.role != Role::System)
                .unwrap_or(ctx.messages.len());
            for (offset, message) in carry.messages.iter().enumerate() {
                ctx.messages.insert(at + offset, message.clone());
            }
            for context in &carry.context {
                ctx.append_to_system_prompt(context);
            }
        }
        self.fire::<()>(ctx, Call::BeforeContextBuild).await
    }

    /// The input is in the list: what hooks asked to follow it goes in, then seed 004's
    /// `after_context_build` fires.
    async fn after_input(&self, ctx: &mut HookContext) -> HookResult {
        let follow = self
            .chats()
            .get_mut(&ctx.run_id)
            .map(|chat| std::mem::take(&mut chat.after_input))
            .unwrap_or_default();
        ctx.messages.extend(follow);
        self.fire::<()>(ctx, Call::AfterContextBuild).await
    }

    /// After a compaction (its post hooks have run): Claude Code's `SessionStart` hooks fire
    /// again with source `compact`; their context goes into the rest of the chat.
    async fn session_start_after_compact(&self, ctx: &mut HookContext, info: &CompactInfo) {
        let _: HookResult = self.fire(ctx, Call::SessionStartAfterCompact(info)).await;
    }

    /// The connection events: no chat, so the envelope is the server's and notices go nowhere.
    /// What `session_start` hooks leave for the session's chats is returned.
    pub(super) async fn fire_session(&self, event: Event, session: &SessionInfo) -> SessionCarry {
        // No chat to count them in: the connection event's hooks have a limit of their own.
        let spend = Arc::new(HookSpend::new(self.runner.max_hook_model_calls, None));
        let Some(chain) = self.chain(event, None, &spend) else {
            return SessionCarry::default();
        };
        let envelope = Envelope {
            session_id: session.session_id.clone(),
            cwd: self.runner.cwd.display().to_string(),
            model: self.runner.model_name.clone(),
            run_id: None,
            workspace_id: workspace_id(&self.runner.cwd),
            ..Envelope::default()
        };
        let mut state = EventState::default();
        let outcome = chain.run(self.runner.as_ref(), &envelope, &mut state).await;
        SessionCarry {
            messages: outcome.inject_messages,
            context: outcome.chat_context,
        }
    }
}

/// Writes the chat's transcript (made at first use) and returns its path. A transcript that
/// cannot be written is logged; the hooks then get an empty path.
fn write_transcript(chat: &mut ChatState, ctx: &HookContext, last: Option<&str>) -> Option<String> {
    if chat.transcript.is_none() {
        let dir = super::dialect::transcript::folder_for(&ctx.cwd)?;
        match Transcript::create(&dir) {
            Ok(transcript) => chat.transcript = Some(transcript),
            Err(error) => {
                tracing::warn!(dir = %dir.display(), %error, "cannot make the chat's transcript for Claude Code hooks");
                return None;
            }
        }
    }
    let transcript = chat.transcript.as_mut()?;
    match transcript.write(&ctx.session_id, &ctx.cwd, &ctx.messages, last) {
        Ok(()) => Some(transcript.path().display().to_string()),
        Err(error) => {
            tracing::warn!(%error, "cannot write the chat's transcript");
            None
        }
    }
}

/// A chat event with the values of its call, borrowed: the event's values are read from them
/// and the hooks' changes written back to them.
enum Call<'a> {
    BeforeContextBuild,
    PreSendMessage(&'a mut String),
    AfterContextBuild,
    PostSendMessage,
    PreLlmRequest(&'a mut LlmRequest),
    PostLlmResponse(&'a mut LlmResponse),
    ApprovalRequired(&'a [PendingCall]),
    PreAutoCompact(&'a CompactInfo, &'a mut String),
    PostAutoCompact(&'a CompactInfo, &'a mut String),
    /// Claude Code's `SessionStart` with source `compact`, after a compaction.
    SessionStartAfterCompact(&'a CompactInfo),
    PreMicroCompact(&'a CompactInfo),
    PostMicroCompact(&'a CompactInfo),
    PreToolExecution(&'a mut ToolCallInfo),
    PostToolExecution(&'a ToolCallInfo, &'a mut ToolResultInfo),
    PostToolExecutionFailure(&'a ToolCallInfo, &'a mut ToolResultInfo),
    Stop(&'a str),
    RunCompleted(&'a mut RunOutput),
    RunFailed(&'a ChatError),
}

impl Call<'_> {
    fn event(&self) -> Event {
        match self {
            Call::BeforeContextBuild => Event::BeforeContextBuild,
            Call::PreSendMessage(_) => Event::PreSendMessage,
            Call::AfterContextBuild => Event::AfterContextBuild,
            Call::PostSendMessage => Event::PostSendMessage,
            Call::PreLlmRequest(_) => Event::PreLlmRequest,
            Call::PostLlmResponse(_) => Event::PostLlmResponse,
            Call::ApprovalRequired(_) => Event::Notification,
            Call::PreAutoCompact(..) => Event::PreAutoCompact,
            Call::PostAutoCompact(..) => Event::PostAutoCompact,
            Call::SessionStartAfterCompact(_) => Event::SessionStart,
            Call::PreMicroCompact(_) => Event::PreMicroCompact,
            Call::PostMicroCompact(_) => Event::PostMicroCompact,
            Call::PreToolExecution(_) => Event::PreToolExecution,
            Call::PostToolExecution(..) => Event::PostToolExecution,
            Call::PostToolExecutionFailure(..) => Event::PostToolExecutionFailure,
            Call::Stop(_) => Event::Stop,
            Call::RunCompleted(_) => Event::RunCompleted,
            Call::RunFailed(_) => Event::RunFailed,
        }
    }

    /// The values the event's hooks see (copies: the chain works on them).
    fn state(&self, ctx: &HookContext) -> EventState {
        let chat = || Some(ctx.messages.clone());
        let last_input = || ctx.last_user_message().map(|m| m.content.clone());
        let tool = |call: &ToolCallInfo| EventState {
            tool_name: Some(call.name.clone()),
            tool_call_id: Some(call.call_id.clone()),
            tool_arguments: Some(call.arguments.clone()),
            ..EventState::default()
        };
        match self {
            Call::BeforeContextBuild | Call::AfterContextBuild => EventState {
                messages: chat(),
                ..EventState::default()
            },
            Call::PreSendMessage(input) => EventState {
                user_input: Some(input.to_string()),
                messages: chat(),
                ..EventState::default()
            },
            Call::PostSendMessage => EventState {
                user_input: last_input(),
                messages: chat(),
                ..EventState::default()
            },
            Call::PreLlmRequest(request) => EventState {
                messages: Some(request.messages.clone()),
                system_prompt: system_prompt(&request.messages),
                tools: Some(request.tools.iter().map(|t| t.name.clone()).collect()),
                ..EventState::default()
            },
            Call::PostLlmResponse(response) => EventState {
                assistant_output: Some(response.content.clone()),
                messages: chat(),
                ..EventState::default()
            },
            // The first waiting call, as the tool of the notification.
            Call::ApprovalRequired(calls) => match calls.first() {
                Some(call) => EventState {
                    tool_name: Some(call.name.clone()),
                    tool_call_id: Some(call.call_id.clone()),
                    tool_arguments: Some(call.arguments.clone()),
                    ..EventState::default()
                },
                None => EventState::default(),
            },
            // Seed 001: the chat's messages and system prompt, before the summary call.
            Call::PreAutoCompact(info, _) => EventState {
                messages: chat(),
                system_prompt: ctx.system_prompt().map(str::to_string),
                compaction: Some((*info).clone()),
                ..EventState::default()
            },
            // The chat's messages as they stand after compaction, and the summary.
            Call::PostAutoCompact(info, summary) => EventState {
                messages: chat(),
                compaction: Some((*info).clone()),
                summary: Some(summary.to_string()),
                ..EventState::default()
            },
            // Before: the chat's messages as they stand; after: the call's, compacted (the
            // agent puts them in `ctx.messages` while the hooks run).
            Call::PreMicroCompact(info)
            | Call::PostMicroCompact(info)
            | Call::SessionStartAfterCompact(info) => EventState {
                messages: chat(),
                compaction: Some((*info).clone()),
                ..EventState::default()
            },
            Call::PreToolExecution(call) => tool(call),
            Call::PostToolExecution(call, result) => EventState {
                tool_result: Some(result.content.clone()),
                ..tool(call)
            },
            Call::PostToolExecutionFailure(call, result) => EventState {
                tool_error: Some(result.content.clone()),
                ..tool(call)
            },
            Call::Stop(output) => EventState {
                user_input: last_input(),
                messages: chat(),
                system_prompt: ctx.system_prompt().map(str::to_string),
                assistant_output: Some(output.to_string()),
                ..EventState::default()
            },
            Call::RunCompleted(output) => EventState {
                assistant_output: Some(output.content.clone()),
                ..EventState::default()
            },
            Call::RunFailed(error) => EventState {
                error: Some(error.to_string()),
                ..EventState::default()
            },
        }
    }

    /// Puts the values the hooks changed back where they came from, with the chain's extras
    /// (injected messages, context, retry feedback) where the event takes them. Context for the
    /// rest of the chat goes into its system prompt (and into this call's request).
    fn write_back(self, ctx: &mut HookContext, state: EventState, outcome: &ChainOutcome) {
        let ended = matches!(self, Call::RunCompleted(_) | Call::RunFailed(_));
        if !ended {
            for context in &outcome.chat_context {
                ctx.append_to_system_prompt(context);
            }
        }
        match self {
            Call::PreSendMessage(input) => put(input, state.user_input),
            Call::AfterContextBuild => put(&mut ctx.messages, state.messages),
            Call::PreLlmRequest(request) => rewrite_request(request, state, outcome),
            Call::PostLlmResponse(response) => put(&mut response.content, state.assistant_output),
            Call::PreToolExecution(call) => put(&mut call.arguments, state.tool_arguments),
            Call::PostToolExecution(_, result) => put(&mut result.content, state.tool_result),
            // Context after a failed tool is for the model, not part of the error: it goes to
            // the end of the system prompt for the rest of the chat.
            Call::PostToolExecutionFailure(_, result) => {
                put(&mut result.content, state.tool_error);
                for context in &outcome.additional_context {
                    ctx.append_to_system_prompt(context);
                }
            }
            Call::Stop(_) => {
                for context in &outcome.additional_context {
                    ctx.append_to_system_prompt(context);
                }
            }
            Call::RunCompleted(output) => put(&mut output.content, state.assistant_output),
            // Seed 001: `additional_context` goes to the system prompt of the call it precedes,
            // which here is the summary call.
            Call::PreAutoCompact(_, summary_prompt) => {
                for context in &outcome.additional_context {
                    summary_prompt.push_str("\n\n");
                    summary_prompt.push_str(context);
                }
            }
            Call::PostAutoCompact(_, summary) => {
                put(&mut ctx.messages, state.messages);
                put(summary, state.summary);
            }
            // The chat's messages are this call's, compacted, while its hooks run.
            Call::PostMicroCompact(_) => put(&mut ctx.messages, state.messages),
            Call::BeforeContextBuild
            | Call::ApprovalRequired(_)
            | Call::PostSendMessage
            | Call::PreMicroCompact(_)
            | Call::SessionStartAfterCompact(_)
            | Call::RunFailed(_) => {}
        }
    }
}

/// Replaces `slot` when the chain left a value (unchanged values are equal: no harm).
fn put<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

fn system_prompt(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .find(|m| m.role == Role::System)
        .map(|m| m.content.clone())
}

/// `pre_llm_request`: the messages, then the system prompt if a hook changed it, then the
/// injected messages, the context and the retry feedback, for this call only.
fn rewrite_request(request: &mut LlmRequest, state: EventState, outcome: &ChainOutcome) {
    let before = system_prompt(&request.messages);
    put(&mut request.messages, state.messages);
    if let Some(prompt) = state.system_prompt.filter(|p| Some(p) != before.as_ref()) {
        match request.messages.iter_mut().find(|m| m.role == Role::System) {
            Some(message) => message.content = prompt,
            None => request.messages.insert(0, Message::system(prompt)),
        }
    }
    request
        .messages
        .extend(outcome.inject_messages.iter().cloned());
    for context in outcome
        .additional_context
        .iter()
        .chain(&outcome.chat_context)
    {
        request.inject_system_context(context);
    }
    if let Some(ChainControl::Retry(feedback)) = &outcome.control {
        request.messages.push(Message::user(feedback.clone()));
    }
}

/// A method's answer from the decision that ended the chain. A decision an answer cannot take
/// is its default (`apply` lets no such decision through: a `skip` only ends a tool chain).
trait Decision: Default {
    fn stop(_reason: String) -> Self {
        Self::default()
    }
    fn skip(_reason: String) -> Self {
        Self::default()
    }
    fn retry(_feedback: String) -> Self {
        Self::default()
    }
    fn ask(_reason: String) -> Self {
        Self::default()
    }
}

/// No decision: the default answer (go on, run the tool, finish).
fn decide<A: Decision>(control: Option<ChainControl>) -> A {
    match control {
        None => A::default(),
        Some(ChainControl::Stop(reason)) => A::stop(reason),
        Some(ChainControl::Skip(reason)) => A::skip(reason),
        Some(ChainControl::Retry(feedback)) => A::retry(feedback),
        Some(ChainControl::Ask(reason)) => A::ask(reason),
    }
}

impl Decision for () {}

impl Decision for Flow {
    fn stop(reason: String) -> Self {
        Flow::Stop { reason }
    }
}

impl Decision for ResponseAction {
    fn stop(reason: String) -> Self {
        ResponseAction::Stop { reason }
    }
    fn retry(feedback: String) -> Self {
        ResponseAction::Retry { feedback }
    }
}

impl Decision for ToolAction {
    fn stop(reason: String) -> Self {
        ToolAction::Stop { reason }
    }
    fn skip(reason: String) -> Self {
        ToolAction::Skip { reason }
    }
    /// Seed 001's `retry_feedback` before a tool: it does not run, the model gets the feedback.
    fn retry(feedback: String) -> Self {
        ToolAction::Skip { reason: feedback }
    }
    fn ask(reason: String) -> Self {
        ToolAction::Ask { reason }
    }
}

impl Decision for StopAction {
    fn stop(reason: String) -> Self {
        StopAction::Stop { reason }
    }
    fn retry(feedback: String) -> Self {
        StopAction::Continue { feedback }
    }
}

/// The [`AgentHook`] impl as a table. A row: a chat method, its values besides `ctx`, its
/// answer, the [`Call`] it fires, what runs `first` (the two `send_message` methods: the chat's
/// start, or what follows the input, then an observe-only seed 004 event), what runs `after` it
/// (another event that follows: `SessionStart` after a compaction) and what runs `then`
/// (the chat's end). Every row takes the one path, [`ExternalHooks::fire`].
macro_rules! chat_events {
    ($($method:ident($($arg:ident: $ty:ty),*) -> $answer:ty
        => $call:expr $(, first $first:ident)? $(, after $after:ident($($after_arg:ident),*))? $(, then $then:ident)?;)*) => {
        #[async_trait]
        impl AgentHook for ExternalHooks {
            fn name(&self) -> &str {
                self.label
            }

            async fn session_start(&self, session: &SessionInfo) -> HookResult {
                let carry = self.fire_session(Event::SessionStart, session).await;
                if !carry.is_empty() {
                    tracing::warn!(hook = self.label, "session_start hooks left messages or context, but this adapter is not the hook files' (which carry them into the session's chats); ignored");
                }
                Ok(())
            }

            async fn session_end(&self, session: &SessionInfo) -> HookResult {
                self.fire_session(Event::SessionEnd, session).await;
                Ok(())
            }

            $(async fn $method(
                &self,
                ctx: &mut HookContext,
                $($arg: $ty),*
            ) -> HookResult<$answer> {
                // An approval resume rebuilding the chat does not run the hook files again.
                if ctx.replaying() {
                    return Ok(Default::default());
                }
                $(self.$first(ctx).await?;)?
                let answer = self.fire(ctx, $call).await;
                $(self.$after(ctx, $($after_arg),*).await;)?
                $(self.$then(ctx);)?
                answer
            })*
        }
    };
}

chat_events! {
    pre_send_message(input: &mut String) -> Flow
        => Call::PreSendMessage(input), first start_chat;
    post_send_message() -> ()
        => Call::PostSendMessage, first after_input;
    pre_llm_request(request: &mut LlmRequest) -> Flow
        => Call::PreLlmRequest(request);
    post_llm_response(response: &mut LlmResponse) -> ResponseAction
        => Call::PostLlmResponse(response);
    approval_required(calls: &[PendingCall]) -> ()
        => Call::ApprovalRequired(calls);
    pre_auto_compact(info: &CompactInfo, summary_prompt: &mut String) -> Flow
        => Call::PreAutoCompact(info, summary_prompt);
    post_auto_compact(info: &CompactInfo, summary: &mut String) -> ()
        => Call::PostAutoCompact(info, summary), after session_start_after_compact(info);
    pre_micro_compact(info: &CompactInfo) -> Flow
        => Call::PreMicroCompact(info);
    post_micro_compact(info: &CompactInfo) -> ()
        => Call::PostMicroCompact(info);
    pre_tool_execution(call: &mut ToolCallInfo) -> ToolAction
        => Call::PreToolExecution(call);
    post_tool_execution(call: &ToolCallInfo, result: &mut ToolResultInfo) -> Flow
        => Call::PostToolExecution(call, result);
    post_tool_execution_failure(call: &ToolCallInfo, result: &mut ToolResultInfo) -> Flow
        => Call::PostToolExecutionFailure(call, result);
    stop(output: &str) -> StopAction
        => Call::Stop(output);
    run_completed(output: &mut RunOutput) -> ()
        => Call::RunCompleted(output), then end_chat;
    run_failed(error: &ChatError) -> ()
        => Call::RunFailed(error), then end_chat;
}
