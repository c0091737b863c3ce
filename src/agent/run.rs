//! One chat from start to end: its state, its setup (the hooks for this chat, the message list,
//! the user input), and its end (`done` or `error`, after `run_completed` / `run_failed`, then
//! `on_run_end` whatever the end, a cancel included). What
//! happens in between is in `phases` (docs/design.md §1 and the skill prompt hooks' flow chart).

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::approval::HistoryBinding;
use super::compact::{Sent, Trigger};
use super::series::{CHATS, CHAT_SECONDS, TEXT_DELTAS};
use super::turn::TurnRecord;
use super::AgentInner;
use crate::hooks::spend::HookSpend;
use crate::hooks::{Flow, HookContext, HookStack, RunConfig, RunOutcome, RunOutput};
use crate::types::{
    ChatError, ChatEvent, ChatRequest, DoneReason, ErrorCode, EventSender, NoticeLevel,
};
use crate::types::{Message, Role, SideWait};

/// Why a chat ended early.
pub(super) enum Interrupt {
    Cancelled,
    Stopped(String),
    /// A hook skipped the step (`Flow::Skip`) and nothing of the chat is left to do: it ends
    /// `completed` with what it has, and a notice says why.
    Skipped(String),
    Failed(ChatError),
}

pub(super) type Outcome<T> = Result<T, Interrupt>;

/// The state of one running chat; the phases, the model call and the tool step are its methods.
pub(super) struct ChatRun {
    pub(super) inner: Arc<AgentInner>,
    pub(super) hooks: HookStack,
    pub(super) ctx: HookContext,
    tx: EventSender,
    pub(super) cancel: CancellationToken,
    /// Everything sent as `text` so far (what a cancelled chat's `done` holds).
    pub(super) visible_text: String,
    /// The assistant text the client keeps, one piece per kept step.
    pub(super) kept: Vec<String>,
    /// Whether the current model call has streamed text yet.
    pub(super) step_has_text: bool,
    /// `hookwire_text_deltas_total`, counted in the chat and added in batches.
    pub(super) text_deltas: DeltaCount,
    /// Whether a model call was made: a stop before it is `hook_blocked`, after it `stopped`.
    pub(super) model_called: bool,
    /// Retries hooks asked for so far (`post_llm_response` and `stop` share the limit).
    pub(super) retries: usize,
    /// The history as the client holds it (after this chat's `compact` frame, if any): what an
    /// approval state is bound to.
    pub(super) client_history: Vec<Message>,
    /// The places, in `client_history`, of the history messages `ctx.messages` holds (a forged
    /// message that was dropped leaves a gap): what compaction may summarise.
    pub(super) history_places: Vec<usize>,
    /// A compaction was skipped by a hook or failed: not tried again in this chat.
    pub(super) auto_compaction_off: bool,
    /// A resumed chat's binding, carried over from its state.
    pub(super) binding: Option<HistoryBinding>,
    /// Where this chat's own messages start in `ctx.messages` (its user input).
    pub(super) input_at: usize,
    /// What this chat adds to the conversation (`done.turn`).
    pub(super) turn: TurnRecord,
    /// The chat's request without its history or input, with the session hooks it runs so far:
    /// what hook factories are asked when the model registers a hook.
    pub(super) about: ChatRequest,
    /// Set when this chat is an `agent` hook's sub-run: its model calls are the calling chat's
    /// hook calls, charged there.
    pub(super) hook_call_of: Option<Arc<HookSpend>>,
    /// The names of the tools the client runs itself (docs/protocol.md §19).
    pub(super) client_tools: Vec<String>,
    /// The calls of client tools that wait for the client's results: the chat ends with
    /// `tool_calls` when a round leaves some.
    pub(super) client_calls: Vec<String>,
    /// Whether the client's wire can carry an approval; when not, such a call is refused.
    pub(super) can_ask_approval: bool,
    /// The chat's place in the quotas, settled (its tokens added, its lease given back) just
    /// before its last event, so that a client that sends its next chat on `done` finds its
    /// place free and its tokens counted; or when the chat is dropped.
    ticket: Option<crate::quota::Ticket>,
}

impl Drop for ChatRun {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            ticket.finish_later(self.ctx.total_tokens());
        }
    }
}

