//! External hooks: hooks from YAML (seeds 001 and 004) as one [`AgentHook`](super::AgentHook)
//! adapter.
//!
//! - `config`, `event`: the hook files' shape and the event vocabulary;
//! - `protocol`: the JSON a hook reads and writes;
//! - `runner`: running one handler (command, HTTP, LLM, agent), its outcome as data;
//! - `chain`: the chain engine (order, filters, timeouts and budget, `on_error`, `apply`);
//! - `adapter`: [`ExternalHooks`], the chains as an `AgentHook`, one path for every event;
//! - `files`, `session`, `register_hook`: where hook sets come from.

mod adapter;
mod chain;
pub mod config;
pub mod event;
mod files;
pub mod protocol;
pub mod register_hook;
pub mod runner;
pub mod session;

pub use adapter::ExternalHooks;
pub use files::HookFiles;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use self::config::{parse_hooks, HookDef};
use self::event::Event;

/// The hook files of a server: where they are, and their hooks by event.
#[derive(Debug, Default)]
pub struct HookSet {
    by_event: HashMap<Event, Vec<Arc<HookDef>>>,
    pub files: Vec<PathBuf>,
}

impl HookSet {
    pub fn len(&self) -> usize {
        self.by_event.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn hooks(&self, event: Event) -> &[Arc<HookDef>] {
        self.by_event.get(&event).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// The hook files to read, in order: server level, then workspace level.
pub fn hook_files(server_file: Option<&Path>, workspace: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut files = Vec::new();
    if let Some(file) = server_file {
        files.push((file.to_path_buf(), "server"));
    }
    let dir = workspace.join(".hookwire");
    let main = dir.join("hooks.yaml");
    if main.is_file() {
        files.push((main, "workspace"));
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("hooks")) {
        let mut extra: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        extra.sort();
        files.extend(extra.into_iter().map(|p| (p, "workspace")));
    }
    files
}

/// Reads every hook file; problems are `file:line: …` lines (any problem means: do not use it).
pub fn load_hook_set(files: &[(PathBuf, &'static str)]) -> (HookSet, Vec<String>) {
    let mut set = HookSet::default();
    let mut problems = Vec::new();
    for (path, level) in files {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                problems.push(format!("{}: cannot read: {error}", path.display()));
                continue;
            }
        };
        let (hooks, mut found) = parse_hooks(path, &text, level);
        problems.append(&mut found);
        for hook in hooks {
            if !hook.event.fires() {
                tracing::warn!(file = %path.display(), event = hook.event.as_str(), "this event does not fire yet (hookwire does not compact context)");
            }
            set.by_event
                .entry(hook.event)
                .or_default()
                .push(Arc::new(hook));
        }
        set.files.push(path.clone());
    }
    (set, problems)
}
