//! [`HookSet`]: a loaded set of hooks by event, with the files they came from (the hook files
//! of a server, or a chat's registered hooks).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Event, HookDef};
use crate::trust::Untrusted;
use crate::types::Problem;

/// The hook files of a server: where they are, and their hooks by event.
#[derive(Debug, Default)]
pub(crate) struct HookSet {
    pub(crate) by_event: HashMap<Event, Vec<Arc<HookDef>>>,
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

    pub(crate) fn hooks(&self, event: Event) -> &[Arc<HookDef>] {
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
    pub(crate) fn without(&self, untrusted: Vec<Untrusted>) -> HookSet {
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
