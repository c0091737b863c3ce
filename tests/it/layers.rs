//! The layers of `src/` are one-way: a module may use the modules below it, never one above it
//! or a different one on its own level (that is how cycles start). ARCHITECTURE.md draws the
//! same picture; this test keeps it true.

use std::path::Path;

use crate::source::{code_only, is_unit_test_file, rust_files, without_test_modules};

/// Lowest first. Modules on one line are on the same level and may not use each other.
const LAYERS: &[&[&str]] = &[
    &["types", "reload", "trust", "telemetry"],
    &["process", "quota"],
    &["llm", "tools"],
    &["hooks"],
    &["skills", "mcp", "voice"],
    &["agent"],
    &["config"],
    &["app"],
    &["server"],
    &["cli", "allocator"],
    &["lib", "main"],
];

fn level(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The top-level module a file belongs to: `src/hooks/stack.rs` → `hooks`, `src/config.rs` →
/// `config`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_string()
}

/// The crate-level modules a file's code names: not its comments or literals, not its unit-test
/// modules (which may reach anywhere); everything else, code after a test module included.
fn uses(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let code = without_test_modules(&code_only(text));
    for (number, line) in code.lines().enumerate() {
        let mut rest = line;
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
    let src = crate::source::src_dir();
    let files = rust_files(&src);
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

#[test]
fn the_checker_sees_an_upward_use() {
    let found = uses("use crate::agent::ChatEvent;\n// crate::server in a comment\n#[cfg(test)]\nmod tests {\n    use crate::server::x;\n}\nfn wiring() { crate::app::build(\"crate::config\") }\n");
    assert_eq!(
        found,
        vec![(1, "agent".to_string()), (7, "app".to_string())],
        "code after a test module is read; the module, comments and strings are not"
    );
}
