//! Recording hook traffic (docs/protocol.md §21): every event of the hook files that runs hooks
//! becomes one JSON line — what the hooks got (redacted), what the chain decided, and each hook's
//! run — so that `hookwire hooks replay` can run yesterday's traffic against today's hooks.
//!
//! A chat never waits for the disk: a line is serialised in the chat's task and handed to one
//! writer thread over a bounded channel; when the writer falls behind, lines are dropped and
//! counted (`hookwire_hook_records_dropped_total`), never queued without bound. The writer
//! appends to `<dir>/hooks-<UTC date>.jsonl` (the folder 0700, the files 0600), starts a new
//! file (`hooks-<date>.1.jsonl`, …) past `max_bytes`, and keeps the newest `keep_files` files.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::hash::BuildHasher;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `hooks.record`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSettings {
    /// Where the recordings go.
    pub dir: PathBuf,
    /// The share of chats recorded, 0 to 1 (a chat is recorded whole or not at all).
    pub sample: f64,
    /// A file past this many bytes is followed by a new one.
    pub max_bytes: u64,
    /// Files kept; the oldest beyond this are removed.
    pub keep_files: usize,
}

impl RecordSettings {
    pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;
    pub const DEFAULT_KEEP_FILES: usize = 20;

    /// Every chat, into `dir`, with the default bounds.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            sample: 1.0,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            keep_files: Self::DEFAULT_KEEP_FILES,
        }
    }
}

/// One recorded event: a line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordLine {
    /// When the chain ran (ISO 8601, UTC).
    pub at: String,
    /// The chat the event belongs to; none for a connection event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// The event's canonical name (`pre_tool_execution`).
    pub event: String,
    /// The input the hooks got, in the native dialect, with credentials replaced.
    pub input: Value,
    pub decision: RecordedDecision,
    pub hooks: Vec<RecordedHook>,
}

/// What a chain decided: `outcome` (`continue`, `block`, `skip`, `ask` or `retry`), why, which
/// hook decided, and the fields the hooks rewrote or added, with their new values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedDecision {
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub changed: BTreeMap<String, Value>,
}

impl RecordedDecision {
    /// Whether `other` decides the same: the outcome, the reason and the rewritten fields (not
    /// which hook decided, nor how long it took).
    pub fn same_as(&self, other: &RecordedDecision) -> bool {
        self.outcome == other.outcome
            && self.reason == other.reason
            && self.changed == other.changed
    }
}

/// One hook's run in a recorded event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedHook {
    pub name: String,
    /// Its level and place: `server hooks.yaml:3`.
    pub source: String,
    /// `success`, `block`, `skip`, `ask`, `timeout` or `failure`.
    pub outcome: String,
    pub ms: f64,
}

/// Lines waiting for the writer; past this, lines are dropped (and counted).
const QUEUE: usize = 16_384;

/// How often the writer takes the lines that came.
const DRAIN_EVERY: Duration = Duration::from_millis(100);

/// The recording of a server: cheap to ask whether a chat is recorded, and to hand it a line.
pub struct Recorder {
    lines: SyncSender<MakeLine>,
    /// Chats whose id hashes below this are recorded (`sample` of `u64::MAX`).
    threshold: u64,
    /// Keyed per process, so which chats are sampled cannot be steered from outside.
    hasher: std::collections::hash_map::RandomState,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("threshold", &self.threshold)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Makes the folder (0700) and starts the writer; an error when the folder cannot be made.
    pub fn start(settings: RecordSettings) -> std::io::Result<Recorder> {
        make_private_dir(&settings.dir)?;
        let (lines, received) = mpsc::sync_channel(QUEUE);
        let sample = settings.sample.clamp(0.0, 1.0);
        let threshold = if sample >= 1.0 {
            u64::MAX
        } else {
            (sample * u64::MAX as f64) as u64
        };
        std::thread::Builder::new()
            .name("hook-recorder".into())
            .spawn(move || Writer::new(settings).run(received))?;
        Ok(Recorder {
            lines,
            threshold,
            hasher: std::collections::hash_map::RandomState::new(),
        })
    }

    /// Whether the chat `chat_id` is recorded (the same answer for all its events).
    pub fn samples(&self, chat_id: &str) -> bool {
        if self.threshold == u64::MAX {
            return true;
        }
        self.hasher.hash_one(chat_id) < self.threshold
    }

    /// Hands the writer what makes a line (a [`RecordLine`] as JSON text, one line): it is made
    /// there, off the chat's path. Dropped (and counted) when the writer is behind.
    pub fn record(&self, line: impl FnOnce() -> String + Send + 'static) {
        match self.lines.try_send(Box::new(line)) {
            Ok(()) => metrics::counter!("hookwire_hook_records_total").increment(1),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                metrics::counter!("hookwire_hook_records_dropped_total").increment(1);
            }
        }
    }
}

