//! Which workspace files the operator has vouched for (docs/protocol.md §8): `hookwire trust`
//! pins each file's SHA-256 in `<state dir>/trust.json`, keyed by the canonical workspace path,
//! and a loader runs a workspace file only when the bytes it read hash to the pinned value.
//!
//! The store lives outside every workspace it vouches for: a state dir inside the workspace is
//! refused (the workspace could vouch for itself). A store that cannot be read trusts nothing,
//! and says why; it never stops a server. Writes are atomic (a temp file renamed over the old
//! one), the file is `0600` and a folder this module creates `0700`.
//!
//! Knows nothing of hooks: what a trusted file contains is the loader's business.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The store's file name in the state dir.
pub(crate) const FILE_NAME: &str = "trust.json";
/// The format of `trust.json` this build reads and writes.
const VERSION: u32 = 1;

/// The SHA-256 of `bytes`, 64 lowercase hex digits (how `trust.json` pins a file).
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A workspace's pinned files: workspace-relative path (`/`-separated) → SHA-256 hex.
pub(crate) type Pins = BTreeMap<String, String>;

/// The contents of `trust.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TrustFile {
    pub(crate) version: u32,
    /// Canonical workspace path → its pinned files.
    pub(crate) workspaces: BTreeMap<String, Pins>,
}

impl Default for TrustFile {
    fn default() -> Self {
        Self {
            version: VERSION,
            workspaces: BTreeMap::new(),
        }
    }
}

impl TrustFile {
    /// The pins of `workspace` (canonical), if it is trusted at all.
    pub(crate) fn pins(&self, workspace: &Path) -> Option<&Pins> {
        self.workspaces.get(workspace.to_str()?)
    }

    /// Replaces the pins of `workspace` (canonical) with `pins`.
    pub(crate) fn set(&mut self, workspace: &Path, pins: Pins) -> Result<(), TrustError> {
        let key = workspace_key(workspace)?;
        self.workspaces.insert(key, pins);
        Ok(())
    }

    /// Forgets `workspace`; returns its pins, if it had any.
    pub(crate) fn revoke(&mut self, workspace: &Path) -> Option<Pins> {
        self.workspaces.remove(workspace.to_str()?)
    }
}

/// Why the store cannot be used; the message names the file or folder and what to do.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("no state directory to keep trust.json in: set HOOKWIRE_STATE_DIR (or XDG_STATE_HOME or HOME)")]
    NoStateDir,
    #[error(
        "the state directory {} is inside the workspace {}: trust files inside the workspace are \
         never read (set HOOKWIRE_STATE_DIR to a folder outside it)",
        state.display(),
        workspace.display()
    )]
    InsideWorkspace { state: PathBuf, workspace: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not JSON, or not the shape (or version) of a trust file.
    #[error("{} is not a valid trust file ({message}); fix or remove it", path.display())]
    Corrupt { path: PathBuf, message: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `trust.json` keys are strings: a path that is not UTF-8 cannot be pinned.
    #[error("{} is not valid UTF-8 and cannot be trusted", .0.display())]
    NotUtf8(PathBuf),
}

/// `trust.json` in a state dir that is not inside the workspace it serves.
#[derive(Debug, Clone)]
pub(crate) struct TrustStore {
    dir: PathBuf,
}

impl TrustStore {
    /// The store for `workspace` (canonical): refused when there is no state dir, or when the
    /// state dir is (or would be, once created) inside the workspace.
    pub(crate) fn for_workspace(
        state_dir: Option<&Path>,
        workspace: &Path,
    ) -> Result<Self, TrustError> {
        let store = Self::in_dir(state_dir)?;
        if store.dir.starts_with(workspace) {
            return Err(TrustError::InsideWorkspace {
                state: store.dir,
                workspace: workspace.to_path_buf(),
            });
        }
        Ok(store)
    }

    /// The store in `state_dir` whatever the workspace, to show what it holds (`trust --list`);
    /// a loader uses [`TrustStore::for_workspace`].
    pub(crate) fn in_dir(state_dir: Option<&Path>) -> Result<Self, TrustError> {
        let dir = state_dir.ok_or(TrustError::NoStateDir)?;
        let real = resolved(dir).map_err(|source| TrustError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(Self { dir: real })
    }

    /// The path of `trust.json`.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// The trust file; empty when there is none yet.
    pub(crate) fn load(&self) -> Result<TrustFile, TrustError> {
        let path = self.path();
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TrustFile::default())
            }
            Err(source) => return Err(TrustError::Read { path, source }),
        };
        let file: TrustFile =
            serde_json::from_slice(&bytes).map_err(|error| TrustError::Corrupt {
                path: path.clone(),
                message: error.to_string(),
            })?;
        if file.version != VERSION {
            return Err(TrustError::Corrupt {
                path,
                message: format!("version {}, this hookwire reads {VERSION}", file.version),
            });
        }
        Ok(file)
    }

    /// Writes `file` atomically: a reader sees the old contents or the new, never a mix.
    pub(crate) fn save(&self, file: &TrustFile) -> Result<(), TrustError> {
        let path = self.path();
        let fail = |source| TrustError::Write {
            path: path.clone(),
            source,
        };
        create_private_dir(&self.dir).map_err(fail)?;
        let mut text = serde_json::to_string_pretty(file)
            .map_err(|error| fail(std::io::Error::other(error)))?;
        text.push('\n');
        let temp = self
            .dir
            .join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
        // Left over by a run that died between write and rename (with the same process id).
        let _ = std::fs::remove_file(&temp);
        let written = write_private(&temp, text.as_bytes()).and_then(|()| {
            std::fs::rename(&temp, &path)?;
            // The rename is durable once the folder is.
            std::fs::File::open(&self.dir)?.sync_all()
        });
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.map_err(fail)
    }
}

