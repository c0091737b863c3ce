//! External hooks: hooks from YAML (seeds 001 and 004) as one [`AgentHook`](super::AgentHook)
//! adapter.
//!
//! - `config`, `event`: the hook files' shape and the event vocabulary (four spellings, each a
//!   dialect); `settings`: Claude Code's and Gemini CLI's `settings.json` as hook files;
//! - `payload`: what a hook reads and may answer, typed per dialect (the JSON Schemas under
//!   `docs/schema/hooks/` are generated from it);
//! - `values`: the chain's vocabulary (the event's values, the envelope, how a run ended, what
//!   an answer says), the same for every dialect; `dialect`: the translation layer, one file per
//!   dialect (input, exit codes, output; Claude Code's and Gemini CLI's tool names; Claude Code's
//!   transcript);
//! - `runner`: running one handler (command, HTTP, LLM, agent), its outcome as data;
//! - `process`: a command hook's processes (clean environment, process group, every leftover
//!   killed and reaped);
//! - `chain`: the chain engine (order, filters, timeouts and budget, `on_error`, `apply`), and
//!   what each run did (for `hook_trace`); `stats`: per-hook figures for `/api/hooks`;
//! - `queue`: [`AsyncHooks`], the bounded queue and workers of `async: true` hooks;
//! - `adapter`: [`ExternalHooks`], the chains as an `AgentHook`, one path for every event;
//! - `dry_run`: `hookwire hooks test`, one event's chain run hook by hook on a given input;
//! - `discovery`, `files`, `session`, `register_hook`: where hook sets come from (the hook
//!   files found and loaded, watched and reloaded; the model's session hooks).

mod adapter;
mod chain;
pub(crate) mod config;
pub(crate) mod dialect;
mod discovery;
pub(crate) mod dry_run;
pub(crate) mod event;
mod files;
mod hook_run;
pub(crate) mod payload;
mod queue;
pub(crate) mod register_hook;
pub(crate) mod runner;
pub(crate) mod session;
pub(crate) mod settings;
pub(crate) mod stats;
pub(crate) mod values;

pub(crate) use adapter::{ExternalHooks, SessionCarry};
pub(crate) use discovery::{hook_files, load_hook_set, HookSet};
pub(crate) use files::HookFiles;
pub(crate) use queue::{AsyncHooks, DEFAULT_QUEUE, DEFAULT_QUEUE_PER_CONNECTION};
