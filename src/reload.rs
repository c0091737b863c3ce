//! Hot reload for everything that is loaded from files once and swapped whole (skills, hook
//! files): watch a few directories, keep only creates, writes, removes and renames of the files
//! that matter, wait until they are quiet, and reload only when the SHA-256 of those files'
//! contents changed. Reads are never a change: a reload reads its own files, and reacting to that
//! made the old watchers reload forever.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use sha2::{Digest, Sha256};

/// How long the files must be quiet before a change is looked at (editors save in steps).
const QUIET: Duration = Duration::from_millis(200);
/// A burst that never goes quiet is looked at after this long anyway.
const LONGEST_BURST: Duration = Duration::from_secs(2);

/// A value swapped whole on reload (the skills, the hook files): readers take an `Arc` of the
/// current one, so a chat keeps what it started with; every swap counts (the generation).
#[derive(Debug)]
pub(crate) struct Swappable<T> {
    current: RwLock<Arc<T>>,
    generation: AtomicU64,
}

impl<T> Swappable<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            current: RwLock::new(Arc::new(value)),
            generation: AtomicU64::new(0),
        }
    }

    /// The value as it is now.
    pub(crate) fn current(&self) -> Arc<T> {
        match self.current.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// How many swaps since the start (0 for a server nobody edited).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Lets `change` look at the current value and make the next one (`None` keeps it), under
    /// the write lock, so two reloads cannot interleave; returns what `change` says.
    pub(crate) fn update<R>(&self, change: impl FnOnce(&Arc<T>) -> (Option<T>, R)) -> R {
        let mut guard = match self.current.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (next, said) = change(&guard);
        if let Some(next) = next {
            *guard = Arc::new(next);
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
        said
    }
}

/// Where a set's files are.
pub(crate) trait Layout: Send + Sync + 'static {
    /// The directories to watch, and whether their subdirectories count. A directory that does not
    /// exist yet is waited for from its nearest existing parent.
    fn roots(&self) -> Vec<(PathBuf, RecursiveMode)>;
    /// Whether a change at `path` can change the set.
    fn matters(&self, path: &Path) -> bool;
    /// The files the set is loaded from, as they are now; their paths and contents are its
    /// fingerprint.
    fn files(&self) -> Vec<PathBuf>;
}

/// What a reload did, for the log.
pub(crate) enum Outcome {
    /// The new set is in use: `summary` goes in the log line, then each warning.
    Swapped {
        summary: String,
        warnings: Vec<String>,
    },
    /// The change was refused and the last good set stays; each problem is logged.
    Refused { problems: Vec<String> },
}

/// Why watching could not start: the set is loaded, it just will not reload without a restart.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WatchError {
    /// A root's absolute path could not be made.
    #[error("cannot watch {}: {source}", path.display())]
    Path {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot watch the {what}: {source}")]
    Watcher {
        what: &'static str,
        source: notify::Error,
    },
    #[error("cannot watch the {what}: no directory could be watched")]
    NothingWatchable { what: &'static str },
    #[error("cannot start the {what} reloader: {source}")]
    Thread {
        what: &'static str,
        source: std::io::Error,
    },
}

impl WatchError {
    /// `path` made absolute, or the error naming it.
    pub(crate) fn absolute(path: &Path) -> Result<PathBuf, WatchError> {
        std::path::absolute(path).map_err(|source| WatchError::Path {
            path: path.to_path_buf(),
            source,
        })
    }
}

enum Message {
    /// A change at these paths (none: look at everything, e.g. after a missed event).
    Changed(Vec<PathBuf>),
    Stop,
}

/// Watches a layout and reloads on real changes, on its own thread, until dropped.
pub(crate) struct Reloader {
    stop: Sender<Message>,
}

impl std::fmt::Debug for Reloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reloader")
    }
}

impl Drop for Reloader {
    fn drop(&mut self) {
        let _ = self.stop.send(Message::Stop);
    }
}

