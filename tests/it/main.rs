//! Black-box tests: a real hookwire server on 127.0.0.1:0, a real WebSocket client, and a fake
//! OpenAI-compatible upstream over real HTTP with SSE. One test binary keeps link time down.

mod agent;
mod anthropic;
mod approval;
mod async_hooks;
mod auto_compaction;
mod binary;
mod browser;
mod cli;
mod common;
mod compaction;
mod demo;
mod deploy;
mod dialects;
mod external;
mod frontend;
mod hook_processes;
mod hook_sandbox;
mod http;
mod layers;
mod limits;
mod mcp;
mod models;
mod nginx;
mod observability;
mod protocol;
mod reliability;
mod reload;
mod replicas;
mod rust_hooks;
mod seed_gaps;
mod skills;
mod tools;
mod trust;
mod upstream;
mod workspace_trust;
