//! Every key of the config file is documented: the keys are what the file's types accept (read
//! from serde's own "expected one of" list for an unknown key, so a new field cannot be missed),
//! and each must appear in the doc that describes its section.

use super::super::FileConfig;

/// The keys a section accepts: `path` is where a probe key goes (`[]` = the top level).
fn keys_at(path: &[&str]) -> Vec<String> {
    let mut yaml = String::new();
    for (depth, section) in path.iter().enumerate() {
        yaml.push_str(&format!("{}{section}:\n", "  ".repeat(depth)));
    }
    yaml.push_str(&format!("{}zz_not_a_key: 1\n", "  ".repeat(path.len())));
    let error = match serde_saphyr::from_str::<FileConfig>(&yaml) {
        Ok(_) => panic!("{path:?} accepted an unknown key"),
        Err(error) => error.to_string(),
    };
    // "expected one of `a`, `b`", or "expected `a`" for a section of one key.
    let Some((_, expected)) = error.split_once("expected ") else {
        panic!("{path:?}: no list of keys in {error:?}")
    };
    let expected = expected.lines().next().unwrap_or_default();
    let expected = expected.strip_prefix("one of ").unwrap_or(expected);
    expected
        .split(", ")
        .map(|key| key.trim().trim_matches('`').to_string())
        .filter(|key| !key.is_empty())
        .collect()
}

fn doc(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_config_file_key_is_in_the_docs() {
    let configuration = doc("configuration.md");
    let sections: [(&[&str], String); 16] = [
        (&[], configuration.clone()),
        (&["auth", "jwt"], configuration.clone()),
        (&["quotas"], configuration.clone()),
        (&["session_hooks"], configuration.clone()),
        (&["http_hooks"], configuration.clone()),
        (&["agent"], configuration.clone()),
        (&["planning"], configuration.clone()),
        (&["prompts"], configuration.clone()),
        (&["limits"], configuration.clone()),
        (&["context"], configuration.clone()),
        (&["tools"], configuration.clone()),
        (&["approval"], configuration.clone()),
        (&["upstream"], configuration.clone()),
        (&["telemetry"], doc("telemetry.md")),
        (&["voice", "tts"], doc("voice.md")),
        (&["voice", "stt"], doc("voice.md")),
    ];
    let mut missing = Vec::new();
    for (path, text) in &sections {
        let keys = keys_at(path);
        assert!(!keys.is_empty(), "{path:?}: {keys:?}");
        for key in keys {
            // A key is documented where the YAML shows it (a line `key: …`) or a table names
            // it (`key`).
            let shown = text.lines().any(|line| {
                line.trim_start().starts_with(&format!("{key}:"))
                    || line.contains(&format!("`{key}`"))
                    || line.contains(&format!("`{key}:`"))
            });
            let dotted = path
                .iter()
                .chain([&key.as_str()])
                .copied()
                .collect::<Vec<_>>();
            if !shown && !text.contains(&format!("`{}`", dotted.join("."))) {
                missing.push(dotted.join("."));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "config keys no doc mentions: {missing:?}"
    );
}

#[test]
fn the_key_reader_sees_the_keys_of_a_section() {
    let upstream = keys_at(&["upstream"]);
    assert!(
        upstream.contains(&"fallback_models".to_string()),
        "{upstream:?}"
    );
    assert!(keys_at(&[]).contains(&"limits".to_string()));
}
