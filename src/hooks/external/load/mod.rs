//! Where hooks come from: a server's hook files found and read into a [`HookSet`]
//! (docs/protocol.md §9): the server file (YAML, or a Claude Code or Gemini CLI
//! `settings.json`, told apart by shape), then the workspace's, in the order of
//! [`WORKSPACE_FILES`]. A YAML file is read by [`yaml`] (its raw shape in `raw`, each entry
//! built in `build`: matchers, `env`, `prompt_file` checked), a `settings.json` by [`settings`].
//! Knows nothing of running hooks or of their JSON; watching the files is `sets::files`' job.
//!
//! Workspace files are code from the workspace: each is read once, and its bytes are parsed only
//! when the [`TrustPolicy`] trusts exactly those bytes (no window between the check and the
//! read). Server files are the operator's and always load. One look comes before trust: a
//! `settings.json` without a `hooks` key is another tool's settings, not a hook file, so it is
//! not listed at all (nothing of it is used).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::hooks::external::hook::{Dialect, HookDef, HookSet};
use crate::trust::{sha256_hex, TrustPolicy, WorkspaceTrust};
use crate::types::Problem;

mod build;
mod env;
mod matcher;
mod prompt_file;
mod raw;
pub(crate) mod settings;
pub(crate) mod yaml;

pub(crate) use build::{timeout_of, Built, Place};
pub(crate) use env::check_env;
pub(crate) use matcher::{compile_matcher, ignored_matcher, matcher_applies};
use raw::one_line;
pub(crate) use settings::{detect, has_hooks, parse_settings};
pub(crate) use yaml::{parse_hooks, unsupported_event};

/// What is wrong with one field of a hook's spec (its `timeout`, its `matcher`), for the hook
/// file readers of every dialect, which add where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum HookSpecError {
    /// A `timeout` out of range in the dialect's unit.
    #[error("timeout {value} must be a number of {unit} between 0 and {most}")]
    Timeout {
        value: f64,
        unit: &'static str,
        most: u32,
    },
    /// A `matcher` that is not a valid regex (the regex error, on one line).
    #[error("matcher is not a valid regex: {0}")]
    Matcher(String),
}

/// A workspace's hook files, in order: a file, or every `*.yaml` / `*.yml` of a folder (by
/// name). The three `settings.json` count only when they have a `hooks` key.
pub(crate) const WORKSPACE_FILES: [&str; 7] = [
    ".hookwire/hooks.yaml",
    ".hookwire/hooks/",
    ".jcli/hooks.yaml",
    ".openharness/hooks/",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".gemini/settings.json",
];

/// The dialect a workspace `settings.json` is read in, by where it is.
fn settings_dialect(path: &Path) -> Option<Dialect> {
    let folder = path.parent()?.file_name()?;
    let name = path.file_name()?;
    match (folder.to_str()?, name.to_str()?) {
        (".claude", "settings.json" | "settings.local.json") => Some(Dialect::Claude),
        (".gemini", "settings.json") => Some(Dialect::Gemini),
        _ => None,
    }
}

/// The hook files to read, in order: server level, then workspace level.
pub(crate) fn hook_files(
    server_file: Option<&Path>,
    workspace: &Path,
) -> Vec<(PathBuf, &'static str)> {
    let mut files = Vec::new();
    if let Some(file) = server_file {
        files.push((file.to_path_buf(), "server"));
    }
    for entry in WORKSPACE_FILES {
        let path = workspace.join(entry);
        if entry.ends_with('/') {
            let Ok(entries) = std::fs::read_dir(&path) else {
                continue;
            };
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                .collect();
            found.sort();
            files.extend(found.into_iter().map(|p| (p, "workspace")));
        } else if settings_dialect(&path).is_some() {
            let hooks = crate::reload::read_small_file(&path).is_ok_and(|bytes| has_hooks(&bytes));
            if hooks && path.is_file() {
                files.push((path, "workspace"));
            }
        } else if path.is_file() {
            files.push((path, "workspace"));
        }
    }
    files
}

/// Parses one hook file in its format: a `settings.json` (by where it is, or by its shape) or
/// a YAML hook file.
pub(crate) fn parse_file(
    path: &Path,
    text: &str,
    level: &'static str,
) -> (Vec<HookDef>, Vec<Problem>) {
    match settings_dialect(path).or_else(|| detect(text)) {
        Some(dialect) => parse_settings(path, text, level, dialect),
        None => parse_hooks(path, text, level),
    }
}

/// The errors of a hook file read as `bytes` (none when it could not be read).
fn errors_of(path: &Path, bytes: Option<&[u8]>, level: &'static str) -> Box<[String]> {
    let Some(text) = bytes.and_then(|bytes| std::str::from_utf8(bytes).ok()) else {
        return Box::default();
    };
    let (_, found) = parse_file(path, text, level);
    found
        .iter()
        .filter(|problem| problem.is_error())
        .map(ToString::to_string)
        .collect()
}

/// Reads every hook file; a workspace file only when `trust` trusts its bytes (the others are
/// listed in [`HookSet::untrusted`]). Every problem returned is an error (any means: do not
/// use the set); warnings are logged and kept in [`HookSet::warnings`].
pub(crate) fn load_hook_set(
    files: &[(PathBuf, &'static str)],
    trust: &TrustPolicy,
) -> (HookSet, Vec<Problem>) {
    let mut set = HookSet::default();
    let mut problems = Vec::new();
    // The store is read once per load, and only when there is a workspace file to ask about.
    let mut workspace_trust: Option<WorkspaceTrust<'_>> = None;
    for (path, level) in files {
        let bytes = crate::reload::read_small_file(path);
        if *level == "workspace" {
            // An unreadable file has no pinned contents either: it is not trusted, and so it
            // cannot keep the server from starting.
            let verdict = workspace_trust
                .get_or_insert_with(|| trust.current())
                .check(path, bytes.as_deref().ok());
            if let Err(mut untrusted) = verdict {
                // Parsing runs nothing; what is wrong with the file is the next step to name.
                untrusted.errors = errors_of(path, bytes.as_deref().ok(), level);
                set.untrusted.push(untrusted);
                continue;
            }
        }
        let bytes = match bytes {
            Ok(bytes) => bytes,
            Err(error) => {
                problems.push(Problem::error(format!("cannot read: {error}")).in_file(path));
                continue;
            }
        };
        let Ok(text) = std::str::from_utf8(&bytes) else {
            problems.push(Problem::error("not valid UTF-8").in_file(path));
            continue;
        };
        let (hooks, found) = parse_file(path, text, level);
        if *level == "workspace" {
            // The prompt files a trusted file reads are pinned with it.
            let trust = workspace_trust.get_or_insert_with(|| trust.current());
            let prompt_files = hooks.iter().filter_map(|hook| hook.prompt_file.as_ref());
            let refused = prompt_files
                .map(|prompt| trust.check_prompt_file(path, &prompt.path, &prompt.sha256))
                .find_map(Result::err);
            if let Some(untrusted) = refused {
                set.untrusted.push(untrusted);
                continue;
            }
        }
        for problem in found {
            if problem.is_error() {
                problems.push(problem);
            } else {
                tracing::warn!("{}", problem.labelled());
                set.warnings.push(problem);
            }
        }
        for hook in hooks {
            set.by_event
                .entry(hook.event)
                .or_default()
                .push(Arc::new(hook));
        }
        set.files.push(path.clone());
        set.sha256.insert(path.clone(), sha256_hex(&bytes));
    }
    (set, problems)
}

#[cfg(test)]
mod tests;
