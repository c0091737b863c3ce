//! hookwire: a stateless WebSocket chat backend for LLM agents, built around hooks.
//!
//! Data flows one way: client frames → [`ChatRequest`] → [`AgentClient::chat_stream`] →
//! [`ChatEvent`]s → server frames.
//!
//! # The library API
//!
//! The public modules hold the API and nothing else; everything behind it is private to the
//! crate, so the compiler sees what is unused.
//!
//! - [`agent`]: [`AgentClient`] and its builder, [`AgentConfig`], one chat's request and its
//!   events ([`ChatRequest`], [`ChatEvent`], [`agent::ChatError`], …) and the conversation they
//!   carry ([`Message`], [`Role`], …).
//! - [`hooks`]: the [`AgentHook`] trait, the [`hooks::HookContext`] every hook sees, the per-call
//!   values it may change and the action each event may return; [`hooks::HookFactory`] for
//!   per-chat hooks.
//! - [`llm`]: the [`ChatModel`] trait, its [`ModelRequest`] and the events a model streams, and
//!   [`llm::OpenAiClient`], the model for any OpenAI-compatible API.
//! - [`tools`]: the [`Tool`] trait, and the built-in workspace tools ([`tools::builtin_tools`]).
//! - [`mcp`]: tools from MCP servers ([`mcp::McpServers`], a [`ToolSource`]): their settings, the
//!   workspace's `.mcp.json`, each server's supervisor.
//! - [`config`]: every setting, from flags, environment and a YAML file, in one merge.
//! - [`app`]: the agent wired from a config as `serve` wires it ([`app::agent_parts`]), to add
//!   hooks to before serving it; and what the binary's commands report: [`app::check`] (every
//!   problem, the MCP probe), [`app::review`] (the workspace files to trust, `trust.json`),
//!   [`app::hooks_test`] (one event's hooks run on an input).
//! - [`server`]: serving an agent ([`server::RunningServer`], [`server::serve`]).
//! - [`voice`]: the `voice:` settings (spoken answers, transcription; docs/voice.md).
//!
//! # Inside
//!
//! - `types`: the vocabulary shared by every layer (messages, chat events, tool specs,
//!   problems); it depends on nothing else in the crate.
//! - `reload`: hot reload of skills and hook files on real changes.
//! - `trust`: which workspace files the operator vouched for (`trust.json`, SHA-256 pins).
//! - `process`: the processes the server starts (hooks, MCP servers, speech commands): a clean
//!   environment, a process group of their own, every leftover killed and reaped.
//! - `skills`: skill discovery, `hooks.json` validation, the registry and its reloads.
//! - `hooks::external`, `hooks::prompt`, `hooks::signing`: hooks from YAML files, skill prompt
//!   hooks, and the signatures of what travels with the client.
//! - `llm::http`, `llm::openai`, `llm::anthropic`, `llm::demo`: the transport both model clients
//!   share (HTTP, SSE, idle timeout), the OpenAI-compatible and Anthropic clients, the demo model.
//! - `server::session`, `server::frames`, `server::wire`: one WebSocket session, every frame of
//!   the native protocol, and what every wire shares (one chat's events through an encoder).
//! - `telemetry`: OpenTelemetry traces (public: a library user may start the exporter).
//!
//! The layers are one-way (`tests/it/layers.rs` keeps them so): `types`, `reload`, `trust` →
//! `process` → `llm`, `tools` → `hooks` → `skills`, `mcp` → `agent` → `config` → `app` →
//! `server`; the binary's command line (`src/cli/`) above them all.
//!
//! The outside contract is `docs/protocol.md`; how the inside implements it, and the four "seed"
//! design documents that comments cite by number (000 … 004), are in `docs/design.md`;
//! `ARCHITECTURE.md` maps the code.

// A `pub` item no one outside can reach is a warning: it would hide dead code from the compiler.
#![warn(unreachable_pub)]

pub mod agent;
pub mod app;
pub mod config;
pub mod hooks;
pub mod llm;
pub mod mcp;
mod process;
pub mod quota;
mod reload;
pub mod server;
mod skills;
pub mod telemetry;
pub mod tools;
mod trust;
mod types;
pub mod voice;

pub use agent::{
    AgentClient, AgentClientBuilder, AgentConfig, ChatEvent, ChatRequest, Message, Role,
};
pub use config::Config;
pub use hooks::AgentHook;
pub use llm::{ChatModel, ModelRequest};
pub use tools::{Tool, ToolSource};
