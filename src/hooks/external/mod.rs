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
pub mod config;
mod discovery;
pub mod event;
mod files;
pub mod process;
pub mod protocol;
pub mod register_hook;
pub mod runner;
pub mod session;

pub use adapter::ExternalHooks;
pub use discovery::{hook_files, load_hook_set, HookSet};
pub use files::HookFiles;
