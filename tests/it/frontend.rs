//! The page's ES modules without a DOM (`static/protocol.js` and its neighbours: history rules,
//! session hooks, outgoing frames, conversations, exports, hook views; `static/markdown.js`: the
//! Markdown path) under node's built-in test runner, without a browser: `node --test` on
//! `tests/js/*.test.mjs`, which import them (the root `package.json` says `.js` files are ES
//! modules); among them `imports.test.mjs`, which reads every `static/*.js` file's imports and
//! fails on a circle. Without node the test says it was skipped and why; under `CI=true` it fails
//! instead (the browser tests' rule).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `node` (or Debian's older `nodejs`) on the PATH, or `None` after saying the test was skipped
/// (outside CI) — under `CI=true` a missing node fails the test instead.
pub(crate) fn find_node() -> Option<String> {
    let found = ["node", "nodejs"].iter().find_map(|name| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {name}"))
            .output()
            .ok()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (!path.is_empty()).then_some(path)
    });
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("node is not installed, and CI=true requires the front-end tests");
        }
        eprintln!(
            "SKIPPED: the front-end tests need node 18 or later (apt-get install nodejs); it is not installed"
        );
    }
    found
}

/// The value of a TAP summary line such as `# pass 10`.
fn tap_count(output: &str, name: &str) -> Option<u64> {
    output.lines().find_map(|line| {
        line.strip_prefix("# ")?
            .strip_prefix(name)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

#[test]
fn page_modules_pass_their_node_tests() {
    let Some(node) = find_node() else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Files, not the folder: node 20 searches a folder, node 22 takes globs instead.
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("tests/js"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".test.mjs"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no tests/js/*.test.mjs");
    let out = Command::new(&node)
        .current_dir(root)
        .args(["--test", "--test-reporter=tap"])
        .args(&files)
        .env_remove("NODE_OPTIONS")
        .output()
        .unwrap_or_else(|e| panic!("running {node}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "node --test failed:\n{report}");
    assert_eq!(tap_count(&stdout, "fail"), Some(0), "{report}");
    let passed = tap_count(&stdout, "pass").unwrap_or(0);
    assert!(passed >= 10, "only {passed} node tests passed:\n{report}");
}
