//! [`HookFiles`]: the server's hook files as last loaded, reloaded when they really change. Each
//! chat gets the set as it was when the chat started, so an edit never changes a running chat.
//! A change of `trust.json` reloads too, so trusting or revoking takes effect without a restart,
//! and a workspace file edited after it was trusted stops running at the next reload.
//!
//! It also keeps, per WebSocket session, what that session's `session_start` hooks left for its
//! chats ([`SessionCarry`]): from the session's start to its end. Those hooks run beside the
//! session; a chat sent while they still run waits for them (`uses_session_start`), unless they
//! are all `async` (which leave nothing).

use crate::hooks::external::run::replay::{replay, ReplayError};
use crate::hooks::record::{RecordLine, RecordedDecision, Recorder};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use notify::RecursiveMode;

use crate::hooks::external::hook::{Event, HookSet};
use crate::hooks::external::load::{hook_files, load_hook_set, WORKSPACE_FILES};
use crate::hooks::external::run::dry_run::{dry_run, DryRun, DryRunError};
use crate::hooks::external::run::{AsyncHooks, ExternalHooks, Runner, SessionCarry};
use crate::hooks::sync::lock;
use crate::hooks::{AgentHook, HookFactory, HookResult, SessionInfo};
use crate::reload::{Layout, Outcome, Reloader, Swappable, WatchError};
use crate::trust::TrustPolicy;
use crate::types::{ChatError, ChatRequest, Problem};

/// Shared by the server: a [`HookFactory`] that gives each chat the current set, and an
/// [`AgentHook`] for the connection events (`session_start` / `session_end`), which belong to no
/// chat.
pub(crate) struct HookFiles {
    set: Swappable<HookSet>,
    runner: Arc<Runner>,
    /// Why the last change was refused (empty after a good one).
    problems: Mutex<Vec<Problem>>,
    reloader: Mutex<Option<Reloader>>,
    /// What each open session's `session_start` hooks left for its chats.
    sessions: Mutex<HashMap<String, Arc<SessionCarry>>>,
    /// Where `async: true` hooks run.
    queue: Option<Arc<AsyncHooks>>,
    /// Where their events are recorded (`hooks.record`).
    recorder: Option<Arc<Recorder>>,
}

impl HookFiles {
    pub(crate) fn new(set: HookSet, runner: Arc<Runner>) -> Self {
        Self {
            set: Swappable::new(set),
            runner,
            problems: Mutex::new(Vec::new()),
            reloader: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            queue: None,
            recorder: None,
        }
    }

    /// Their events are recorded into `recorder` (docs/protocol.md §21).
    pub(crate) fn with_recorder(mut self, recorder: Option<Arc<Recorder>>) -> Self {
        self.recorder = recorder;
        self
    }

