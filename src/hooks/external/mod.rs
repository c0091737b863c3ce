//! External hooks: hooks from YAML (seeds 001 and 004) as one [`AgentHook`](super::AgentHook)
//! adapter.
//!
//! - `config`, `event`: the hook files' shape and the event vocabulary;
//! - `protocol`: the JSON a hook reads and writes;
//! - `runner`: running one handler (command, HTTP, LLM, agent), its outcome as data;
//! - `process`: a command hook's processes (clean environment, process group, every leftover
//!   killed and reaped);
//! - `chain`: the chain engine (order, filters, timeouts and budget, `on_error`, `apply`);
//! - `adapter`: [`ExternalHooks`], the chains as an `AgentHook`, one path for every event;
//! - `discovery`, `files`, `session`, `register_hook`: where hook sets come from (the hook
//!   files found and loaded, watched and reloaded; the model's session hooks).

mod adapter;
mod chain;
pub(crate) mod config;
mod discovery;
pub(crate) mod event;
mod files;
pub(crate) mod process;
pub(crate) mod protocol;
pub(crate) mod register_hook;
pub(crate) mod runner;
pub(crate) mod session;

pub(crate) use adapter::ExternalHooks;
pub(crate) use discovery::{hook_files, load_hook_set, HookSet};
pub(crate) use files::HookFiles;