/// Runs one chat, sending its events to `tx`; always ends with `Done` or `Error`. With
/// `hook_call_of`, the chat is an `agent` hook's sub-run, whose model calls are charged to the
/// chat that ran the hook.
pub(crate) async fn run_chat(
    inner: Arc<AgentInner>,
    request: Box<ChatRequest>,
    tx: EventSender,
    late: crate::hooks::LateEvents,
    hook_call_of: Option<Arc<HookSpend>>,
    trace_id: Option<String>,
) -> &'static str {
    let hooks = match chat_hooks(&inner, &request) {
        Ok(hooks) => hooks,
        Err(error) => {
            CHATS.get("refused").increment(1);
            let _ = tx.send(ChatEvent::Error(error));
            return "refused";
        }
    };
    // An agent hook's sub-run is part of the chat that ran the hook, admitted already.
    let ticket = match hook_call_of {
        Some(_) => None,
        None => match super::admission::admit(&inner, &request).await {
            Ok(ticket) => ticket,
            Err(error) => {
                CHATS.get(error.code.as_str()).increment(1);
                let code = error.code.as_str();
                let _ = tx.send(ChatEvent::Error(error));
                return code;
            }
        },
    };
    if tx.send(ChatEvent::Started { trace_id }).is_err() {
        if let Some(ticket) = ticket {
            ticket.finish(0).await;
        }
        return "cancelled";
    }
    let tenant = super::admission::tenant_label(&inner, &request);
    let ctx = chat_context(&inner, &request, late);
    let mut run = ChatRun::new(inner, hooks, ctx, tx, &request, hook_call_of);
    let renewing = ticket.clone();
    run.ticket = ticket;
    let started = Instant::now();
    let result = match &renewing {
        Some(ticket) => {
            tokio::select! {
                biased;
                result = run.execute_until_cancelled(request) => result,
                never = ticket.keep_alive() => match never {},
            }
        }
        None => run.execute_until_cancelled(request).await,
    };
    drop(renewing);
    let outcome = Box::pin(run.finish(result)).await;
    CHAT_SECONDS.get().record(started.elapsed().as_secs_f64());
    if let Some(tenant) = tenant {
        metrics::counter!("hookwire_tenant_tokens_total", "tenant" => tenant)
            .increment(run.ctx.total_tokens());
    }
    outcome
}

/// The hooks of this chat: the agent's, then each hook factory's for this request, in order;
/// a factory's refusal refuses the chat.
fn chat_hooks(inner: &AgentInner, request: &ChatRequest) -> Result<HookStack, ChatError> {
    super::check_client_tools(&inner.tools, &request.client_tools)?;
    let mut hooks = inner.hooks.clone();
    for factory in &inner.factories {
        hooks.extend(factory.hooks_for(request)?);
    }
    Ok(hooks)
}

/// The span of a chat's log lines: they name who it is for, when someone signed in.
pub(super) fn log_span(request: &ChatRequest) -> tracing::Span {
    match &request.person {
        Some(person) => tracing::info_span!("chat", user = %person.id),
        None => tracing::Span::none(),
    }
}

/// What the hooks of this chat see of it before its messages are built: ids, model, tools,
/// skills, workspace, limits, the hook model calls' budget, tracing and late events.
fn chat_context(
    inner: &AgentInner,
    request: &ChatRequest,
    late: crate::hooks::LateEvents,
) -> HookContext {
    let config = &inner.config;
    let tools: Arc<[crate::types::ToolSpec]> = if request.enable_tools {
        let tools = inner.tools.specs();
        // A listed tenant's people are offered its tools only (and only those run).
        let tenant = request.person.as_ref().and_then(|p| p.tenant.as_ref());
        let allowed = tenant.and_then(|tenant| inner.tenants.get(tenant)?.as_ref());
        if allowed.is_none() && request.client_tools.is_empty() {
            // The server's tools as they are: shared with every other chat.
            tools
        } else {
            tools
                .iter()
                .filter(|tool| allowed.is_none_or(|allowed| allowed.contains(&tool.name)))
                .chain(&request.client_tools)
                .cloned()
                .collect()
        }
    } else {
        Arc::new([])
    };
    let mut ctx = HookContext::new(
        request.session_id.clone(),
        request.id.clone(),
        config.model.clone(),
        tools,
    );
    ctx.person = request.person.clone();
    ctx.skills = request.skills.clone().unwrap_or_default();
    ctx.cwd = config.workspace.clone();
    ctx.max_steps = config.max_steps;
    ctx.set_config(RunConfig::new(
        config.model.clone(),
        config.max_steps,
        config.max_total_tokens,
        config.max_retries,
        config.max_tool_calls_per_round,
        config.summary_on_limit,
    ));
    ctx.set_hook_spend(Arc::new(HookSpend::new(
        config.max_hook_model_calls,
        config.max_total_tokens,
    )));
    ctx.set_tracing(request.trace);
    ctx.set_late_events(late);
    ctx
}

