//! External hooks: hooks from files (YAML in the jcli and OpenHarness formats, Claude Code's and
//! Gemini CLI's `settings.json`) and the ones the model registers, each set as one
//! [`AgentHook`](super::AgentHook). Five rooms, each using only the ones before it in this
//! list:
//!
//! - `hook`: what a hook is (its definition, the events and their spellings, each event's rules,
//!   the values a chain works on, a set of hooks); the vocabulary of the other rooms;
//! - `wire`: a hook's JSON in and out, one file per dialect (input, exit codes, the answer read
//!   into its typed payload and then into the chain's values; Claude Code's and Gemini CLI's
//!   tool names; Claude Code's transcript); the payload types the JSON Schemas under
//!   `docs/schema/hooks/` are generated from;
//! - `load`: where hooks come from: the hook files found, trusted and read (YAML and
//!   `settings.json`), every problem with its file and line;
//! - `run`: running hooks: one handler (command, HTTP, LLM, agent), one hook end to end, an
//!   event's chain, the async queue, the chains as an `AgentHook`, the dry run;
//! - `sets`: the hook sets a chat runs: the hook files as last loaded (reloaded, a snapshot per
//!   chat, what a session's `session_start` hooks leave), and the hooks the model registers.
//!
//! `load` uses only `hook` (it knows no JSON of a hook and runs nothing). Other modules use
//! what this file re-exports, never a room (`tests/it/architecture.rs`).

mod hook;
mod load;
mod run;
mod sets;
mod wire;

pub(crate) use hook::{Handler, HookDef, HookSet, OnError};
pub(crate) use load::{hook_files, load_hook_set};
pub(crate) use run::dry_run::{DryDecision, DryRun};
pub(crate) use run::{
    AsyncHooks, Runner, SubAgent, SubAgentError, DEFAULT_CHAIN_BUDGET, DEFAULT_QUEUE,
    DEFAULT_QUEUE_PER_CONNECTION,
};
pub(crate) use sets::{HookFiles, RegisterHook, RegisteredHookRules, RegisteredHooks, TenantHooks};
pub use wire::payload::hook_schemas;
pub(crate) use wire::transcript;