impl Reloader {
    /// Starts watching. `what` names the set in logs ("skills", "hook files"); `reload` loads the
    /// files again and swaps the set, or returns None when there is nothing left to reload.
    pub(crate) fn start(
        what: &'static str,
        layout: impl Layout,
        reload: impl FnMut() -> Option<Outcome> + Send + 'static,
    ) -> Result<Reloader, WatchError> {
        let layout = Arc::new(layout);
        let (tx, rx) = mpsc::channel();
        let roots = layout.roots();
        let filter = layout.clone();
        let events = tx.clone();
        let mut watcher = notify::recommended_watcher(move |result: notify::Result<Event>| {
            let paths = match result {
                Ok(event) if !is_change(&event) => return,
                // A rescan means events were lost: look at everything.
                Ok(event) if event.need_rescan() => Vec::new(),
                Ok(event) if !event.paths.iter().any(|p| concerns(&*filter, &roots, p)) => return,
                Ok(event) => event.paths,
                Err(error) => {
                    tracing::warn!(%error, "{what}: file watcher error");
                    Vec::new()
                }
            };
            let _ = events.send(Message::Changed(paths));
        })
        .map_err(|source| WatchError::Watcher { what, source })?;
        let mut armed = BTreeMap::new();
        arm(&mut watcher, &layout.roots(), &mut armed, &[], what);
        if armed.is_empty() {
            return Err(WatchError::NothingWatchable { what });
        }
        let fingerprint = fingerprint(&layout.files());
        let watch = Watch {
            what,
            layout,
            watcher,
            armed,
            fingerprint,
        };
        std::thread::Builder::new()
            .name(format!("reload {what}"))
            .spawn(move || watch.run(rx, reload))
            .map_err(|source| WatchError::Thread { what, source })?;
        Ok(Reloader { stop: tx })
    }
}

/// The reloader thread's state.
struct Watch<L> {
    what: &'static str,
    layout: Arc<L>,
    watcher: RecommendedWatcher,
    /// What is watched now, and how.
    armed: BTreeMap<PathBuf, RecursiveMode>,
    /// Of the files the current set was loaded from.
    fingerprint: [u8; 32],
}

impl<L: Layout> Watch<L> {
    fn run(mut self, rx: Receiver<Message>, mut reload: impl FnMut() -> Option<Outcome>) {
        while let Some(touched) = next_burst(&rx) {
            arm(
                &mut self.watcher,
                &self.layout.roots(),
                &mut self.armed,
                &touched,
                self.what,
            );
            let now = fingerprint(&self.layout.files());
            if now == self.fingerprint {
                continue;
            }
            // Also after a refused change: the same broken files are not retried on every event.
            self.fingerprint = now;
            match reload() {
                None => return,
                Some(outcome) => log(self.what, outcome),
            }
        }
    }
}

/// Waits for a change, then for the quiet after it; returns every path touched, or None when the
/// reloader stopped.
fn next_burst(rx: &Receiver<Message>) -> Option<Vec<PathBuf>> {
    let Ok(Message::Changed(mut touched)) = rx.recv() else {
        return None;
    };
    let longest = Instant::now() + LONGEST_BURST;
    loop {
        let left = longest.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Some(touched);
        }
        match rx.recv_timeout(QUIET.min(left)) {
            Ok(Message::Changed(paths)) => touched.extend(paths),
            Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => return Some(touched),
        }
    }
}

fn log(what: &str, outcome: Outcome) {
    match outcome {
        Outcome::Swapped { summary, warnings } => {
            tracing::info!("{what} reloaded: {summary}");
            for warning in warnings {
                tracing::warn!("{warning}");
            }
        }
        Outcome::Refused { problems } => {
            for problem in problems {
                tracing::warn!("{problem} (keeping the last good {what})");
            }
        }
    }
}

/// Whether the event can change file contents or names; reads and metadata (chmod, touch) cannot.
fn is_change(event: &Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(_) => true,
        EventKind::Any | EventKind::Other => true,
    }
}