impl ChatRun {
    /// A chat's state before it runs: nothing sent, nothing kept, its history still to read.
    fn new(
        inner: Arc<AgentInner>,
        hooks: HookStack,
        ctx: HookContext,
        tx: EventSender,
        request: &ChatRequest,
        hook_call_of: Option<Arc<HookSpend>>,
    ) -> Self {
        let tool_result_limit = inner.config.history_tool_result_chars;
        ChatRun {
            inner,
            hooks,
            ctx,
            tx,
            cancel: request.cancel.clone(),
            visible_text: String::new(),
            kept: Vec::new(),
            step_has_text: false,
            text_deltas: DeltaCount::new(),
            model_called: false,
            retries: 0,
            client_history: Vec::new(),
            history_places: Vec::new(),
            auto_compaction_off: false,
            binding: None,
            input_at: 0,
            turn: TurnRecord::new(tool_result_limit),
            about: ChatRequest {
                session_id: request.session_id.clone(),
                skills: request.skills.clone(),
                enable_tools: request.enable_tools,
                session_hooks: request.session_hooks.clone(),
                cancel: request.cancel.clone(),
                trace: request.trace,
                traceparent: None,
                conversation_id: None,
                ..ChatRequest::new(request.id.clone(), String::new())
            },
            hook_call_of,
            client_tools: request
                .client_tools
                .iter()
                .map(|tool| tool.name.clone())
                .collect(),
            client_calls: Vec::new(),
            can_ask_approval: request.can_ask_approval,
            ticket: None,
        }
    }

    /// Runs the chat until it ends or is cancelled. Cancel ends the chat wherever it is (a
    /// model call, a tool, a hook): the running step's future is dropped, which drops the
    /// upstream request or kills the hook's processes. The cancellation is polled only when it
    /// woke the task, not at every streamed token.
    async fn execute_until_cancelled(&mut self, request: Box<ChatRequest>) -> Outcome<DoneReason> {
        let cancelled = self.cancel.clone().cancelled_owned();
        let execute = self.execute(request);
        tokio::pin!(cancelled, execute);
        let mut cancel_wait = SideWait::new();
        std::future::poll_fn(|cx| {
            if cancel_wait
                .poll(cx, |cx| cancelled.as_mut().poll(cx))
                .is_ready()
            {
                return Poll::Ready(Err(Interrupt::Cancelled));
            }
            execute.as_mut().poll(cx)
        })
        .await
    }
}

