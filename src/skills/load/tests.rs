use super::*;

fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn errors_of(hooks_json: &str, files: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("s");
    write(&skill, "hooks/hooks.json", hooks_json);
    for (name, text) in files {
        write(&skill, &format!("hooks/{name}"), text);
    }
    let loaded = scan_skill(&skill);
    assert!(loaded.hooks.is_empty() || loaded.errors.is_empty());
    loaded
        .errors
        .iter()
        .map(|p| format!("{}: {}", p.field.as_deref().unwrap_or_default(), p.message))
        .collect()
}

#[test]
fn a_good_skill_loads_with_front_matter() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("style");
    write(
        &skill,
        "SKILL.md",
        "---\nname: style\ndescription: Keeps answers short.\n---\n# Style\nBody.\n",
    );
    write(
        &skill,
        "hooks/hooks.json",
        r#"{"hooks":[{"name":"brevity","file":"b.md","timing":"after_user_input","role":"system","persistent":true},
                     {"name":"hint","file":"h.md","timing":"after_tool_call","role":"user","persistent":false,"tool_filter":["read_file"]}]}"#,
    );
    write(&skill, "hooks/b.md", "Be brief.\n");
    write(&skill, "hooks/h.md", "Mind truncation.");
    let loaded = scan_skill(&skill);
    assert_eq!(loaded.errors, vec![]);
    assert_eq!(loaded.warnings, vec![]);
    assert_eq!(loaded.description, "Keeps answers short.");
    assert_eq!(loaded.hooks.len(), 2);
    assert_eq!(loaded.hooks[0].text, "Be brief.");
    assert_eq!(
        loaded.hooks[1].tool_filter,
        Some(vec!["read_file".to_string()])
    );
    assert_eq!(loaded.hooks[1].role, Role::User);
}

#[test]
fn description_falls_back_to_the_first_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "x/SKILL.md",
        "# Title\n\nReads code carefully.\n",
    );
    assert_eq!(
        scan_skill(&dir.path().join("x")).description,
        "Reads code carefully."
    );
}