    /// Their `async: true` hooks run from `queue`.
    pub(crate) fn with_queue(mut self, queue: Arc<AsyncHooks>) -> Self {
        self.queue = Some(queue);
        self
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<SessionCarry>>> {
        lock(&self.sessions)
    }

    /// Reloads the hook files when they (or the trust in them) change: a valid change replaces
    /// the set, an invalid one keeps the last good set (less any file that is no longer trusted)
    /// and logs every problem. Watching stops when `self` is dropped.
    pub(crate) fn watch(
        self: &Arc<Self>,
        server_file: Option<PathBuf>,
        trust: TrustPolicy,
    ) -> Result<(), WatchError> {
        let workspace = trust.workspace().to_path_buf();
        let layout = HookFileLayout {
            server_file: server_file
                .as_deref()
                .map(WatchError::absolute)
                .transpose()?,
            workspace: WatchError::absolute(&workspace)?,
            trust_file: trust.store_file(),
        };
        // Weak: the reloader lives in `self` and must not keep it alive.
        let hooks = Arc::downgrade(self);
        let reloader = Reloader::start("hook files", layout, move || {
            let hooks = hooks.upgrade()?;
            let files = hook_files(server_file.as_deref(), &workspace);
            let (set, problems) = load_hook_set(&files, &trust);
            Some(hooks.update(set, problems))
        })?;
        if let Ok(mut slot) = self.reloader.lock() {
            *slot = Some(reloader);
        }
        Ok(())
    }

    /// The hooks as they are now.
    pub(crate) fn current(&self) -> Arc<HookSet> {
        self.set.current()
    }

    /// How many reloads replaced the set since the start (0 for a server nobody edited).
    pub(crate) fn generation(&self) -> u64 {
        self.set.generation()
    }

    /// Why the last change was refused; empty when the last change was loaded.
    pub(crate) fn problems(&self) -> Vec<Problem> {
        lock(&self.problems).clone()
    }

    /// Uses `set` unless it has problems; then the last good set stays, without the files that
    /// are no longer trusted (their hooks must stop even when another file is broken).
    fn update(&self, set: HookSet, problems: Vec<Problem>) -> Outcome {
        self.set.update(|current| {
            if !problems.is_empty() {
                let lines = problems.iter().map(ToString::to_string).collect();
                if let Ok(mut slot) = self.problems.lock() {
                    *slot = problems;
                }
                let refused = Outcome::Refused { problems: lines };
                if current.untrusted == set.untrusted {
                    return (None, refused);
                }
                let kept = current.without(set.untrusted);
                for untrusted in &kept.untrusted {
                    tracing::warn!("{untrusted}");
                }
                return (Some(kept), refused);
            }
            if let Ok(mut slot) = self.problems.lock() {
                slot.clear();
            }
            let summary = format!("{} hook(s) in {} file(s)", set.len(), set.files.len());
            let warnings = set.untrusted.iter().map(ToString::to_string).collect();
            (Some(set), Outcome::Swapped { summary, warnings })
        })
    }

    /// `hookwire hooks test`: the hooks under `event_name` as they are now, run on `input`
    /// ([`dry_run`]).
    pub(crate) async fn dry_run(
        &self,
        event_name: &str,
        input: &serde_json::Value,
    ) -> Result<DryRun, DryRunError> {
        dry_run(&self.current(), &self.runner, event_name, input).await
    }

    /// `hookwire hooks replay`: a recorded event run through the hooks as they are now,
    /// `repeat` times ([`replay`]).
    pub(crate) async fn replay(
        &self,
        line: &RecordLine,
        repeat: usize,
    ) -> Result<Vec<RecordedDecision>, ReplayError> {
        replay(&self.current(), &self.runner, line, repeat).await
    }

    fn snapshot(&self) -> ExternalHooks {
        ExternalHooks::of(self.current(), self.runner.clone())
            .with_queue(self.queue.clone())
            .with_recorder(self.recorder.clone())
    }
}

impl HookFactory for HookFiles {
    fn hooks_for(&self, request: &ChatRequest) -> Result<Vec<Arc<dyn AgentHook>>, ChatError> {
        let carry = self.sessions().get(&request.session_id).cloned();
        let hooks = self.snapshot().with_carry(carry);
        if hooks.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![Arc::new(hooks)])
    }

    /// What `session_start` hooks that are not `async` leave (context, messages) goes into the
    /// session's chats, so a chat waits for them.
    fn uses_session_start(&self) -> bool {
        self.current()
            .hooks(Event::SessionStart)
            .iter()
            .any(|hook| !hook.run_async)
    }
}

#[async_trait]
impl AgentHook for HookFiles {
    fn name(&self) -> &str {
        "external-connection"
    }

    async fn session_start(&self, session: &SessionInfo) -> HookResult {
        let carry = self
            .snapshot()
            .fire_session(Event::SessionStart, session)
            .await;
        if !carry.is_empty() {
            self.sessions()
                .insert(session.session_id.clone(), Arc::new(carry));
        }
        Ok(())
    }

    async fn session_end(&self, session: &SessionInfo) -> HookResult {
        self.sessions().remove(&session.session_id);
        self.snapshot()
            .fire_session(Event::SessionEnd, session)
            .await;
        Ok(())
    }
}