impl ChatRun {
    /// The chat's steps. An `async fn`'s future is as large as its largest state, held for the
    /// whole chat; so the states a streaming chat is not in (resuming, compaction, the tool
    /// step, the summary, the end) are boxed where they are awaited, and the chat's future holds
    /// what streaming needs (docs/performance.md, an active chat's memory).
    async fn execute(&mut self, mut request: Box<ChatRequest>) -> Outcome<DoneReason> {
        let inner = self.inner.clone();
        tokio::select! {
            _ = self.cancel.cancelled() => return Err(Interrupt::Cancelled),
            _ = inner.learn_window(&self.ctx.model) => {}
        }
        let continues = request.continues_after_client_tools();
        let sent = std::mem::take(&mut request.messages);
        if let Some(resume) = request.resume.take() {
            return Box::pin(self.resume(sent, resume)).await;
        }
        if continues {
            return Box::pin(self.continue_after_client_tools(sent)).await;
        }
        self.take_history(sent);
        if request.compact_only {
            Box::pin(self.compact_history("", Trigger::Manual)).await?;
            return Ok(DoneReason::Completed);
        }
        Box::pin(self.compact_history(&request.input, Trigger::Auto)).await?;
        let mut input = request.input;
        let mut feedback = None;
        match self.hooks.pre_send_message(&mut self.ctx, &mut input).await {
            Flow::Stop { reason } => return Err(Interrupt::Stopped(reason)),
            // The input is not sent: nothing of this chat enters the conversation.
            Flow::Skip { reason } => return Err(Interrupt::Skipped(reason)),
            Flow::Retry { feedback: text } => feedback = Some(text),
            _ => {}
        }
        self.ctx.messages.push(Message::user(input.clone()));
        if let Some(feedback) = feedback {
            self.ctx.messages.push(Message::user(feedback));
        }
        self.turn.user(&input);
        self.hooks.post_send_message(&mut self.ctx).await;
        self.flush_outbox().await?;
        // Hooks may have moved things around the input: it is found again, not assumed last.
        self.input_at = self
            .ctx
            .messages
            .iter()
            .rposition(|m| m.role == Role::User && m.content == input)
            .unwrap_or(self.ctx.messages.len());
        if self.cancel.is_cancelled() {
            return Err(Interrupt::Cancelled);
        }
        if self.ctx.tools().is_empty() {
            return self.direct().await;
        }
        match self.inner.config.planning {
            super::Planning::Marker => self.planning().await,
            super::Planning::Native => self.native_planning().await,
            super::Planning::Off => self.agent_loop(1).await,
        }
    }

    /// The client's history as the chat's messages, after the system prompt (its forged
    /// messages left out); `client_history` keeps it as sent.
    pub(super) fn take_history(&mut self, sent: Vec<Message>) {
        let history = self.verified_history(&sent);
        self.client_history = sent;
        self.history_places = history.iter().map(|sent| sent.index).collect();
        self.ctx.messages =
            std::iter::once(Message::system(self.inner.config.system_prompt.clone()))
                .chain(history.into_iter().map(|sent| sent.message))
                .collect();
    }

    /// The client's history without the forged messages (a system message whose mark does not
    /// verify), each with its place in the list as sent.
    pub(super) fn verified_history(&self, history: &[Message]) -> Vec<Sent> {
        let mut messages = Vec::with_capacity(history.len());
        let secret = self.inner.config.secret.as_deref();
        let key = secret.map(crate::hooks::signing::SigningKey::new);
        for (index, message) in history.iter().enumerate() {
            if let Some(key) = &key {
                if let Err(why) = crate::hooks::signing::check_history_message(key, message) {
                    tracing::warn!(chat = %self.ctx.run_id, reason = why, "dropped a history message");
                    metrics::counter!("hookwire_history_dropped_total", "reason" => why)
                        .increment(1);
                    continue;
                }
            }
            messages.push(Sent {
                index,
                message: message.clone(),
            });
        }
        messages
    }

    pub(super) async fn notice(&mut self, level: NoticeLevel, message: String) -> Outcome<()> {
        self.send(ChatEvent::Notice {
            level,
            message,
            source: "agent".into(),
        })
        .await
    }

    /// Sends what hooks emitted since the last flush; a persistent hook message joins the turn
    /// where it was injected.
    pub(super) async fn flush_outbox(&mut self) -> Outcome<()> {
        for event in self.ctx.take_outbox() {
            if let ChatEvent::Hook(hook) = &event {
                self.turn.hook(hook);
            }
            self.send(event).await?;
        }
        Ok(())
    }

    /// A closed channel means the client's stream was dropped: the chat is cancelled.
    pub(super) async fn send(&self, event: ChatEvent) -> Outcome<()> {
        self.tx.send(event).map_err(|_| Interrupt::Cancelled)
    }