/// How a loader decides which workspace files it may use: every one (`trust_workspace_hooks`),
/// or those pinned in the store as it is at the time of the load.
#[derive(Debug, Clone)]
pub(crate) struct TrustPolicy {
    /// Canonical.
    workspace: PathBuf,
    source: Source,
    /// What a warning suggests.
    hint: TrustHint,
}

/// What a warning about a file that is not trusted tells the operator to do.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TrustHint {
    /// `hookwire trust --workspace …`.
    command: String,
    /// In a container: its state dir (` /state`, or empty when there is none), for the note
    /// after the command (where to run it, and where the trust is kept).
    container: Option<String>,
}

impl TrustHint {
    /// The command, and in a container where to run it and what keeps its trust.
    fn text(&self) -> String {
        let command = printable(&self.command);
        match &self.container {
            Some(state_dir) => format!(
                "{command}; in a container, run it there (docker exec -it CONTAINER {command}) \
                 and keep its state dir{} on a volume, or the trust is gone with the container \
                 (docs/deployment.md#workspace-trust-in-a-container)",
                printable(state_dir)
            ),
            None => command,
        }
    }
}

#[derive(Debug, Clone)]
enum Source {
    All,
    Store(TrustStore),
    /// Nothing is trusted, for this reason (no state dir, or one inside the workspace).
    Unusable(String),
}

impl TrustPolicy {
    /// The policy of a server or command on `workspace` (canonical): `trust_all` trusts every
    /// file; otherwise the store in `state_dir`, refused when that is inside the workspace.
    pub(crate) fn new(workspace: &Path, trust_all: bool, state_dir: Option<&Path>) -> Self {
        let source = if trust_all {
            Source::All
        } else {
            match TrustStore::for_workspace(state_dir, workspace) {
                Ok(store) => Source::Store(store),
                Err(error) => Source::Unusable(error.to_string()),
            }
        };
        Self {
            workspace: workspace.to_path_buf(),
            source,
            hint: TrustHint {
                command: format!("hookwire trust --workspace {}", shell_word(workspace)),
                container: None,
            },
        }
    }

    /// Every file of `workspace` is trusted.
    pub(crate) fn all(workspace: &Path) -> Self {
        Self::new(workspace, true, None)
    }

    /// Warnings suggest `--config FILE` too: the state dir may be set there.
    pub(crate) fn with_config_file(mut self, config: Option<&Path>) -> Self {
        if let Some(config) = config {
            self.hint
                .command
                .push_str(&format!(" --config {}", shell_word(config)));
        }
        self
    }

