//! [`PromptHookManager`]: the skill prompt hooks, as one [`AgentHook`] adapter.
//!
//! It injects each hook's text at the end of `ctx.messages` at its checkpoint and takes it out
//! again right before the next injection of the same timing, so the model sees it exactly at the
//! calls it was meant for (docs/design.md §2):
//!
//! | timing | injected | removed |
//! |---|---|---|
//! | `after_user_input` | once, after the user input | never (the list dies with the chat) |
//! | `before_planning` | before the planning call | right after it |
//! | `before_each_agent` | at the start of every round | at the next round's start; after the loop |
//! | `before_first_agent` | in round 1 | after the loop |
//! | `after_tool_call` | after a round's tools, once per tool call and matching hook (skill prompt hooks: ⑤ "inject(per tool)") | at the next injection; after the loop |
//!
//! Persistent hooks are injected the same way, never removed, never de-duplicated, and also sent
//! to the client as `hook` events (signed when a secret is set).

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::signing::{HookSignature, SigningKey};
use super::stats;
use super::sync::lock;
use super::system_prompt;
use super::{AgentHook, Flow, HookContext, HookResult};
use crate::types::HookMessage;
use crate::types::{HookTag, Message, Role};

/// The five checkpoints of skill prompt hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Timing {
    AfterUserInput,
    BeforePlanning,
    BeforeFirstAgent,
    BeforeEachAgent,
    AfterToolCall,
}

impl Timing {
    pub(crate) const ALL: [Timing; 5] = [
        Timing::AfterUserInput,
        Timing::BeforePlanning,
        Timing::BeforeFirstAgent,
        Timing::BeforeEachAgent,
        Timing::AfterToolCall,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Timing::AfterUserInput => "after_user_input",
            Timing::BeforePlanning => "before_planning",
            Timing::BeforeFirstAgent => "before_first_agent",
            Timing::BeforeEachAgent => "before_each_agent",
            Timing::AfterToolCall => "after_tool_call",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Timing> {
        Timing::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// Timings that fire more than once in a chat.
    pub(crate) fn repeats(self) -> bool {
        matches!(self, Timing::BeforeEachAgent | Timing::AfterToolCall)
    }
}

/// One prompt hook of a skill, with its text loaded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HookSpec {
    pub(crate) name: String,
    pub(crate) file: String,
    pub(crate) timing: Timing,
    pub(crate) role: Role,
    pub(crate) persistent: bool,
    /// Only for `after_tool_call`: fire only when one of these tools ran in the round.
    pub(crate) tool_filter: Option<Vec<String>>,
    pub(crate) text: String,
}

/// One hook of an enabled skill.
#[derive(Debug, Clone)]
pub(crate) struct SkillHook {
    pub(crate) skill: String,
    /// The skill's, shared (its text is not copied per chat).
    pub(crate) spec: std::sync::Arc<HookSpec>,
}

/// The prompt hooks of one chat.
#[derive(Debug)]
pub(crate) struct PromptHookManager {
    skills: Vec<String>,
    /// In the order of the chat's `skills`, then the order in each `hooks.json`.
    hooks: Vec<SkillHook>,
    /// `(skill, description)` of the enabled skills, for the system prompt.
    descriptions: Vec<(String, String)>,
    /// Signs persistent hook messages; `None` = their `sig` is empty.
    key: Option<SigningKey>,
    /// The injection marks of the non-persistent messages still in the list, per timing.
    injected: Mutex<HashMap<Timing, Vec<u64>>>,
}

impl PromptHookManager {
    pub(crate) fn new(
        skills: Vec<String>,
        hooks: Vec<SkillHook>,
        descriptions: Vec<(String, String)>,
        key: Option<SigningKey>,
    ) -> Self {
        Self {
            skills,
            hooks,
            descriptions,
            key,
            injected: Mutex::new(HashMap::new()),
        }
    }

