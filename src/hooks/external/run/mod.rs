//! Running hooks: one handler ([`runner`]: command, HTTP, LLM, agent; outcomes as data), one
//! hook end to end (`hook_run`: the handler, its answer read in its dialect, the figures), an
//! event's chain (`chain`: order, filters, budget, `on_error`, the event's rules applied), the
//! async queue ([`queue`]), the chains as one `AgentHook` (`adapter`), a chain's run as a line of
//! a hook recording (`recording`), and `hookwire hooks test` ([`dry_run`]). Knows hooks (`hook`) and their JSON (`wire`), not where they come from.

mod adapter;
pub(crate) mod chain;
pub(crate) mod dry_run;
mod hook_run;
pub(crate) mod queue;
mod recording;
pub(crate) mod replay;
pub(crate) mod runner;

pub(crate) use adapter::{ExternalHooks, SessionCarry};
pub(crate) use queue::{AsyncHooks, DEFAULT_QUEUE, DEFAULT_QUEUE_PER_CONNECTION};
pub(crate) use runner::{Runner, SubAgent, SubAgentError, DEFAULT_CHAIN_BUDGET};
