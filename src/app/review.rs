//! The review behind `hookwire trust`: each workspace hook file and every hook in it (event,
//! type, command or URL, and everything else that decides what it may do), and the workspace's
//! `.mcp.json` and every MCP server in it, with where each file stands against its pin; then the
//! pins of exactly the bytes reviewed, once the person agrees (docs/protocol.md §8). And what is
//! trusted, and forgetting a workspace. The command asks and prints.
//!
//! Everything a file says is escaped ([`printable`]): a command cannot hide itself from the
//! review with terminal escapes or a carriage return.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::hooks::external::{hook_files, load_hook_set, Handler, HookDef, OnError};
use crate::mcp::{parse_project_file, McpServerSettings, McpTransport, PROJECT_FILE};
pub use crate::trust::{printable, TrustError};
use crate::trust::{printable_with, relative_key, sha256_hex, Pins, TrustFile, TrustStore};
use crate::types::Problem;

/// Why the review, the pinning, the list or the revoke could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReviewError {
    #[error("workspace {}: {source}", path.display())]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The workspace is gone and its absolute path cannot be made either.
    #[error("{0}")]
    Path(std::io::Error),
    #[error(transparent)]
    Store(#[from] TrustError),
}

/// Where a workspace file stands against its pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustStatus {
    New,
    Changed,
    Trusted,
}

impl TrustStatus {
    fn of(pins: Option<&Pins>, key: &str, sha256: &str) -> TrustStatus {
        match pins.and_then(|pins| pins.get(key)) {
            Some(pin) if pin == sha256 => TrustStatus::Trusted,
            Some(_) => TrustStatus::Changed,
            None => TrustStatus::New,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TrustStatus::New => "not trusted yet",
            TrustStatus::Changed => "changed since it was trusted",
            TrustStatus::Trusted => "trusted",
        }
    }
}

/// A hook file, or the MCP servers' `.mcp.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Hooks,
    Mcp,
}

/// One workspace file as reviewed; every text escaped.
#[derive(Debug, Clone)]
pub struct ReviewedFile {
    /// Its path in the workspace (or in full, when it has no key).
    pub shown: String,
    pub kind: FileKind,
    /// `None`: it has problems and cannot be trusted.
    pub pin: Option<FilePin>,
    /// What it runs or calls: one entry per hook or server, each already indented (its
    /// details on further lines).
    pub entries: Vec<String>,
    /// Its problems (labelled): why it cannot be trusted, or warnings.
    pub problems: Vec<String>,
    /// The prompt files its hooks read (`prompt_file:`), pinned with it: their keys, escaped.
    pub prompt_files: Vec<(String, FilePin)>,
}

/// The hash of the bytes reviewed and how it stands against the pin.
#[derive(Debug, Clone)]
pub struct FilePin {
    pub status: TrustStatus,
    pub sha256: String,
}

/// The workspace's files, read once: what pinning them would pin is exactly what was shown.
#[derive(Debug)]
pub struct Review {
    /// The workspace's real path (trust is keyed by it).
    pub workspace: PathBuf,
    pub files: Vec<ReviewedFile>,
    store: TrustStore,
    trusted: TrustFile,
    old: Option<Pins>,
    pins: Pins,
}

/// What [`Review::trust`] recorded.
#[derive(Debug, Clone)]
pub struct Pinned {
    pub count: usize,
    /// The `trust.json` written.
    pub store: PathBuf,
}

/// The workspace's real path; a workspace that is gone keeps its absolute path, so its trust
/// can still be revoked.
fn workspace_of(config: &Config, must_exist: bool) -> Result<PathBuf, ReviewError> {
    match config.workspace.canonicalize() {
        Ok(path) => Ok(path),
        Err(source) if must_exist => Err(ReviewError::Workspace {
            path: config.workspace.clone(),
            source,
        }),
        Err(_) => std::path::absolute(&config.workspace).map_err(ReviewError::Path),
    }
}

