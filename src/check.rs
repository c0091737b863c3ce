//! `hookwire check`: everything `serve` would load, with every problem reported as
//! `file: field: reason`.

use crate::config::Config;

/// Every problem found, one line each; empty when all is well.
pub fn problems(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(error) = std::fs::metadata(&config.workspace) {
        problems.push(format!("{}: workspace: {error}", config.workspace.display()));
    }
    problems
}
