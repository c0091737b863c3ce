//! Hot reload of the skills dir through the generic [`Reloader`]: a real change to a skill's
//! files rescans the dir and swaps the registry's set (broken skills keep their last good hooks).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use notify::RecursiveMode;

use super::SkillRegistry;
use crate::reload::{Layout, Outcome, Reloader, WatchError};

/// The files a skill set is loaded from: `<dir>/<skill>/SKILL.md` and `<dir>/<skill>/hooks/*`
/// (hook texts may have any name), for every visible skill folder.
struct SkillFiles {
    dir: PathBuf,
}

/// Hidden files and editor backups are never part of a skill.
fn visible(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    !name.starts_with('.') && !name.ends_with('~')
}

impl Layout for SkillFiles {
    fn roots(&self) -> Vec<(PathBuf, RecursiveMode)> {
        vec![(self.dir.clone(), RecursiveMode::Recursive)]
    }

    fn matters(&self, path: &Path) -> bool {
        let Ok(inside) = path.strip_prefix(&self.dir) else {
            return false;
        };
        let parts: Vec<&OsStr> = inside.iter().collect();
        match parts.as_slice() {
            [skill] => visible(skill),
            [skill, file] => visible(skill) && (*file == "SKILL.md" || *file == "hooks"),
            [skill, hooks, file] => visible(skill) && *hooks == "hooks" && visible(file),
            _ => false,
        }
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for skill in sorted_entries(&self.dir).into_iter().filter(|p| p.is_dir()) {
            files.push(skill.join("SKILL.md"));
            files.extend(
                sorted_entries(&skill.join("hooks"))
                    .into_iter()
                    .filter(|p| p.is_file()),
            );
            // The folder itself: an empty folder is a skill too.
            files.push(skill);
        }
        files
    }
}

/// The visible entries of `dir`, sorted (none if it cannot be read).
fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| visible(&e.file_name()))
        .map(|e| e.path())
        .collect();
    paths.sort();
    paths
}

/// Starts reloading the registry when its dir changes (also once it is made, if it does not
/// exist yet). Fails if nothing can be watched.
pub(crate) fn watch(registry: Arc<SkillRegistry>) -> Result<Reloader, WatchError> {
    let dir = WatchError::absolute(registry.dir())?;
    Reloader::start("skills", SkillFiles { dir }, move || {
        let set = registry.reload();
        Some(Outcome::Swapped {
            summary: format!("{} skill(s)", set.skills.len()),
            warnings: set
                .problems()
                .iter()
                .map(|p| p.labelled().to_string())
                .collect(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_skill_files_matter() {
        let files = SkillFiles {
            dir: PathBuf::from("/s"),
        };
        for path in [
            "/s/style",
            "/s/style/SKILL.md",
            "/s/style/hooks",
            "/s/style/hooks/hooks.json",
            "/s/style/hooks/brief.md",
        ] {
            assert!(files.matters(Path::new(path)), "{path}");
        }
        for path in [
            "/s/.git/config",
            "/s/style/notes.md",
            "/s/style/hooks/.brief.md.swp",
            "/s/style/hooks/brief.md~",
            "/s/style/hooks/old/x.md",
            "/elsewhere/style/SKILL.md",
        ] {
            assert!(!files.matters(Path::new(path)), "{path}");
        }
    }
}