/// Reads and describes the workspace's hook files and `.mcp.json` (the server's own hook file
/// is the operator's and needs no trust). Parsing runs nothing.
pub fn review(config: &Config) -> Result<Review, ReviewError> {
    let workspace = workspace_of(config, true)?;
    let store = TrustStore::for_workspace(config.state_dir.as_deref(), &workspace)?;
    let trusted = store.load()?;
    let old = trusted.pins(&workspace).cloned();
    let mut files = hook_file_reviews(&workspace, old.as_ref());
    let mcp_file = workspace.join(PROJECT_FILE);
    match crate::reload::read_small_file(&mcp_file) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        bytes => files.push(mcp_file_review(&workspace, &mcp_file, bytes, old.as_ref())),
    }
    let pins = files.iter().flat_map(|(_, pins)| pins.clone()).collect();
    Ok(Review {
        workspace,
        files: files.into_iter().map(|(file, _)| file).collect(),
        store,
        trusted,
        old,
        pins,
    })
}

/// Each hook file, with the pins it would get (its key and hash, and its prompt files') unless
/// it has problems.
fn hook_file_reviews(
    workspace: &Path,
    old: Option<&Pins>,
) -> Vec<(ReviewedFile, Vec<(String, String)>)> {
    let files = hook_files(None, workspace);
    // Each file is read once, and its pin is the hash of the bytes shown.
    let (set, problems) = load_hook_set(&files, &crate::trust::TrustPolicy::all(workspace));
    let mut reviews = Vec::new();
    for (path, _) in &files {
        let key = relative_key(workspace, path);
        let shown = printable(&key.clone().unwrap_or_else(|| path.display().to_string()));
        let own: Vec<String> = problems
            .iter()
            .filter(|p| p.file.as_deref() == Some(path.as_path()))
            .map(|p| printable(&p.labelled().to_string()))
            .collect();
        let mut file = ReviewedFile {
            shown,
            kind: FileKind::Hooks,
            pin: None,
            entries: Vec::new(),
            problems: own,
            prompt_files: Vec::new(),
        };
        let (Some(key), Some(sha256), true) =
            (&key, set.sha256.get(path), file.problems.is_empty())
        else {
            if key.is_none() {
                // trust.json keys are text.
                file.problems
                    .push("error: its path is not valid UTF-8".into());
            }
            reviews.push((file, Vec::new()));
            continue;
        };
        file.pin = Some(FilePin {
            status: TrustStatus::of(old, key, sha256),
            sha256: sha256.clone(),
        });
        let hooks = set.hooks_in(path);
        file.entries = hooks.iter().map(|hook| describe(hook)).collect();
        let mut pins = vec![(key.clone(), sha256.clone())];
        // The prompt files its hooks read are pinned with it (their text is in the hooks shown).
        let mut prompt_files: Vec<_> = hooks.iter().filter_map(|h| h.prompt_file.clone()).collect();
        prompt_files.dedup();
        for prompt in prompt_files {
            let Some(prompt_key) = relative_key(workspace, &prompt.path) else {
                continue; // not valid UTF-8: never trusted, so its hook file is not either
            };
            let pin = FilePin {
                status: TrustStatus::of(old, &prompt_key, &prompt.sha256),
                sha256: prompt.sha256.clone(),
            };
            file.prompt_files.push((printable(&prompt_key), pin));
            pins.push((prompt_key, prompt.sha256));
        }
        reviews.push((file, pins));
    }
    reviews
}