#[test]
fn every_field_problem_is_named() {
    let ok = r#""file":"a.md","timing":"after_user_input","role":"system","persistent":false"#;
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "not valid JSON"),
        (r#"{"hooks": 3}"#.into(), "hooks: missing, or not an array"),
        (r#"{"hooks":[{"file":"a.md","timing":"after_user_input","role":"system","persistent":false}]}"#.into(), "hooks[0].name: missing"),
        (format!(r#"{{"hooks":[{{"name":7,{}}}]}}"#, ok), "hooks[0].name: must be a string"),
        (r#"{"hooks":[{"name":"a","file":"a.md","timing":"sometimes","role":"system","persistent":false}]}"#.into(), "hooks[0] (a).timing: unknown timing \"sometimes\""),
        (r#"{"hooks":[{"name":"a","file":"a.md","timing":"after_user_input","role":"tool","persistent":false}]}"#.into(), "hooks[0] (a).role: unknown role \"tool\""),
        (r#"{"hooks":[{"name":"a","file":"a.md","timing":"after_user_input","role":"system"}]}"#.into(), "hooks[0] (a).persistent: missing"),
        (r#"{"hooks":[{"name":"a","file":"a.md","timing":"after_user_input","role":"system","persistent":"yes"}]}"#.into(), "hooks[0] (a).persistent: must be true or false"),
        (r#"{"hooks":[{"name":"a","file":"../a.md","timing":"after_user_input","role":"system","persistent":false}]}"#.into(), "hooks[0] (a).file: \"../a.md\" must be a plain file name"),
        (r#"{"hooks":[{"name":"a","file":"/etc/passwd","timing":"after_user_input","role":"system","persistent":false}]}"#.into(), "must be a plain file name"),
        (r#"{"hooks":[{"name":"a","file":"..","timing":"after_user_input","role":"system","persistent":false}]}"#.into(), "must be a plain file name"),
        (r#"{"hooks":[{"name":"a","file":"gone.md","timing":"after_user_input","role":"system","persistent":false}]}"#.into(), "\"gone.md\" does not exist"),
        (r#"{"hooks":[{"name":"a","file":"empty.md","timing":"after_user_input","role":"system","persistent":false}]}"#.into(), "\"empty.md\" is empty"),
        (format!(r#"{{"hooks":[{{"name":"a",{ok}}},{{"name":"a",{ok}}}]}}"#), "hooks[1] (a).name: duplicate hook name"),
        (format!(r#"{{"hooks":[{{"name":"a","tool_fliter":[],{ok}}}]}}"#), "hooks[0] (a).tool_fliter: unknown field"),
        (format!(r#"{{"hooks":[{{"name":"a","tool_filter":"read_file",{ok}}}]}}"#), "tool_filter: must be an array"),
    ];
    for (json, expected) in cases {
        let errors = errors_of(&json, &[("a.md", "text"), ("empty.md", "  \n")]);
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "{json}\nexpected {expected:?} in {errors:?}"
        );
    }
}

#[test]
fn warnings_do_not_stop_loading() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("s");
    write(
        &skill,
        "hooks/hooks.json",
        r#"{"hooks":[{"name":"a","file":"a.md","timing":"before_planning","role":"system","persistent":false,"tool_filter":["x"]},
                     {"name":"b","file":"a.md","timing":"before_each_agent","role":"system","persistent":true}]}"#,
    );
    write(&skill, "hooks/a.md", "text");
    let loaded = scan_skill(&skill);
    assert_eq!(loaded.hooks.len(), 2);
    assert!(loaded.warnings.iter().all(|w| !w.is_error()));
    assert_eq!(
        loaded.warnings[0].field.as_deref(),
        Some("hooks[0] (a).tool_filter")
    );
    let warnings: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        warnings[0].contains("tool_filter: is ignored"),
        "{warnings:?}"
    );
    assert!(warnings[1].contains("one more copy"), "{warnings:?}");
}

#[test]
fn broken_skills_are_isolated_and_reload_keeps_the_last_good_one() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "good/hooks/hooks.json",
        r#"{"hooks":[{"name":"a","file":"a.md","timing":"after_user_input","role":"system","persistent":false}]}"#,
    );
    write(dir.path(), "good/hooks/a.md", "A");
    write(dir.path(), "bad/hooks/hooks.json", "{");
    write(dir.path(), ".hidden/hooks/hooks.json", "{");
    let first = scan_skills(dir.path());
    assert_eq!(first.names(), ["bad", "good"]);
    assert_eq!(first.get("good").unwrap().hooks.len(), 1);
    assert!(first.get("bad").unwrap().hooks.is_empty());
    let problems = first.problems();
    assert!(crate::types::has_errors(&problems));
    assert_eq!(problems.len(), 1);
    assert!(problems[0].is_error());
    assert_eq!(
        problems[0].file.as_deref(),
        Some(dir.path().join("bad/hooks/hooks.json").as_path())
    );
    write(dir.path(), "good/hooks/hooks.json", "[broken");
    let merged = first.merge_reload(scan_skills(dir.path()));
    let good = merged.get("good").unwrap();
    assert_eq!(good.hooks.len(), 1, "the last good hooks stay");
    assert_eq!(good.errors.len(), 1, "and the error shows");
    // A second broken reload still keeps them.
    let again = merged.merge_reload(scan_skills(dir.path()));
    assert_eq!(again.get("good").unwrap().hooks.len(), 1);
}

#[test]
fn front_matter_split() {
    assert_eq!(
        split_front_matter("---\na: 1\n---\nbody"),
        (Some("a: 1\n"), "body")
    );
    assert_eq!(split_front_matter("no front"), (None, "no front"));
    assert_eq!(split_front_matter("---\nunclosed"), (None, "---\nunclosed"));
}