    /// `Enabled skills:` and a line `- skill: description` per enabled skill that describes
    /// itself; `None` when none does. Written for every chat, so without `format!`.
    fn enabled_skills_text(&self) -> Option<String> {
        let described = || self.descriptions.iter().filter(|(_, d)| !d.is_empty());
        let length: usize = described().map(|(s, d)| s.len() + d.len() + 5).sum();
        if length == 0 {
            return None;
        }
        let mut text = String::with_capacity("Enabled skills:".len() + length);
        text.push_str("Enabled skills:");
        for (skill, description) in described() {
            text.push_str("\n- ");
            text.push_str(skill);
            text.push_str(": ");
            text.push_str(description);
        }
        Some(text)
    }

    /// Appends one message per matching hook of `timing` and remembers the non-persistent ones;
    /// returns the persistent ones (also emitted as `hook` events). For `after_tool_call`,
    /// `tools` are the tools of the round: a hook with a `tool_filter` fires only if one of them
    /// is in it.
    pub(crate) fn inject(
        &self,
        ctx: &mut HookContext,
        timing: Timing,
        tools: &[String],
    ) -> Vec<HookMessage> {
        let mut persistent = Vec::new();
        let mark = ctx.new_injection_id();
        let mut injected_any = false;
        // A resume rebuilding the chat injects what lasts for the request only: the persistent
        // messages are in its state already.
        let replaying = ctx.replaying();
        for hook in self
            .hooks
            .iter()
            .filter(|h| h.spec.timing == timing && !(replaying && h.spec.persistent))
        {
            if let (Timing::AfterToolCall, Some(filter)) = (timing, &hook.spec.tool_filter) {
                if !filter.iter().any(|name| tools.contains(name)) {
                    continue;
                }
            }
            let started = std::time::Instant::now();
            let spec = &hook.spec;
            let mut message = Message::new(spec.role, spec.text.clone());
            if spec.persistent {
                let sig = match &self.key {
                    Some(key) => key.sign(&HookSignature {
                        role: spec.role,
                        content: &spec.text,
                        name: &spec.name,
                        skill: &hook.skill,
                        timing: timing.as_str(),
                    }),
                    None => String::new(),
                };
                let tag = HookTag {
                    name: spec.name.clone(),
                    skill: hook.skill.clone(),
                    timing: timing.as_str().into(),
                    sig,
                };
                message.hook = Some(tag.clone());
                let event = HookMessage {
                    role: spec.role,
                    content: spec.text.clone(),
                    tag,
                };
                ctx.emit_hook(event.clone());
                persistent.push(event);
            } else {
                message.injection = Some(mark);
                injected_any = true;
            }
            ctx.messages.push(message);
            // A prompt hook always succeeds: it adds its text (the figures show how often).
            stats::record(
                stats::skill_hook_id(&hook.skill, &spec.name),
                stats::Ran::Success,
                started.elapsed(),
            );
            if ctx.tracing() {
                ctx.trace(crate::types::HookTrace {
                    event: timing.as_str().into(),
                    hook: format!("{}/{}", hook.skill, spec.name),
                    level: "skill".into(),
                    ms: 0.0,
                    outcome: "success".into(),
                    changed: vec!["messages".into()],
                });
            }
        }
        if injected_any {
            self.lock().entry(timing).or_default().push(mark);
        }
        persistent
    }

    /// Takes out the non-persistent messages injected for `timing`.
    pub(crate) fn remove(&self, ctx: &mut HookContext, timing: Timing) {
        let marks = self.lock().remove(&timing).unwrap_or_default();
        for mark in marks {
            ctx.remove_injected(mark);
        }
    }

    /// Appends a built-in prompt; returns the reference that removes it.
    pub(crate) fn inject_prompt(
        ctx: &mut HookContext,
        content: impl Into<String>,
        role: Role,
    ) -> u64 {
        let mark = ctx.new_injection_id();
        let mut message = Message::new(role, content);
        message.injection = Some(mark);
        ctx.messages.push(message);
        mark
    }

