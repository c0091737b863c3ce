//! `hookwire check`: everything `serve` would load, with every problem reported as
//! `file: field: reason`.

use crate::config::Config;
use crate::hooks::external::{hook_files, load_hook_set};
use crate::skills::scan_skills;

/// Every problem found, one line each (`error: …` or `warning: …`); empty when all is well.
pub fn problems(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(error) = std::fs::metadata(&config.workspace) {
        problems.push(format!(
            "error: {}: workspace: {error}",
            config.workspace.display()
        ));
    }
    if !config.skills_dir.is_dir() {
        problems.push(format!(
            "warning: {}: skills dir does not exist; no skills will load",
            config.skills_dir.display()
        ));
    }
    let (_, hook_problems) =
        load_hook_set(&hook_files(config.hooks_file.as_deref(), &config.workspace));
    problems.extend(hook_problems.into_iter().map(|p| format!("error: {p}")));
    let skills = scan_skills(&config.skills_dir);
    problems.extend(skills.problems());
    if let Some(defaults) = &config.default_skills {
        for name in defaults {
            if skills.get(name).is_none() {
                problems.push(format!("error: default_skills: unknown skill {name:?}"));
            }
        }
    }
    problems
}

/// Whether any problem is an error (warnings alone do not fail `check`).
pub fn has_errors(problems: &[String]) -> bool {
    problems.iter().any(|p| p.starts_with("error:"))
}