    /// In a container (`HOOKWIRE_CONTAINER`), warnings say to run the command inside it, and
    /// that the trust lasts only as long as the state dir does: the container's own files are
    /// gone when it is recreated (`docker run --rm`, a new image, a restarted pod).
    pub(crate) fn in_container(mut self, container: bool) -> Self {
        if container {
            self.hint.container = Some(match &self.source {
                Source::Store(store) => format!(" {}", shell_word(&store.dir)),
                Source::All | Source::Unusable(_) => String::new(),
            });
        }
        self
    }

    pub(crate) fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// `trust.json`, when it decides (to reload when it changes).
    pub(crate) fn store_file(&self) -> Option<PathBuf> {
        match &self.source {
            Source::Store(store) => Some(store.path()),
            Source::All | Source::Unusable(_) => None,
        }
    }

    /// The trust as of now: reads the store once. A store that cannot be read trusts nothing.
    pub(crate) fn current(&self) -> WorkspaceTrust<'_> {
        let pins = match &self.source {
            Source::All => Trusted::Everything,
            Source::Unusable(why) => Trusted::Nothing(why.clone()),
            Source::Store(store) => match store.load() {
                Ok(file) => {
                    Trusted::Pinned(file.pins(&self.workspace).cloned().unwrap_or_default())
                }
                Err(error) => Trusted::Nothing(error.to_string()),
            },
        };
        WorkspaceTrust { policy: self, pins }
    }
}

/// The trust of one workspace as of one look at the store.
#[derive(Debug)]
pub(crate) struct WorkspaceTrust<'a> {
    policy: &'a TrustPolicy,
    pins: Trusted,
}

/// Which files one look at the store trusts.
#[derive(Debug)]
enum Trusted {
    /// Every file ([`TrustPolicy::all`]).
    Everything,
    /// The pinned ones, as pinned.
    Pinned(Pins),
    /// None: the store cannot be used, for this reason.
    Nothing(String),
}

impl WorkspaceTrust<'_> {
    /// Whether the workspace file `path`, read as `bytes` (None: it could not be read), may be
    /// used; if not, why. Only [`TrustPolicy::all`] lets an unreadable file through (to be
    /// reported as a problem): its contents cannot be the pinned ones.
    pub(crate) fn check(&self, path: &Path, bytes: Option<&[u8]>) -> Result<(), Untrusted> {
        let key = relative_key(&self.policy.workspace, path);
        let reason = match (&self.pins, &key) {
            (Trusted::Everything, _) => return Ok(()),
            (Trusted::Nothing(why), _) => Reason::NoStore(why.clone()),
            (Trusted::Pinned(_), None) => Reason::NotTrusted,
            (Trusted::Pinned(pins), Some(key)) => match (pins.get(key), bytes) {
                (Some(pin), Some(bytes)) if *pin == sha256_hex(bytes) => return Ok(()),
                (Some(_), _) => Reason::Changed,
                (None, _) => Reason::NotTrusted,
            },
        };
        Err(Untrusted {
            shown: key.unwrap_or_else(|| path.display().to_string()),
            file: path.to_path_buf(),
            reason,
            hint: Box::new(self.policy.hint.clone()),
            errors: Box::default(),
        })
    }

    /// Whether the prompt file `prompt` that the trusted hook file `hook_file` reads (read as
    /// bytes of digest `sha256`) is pinned as it was read; if not, the hook file is not trusted.
    pub(crate) fn check_prompt_file(
        &self,
        hook_file: &Path,
        prompt: &Path,
        sha256: &str,
    ) -> Result<(), Untrusted> {
        let Trusted::Pinned(pins) = &self.pins else {
            return Ok(()); // every file trusted (a store that is not usable trusted no hook file)
        };
        let key = relative_key(&self.policy.workspace, prompt);
        let changed = match key.as_ref().and_then(|key| pins.get(key)) {
            Some(pin) if pin == sha256 => return Ok(()),
            Some(_) => true,
            None => false,
        };
        Err(Untrusted {
            shown: relative_key(&self.policy.workspace, hook_file)
                .unwrap_or_else(|| hook_file.display().to_string()),
            file: hook_file.to_path_buf(),
            reason: Reason::PromptFile {
                shown: key.unwrap_or_else(|| prompt.display().to_string()),
                changed,
            },
            hint: Box::new(self.policy.hint.clone()),
            errors: Box::default(),
        })
    }
}

