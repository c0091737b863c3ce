//! [`ExternalHooks`]: a fixed set of YAML hooks as one [`AgentHook`].
//!
//! Every method takes one path, [`ExternalHooks::fire`]: when the event has no hooks it returns
//! the default at once (nothing is copied); otherwise it reads the event's values from the call
//! ([`Call::state`]), runs the chain, sends the chain's notices, writes what the hooks changed
//! back where it came from ([`Call::write_back`]) and turns the chain's decision into the
//! method's answer ([`Decision`]). Which values an event carries and which of them a hook may
//! change are the event's rules (`hook::rules`); [`Call::state`] reads them from the call (a test
//! holds it to the rules) and the chain applies the answers by them.
//!
//! What lives as long as a chat is kept by its run id ([`ChatState`]): Claude Code's
//! transcript file (removed when the chat ends, and when the adapter is dropped, which for the
//! hook files' per-chat snapshot is the end of the chat however it ended), whether a stop hook
//! already sent the model back (`stop_hook_active`), and messages that follow the user input.
//! What a session's `session_start` hooks left ([`SessionCarry`]) goes into each of its chats.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use super::chain::{Background, Chain, ChainControl};
use super::queue::AsyncHooks;
use super::recording::pending;
use super::runner::Runner;
use crate::hooks::external::hook::values::workspace_id;
use crate::hooks::external::hook::{Envelope, Event, EventState, HookDef, HookSet};
use crate::hooks::external::wire;
use crate::hooks::external::wire::transcript::{self, Transcript};
use crate::hooks::record::Recorder;
use crate::hooks::spend::HookSpend;
use crate::hooks::sync::lock;
use crate::hooks::system_prompt;
use crate::hooks::{
    AgentHook, CompactInfo, Flow, HookContext, HookResult, LateEvents, LlmRequest, LlmResponse,
    ResponseAction, RunOutput, SessionInfo, StopAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use crate::types::{ChatError, Message, NoticeLevel, PendingCall};

mod call;
mod decision;

use call::Call;
use decision::{decide, Decision};

/// The adapter for one fixed set: the hook files as a chat started with them (see
/// `sets::files`), or a chat's session hooks.
pub(crate) struct ExternalHooks {
    set: Arc<HookSet>,
    runner: Arc<Runner>,
    /// Set for per-chat session hooks: their origin in logs.
    label: &'static str,
    /// What the session's `session_start` hooks left for its chats.
    carry: Option<Arc<SessionCarry>>,
    /// Where `async: true` hooks run; `None`: in line, like the others.
    queue: Option<Arc<AsyncHooks>>,
    /// The state of each running chat, by run id.
    chats: Mutex<HashMap<String, ChatState>>,
    /// Where its events are recorded (`hooks.record`); `None`: not recorded.
    recorder: Option<Arc<Recorder>>,
}

/// What `session_start` hooks left for the session's chats: messages each chat starts with
/// (the jcli format's `inject_messages`, after the system prompt, so its first call and every later one
/// sees them), context for its system prompt (Claude Code's and Gemini CLI's
/// `additionalContext`, or a Claude hook's plain stdout), and what they had to say to the person
/// (`system_message`, and the chain's warnings), which the session's first chat shows as
/// `notice` frames: a connection has no frame of its own to carry them.
#[derive(Debug, Default)]
pub(crate) struct SessionCarry {
    pub(crate) messages: Vec<Message>,
    pub(crate) context: Vec<String>,
    notices: Mutex<Vec<(NoticeLevel, String)>>,
}

impl SessionCarry {
    pub(crate) fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.context.is_empty() && lock(&self.notices).is_empty()
    }

    /// The notices, once: the chat that takes them shows them.
    fn take_notices(&self) -> Vec<(NoticeLevel, String)> {
        std::mem::take(&mut *lock(&self.notices))
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

    pub(crate) fn of(set: Arc<HookSet>, runner: Arc<Runner>) -> Self {
        Self {
            set,
            runner,
            label: "external",
            carry: None,
            queue: None,
            chats: Mutex::new(HashMap::new()),
            recorder: None,
        }
    }

    /// Whether its set has no hook at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.set.is_empty()
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

    /// Its events are recorded into `recorder` (docs/protocol.md §21).
    pub(crate) fn with_recorder(mut self, recorder: Option<Arc<Recorder>>) -> Self {
        self.recorder = recorder;
        self
    }

    /// The recorder, when the chat `chat_id` (none: a connection event) is recorded.
    fn recording(&self, chat_id: Option<&str>) -> Option<&Recorder> {
        let recorder = self.recorder.as_deref()?;
        recorder
            .samples(chat_id.unwrap_or_default())
            .then_some(recorder)
    }

    fn chats(&self) -> MutexGuard<'_, HashMap<String, ChatState>> {
        lock(&self.chats)
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
        hooks: &'a [Arc<HookDef>],
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
        // After a compaction, only the hooks of a dialect with such a `SessionStart` fire.
        let again: Vec<_>;
        let hooks = if matches!(call, Call::SessionStartAfterCompact(_)) {
            again = all
                .iter()
                .filter(|hook| wire::fires_after_compaction(hook))
                .cloned()
                .collect();
            &again[..]
        } else {
            all
        };
        let Some(chain) = self.chain_of(event, hooks, ctx.late_events(), ctx.hook_spend()) else {
            return Ok(A::default());
        };
        let mut state = call.state(ctx);
        let envelope = self.envelope(ctx, &chain, &state);
        let recording = self.recording(Some(&ctx.run_id));
        let before = recording.map(|_| state.clone());
        let mut outcome = chain.run(self.runner.as_ref(), &envelope, &mut state).await;
        // An event whose hooks' filters all passed it by ran no hook: nothing to replay.
        if let (Some(recorder), Some(before), false) = (recording, before, outcome.ran.is_empty()) {
            let pending = pending(&chain, &envelope, before, &state, &outcome);
            recorder.record(move || pending.line());
        }
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
            // Context from a `stop` hook goes to the end of the system prompt (the jcli
            // format); one that neither retries nor stops would reach no model call, so the
            // model goes on with it, as Claude Code goes on with a Stop hook's
            // additionalContext (bounded by `max_retries`): no feedback, no user message.
            outcome.control = Some(ChainControl::Retry(String::new()));
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
        // At these two the feedback is in place already (after the input, at the end of the
        // request), in the chain's order among the other hooks' messages.
        let control = match (event, outcome.control) {
            (Event::PreSendMessage | Event::PreLlmRequest, Some(ChainControl::Retry(_))) => None,
            (_, control) => control,
        };
        Ok(decide(control))
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
            person: ctx.person.clone(),
            ..Envelope::default()
        };
        let transcript = wire::needs_transcript(chain.hooks);
        let mut chats = self.chats();
        if transcript {
            chats.entry(ctx.run_id.clone()).or_default();
        }
        let Some(chat) = chats.get_mut(&ctx.run_id) else {
            return envelope;
        };
        envelope.stop_hook_active = chat.stop_hook_active;
        if transcript {
            let last = state
                .assistant_output
                .as_deref()
                .filter(|_| chain.event == Event::Stop);
            envelope.transcript_path = transcript::write(
                &mut chat.transcript,
                &ctx.cwd,
                &ctx.session_id,
                &ctx.messages,
                last,
            );
        }
        envelope
    }

    /// The chat ended: its transcript is removed and its state forgotten.
    fn end_chat(&self, ctx: &mut HookContext) {
        self.chats().remove(&ctx.run_id);
    }

    /// The start of a chat, before anything else: the session's carry goes in, then the OpenHarness format's
    /// `before_context_build` fires.
    async fn start_chat(&self, ctx: &mut HookContext) -> HookResult {
        if let Some(carry) = &self.carry {
            // After the leading system message: the session's start comes before its history.
            let at = system_prompt::end_of_leading(&ctx.messages);
            for (offset, message) in carry.messages.iter().enumerate() {
                ctx.messages.insert(at + offset, message.clone());
            }
            for context in &carry.context {
                ctx.append_to_system_prompt(context);
            }
            for (level, message) in carry.take_notices() {
                ctx.notify(level, message, self.label);
            }
        }
        self.fire::<()>(ctx, Call::BeforeContextBuild).await
    }

    /// The input is in the list: what hooks asked to follow it goes in, then the OpenHarness format's
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

    /// A compaction inside the chat: the list is assembled anew, so the OpenHarness format's
    /// `before_context_build` fires again (then `after_context_build`).
    async fn rebuild_context(&self, ctx: &mut HookContext) -> HookResult {
        self.fire::<()>(ctx, Call::BeforeContextBuild).await
    }

    /// After a compaction (its post hooks have run): Claude Code's `SessionStart` hooks fire
    /// again with source `compact`; their context is kept after the summary.
    async fn session_start_after_compact(&self, ctx: &mut HookContext, info: &CompactInfo) {
        let _: HookResult = self.fire(ctx, Call::SessionStartAfterCompact(info)).await;
    }

    /// The connection events: no chat, so the envelope is the server's and notices go nowhere.
    /// What `session_start` hooks leave for the session's chats is returned.
    pub(crate) async fn fire_session(&self, event: Event, session: &SessionInfo) -> SessionCarry {
        // No chat to count them in: the connection's meter.
        let Some(chain) = self.chain(event, None, session.hook_spend()) else {
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
        let recording = self.recording(None);
        let before = recording.map(|_| state.clone());
        let outcome = chain.run(self.runner.as_ref(), &envelope, &mut state).await;
        // An event whose hooks' filters all passed it by ran no hook: nothing to replay.
        if let (Some(recorder), Some(before), false) = (recording, before, outcome.ran.is_empty()) {
            let pending = pending(&chain, &envelope, before, &state, &outcome);
            recorder.record(move || pending.line());
        }
        let notices = (outcome.notices.into_iter().map(|m| (NoticeLevel::Info, m)))
            .chain(outcome.warnings.into_iter().map(|m| (NoticeLevel::Warn, m)))
            .collect();
        SessionCarry {
            messages: outcome.inject_messages,
            context: outcome.chat_context,
            notices: Mutex::new(notices),
        }
    }
}

/// The [`AgentHook`] impl as a table. A row: a chat method, its values besides `ctx`, its
/// answer, the [`Call`] it fires, what runs `first` (the two `send_message` methods: the chat's
/// start, or what follows the input, then an observe-only OpenHarness event), what runs `after` it
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
    context_rebuilt() -> ()
        => Call::AfterContextBuild, first rebuild_context;
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