/// Whether a change at `path` concerns the set: one of its files, or a watched directory (or one
/// on the way to it) that appeared, went or moved.
fn concerns(layout: &dyn Layout, roots: &[(PathBuf, RecursiveMode)], path: &Path) -> bool {
    layout.matters(path) || roots.iter().any(|(root, _)| root.starts_with(path))
}

/// Watches every root, or its nearest existing parent while it does not exist; re-watches a
/// directory that was itself touched (it may have been removed and made again).
fn arm(
    watcher: &mut RecommendedWatcher,
    roots: &[(PathBuf, RecursiveMode)],
    armed: &mut BTreeMap<PathBuf, RecursiveMode>,
    touched: &[PathBuf],
    what: &str,
) {
    let mut wanted: BTreeMap<PathBuf, RecursiveMode> = BTreeMap::new();
    for (root, mode) in roots {
        let (dir, mode) = match root.ancestors().find(|dir| dir.is_dir()) {
            Some(dir) if dir == root => (dir, *mode),
            Some(dir) => (dir, RecursiveMode::NonRecursive),
            None => continue,
        };
        let slot = wanted.entry(dir.to_path_buf()).or_insert(mode);
        if mode == RecursiveMode::Recursive {
            *slot = mode;
        }
    }
    let stale = |dir: &PathBuf, mode: &RecursiveMode, other: &BTreeMap<PathBuf, RecursiveMode>| {
        other.get(dir) != Some(mode) || touched.contains(dir)
    };
    for (dir, mode) in armed.iter() {
        if stale(dir, mode, &wanted) {
            // It may be gone already, and with it the watch.
            let _ = watcher.unwatch(dir);
        }
    }
    let before = std::mem::take(armed);
    for (dir, mode) in wanted {
        if !stale(&dir, &mode, &before) {
            armed.insert(dir, mode);
            continue;
        }
        match watcher.watch(&dir, mode) {
            Ok(()) => {
                armed.insert(dir, mode);
            }
            Err(error) => {
                tracing::warn!(%error, dir = %dir.display(), "cannot watch for {what} changes")
            }
        }
    }
}

/// The most a config-like file (a hook file, `trust.json`, a skill's hook file) may hold.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Reads a small regular file, safely for a file someone else may have put there: opened
/// without blocking and without taking a terminal, refused unless it is a regular file (a FIFO,
/// `/dev/zero` or a terminal behind a symlink is never read), and read to at most
/// [`MAX_FILE_BYTES`] (a `/proc` file that claims size 0 cannot flood memory).
pub(crate) fn read_small_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_FILE_BYTES} bytes"
        )));
    }
    Ok(bytes)
}

/// SHA-256 over each file's path and contents (or that it is a directory, missing, unreadable).
fn fingerprint(files: &[PathBuf]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for file in files {
        let path = file.as_os_str().as_encoded_bytes();
        hash.update((path.len() as u64).to_le_bytes());
        hash.update(path);
        match read_small_file(file) {
            Ok(bytes) => {
                hash.update(b"f");
                hash.update((bytes.len() as u64).to_le_bytes());
                hash.update(&bytes);
            }
            Err(_) if file.is_dir() => hash.update(b"d"),
            Err(error) => hash.update(format!("e{:?}", error.kind())),
        }
    }
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_contents_names_and_presence() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let both = [a.clone(), b.clone()];
        std::fs::write(&a, "one").unwrap();
        let first = fingerprint(&both);
        assert_eq!(first, fingerprint(&both), "stable");
        std::fs::write(&a, "one").unwrap();
        assert_eq!(first, fingerprint(&both), "same bytes");
        std::fs::write(&b, "").unwrap();
        assert_ne!(first, fingerprint(&both), "b appeared");
        std::fs::remove_file(&b).unwrap();
        std::fs::write(&a, "two").unwrap();
        assert_ne!(first, fingerprint(&both), "a changed");
        std::fs::write(&b, "two").unwrap();
        assert_ne!(
            fingerprint(&both[..1]),
            fingerprint(&both[1..]),
            "another name"
        );
    }
}