/// Where hook files are: the server file (its folder watched, so a save by rename is seen),
/// the workspace's ([`WORKSPACE_FILES`]), and the `trust.json` that decides which workspace
/// files load. Nothing else in those folders matters: hooks may write logs there.
struct HookFileLayout {
    server_file: Option<PathBuf>,
    workspace: PathBuf,
    trust_file: Option<PathBuf>,
}

impl Layout for HookFileLayout {
    fn roots(&self) -> Vec<(PathBuf, RecursiveMode)> {
        let mut roots: Vec<(PathBuf, RecursiveMode)> = self
            .server_file
            .as_ref()
            .and_then(|file| file.parent())
            .map(|dir| (dir.to_path_buf(), RecursiveMode::NonRecursive))
            .into_iter()
            .collect();
        if let Some(dir) = self.trust_file.as_ref().and_then(|file| file.parent()) {
            roots.push((dir.to_path_buf(), RecursiveMode::NonRecursive));
        }
        for entry in WORKSPACE_FILES {
            let path = self.workspace.join(entry);
            let dir = if entry.ends_with('/') {
                Some(path.as_path())
            } else {
                path.parent()
            };
            if let Some(dir) = dir.map(Path::to_path_buf) {
                if !roots.iter().any(|(root, _)| *root == dir) {
                    roots.push((dir, RecursiveMode::NonRecursive));
                }
            }
        }
        roots
    }

    fn matters(&self, path: &Path) -> bool {
        if self.server_file.as_deref() == Some(path) || self.trust_file.as_deref() == Some(path) {
            return true;
        }
        WORKSPACE_FILES.iter().any(|entry| {
            let place = self.workspace.join(entry);
            if entry.ends_with('/') {
                path.parent() == Some(place.as_path())
                    && path.extension().is_some_and(|x| x == "yaml" || x == "yml")
            } else {
                path == place
            }
        })
    }

    fn files(&self) -> Vec<PathBuf> {
        // Exactly the files a reload reads (the server file even when it is missing).
        let mut files: Vec<PathBuf> = hook_files(self.server_file.as_deref(), &self.workspace)
            .into_iter()
            .map(|(path, _)| path)
            .chain(self.trust_file.clone())
            .collect();
        // A settings.json that gains its `hooks` key is a change too.
        for entry in WORKSPACE_FILES.iter().filter(|e| e.ends_with(".json")) {
            let path = self.workspace.join(entry);
            if path.is_file() && !files.contains(&path) {
                files.push(path);
            }
        }
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hook_files_matter() {
        let layout = HookFileLayout {
            server_file: Some(PathBuf::from("/ws/server-hooks.yaml")),
            workspace: PathBuf::from("/ws"),
            trust_file: Some(PathBuf::from("/state/trust.json")),
        };
        for path in [
            "/ws/server-hooks.yaml",
            "/state/trust.json",
            "/ws/.hookwire/hooks.yaml",
            "/ws/.hookwire/hooks/extra.yaml",
            "/ws/.hookwire/hooks/extra.yml",
            "/ws/.jcli/hooks.yaml",
            "/ws/.openharness/hooks/guard.yaml",
            "/ws/.claude/settings.json",
            "/ws/.claude/settings.local.json",
            "/ws/.gemini/settings.json",
        ] {
            assert!(layout.matters(Path::new(path)), "{path}");
        }
        for path in [
            "/ws/events.log",
            "/ws/.hookwire/audit.log",
            "/ws/.hookwire/guard.sh",
            "/ws/.hookwire/hooks/notes.md",
            "/ws/.hookwire/hooks/old/x.yaml",
            "/ws/.openharness/hooks/guard.sh",
            "/ws/.claude/hooks/guard.sh",
            "/ws/.jcli/other.yaml",
            "/ws/other.yaml",
            "/state/.trust.json.1.tmp",
        ] {
            assert!(!layout.matters(Path::new(path)), "{path}");
        }
    }
}
