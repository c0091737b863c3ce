//! What `hookwire hooks replay PATH…` runs (docs/protocol.md §21): every event of the recordings
//! through the hooks loaded as `serve` loads them now, the new decision against the recorded
//! one. The command prints it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures::StreamExt;

use super::{agent_parts, StartError};
use crate::config::Config;
use crate::hooks::record::{is_recording, RecordLine, RecordedDecision};

/// How to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Runs of each event (model-judged hooks answer differently from run to run: the report
    /// gives the rate of each outcome).
    pub repeat: usize,
    /// Events replayed at once.
    pub jobs: usize,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        Self { repeat: 1, jobs: 4 }
    }
}

/// The replay of recordings, event by event in the order recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    pub events: Vec<ReplayedEvent>,
    /// The hook files loaded, as `serve` would load them.
    pub files: Vec<String>,
}

impl ReplayReport {
    /// Events whose decision changed.
    pub fn changed(&self) -> usize {
        self.events.iter().filter(|event| event.changed).count()
    }
}

/// One recorded event, replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayedEvent {
    /// Where it was recorded: `file:line`.
    pub place: String,
    pub at: String,
    pub chat_id: Option<String>,
    pub event: String,
    pub old: RecordedDecision,
    /// The decision now (with `repeat`, the most frequent one).
    pub new: RecordedDecision,
    /// With `repeat` > 1: the share of runs that ended with each outcome.
    pub rates: BTreeMap<String, f64>,
    /// Whether any run decided differently from the recording.
    pub changed: bool,
}

/// Why the recordings could not be replayed; the message is for the person who ran the command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    #[error("{0}")]
    Load(#[from] StartError),
    #[error("no hook files are loaded")]
    NoHookFiles,
    /// A recording that cannot be read: the file, the line and why.
    #[error("{place}: {reason}")]
    Unreadable { place: String, reason: String },
}

/// One recorded line and where it is.
struct Recorded {
    place: String,
    line: RecordLine,
}

/// Replays the events of `paths` (recording files, or folders of them) through the hooks of
/// `config`; `progress` is told how many events are done, of how many.
pub async fn replay_recordings(
    config: &Config,
    paths: &[PathBuf],
    options: ReplayOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<ReplayReport, ReplayError> {
    let recorded = read_recordings(paths)?;
    let parts = agent_parts(config)?;
    let files = parts.sources.hook_files().ok_or(ReplayError::NoHookFiles)?;
    let total = recorded.len();
    let mut replays = futures::stream::iter(recorded.into_iter().map(|recorded| async move {
        let decisions = files.replay(&recorded.line, options.repeat).await;
        (recorded, decisions)
    }))
    .buffered(options.jobs.max(1));
    let mut events = Vec::with_capacity(total);
    progress(0, total);
    while let Some((recorded, decisions)) = replays.next().await {
        let decisions = decisions.map_err(|error| ReplayError::Unreadable {
            place: recorded.place.clone(),
            reason: error.to_string(),
        })?;
        events.push(compared(recorded, decisions));
        progress(events.len(), total);
    }
    let set = files.current();
    let files = set
        .files
        .iter()
        .map(|path| {
            path.strip_prefix(&config.workspace)
                .unwrap_or(path)
                .display()
                .to_string()
        })
        .collect();
    Ok(ReplayReport { events, files })
}

/// The recorded decision against the new ones.
fn compared(recorded: Recorded, decisions: Vec<RecordedDecision>) -> ReplayedEvent {
    let old = recorded.line.decision;
    let changed = decisions.iter().any(|new| !new.same_as(&old));
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for decision in &decisions {
        *counts.entry(decision.outcome.clone()).or_default() += 1;
    }
    let runs = decisions.len().max(1);
    let rates = if runs > 1 {
        counts
            .iter()
            .map(|(outcome, count)| (outcome.clone(), *count as f64 / runs as f64))
            .collect()
    } else {
        BTreeMap::new()
    };
    // The most frequent outcome's first decision (of equals, the recorded outcome's).
    let top = counts
        .iter()
        .max_by_key(|(outcome, count)| (**count, **outcome == old.outcome))
        .map(|(outcome, _)| outcome.clone());
    let new = decisions
        .iter()
        .find(|decision| Some(&decision.outcome) == top.as_ref())
        .cloned()
        .unwrap_or_else(|| old.clone());
    ReplayedEvent {
        place: recorded.place,
        at: recorded.line.at,
        chat_id: recorded.line.chat_id,
        event: recorded.line.event,
        old,
        new,
        rates,
        changed,
    }
}

/// Every line of every recording under `paths`, in order (a folder: its `hooks-*.jsonl` files
/// by name).
fn read_recordings(paths: &[PathBuf]) -> Result<Vec<Recorded>, ReplayError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|error| unreadable(path, 0, &error))?;
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| is_recording(path))
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    let mut recorded = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|error| unreadable(&file, 0, &error))?;
        for (index, text) in text.lines().enumerate() {
            if text.trim().is_empty() {
                continue;
            }
            let line: RecordLine =
                serde_json::from_str(text).map_err(|error| unreadable(&file, index + 1, &error))?;
            recorded.push(Recorded {
                place: format!("{}:{}", file.display(), index + 1),
                line,
            });
        }
    }
    Ok(recorded)
}

fn unreadable(file: &Path, line: usize, error: &dyn std::fmt::Display) -> ReplayError {
    let place = if line == 0 {
        file.display().to_string()
    } else {
        format!("{}:{line}", file.display())
    };
    ReplayError::Unreadable {
        place,
        reason: error.to_string(),
    }
}
