//! The layers of `src/` are one-way: a module may use the modules below it, never one above it
//! or a different one on its own level (that is how cycles start). ARCHITECTURE.md draws the
//! same picture; this test keeps it true.

use std::path::{Path, PathBuf};

/// Lowest first. Modules on one line are on the same level and may not use each other.
const LAYERS: &[&[&str]] = &[
    &["types", "reload", "trust", "telemetry"],
    &["process"],
    &["llm", "tools"],
    &["hooks"],
    &["skills", "mcp", "voice"],
    &["agent"],
    &["config"],
    &["app"],
    &["check", "hooks_command", "server", "trust_command"],
    &["lib", "main"],
];

fn level(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to: `src/hooks/stack.rs` → `hooks`, `src/config.rs` →
/// `config`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_string()
}

/// The crate-level modules a file's code (not its comments, not its unit tests) names.
fn uses(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if line.trim_start().starts_with("#[cfg(test)]") {
            break; // unit tests may reach anywhere
        }
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let name: String = rest[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            found.push((number + 1, name));
            rest = &rest[at + 7..];
        }
    }
    found
}

#[test]
fn no_module_uses_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        let Some(own) = level(&module) else {
            violations.push(format!(
                "{}: module `{module}` is in no layer of tests/it/layers.rs",
                file.display()
            ));
            continue;
        };
        if is_unit_test_file(&src, file) {
            continue; // unit tests may reach anywhere
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (line, used) in uses(&text) {
            if used == module {
                continue;
            }
            match level(&used) {
                Some(other) if other < own => {}
                Some(_) => violations.push(format!(
                    "{}:{line}: `{module}` uses `crate::{used}`, which is not below it",
                    file.display()
                )),
                None => violations.push(format!(
                    "{}:{line}: `crate::{used}` is in no layer",
                    file.display()
                )),
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// A module's unit tests kept in a file of their own: `x/tests.rs` or anything under `x/tests/`.
fn is_unit_test_file(src: &Path, file: &Path) -> bool {
    file.strip_prefix(src)
        .unwrap()
        .components()
        .any(|part| part.as_os_str() == "tests" || part.as_os_str() == "tests.rs")
}

#[test]
fn the_checker_sees_an_upward_use() {
    let found = uses("use crate::agent::ChatEvent;\n// crate::server in a comment\n#[cfg(test)]\nuse crate::server::x;\n");
    assert_eq!(found, vec![(1, "agent".to_string())]);
}
