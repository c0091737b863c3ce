//! What `hookwire hooks replay PATH…` runs (docs/protocol.md §21): every event of the recordings
//! through the hooks loaded as `serve` loads them now, the new decision against the recorded
//! one. The command prints it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures::StreamExt;

use super::{agent_parts, Sources, StartError};
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
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
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
    /// The server records no hook traffic.
    #[error("hook traffic is not recorded: set hooks.record.dir (or HOOKWIRE_HOOK_RECORD_DIR)")]
    NotRecorded,
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
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<ReplayReport, ReplayError> {
    let recorded = read_recordings(paths)?;
    let parts = agent_parts(config)?;
    replay_through(config, &parts.sources, recorded, options, progress).await
}

/// Replays the last `last` recorded events of the server (`hooks.record`) through its hook
/// files as they are loaded now: what an operator asks after editing a hook file.
pub async fn replay_last(
    config: &Config,
    sources: &Sources,
    last: usize,
    options: ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let dir = config
        .hook_record
        .as_ref()
        .map(|record| record.dir.clone())
        .ok_or(ReplayError::NotRecorded)?;
    // Files read off the runtime's workers: a recording may be large.
    let recorded = tokio::task::spawn_blocking(move || read_last(&dir, last))
        .await
        .map_err(|error| ReplayError::Unreadable {
            place: "the recordings".into(),
            reason: error.to_string(),
        })??;
    replay_through(config, sources, recorded, options, &mut |_, _| {}).await
}

/// Replays `recorded` through the hook files of `sources`.
async fn replay_through(
    config: &Config,
    sources: &Sources,
    recorded: Vec<Recorded>,
    options: ReplayOptions,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<ReplayReport, ReplayError> {
    let files = sources.hook_files().ok_or(ReplayError::NoHookFiles)?;
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
    let files = super::hooks_test::shown_files(config, &files.current());
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

/// The last `last` lines of the recordings in `dir`, oldest first (the newest files read first,
/// until there are enough).
fn read_last(dir: &Path, last: usize) -> Result<Vec<Recorded>, ReplayError> {
    let entries = std::fs::read_dir(dir).map_err(|error| unreadable(dir, 0, &error))?;
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|entry| is_recording(&entry.path()))
        .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
        .collect();
    files.sort();
    let mut newest_first: Vec<Recorded> = Vec::new();
    for (_, file) in files.into_iter().rev() {
        let mut lines = read_recordings(std::slice::from_ref(&file))?;
        lines.reverse();
        newest_first.extend(lines.into_iter().take(last - newest_first.len()));
        if newest_first.len() >= last {
            break;
        }
    }
    newest_first.reverse();
    Ok(newest_first)
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