/// A workspace file that was not loaded because it is not trusted. Shown as the warning: the
/// file, why, and the command that trusts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Untrusted {
    /// Workspace-relative (`.hookwire/hooks.yaml`); absolute when it cannot be.
    pub(crate) shown: String,
    pub(crate) file: PathBuf,
    pub(crate) reason: Reason,
    /// Boxed: an `Untrusted` travels in `Err`, which is kept small.
    hint: Box<TrustHint>,
    /// What is wrong with the file, as its parse found (`hookwire trust` refuses a file with
    /// errors, so trusting it is not the next step: fixing it is).
    /// Each as `file:line: message`.
    pub(crate) errors: Box<[String]>,
}

/// Why a workspace file is not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Never trusted (or trust was revoked).
    NotTrusted,
    /// Trusted once, with other contents.
    Changed,
    /// No store to ask: nothing is trusted, for this reason.
    NoStore(String),
    /// The prompt file it reads (`prompt_file:`) is not trusted, or changed since it was.
    PromptFile { shown: String, changed: bool },
}

impl Untrusted {
    /// The command that trusts it (after review).
    pub(crate) fn trust_command(&self) -> String {
        printable(&self.hint.command)
    }

    /// Why it was not loaded and what to do, without the file's name: [`Untrusted::reason`],
    /// then its errors, if it has any.
    pub(crate) fn why(&self) -> String {
        let reason = self.reason();
        if self.errors.is_empty() {
            return reason;
        }
        format!(
            "{reason}; but hookwire trust refuses it until its errors are fixed: {}",
            printable(&self.errors.join("; "))
        )
    }

    /// Why it was not loaded and what to do, without the file's name or its errors.
    pub(crate) fn reason(&self) -> String {
        let command = self.hint.text();
        match &self.reason {
            Reason::NotTrusted => format!("not trusted; review and trust it with: {command}"),
            Reason::Changed => {
                format!("changed since it was trusted; review and trust it again with: {command}")
            }
            Reason::PromptFile { shown, changed } => {
                let state = if *changed {
                    "changed since it was trusted"
                } else {
                    "not trusted"
                };
                format!(
                    "its prompt file {} is {state}; review and trust it with: {command}",
                    printable(shown)
                )
            }
            Reason::NoStore(why) => {
                format!("no workspace file is trusted: {why}; then trust it with: {command}")
            }
        }
    }
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "workspace hook file {} was not loaded: {}",
            printable(&self.shown),
            self.why()
        )
    }
}

/// `text` with control characters and format characters (Unicode general category Cf: the
/// zero-width ones, the bidirectional overrides that reorder what a terminal shows, soft
/// hyphens, tag characters) escaped, so a file name or command cannot hide what it is from the
/// person reading it. Newlines are kept only when `newlines` says so.
pub(crate) fn printable_with(text: &str, newlines: bool) -> String {
    use unicode_general_category::{get_general_category, GeneralCategory};
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let format = get_general_category(c) == GeneralCategory::Format;
        if (c.is_control() && !(newlines && c == '\n')) || format {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// [`printable_with`] on one line.
pub fn printable(text: &str) -> String {
    printable_with(text, false)
}

/// `path` as one shell word (quoted when it needs to be), for a command to copy.
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text;
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `path` relative to `workspace` as a `trust.json` key (`.hookwire/hooks/a.yaml`), or None when
/// it is not inside the workspace or not UTF-8.
pub(crate) fn relative_key(workspace: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(workspace).ok()?;
    let mut parts = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

fn workspace_key(workspace: &Path) -> Result<String, TrustError> {
    workspace
        .to_str()
        .map(String::from)
        .ok_or_else(|| TrustError::NotUtf8(workspace.to_path_buf()))
}

/// `dir` with symlinks resolved as far as it exists and the rest taken as written: where it is,
/// or will be once created. A relative `dir` is taken from the current directory.
pub(crate) fn resolved(dir: &Path) -> std::io::Result<PathBuf> {
    let mut real = PathBuf::new();
    for component in std::path::absolute(dir)?.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => real.push(component),
            Component::CurDir => {}
            // `real` has no symlinks left, so its parent is the real `..`.
            Component::ParentDir => {
                real.pop();
            }
            Component::Normal(name) => {
                real.push(name);
                if let Ok(canonical) = real.canonicalize() {
                    real = canonical;
                }
            }
        }
    }
    Ok(real)
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Writes a new file only its owner can read, and flushes it to disk.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests;
