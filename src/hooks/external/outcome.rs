//! How one hook's handler run ended, as data ([`RunResult`]): what the runner returns, what
//! each dialect's output reader reads, and what the chain decides from.

use serde_json::Value;

/// How one run ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunResult {
    /// The result JSON (`Null` = no change).
    Output(Value),
    /// Exit 2: blocked, with the reason.
    Block(String),
    /// Exit 0 with plain text that is not JSON (Claude Code and Gemini CLI give it a meaning).
    Text(String),
    /// The handler failed: could not run, answered badly, exited with another code.
    Error(String),
    /// The handler ran past its timeout (a command was killed).
    Timeout,
}
