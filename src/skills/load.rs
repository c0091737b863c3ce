//! Reading skills from disk: `SKILL.md` front matter and `hooks/hooks.json` with its texts,
//! validated field by field.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{HookSpec, Skill, SkillSet, Timing};
use crate::types::{Problem, Role};

/// A hook text larger than this is refused (hook texts are prompts, not documents).
const MAX_HOOK_TEXT_BYTES: u64 = 256 * 1024;

const HOOK_FIELDS: [&str; 6] = [
    "name",
    "file",
    "timing",
    "role",
    "persistent",
    "tool_filter",
];

/// Every folder in `dir` is a skill (hidden folders are skipped).
pub(crate) fn scan_skills(dir: &Path) -> SkillSet {
    let mut set = SkillSet::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return set,
        Err(error) => {
            set.errors
                .push(Problem::error(error.to_string()).in_file(dir));
            return set;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with('.') || !path.is_dir() {
            continue;
        }
        set.skills.insert(name, Arc::new(scan_skill(&path)));
    }
    set
}

/// Loads one skill folder.
pub(crate) fn scan_skill(dir: &Path) -> Skill {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let mut skill = Skill {
        name: name.clone(),
        description: String::new(),
        dir: dir.to_path_buf(),
        hooks: Vec::new(),
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    read_skill_md(dir, &mut skill);
    let hooks_json = dir.join("hooks").join("hooks.json");
    if hooks_json.exists() {
        let mut errors = Vec::new();
        let hooks = read_hooks(&hooks_json, &mut errors, &mut skill.warnings);
        if errors.is_empty() {
            skill.hooks = hooks;
        } else {
            skill.errors = errors;
        }
    }
    skill
}

/// A skill file as UTF-8 text, read like every file someone else may have put there (a regular
/// file of at most 1 MiB: see `reload::read_small_file`).
fn read_text(path: &Path) -> std::io::Result<String> {
    let bytes = crate::reload::read_small_file(path)?;
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not UTF-8 text"))
}

/// `SKILL.md`: optional front matter with `name` and `description`; without a description, the
/// first line of text after it.
fn read_skill_md(dir: &Path, skill: &mut Skill) {
    let path = dir.join("SKILL.md");
    let Ok(text) = read_text(&path) else {
        return;
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let (front, body) = split_front_matter(text);
    if let Some(front) = front {
        let options = serde_saphyr::options! { strict_booleans: true };
        match serde_saphyr::from_str_with_options::<Map<String, Value>>(front, options) {
            Ok(map) => {
                if let Some(description) = map.get("description").and_then(Value::as_str) {
                    skill.description = description.trim().to_string();
                }
                if let Some(declared) = map.get("name").and_then(Value::as_str) {
                    if declared != skill.name {
                        let message = format!(
                            "{declared:?} differs from the folder name; chats name this skill {:?}",
                            skill.name
                        );
                        skill
                            .warnings
                            .push(Problem::warning(message).in_file(&path).in_field("name"));
                    }
                }
            }
            Err(error) => skill.warnings.push(
                Problem::warning(format!("front matter is not valid YAML: {error}")).in_file(&path),
            ),
        }
    }
    if skill.description.is_empty() {
        skill.description = body
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with('#'))
            .unwrap_or_default()
            .to_string();
    }
}

/// Splits `---\n…\n---` front matter from the body.
fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (None, text);
    };
    for (index, _) in rest.match_indices("---") {
        let at_line_start = index == 0 || rest[..index].ends_with('\n');
        let after = &rest[index + 3..];
        if at_line_start
            && (after.is_empty() || after.starts_with('\n') || after.starts_with("\r\n"))
        {
            return (Some(&rest[..index]), after.trim_start_matches(['\r', '\n']));
        }
    }
    (None, text)
}

/// Reads and validates `hooks.json`; every problem goes to `errors` or `warnings`.
fn read_hooks(
    path: &Path,
    errors: &mut Vec<Problem>,
    warnings: &mut Vec<Problem>,
) -> Vec<HookSpec> {
    let text = match read_text(path) {
        Ok(text) => text,
        Err(error) => {
            errors.push(Problem::error(format!("cannot read: {error}")).in_file(path));
            return Vec::new();
        }
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(error) => {
            errors.push(Problem::error(format!("not valid JSON: {error}")).in_file(path));
            return Vec::new();
        }
    };
    let Some(items) = value.get("hooks").and_then(Value::as_array) else {
        errors.push(
            Problem::error("missing, or not an array (expected {\"hooks\": [...]})")
                .in_file(path)
                .in_field("hooks"),
        );
        return Vec::new();
    };
    let hooks_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut names = HashSet::new();
    let mut hooks = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let mut at = HookProblems {
            path,
            index,
            name: None,
            errors,
            warnings,
        };
        if let Some(hook) = read_hook(item, &hooks_dir, &mut at) {
            if !names.insert(hook.name.clone()) {
                at.error("name", format!("duplicate hook name {:?}", hook.name));
                continue;
            }
            hooks.push(hook);
        }
    }
    hooks
}

/// Collects the problems of one hook entry, naming it by index and name.
struct HookProblems<'a> {
    path: &'a Path,
    index: usize,
    name: Option<String>,
    errors: &'a mut Vec<Problem>,
    warnings: &'a mut Vec<Problem>,
}

