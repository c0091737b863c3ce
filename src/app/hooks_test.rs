//! What `hookwire hooks test EVENT` runs: one event's hooks, loaded as `serve` loads them, run
//! for real on an input, hook by hook (docs/protocol.md §12). The command prints it.

use serde_json::Value;

use super::{agent_parts, StartError};
use crate::config::Config;
use crate::hooks::external::{DryDecision, DryRun};

/// One event's chain, run hook by hook.
#[derive(Debug, Clone, PartialEq)]
pub struct HookTest {
    /// The event's canonical name.
    pub event: &'static str,
    pub hooks: Vec<HookTestRun>,
    pub decision: HookTestDecision,
    /// Some hook failed or timed out.
    pub failed: bool,
    /// The hook files loaded, as `serve` would load them (shown, workspace-relative where they
    /// are in the workspace).
    pub files: Vec<String>,
    /// The workspace hook files left out because they are not trusted.
    pub untrusted: Vec<String>,
}

/// One hook's run.
#[derive(Debug, Clone, PartialEq)]
pub struct HookTestRun {
    pub name: String,
    /// Its file and line.
    pub place: String,
    pub outcome: &'static str,
    pub ms: f64,
    /// Each field it changed: its value before and after (JSON).
    pub changes: Vec<(&'static str, Value, Value)>,
    /// Why it failed or timed out: for a command, its exit code and the start of its stderr.
    pub error: Option<String>,
}

/// What the chain decided.
#[derive(Debug, Clone, PartialEq)]
pub enum HookTestDecision {
    /// Nothing stops the event.
    Continue,
    /// `retry_feedback`: the model (or, before a tool, the tool's result) gets this.
    Feedback(String),
    /// A stop, skip, block or ask.
    Refused { how: &'static str, reason: String },
}

/// Why the hooks could not be run; the message is for the person who ran the command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookTestError {
    #[error("{0}")]
    Load(#[from] StartError),
    #[error("no hook files are loaded")]
    NoHookFiles,
    /// An unknown event, an input that does not fit it.
    #[error("{0}")]
    Input(String),
}

/// Runs EVENT's hooks (any dialect's spelling) on `input`, the JSON a hook would get.
pub async fn test_hooks(
    config: &Config,
    event: &str,
    input: &Value,
) -> Result<HookTest, HookTestError> {
    let parts = agent_parts(config)?;
    let files = parts
        .sources
        .hook_files()
        .ok_or(HookTestError::NoHookFiles)?;
    let run = files
        .dry_run(event, input)
        .await
        .map_err(|e| HookTestError::Input(e.to_string()))?;
    let mut test = HookTest::from(run);
    let set = files.current();
    test.files = shown_files(config, &set);
    test.untrusted = set.untrusted.iter().map(|u| u.shown.clone()).collect();
    Ok(test)
}

/// The hook files of `set` as the commands show them: workspace-relative where they are in the
/// workspace.
pub(super) fn shown_files(config: &Config, set: &crate::hooks::external::HookSet) -> Vec<String> {
    set.files
        .iter()
        .map(|path| {
            path.strip_prefix(&config.workspace)
                .unwrap_or(path)
                .display()
                .to_string()
        })
        .collect()
}

impl From<DryRun> for HookTest {
    fn from(run: DryRun) -> Self {
        HookTest {
            event: run.event,
            hooks: run
                .hooks
                .into_iter()
                .map(|hook| HookTestRun {
                    name: hook.name,
                    place: hook.place,
                    outcome: hook.outcome,
                    ms: hook.ms,
                    changes: hook.changes,
                    error: hook.error,
                })
                .collect(),
            decision: match run.decision {
                DryDecision::Continue => HookTestDecision::Continue,
                DryDecision::Feedback(feedback) => HookTestDecision::Feedback(feedback),
                DryDecision::Refused { how, reason } => HookTestDecision::Refused { how, reason },
            },
            failed: run.failed,
            files: Vec::new(),
            untrusted: Vec::new(),
        }
    }
}
