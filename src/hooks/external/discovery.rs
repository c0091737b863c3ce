//! Where a server's hook files are and how they load into a [`HookSet`] (docs/protocol.md §9):
//! the server file (YAML, or a Claude Code or Gemini CLI `settings.json`, told apart by shape),
//! then the workspace's, in the order of [`WORKSPACE_FILES`]. Knows nothing of running hooks
//! (the chain engine) or of chats (the `AgentHook` adapter); watching them is
//! [`HookFiles`](super::HookFiles)'s job.
//!
//! Workspace files are code from the workspace: each is read once, and its bytes are parsed only
//! when the [`TrustPolicy`] trusts exactly those bytes (no window between the check and the
//! read). Server files are the operator's and always load. One look comes before trust: a
//! `settings.json` without a `hooks` key is another tool's settings, not a hook file, so it is
//! not listed at all (nothing of it is used).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::config::{parse_hooks, HookDef};
use super::event::{Dialect, Event};
use super::settings::{detect, has_hooks, parse_settings};
use crate::trust::{sha256_hex, TrustPolicy, Untrusted, WorkspaceTrust};
use crate::types::Problem;

/// The hook files of a server: where they are, and their hooks by event.
#[derive(Debug, Default)]
pub(crate) struct HookSet {
    pub(super) by_event: HashMap<Event, Vec<Arc<HookDef>>>,
    /// The files loaded, in order.
    pub(crate) files: Vec<PathBuf>,
    /// The SHA-256 of each loaded file, of the bytes its hooks were parsed from.
    pub(crate) sha256: BTreeMap<PathBuf, String>,
    /// The workspace files that were not loaded because they are not trusted.
    pub(crate) untrusted: Vec<Untrusted>,
    /// What the loaded files have that hookwire ignores (`hookwire check` shows them).
    pub(crate) warnings: Vec<Problem>,
}

impl HookSet {
    /// Every loaded hook once (an entry that stands for two events is listed under its first),
    /// server level first, then in file order.
    pub(crate) fn all_hooks(&self) -> Vec<Arc<HookDef>> {
        let mut hooks: Vec<Arc<HookDef>> = self.by_event.values().flatten().cloned().collect();
        let level_order = |level: &str| match level {
            "server" => 0,
            "workspace" => 1,
            _ => 2,
        };
        hooks.sort_by(|a, b| {
            (level_order(a.level), &a.file, a.line, a.index, a.event).cmp(&(
                level_order(b.level),
                &b.file,
                b.line,
                b.index,
                b.event,
            ))
        });
        hooks.dedup_by(|a, b| (&a.file, a.line, a.index) == (&b.file, b.line, b.index));
        hooks
    }

