//! `limits:`: what one connection, one message and one chat may take.

use std::time::Duration;

use super::values::{at_least, seconds};
use super::{ConfigError, LimitsFile};

/// Limits of the chat protocol.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Largest WebSocket message after reassembly (larger → close 1009).
    pub max_message_bytes: usize,
    pub max_history_messages: usize,
    /// Longest `input`, in Unicode scalar values.
    pub max_input_chars: usize,
    /// Open WebSocket sessions (more → HTTP 503 before the upgrade).
    pub max_connections: usize,
    /// How long running chats get to end on shutdown before their sockets close with 1001.
    pub shutdown_grace: Duration,
    /// The server pings this often.
    pub ping_interval: Duration,
    /// A connection that sends nothing (pongs included) this long is closed with 1001.
    pub idle_timeout: Duration,
    /// Time the hooks of one event (a chain) may take in all.
    pub hook_chain_timeout: Duration,
    /// A connection whose writes make no progress this long is closed (1008) and its chat
    /// cancelled: a client that stops reading cannot hold a session.
    pub write_stall: Duration,
    /// Largest outgoing frame: hook- and tool-supplied fields are cut (with a marker) to fit,
    /// long text deltas are split.
    pub max_frame_bytes: usize,
    /// How long a client may take to send the request headers before the socket is closed.
    pub header_read_timeout: Duration,
    /// Connections accepted but not yet upgraded (or answered); more wait in the kernel backlog.
    pub max_pending_connections: usize,
    /// Runs of `async: true` hooks waiting for a worker; a run that finds the queue full is
    /// dropped (counted in `hookwire_async_hook_drops_total`).
    pub async_hook_queue: usize,
    /// Of those, the runs one connection may hold; more from it are dropped (or wait, for a
    /// hook with `on_full: wait`).
    pub async_hook_queue_per_connection: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 1024 * 1024,
            max_history_messages: 1000,
            max_input_chars: 100_000,
            max_connections: 10_000,
            shutdown_grace: Duration::from_secs(30),
            ping_interval: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(90),
            hook_chain_timeout: crate::hooks::external::DEFAULT_CHAIN_BUDGET,
            write_stall: Duration::from_secs(30),
            max_frame_bytes: 1024 * 1024,
            header_read_timeout: Duration::from_secs(10),
            max_pending_connections: 1024,
            async_hook_queue: crate::hooks::external::DEFAULT_QUEUE,
            async_hook_queue_per_connection: crate::hooks::external::DEFAULT_QUEUE_PER_CONNECTION,
        }
    }
}

impl Limits {
    /// The file's `limits:` over the defaults; sizes and counts below their minimum refused.
    /// (The chat's own limits, `max_steps` and the like, are the agent's: `config/agent.rs`.)
    pub(super) fn resolve(file: &LimitsFile) -> Result<Self, ConfigError> {
        let defaults = Limits::default();
        let duration = |setting: &'static str, value: Option<f64>, default: Duration| match value {
            Some(v) => seconds(setting, v),
            None => Ok(default),
        };
        let limits = Limits {
            max_message_bytes: file.max_message_bytes.unwrap_or(defaults.max_message_bytes),
            max_history_messages: file
                .max_history_messages
                .unwrap_or(defaults.max_history_messages),
            max_input_chars: file.max_input_chars.unwrap_or(defaults.max_input_chars),
            max_connections: file.max_connections.unwrap_or(defaults.max_connections),
            shutdown_grace: duration(
                "limits.shutdown_grace_seconds",
                file.shutdown_grace_seconds,
                defaults.shutdown_grace,
            )?,
            ping_interval: duration(
                "limits.ping_interval_seconds",
                file.ping_interval_seconds,
                defaults.ping_interval,
            )?,
            idle_timeout: duration(
                "limits.idle_timeout_seconds",
                file.idle_timeout_seconds,
                defaults.idle_timeout,
            )?,
            hook_chain_timeout: duration(
                "limits.hook_chain_timeout_seconds",
                file.hook_chain_timeout_seconds,
                defaults.hook_chain_timeout,
            )?,
            write_stall: duration(
                "limits.write_stall_seconds",
                file.write_stall_seconds,
                defaults.write_stall,
            )?,
            max_frame_bytes: file.max_frame_bytes.unwrap_or(defaults.max_frame_bytes),
            header_read_timeout: duration(
                "limits.header_read_timeout_seconds",
                file.header_read_timeout_seconds,
                defaults.header_read_timeout,
            )?,
            max_pending_connections: file
                .max_pending_connections
                .unwrap_or(defaults.max_pending_connections),
            async_hook_queue: file.async_hook_queue.unwrap_or(defaults.async_hook_queue),
            async_hook_queue_per_connection: file
                .async_hook_queue_per_connection
                .unwrap_or(defaults.async_hook_queue_per_connection),
        };
        limits.check()?;
        Ok(limits)
    }

    fn check(&self) -> Result<(), ConfigError> {
        at_least("limits.max_message_bytes", self.max_message_bytes, 1024)?;
        at_least("limits.max_frame_bytes", self.max_frame_bytes, 4096)?;
        at_least(
            "limits.max_pending_connections",
            self.max_pending_connections,
            1,
        )?;
        at_least("limits.max_connections", self.max_connections, 1)?;
        at_least("limits.async_hook_queue", self.async_hook_queue, 1)?;
        at_least(
            "limits.async_hook_queue_per_connection",
            self.async_hook_queue_per_connection,
            1,
        )
    }
}
