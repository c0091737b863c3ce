//! External hooks: hooks from YAML (seeds 001 and 004) as one [`AgentHook`](super::AgentHook)
//! adapter.
//!
//! - `config`, `event`: the hook files' shape and the event vocabulary (four spellings, each a
//!   dialect); `settings`: Claude Code's and Gemini CLI's `settings.json` as hook files;
//! - `protocol`: the JSON a hookwire- or seed-004-dialect hook reads and writes; `dialect`: the
//!   translation layer for every dialect (input, exit codes, output; Claude Code's and Gemini
//!   CLI's tool names; Claude Code's transcript);
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
pub mod dialect;
mod discovery;
pub mod event;
mod files;
pub mod process;
pub mod protocol;
pub mod register_hook;
pub mod runner;
pub mod session;
pub mod settings;

pub use adapter::{ExternalHooks, SessionCarry};
pub use discovery::{hook_files, load_hook_set, parse_file, HookSet, WORKSPACE_FILES};
pub use files::HookFiles;
