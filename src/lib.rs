//! hookwire: a stateless WebSocket chat backend for LLM agents, built around hooks.
//!
//! Data flows one way: client frames → [`agent::ChatRequest`] → [`agent::AgentClient::chat_stream`]
//! → [`agent::ChatEvent`]s → server frames.
//!
//! - [`config`]: settings from flags, environment and a YAML file.
//! - [`server`]: the axum router, the WebSocket session (`ChatHandler`), frames, metrics.
//! - [`agent`]: `AgentClient`, the direct call, planning round and agent loop.
//! - [`hooks`]: the `AgentHook` trait and the stack that runs hooks with error isolation.
//! - [`llm`]: the `ChatModel` trait, the OpenAI-compatible streaming client, the demo model.
//! - [`tools`]: the `Tool` trait, the registry and the workspace tools.
//! - [`types`]: the vocabulary shared by all of the above (messages, chat events, tool specs);
//!   it depends on nothing else in the crate.
//! - [`reload`]: hot reload of skills and hook files on real changes.
//! - [`check`], [`trust_command`]: the `hookwire check` and `hookwire trust` commands.
//! - [`trust`]: which workspace files the operator vouched for (`trust.json`, SHA-256 pins).
//!
//! The outside contract is `docs/protocol.md`; how the inside implements it, and the four "seed"
//! design documents that comments cite by number (000 … 004), are in `docs/design.md`;
//! `ARCHITECTURE.md` maps the code.

pub mod agent;
pub mod check;
pub mod config;
pub mod hooks;
pub mod llm;
pub mod reload;
pub mod server;
pub mod skills;
pub mod tools;
pub mod trust;
pub mod trust_command;
pub mod types;

pub use agent::{AgentClient, AgentConfig, ChatEvent, ChatRequest};
pub use hooks::AgentHook;
pub use llm::{ChatModel, ModelRequest};
pub use types::{Message, Role};