    /// Puts a built-in system prompt with the system prompt, after the list's leading system
    /// messages and before the conversation; returns the reference that removes it. For an
    /// instruction about the request's tools rather than about the person's last words: chat
    /// templates render the tools in the system turn, and an instruction after the person's
    /// words (a trailing system message, or strict style's reminder in their turn) is what a
    /// small model answers instead of them.
    pub(crate) fn inject_system_prompt(ctx: &mut HookContext, content: impl Into<String>) -> u64 {
        let mark = ctx.new_injection_id();
        let mut message = Message::new(Role::System, content);
        message.injection = Some(mark);
        let at = system_prompt::end_of_leading(&ctx.messages);
        ctx.messages.insert(at, message);
        mark
    }

    /// Removes a built-in prompt by its reference.
    pub(crate) fn remove_prompt(ctx: &mut HookContext, reference: u64) {
        ctx.remove_injected(reference);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Timing, Vec<u64>>> {
        lock(&self.injected)
    }
}

/// The tool of each call of the round that just ran, oldest first: the calls of the newest
/// assistant message that calls tools, answered by a tool message after it, of the tools that
/// went through their hooks (`tool_names`; calls past the round's cap did not). Read from the
/// messages, not the steps: after an approval resume, the round's calls that ran before the
/// approval are in the messages the resume rebuilt, not in this chat's steps. Without such
/// calls: `tool_names`, once each.
fn round_calls(ctx: &HookContext, tool_names: &[String]) -> Vec<String> {
    let Some(at) = ctx
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        return tool_names.to_vec();
    };
    let answered: Vec<&str> = ctx.messages[at + 1..]
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let calls: Vec<String> = ctx.messages[at]
        .tool_calls
        .iter()
        .filter(|call| answered.contains(&call.id.as_str()) && tool_names.contains(&call.name))
        .map(|call| call.name.clone())
        .collect();
    if calls.is_empty() {
        return tool_names.to_vec();
    }
    calls
}

#[async_trait]
impl AgentHook for PromptHookManager {
    fn name(&self) -> &str {
        "skills"
    }

    async fn pre_send_message(
        &self,
        ctx: &mut HookContext,
        _input: &mut String,
    ) -> HookResult<Flow> {
        ctx.skills = self.skills.clone();
        Ok(Flow::Continue)
    }

    async fn post_send_message(&self, ctx: &mut HookContext) -> HookResult {
        if !ctx.replaying() {
            if let Some(text) = self.enabled_skills_text() {
                ctx.append_to_system_prompt(&text);
            }
        }
        self.inject(ctx, Timing::AfterUserInput, &[]);
        Ok(())
    }

    async fn before_planning(&self, ctx: &mut HookContext) -> HookResult {
        self.inject(ctx, Timing::BeforePlanning, &[]);
        Ok(())
    }

    async fn after_planning(&self, ctx: &mut HookContext) -> HookResult {
        self.remove(ctx, Timing::BeforePlanning);
        Ok(())
    }

    async fn before_each_agent(&self, ctx: &mut HookContext) -> HookResult {
        self.remove(ctx, Timing::BeforeEachAgent);
        self.inject(ctx, Timing::BeforeEachAgent, &[]);
        Ok(())
    }

    async fn before_first_agent(&self, ctx: &mut HookContext) -> HookResult {
        self.inject(ctx, Timing::BeforeFirstAgent, &[]);
        Ok(())
    }

    async fn after_tool_call(&self, ctx: &mut HookContext, tool_names: &[String]) -> HookResult {
        self.remove(ctx, Timing::AfterToolCall);
        // Skill prompt hooks' step ⑤: inject(per tool) — once for each call, with its tool for the filter.
        for name in round_calls(ctx, tool_names) {
            self.inject(ctx, Timing::AfterToolCall, std::slice::from_ref(&name));
        }
        Ok(())
    }

    async fn after_agent_loop(&self, ctx: &mut HookContext) -> HookResult {
        self.remove(ctx, Timing::BeforeEachAgent);
        self.remove(ctx, Timing::BeforeFirstAgent);
        self.remove(ctx, Timing::AfterToolCall);
        Ok(())
    }
}
