//! Hot reload: a file watcher on the skills dir with a debounce; every burst of changes rescans
//! the dir and swaps the registry's set (broken skills keep their last good hooks).

use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{new_debouncer, DebounceEventResult, Debouncer};

use super::SkillRegistry;

/// Keeps the watcher running; dropping it stops the watching.
pub struct SkillWatcher {
    _debouncer: Debouncer<RecommendedWatcher>,
}

impl std::fmt::Debug for SkillWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SkillWatcher")
    }
}

/// Starts watching the registry's dir (recursively). Fails if the dir cannot be watched, e.g.
/// because it does not exist.
pub fn watch(registry: Arc<SkillRegistry>, debounce: Duration) -> Result<SkillWatcher, String> {
    let dir = registry.dir().to_path_buf();
    let handler_registry = registry.clone();
    let mut debouncer = new_debouncer(debounce, move |result: DebounceEventResult| match result {
        Ok(_events) => {
            let set = handler_registry.reload();
            let problems = set.problems();
            tracing::info!(
                skills = set.skills.len(),
                problems = problems.len(),
                "skills reloaded"
            );
            for problem in problems {
                tracing::warn!("{problem}");
            }
        }
        Err(error) => tracing::warn!(%error, "skill watcher error"),
    })
    .map_err(|e| format!("cannot start the skill watcher: {e}"))?;
    debouncer
        .watcher()
        .watch(&dir, RecursiveMode::Recursive)
        .map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
    Ok(SkillWatcher {
        _debouncer: debouncer,
    })
}