    /// Sends the chat's last event, after `run_completed` / `run_failed` and `on_run_end`;
    /// returns the `done` reason or error code.
    async fn finish(&mut self, result: Outcome<DoneReason>) -> &'static str {
        let _ = self.flush_outbox().await;
        let reason = match result {
            Ok(reason) => reason,
            Err(Interrupt::Cancelled) => {
                CHATS.get("cancelled").increment(1);
                let output = RunOutput {
                    reason: DoneReason::Cancelled,
                    content: self.visible_text.clone(),
                    usage: self.ctx.usage(),
                };
                let turn = std::mem::take(&mut self.turn).cancelled(&self.visible_text);
                return self.finish_done(output, turn).await;
            }
            Err(Interrupt::Stopped(reason)) if !self.model_called => {
                return self
                    .fail(ChatError::new(ErrorCode::HookBlocked, reason))
                    .await;
            }
            Err(Interrupt::Stopped(reason)) => {
                let _ = self
                    .send(ChatEvent::Notice {
                        level: NoticeLevel::Warn,
                        message: reason,
                        source: "hook".into(),
                    })
                    .await;
                DoneReason::Stopped
            }
            Err(Interrupt::Skipped(reason)) => {
                let _ = self
                    .send(ChatEvent::Notice {
                        level: NoticeLevel::Info,
                        message: format!("a hook skipped this step: {reason}"),
                        source: "hook".into(),
                    })
                    .await;
                DoneReason::Completed
            }
            Err(Interrupt::Failed(error)) => return self.fail(error).await,
        };
        let mut output = RunOutput {
            reason,
            content: self.kept.join("\n\n"),
            usage: self.ctx.usage(),
        };
        self.hooks.run_completed(&mut self.ctx, &mut output).await;
        CHATS.get(reason.as_str()).increment(1);
        let pending = matches!(reason, DoneReason::ApprovalRequired | DoneReason::ToolCalls);
        let turn = std::mem::take(&mut self.turn).done(&self.kept, pending);
        self.finish_done(output, turn).await
    }

    /// `on_run_end` on a `done`, then the `done` with the output as the hooks left it.
    async fn finish_done(&mut self, output: RunOutput, turn: Vec<Message>) -> &'static str {
        let reason = output.reason;
        let output = match self.end(RunOutcome::Done(output.clone())).await {
            RunOutcome::Done(changed) => changed,
            // The kind of the end is the chat's: a hook changes its output only.
            _ => output,
        };
        self.settle_quota().await;
        let pending_tool_calls = if reason == DoneReason::ToolCalls {
            std::mem::take(&mut self.client_calls)
        } else {
            Vec::new()
        };
        let _ = self
            .send(ChatEvent::Done {
                reason: output.reason,
                content: output.content,
                usage: output.usage,
                turn,
                pending_tool_calls,
            })
            .await;
        reason.as_str()
    }

    async fn fail(&mut self, mut error: ChatError) -> &'static str {
        let streamed = !self.visible_text.is_empty();
        error.turn = std::mem::take(&mut self.turn).failed(&self.kept, streamed);
        self.hooks.run_failed(&mut self.ctx, &error).await;
        let error = match self.end(RunOutcome::Failed(error.clone())).await {
            RunOutcome::Failed(changed) => changed,
            _ => error,
        };
        CHATS.get(error.code.as_str()).increment(1);
        let code = error.code.as_str();
        self.settle_quota().await;
        let _ = self.send(ChatEvent::Error(error)).await;
        code
    }

    /// Adds the tokens of the chat (its hooks' included) to its quotas and gives its lease back.
    async fn settle_quota(&mut self) {
        // Taken only once settled: a chat dropped during the round trip settles on drop.
        if let Some(ticket) = self.ticket.clone() {
            ticket.finish(self.ctx.total_tokens()).await;
            self.ticket = None;
        }
    }

    /// `on_run_end`, then what hooks emitted, before the chat's last event; the outcome as the
    /// hooks left it.
    async fn end(&mut self, mut outcome: RunOutcome) -> RunOutcome {
        self.hooks.on_run_end(&mut self.ctx, &mut outcome).await;
        let _ = self.flush_outbox().await;
        outcome
    }
}

/// Text deltas streamed, added to `hookwire_text_deltas_total` every [`DeltaCount::BATCH`] and
/// when the chat ends, however it ends: one shared counter taken per token is a cache line that
/// both cores fight over under load.
pub(super) struct DeltaCount {
    counter: metrics::Counter,
    pending: u64,
}

impl DeltaCount {
    const BATCH: u64 = 32;

    pub(super) fn new() -> Self {
        Self {
            counter: TEXT_DELTAS.get(),
            pending: 0,
        }
    }

    pub(super) fn add_one(&mut self) {
        self.pending += 1;
        if self.pending >= Self::BATCH {
            self.counter.increment(std::mem::take(&mut self.pending));
        }
    }
}

impl Drop for DeltaCount {
    fn drop(&mut self) {
        if self.pending > 0 {
            self.counter.increment(self.pending);
        }
    }
}