/// The workspace's `.mcp.json` read as `bytes` and each server in it (what it runs or calls,
/// its environment or headers), with its pin unless it has errors.
fn mcp_file_review(
    workspace: &Path,
    path: &Path,
    bytes: std::io::Result<Vec<u8>>,
    old: Option<&Pins>,
) -> (ReviewedFile, Vec<(String, String)>) {
    let key = relative_key(workspace, path);
    let mut file = ReviewedFile {
        shown: printable(&key.clone().unwrap_or_else(|| path.display().to_string())),
        kind: FileKind::Mcp,
        pin: None,
        entries: Vec::new(),
        problems: Vec::new(),
        prompt_files: Vec::new(),
    };
    let bytes = match bytes {
        Ok(bytes) => bytes,
        Err(error) => {
            file.problems.push(format!(
                "error: cannot read: {}",
                printable(&error.to_string())
            ));
            return (file, Vec::new());
        }
    };
    let (servers, problems) = parse_project_file(&bytes, path);
    let has_errors = problems.iter().any(Problem::is_error);
    file.problems = problems
        .iter()
        .map(|p| printable(&p.labelled().to_string()))
        .collect();
    let Some(key) = key.filter(|_| !has_errors) else {
        return (file, Vec::new());
    };
    let sha256 = sha256_hex(&bytes);
    file.pin = Some(FilePin {
        status: TrustStatus::of(old, &key, &sha256),
        sha256: sha256.clone(),
    });
    file.entries = servers.iter().map(describe_mcp_server).collect();
    (file, vec![(key, sha256)])
}

impl Review {
    /// Files that can be trusted and are not yet (new, or changed since).
    pub fn to_confirm(&self) -> usize {
        self.files
            .iter()
            .filter(|f| f.pin.is_some())
            .flat_map(|f| {
                f.pin
                    .iter()
                    .chain(f.prompt_files.iter().map(|(_, pin)| pin))
            })
            .filter(|pin| pin.status != TrustStatus::Trusted)
            .count()
    }

    /// Files with problems: not trusted.
    pub fn broken(&self) -> usize {
        self.files.iter().filter(|f| f.pin.is_none()).count()
    }

    /// Nothing new to trust: the pins of files that are gone or broken are dropped; nothing
    /// new is trusted.
    pub fn keep(mut self) -> Result<(), ReviewError> {
        if self.old.as_ref() != Some(&self.pins) && !self.pins.is_empty() {
            self.trusted.set(&self.workspace, self.pins)?;
            self.store.save(&self.trusted)?;
        }
        Ok(())
    }

    /// Pins every file reviewed that has no problems.
    pub fn trust(mut self) -> Result<Pinned, ReviewError> {
        let count = self.pins.len();
        self.trusted.set(&self.workspace, self.pins)?;
        self.store.save(&self.trusted)?;
        Ok(Pinned {
            count,
            store: self.store.path(),
        })
    }
}

/// One MCP server of `.mcp.json`: its name, transport and what it runs or calls, then
/// (indented) its environment, working folder or headers. Nothing is shortened.
fn describe_mcp_server(server: &McpServerSettings) -> String {
    let head = format!("  mcp server {:<16} ", printable(&server.name));
    let indent = format!("\n{}", " ".repeat(head.chars().count()));
    let mut shown = printable(&server.describe());
    let mut detail = |line: String| {
        shown.push_str(&indent);
        shown.push_str(&line);
    };
    match &server.transport {
        McpTransport::Stdio { env, cwd, .. } => {
            for (name, value) in env {
                detail(format!("env {}={}", printable(name), printable(value)));
            }
            if let Some(cwd) = cwd {
                detail(format!("cwd {}", printable(&cwd.display().to_string())));
            }
        }
        McpTransport::Http { headers, .. } => {
            for (name, value) in headers {
                detail(format!("header {}: {}", printable(name), printable(value)));
            }
        }
    }
    detail("its tools wait for approval before each call".into());
    format!("{head}{shown}")
}