    pub(crate) fn len(&self) -> usize {
        self.by_event.values().map(Vec::len).sum()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn hooks(&self, event: Event) -> &[Arc<HookDef>] {
        self.by_event.get(&event).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The entries of `file`, in the order of the file: one per configured hook, also when its
    /// event name stands for several events.
    pub(crate) fn hooks_in(&self, file: &Path) -> Vec<Arc<HookDef>> {
        let mut hooks: Vec<Arc<HookDef>> = self
            .by_event
            .values()
            .flatten()
            .filter(|hook| hook.file == file)
            .cloned()
            .collect();
        hooks.sort_by_key(|hook| (hook.line, hook.index));
        hooks.dedup_by_key(|hook| hook.index);
        hooks
    }

    /// This set without the hooks of the files in `untrusted`, which it lists instead: what
    /// stays in use when a reload is refused but some files are no longer trusted.
    pub(super) fn without(&self, untrusted: Vec<Untrusted>) -> HookSet {
        let gone = |file: &Path| untrusted.iter().any(|u| u.file == file);
        let by_event = self
            .by_event
            .iter()
            .map(|(event, hooks)| {
                let kept = hooks.iter().filter(|h| !gone(&h.file)).cloned().collect();
                (*event, kept)
            })
            .collect();
        HookSet {
            by_event,
            files: self.files.iter().filter(|f| !gone(f)).cloned().collect(),
            sha256: self
                .sha256
                .iter()
                .filter(|(f, _)| !gone(f))
                .map(|(f, h)| (f.clone(), h.clone()))
                .collect(),
            untrusted,
            warnings: self.warnings.clone(),
        }
    }
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
            if let Err(untrusted) = verdict {
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
mod tests {
    use super::*;

    #[test]
    fn every_dialects_files_in_order_and_settings_only_with_hooks() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let write = |name: &str, text: &str| {
            let path = ws.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(".gemini/settings.json", r#"{"hooks": {"BeforeTool": []}}"#);
        write(".claude/settings.local.json", r#"{"permissions": {}}"#);
        write(".claude/settings.json", r#"{"hooks": {}}"#);
        write(".openharness/hooks/b.yml", "");
        write(".openharness/hooks/a.yaml", "");
        write(".openharness/hooks/notes.md", "");
        write(".jcli/hooks.yaml", "");
        write(".hookwire/hooks.yaml", "");
        let shown: Vec<String> = hook_files(None, ws)
            .into_iter()
            .map(|(path, level)| {
                assert_eq!(level, "workspace");
                path.strip_prefix(ws).unwrap().display().to_string()
            })
            .collect();
        assert_eq!(
            shown,
            [
                ".hookwire/hooks.yaml",
                ".jcli/hooks.yaml",
                ".openharness/hooks/a.yaml",
                ".openharness/hooks/b.yml",
                ".claude/settings.json",
                ".gemini/settings.json",
            ]
        );
        assert_eq!(
            settings_dialect(&ws.join(".gemini/settings.json")),
            Some(Dialect::Gemini)
        );
        assert_eq!(settings_dialect(&ws.join(".jcli/hooks.yaml")), None);
    }

    #[test]
    fn only_trusted_bytes_of_workspace_files_are_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(workspace.join(".hookwire/hooks")).unwrap();
        let server = dir.path().join("server.yaml");
        std::fs::write(&server, "stop:\n  - command: server\n").unwrap();
        let main = workspace.join(".hookwire/hooks.yaml");
        std::fs::write(&main, "stop:\n  - command: main\n").unwrap();
        // Broken, but never parsed while it is not trusted.
        let extra = workspace.join(".hookwire/hooks/extra.yaml");
        std::fs::write(&extra, "stop: [[[").unwrap();
        let files = hook_files(Some(&server), &workspace);
        assert_eq!(files.len(), 3);

        let state = dir.path().join("state");
        let nothing = TrustPolicy::new(&workspace, false, Some(&state));
        let (set, problems) = load_hook_set(&files, &nothing);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(set.files, std::slice::from_ref(&server));
        assert_eq!(set.len(), 1);
        let shown: Vec<&str> = set.untrusted.iter().map(|u| u.shown.as_str()).collect();
        assert_eq!(
            shown,
            [".hookwire/hooks.yaml", ".hookwire/hooks/extra.yaml"]
        );

        let (set, problems) = load_hook_set(&files, &TrustPolicy::all(&workspace));
        assert_eq!(
            problems.len(),
            1,
            "the broken file, now parsed: {problems:?}"
        );
        assert_eq!(set.len(), 2);
        assert_eq!(set.sha256[&main], sha256_hex(b"stop:\n  - command: main\n"));
        assert_eq!(set.hooks_in(&main).len(), 1);

        let pruned = set.without(vec![nothing.current().check(&main, None).unwrap_err()]);
        assert_eq!(pruned.len(), 1);
        assert!(!pruned.files.contains(&main) && pruned.files.contains(&server));
        assert!(!pruned.sha256.contains_key(&main));
        assert_eq!(pruned.untrusted.len(), 1);

        // A file that cannot be read is not trusted either: no problem, unless all are trusted.
        std::fs::remove_file(&extra).unwrap();
        std::fs::create_dir(&extra).unwrap();
        let (set, problems) = load_hook_set(&files, &nothing);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(set.untrusted.len(), 2);
        let (_, problems) = load_hook_set(&files, &TrustPolicy::all(&workspace));
        assert!(
            problems[0].message.starts_with("cannot read"),
            "{problems:?}"
        );
    }
}