/// What the writer makes a line of.
type MakeLine = Box<dyn FnOnce() -> String + Send>;

/// `dir` and its parents, made 0700. A folder that is there already keeps its mode (it may be a
/// shared one such as /tmp): a warning says when others may read it.
fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        if let Ok(metadata) = std::fs::metadata(dir) {
            if metadata.permissions().mode() & 0o077 != 0 {
                tracing::warn!(dir = %dir.display(), "the hook recordings' folder may be read by other users of this machine (its files are 0600)");
            }
            return Ok(());
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// The writer thread's state: the file being written, and how much it holds.
struct Writer {
    settings: RecordSettings,
    file: Option<(PathBuf, BufWriter<File>, u64)>,
    /// The day the open file is for (a new day starts a new file).
    day: String,
}

impl Writer {
    fn new(settings: RecordSettings) -> Self {
        Self {
            settings,
            file: None,
            day: String::new(),
        }
    }

    /// Writes lines until every sender is gone. It wakes every [`DRAIN_EVERY`] and writes what
    /// came meanwhile in one go, rather than on every line: a chat's send never wakes a thread,
    /// and the disk sees one write per batch. A line is on disk within that time of its event.
    fn run(mut self, lines: Receiver<MakeLine>) {
        loop {
            std::thread::sleep(DRAIN_EVERY);
            let mut wrote = false;
            loop {
                match lines.try_recv() {
                    Ok(make) => {
                        self.write(&make());
                        wrote = true;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.flush();
                        return;
                    }
                }
            }
            if wrote {
                self.flush();
            }
        }
    }

    fn flush(&mut self) {
        if let Some((path, file, _)) = &mut self.file {
            if let Err(error) = file.flush() {
                tracing::warn!(file = %path.display(), %error, "cannot write the hook recording");
            }
        }
    }

    fn write(&mut self, line: &str) {
        let bytes = line.len() as u64 + 1;
        let today = crate::types::iso8601(SystemTime::now())[..10].to_string();
        let full = self
            .file
            .as_ref()
            .is_some_and(|(_, _, size)| *size > 0 && size + bytes > self.settings.max_bytes);
        if self.file.is_none() || full || today != self.day {
            self.flush();
            self.file = None;
            match self.open(&today) {
                Ok(opened) => self.file = Some(opened),
                Err(error) => {
                    tracing::warn!(dir = %self.settings.dir.display(), %error, "cannot open a hook recording; the line is dropped");
                    metrics::counter!("hookwire_hook_records_dropped_total").increment(1);
                    return;
                }
            }
            self.day = today;
            self.remove_old();
        }
        let Some((path, file, size)) = &mut self.file else {
            return;
        };
        let written = file
            .write_all(line.as_bytes())
            .and_then(|()| file.write_all(b"\n"));
        match written {
            Ok(()) => *size += bytes,
            Err(error) => {
                tracing::warn!(file = %path.display(), %error, "cannot write the hook recording");
            }
        }
    }

    /// Today's file with room left: `hooks-<date>.jsonl`, else the first `hooks-<date>.N.jsonl`
    /// under `max_bytes`, created 0600.
    fn open(&self, day: &str) -> std::io::Result<(PathBuf, BufWriter<File>, u64)> {
        for n in 0.. {
            let name = match n {
                0 => format!("hooks-{day}.jsonl"),
                n => format!("hooks-{day}.{n}.jsonl"),
            };
            let path = self.settings.dir.join(name);
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            if size > 0 && size >= self.settings.max_bytes {
                continue;
            }
            let mut options = OpenOptions::new();
            options.create(true).append(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let file = options.open(&path)?;
            #[cfg(unix)]
            if size > 0 {
                // A file that was there keeps the mode it was made with: made private too.
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            }
            return Ok((path, BufWriter::new(file), size));
        }
        Err(std::io::Error::other("no file name left"))
    }

    /// Removes the oldest recordings beyond `keep_files`.
    fn remove_old(&self) {
        let Ok(entries) = std::fs::read_dir(&self.settings.dir) else {
            return;
        };
        let mut files: Vec<(SystemTime, PathBuf)> = entries
            .flatten()
            .filter(|entry| is_recording(&entry.path()))
            .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
            .collect();
        if files.len() <= self.settings.keep_files {
            return;
        }
        files.sort();
        let extra = files.len() - self.settings.keep_files;
        for (_, path) in files.into_iter().take(extra) {
            if let Err(error) = std::fs::remove_file(&path) {
                tracing::warn!(file = %path.display(), %error, "cannot remove an old hook recording");
            }
        }
    }
}

/// Whether `path` is one of the recorder's files (`hooks-….jsonl`).
pub fn is_recording(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with("hooks-") && name.ends_with(".jsonl"))
}

#[cfg(test)]
mod tests;