/// One hook: line, event, type, and what it runs or calls, then (indented) everything else that
/// decides what it may do — its environment, headers, filters, capabilities, failure mode.
/// Nothing is shortened: a prompt with no declared capabilities may rewrite the system prompt,
/// so its last line matters as much as its first.
fn describe(hook: &HookDef) -> String {
    let head = format!(
        "  line {:<4} {:<28} {:<8} ",
        hook.line,
        printable(&hook.event_name),
        hook.handler.kind()
    );
    let indent = format!("\n{}", " ".repeat(head.chars().count()));
    let block = |text: &str| printable_with(text.trim_end(), true).replace('\n', &indent);
    let mut shown = match &hook.handler {
        Handler::Command { command, .. } => block(command),
        Handler::Http { url, .. } => printable(url),
        Handler::Llm { prompt, .. } | Handler::Agent { prompt, .. } => {
            format!("prompt: {}", block(prompt))
        }
    };
    let mut detail = |line: String| {
        shown.push_str(&indent);
        shown.push_str(&line);
    };
    match &hook.handler {
        Handler::Command { env, .. } => {
            for (name, value) in env {
                detail(format!("env {}={}", printable(name), printable(value)));
            }
        }
        Handler::Http { headers, .. } => {
            for (name, value) in headers {
                detail(format!("header {}: {}", printable(name), printable(value)));
            }
        }
        Handler::Llm { .. } | Handler::Agent { .. } => {}
    }
    let filter = &hook.filter;
    if let Some(tool) = &filter.tool_name {
        detail(format!("only tool {}", printable(tool)));
    }
    if let Some(tools) = &filter.tool_matcher {
        detail(format!("only tools {}", printable(tools.as_str())));
    }
    if let Some(prefix) = &filter.model_prefix {
        detail(format!("only models {}*", printable(prefix)));
    }
    if let Some(matcher) = &filter.matcher {
        detail(format!("matcher {}", printable(matcher.as_str())));
    }
    match &hook.capabilities {
        Some(list) => detail(format!(
            "may change: {}",
            list.iter().cloned().collect::<Vec<_>>().join(", ")
        )),
        None => detail("may change: every result field of its event".into()),
    }
    if hook.run_async {
        detail("async: runs beside the chat; only its notices come back".into());
    }
    detail(format!(
        "on_error: {}",
        match hook.on_error {
            OnError::Skip => "skip",
            OnError::Abort => "abort",
            OnError::Block => "block",
        }
    ));
    format!("{head}{shown}")
}

/// Every trusted workspace and its files, from the store.
#[derive(Debug, Clone)]
pub struct TrustedWorkspaces {
    /// The `trust.json` read.
    pub store: PathBuf,
    /// Each workspace (its path as recorded) and its pinned files.
    pub workspaces: Vec<(String, Vec<PinnedFile>)>,
}

/// One pinned file and how it stands now.
#[derive(Debug, Clone)]
pub struct PinnedFile {
    /// Its path in the workspace.
    pub key: String,
    pub sha256: String,
    /// `unchanged`, `changed since (not loaded)` or `missing`.
    pub now: &'static str,
}

/// What is trusted (`hookwire trust --list`).
pub fn trusted(config: &Config) -> Result<TrustedWorkspaces, ReviewError> {
    let store = TrustStore::in_dir(config.state_dir.as_deref())?;
    let trusted = store.load()?;
    let workspaces = trusted
        .workspaces
        .into_iter()
        .map(|(workspace, pins)| {
            let files = pins
                .into_iter()
                .map(|(key, sha256)| {
                    let path = Path::new(&workspace).join(&key);
                    let now = match crate::reload::read_small_file(&path) {
                        Ok(bytes) if sha256_hex(&bytes) == sha256 => "unchanged",
                        Ok(_) => "changed since (not loaded)",
                        Err(_) => "missing",
                    };
                    PinnedFile { key, sha256, now }
                })
                .collect();
            (workspace, files)
        })
        .collect();
    Ok(TrustedWorkspaces {
        store: store.path(),
        workspaces,
    })
}

/// Forgets the workspace: its files stop loading. The workspace's path, and how many files it
/// had pinned (`None`: it was not trusted).
pub fn revoke(config: &Config) -> Result<(PathBuf, Option<usize>), ReviewError> {
    let workspace = workspace_of(config, false)?;
    let store = TrustStore::for_workspace(config.state_dir.as_deref(), &workspace)?;
    let mut trusted: TrustFile = store.load()?;
    let revoked = trusted.revoke(&workspace).map(|pins| pins.len());
    if revoked.is_some() {
        store.save(&trusted)?;
    }
    Ok((workspace, revoked))
}