impl HookProblems<'_> {
    fn field(&self, field: &str) -> String {
        match &self.name {
            Some(name) => format!("hooks[{}] ({name}).{field}", self.index),
            None => format!("hooks[{}].{field}", self.index),
        }
    }
    fn error(&mut self, field: &str, reason: impl Into<String>) {
        let field = self.field(field);
        self.errors
            .push(Problem::error(reason).in_file(self.path).in_field(field));
    }
    fn warning(&mut self, field: &str, reason: impl Into<String>) {
        let field = self.field(field);
        self.warnings
            .push(Problem::warning(reason).in_file(self.path).in_field(field));
    }
}

fn read_hook(item: &Value, hooks_dir: &Path, at: &mut HookProblems<'_>) -> Option<HookSpec> {
    let Some(object) = item.as_object() else {
        at.error("", "must be an object");
        return None;
    };
    let before = at.errors.len();
    let string = |at: &mut HookProblems<'_>, key: &str| -> Option<String> {
        match object.get(key) {
            Some(Value::String(value)) if !value.trim().is_empty() => Some(value.clone()),
            Some(Value::String(_)) => {
                at.error(key, "must not be empty");
                None
            }
            Some(_) => {
                at.error(key, "must be a string");
                None
            }
            None => {
                at.error(key, "missing");
                None
            }
        }
    };
    let name = string(at, "name");
    if let Some(name) = &name {
        at.name = Some(name.clone());
        if name.contains(['\n', '\r']) {
            at.error("name", "must not contain a line break");
        }
    }
    for key in object.keys() {
        if !HOOK_FIELDS.contains(&key.as_str()) {
            at.error(
                key,
                format!("unknown field (expected one of {})", HOOK_FIELDS.join(", ")),
            );
        }
    }
    let timing = string(at, "timing").and_then(|text| {
        let timing = Timing::parse(&text);
        if timing.is_none() {
            let known: Vec<&str> = Timing::ALL.iter().map(|t| t.as_str()).collect();
            at.error(
                "timing",
                format!(
                    "unknown timing {text:?} (expected one of {})",
                    known.join(", ")
                ),
            );
        }
        timing
    });
    let role = string(at, "role").and_then(|text| match text.as_str() {
        "system" => Some(Role::System),
        "user" => Some(Role::User),
        other => {
            at.error(
                "role",
                format!("unknown role {other:?} (expected \"system\" or \"user\")"),
            );
            None
        }
    });
    let persistent = match object.get("persistent") {
        Some(Value::Bool(flag)) => Some(*flag),
        Some(_) => {
            at.error("persistent", "must be true or false");
            None
        }
        None => {
            at.error("persistent", "missing");
            None
        }
    };
    let tool_filter = match object.get("tool_filter") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect::<Vec<_>>(),
        ),
        Some(_) => {
            at.error("tool_filter", "must be an array of tool names");
            None
        }
    };
    let text = string(at, "file")
        .and_then(|file| read_hook_text(hooks_dir, &file, at).map(|text| (file, text)));
    if at.errors.len() > before {
        return None;
    }
    let (name, timing, role, persistent, (file, text)) =
        (name?, timing?, role?, persistent?, text?);
    if tool_filter.is_some() && timing != Timing::AfterToolCall {
        at.warning(
            "tool_filter",
            format!(
                "is ignored: only after_tool_call hooks filter by tool, this one is {}",
                timing.as_str()
            ),
        );
    }
    if persistent && timing.repeats() {
        at.warning(
            "persistent",
            format!(
                "a persistent {} hook adds one more copy to the history every time it fires; is that intended?",
                timing.as_str()
            ),
        );
    }
    Some(HookSpec {
        name,
        file,
        timing,
        role,
        persistent,
        tool_filter,
        text,
    })
}

/// The text of `hooks/<file>`: a plain file name, a regular file, UTF-8, not empty.
fn read_hook_text(hooks_dir: &Path, file: &str, at: &mut HookProblems<'_>) -> Option<String> {
    let plain = !file.contains(['/', '\\'])
        && file != ".."
        && file != "."
        && !Path::new(file).is_absolute();
    if !plain {
        at.error(
            "file",
            format!(
                "{file:?} must be a plain file name inside hooks/ (no '/', no '..', not absolute)"
            ),
        );
        return None;
    }
    let path: PathBuf = hooks_dir.join(file);
    let metadata = match std::fs::metadata(&path) {
        Ok(metadata) => metadata,
        Err(_) => {
            at.error("file", format!("{file:?} does not exist in hooks/"));
            return None;
        }
    };
    if !metadata.is_file() {
        at.error("file", format!("{file:?} is not a regular file"));
        return None;
    }
    if metadata.len() > MAX_HOOK_TEXT_BYTES {
        at.error(
            "file",
            format!("{file:?} is larger than {MAX_HOOK_TEXT_BYTES} bytes"),
        );
        return None;
    }
    match read_text(&path) {
        Ok(text) if text.trim().is_empty() => {
            at.error("file", format!("{file:?} is empty"));
            None
        }
        Ok(text) => Some(text.trim_end().to_string()),
        Err(error) => {
            at.error(
                "file",
                format!("{file:?} cannot be read as UTF-8 text: {error}"),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
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
}
