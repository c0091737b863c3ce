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
            skill.hooks = hooks.into_iter().map(std::sync::Arc::new).collect();
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

/// One entry of `hooks.json`: every field read and checked (all its errors reported, in the
/// fields' order), then the combinations that work but are likely mistakes warned about.
fn read_hook(item: &Value, hooks_dir: &Path, at: &mut HookProblems<'_>) -> Option<HookSpec> {
    let Some(object) = item.as_object() else {
        at.error("", "must be an object");
        return None;
    };
    let before = at.errors.len();
    let name = read_name(object, at);
    refuse_unknown_fields(object, at);
    let timing = read_timing(object, at);
    let role = read_role(object, at);
    let persistent = read_persistent(object, at);
    let tool_filter = read_tool_filter(object, at);
    let text = required_string(object, "file", at)
        .and_then(|file| read_hook_text(hooks_dir, &file, at).map(|text| (file, text)));
    if at.errors.len() > before {
        return None;
    }
    let (name, timing, role, persistent, (file, text)) =
        (name?, timing?, role?, persistent?, text?);
    let hook = HookSpec {
        name,
        file,
        timing,
        role,
        persistent,
        tool_filter,
        text,
    };
    warn_about_likely_mistakes(&hook, at);
    Some(hook)
}

/// A field that must be a string with something in it.
fn required_string(
    object: &Map<String, Value>,
    key: &str,
    at: &mut HookProblems<'_>,
) -> Option<String> {
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
}

/// `name`, on one line; the later problems of the entry are named by it.
fn read_name(object: &Map<String, Value>, at: &mut HookProblems<'_>) -> Option<String> {
    let name = required_string(object, "name", at)?;
    at.name = Some(name.clone());
    if name.contains(['\n', '\r']) {
        at.error("name", "must not contain a line break");
    }
    Some(name)
}

fn refuse_unknown_fields(object: &Map<String, Value>, at: &mut HookProblems<'_>) {
    for key in object.keys() {
        if !HOOK_FIELDS.contains(&key.as_str()) {
            at.error(
                key,
                format!("unknown field (expected one of {})", HOOK_FIELDS.join(", ")),
            );
        }
    }
}

fn read_timing(object: &Map<String, Value>, at: &mut HookProblems<'_>) -> Option<Timing> {
    let text = required_string(object, "timing", at)?;
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
}

fn read_role(object: &Map<String, Value>, at: &mut HookProblems<'_>) -> Option<Role> {
    match required_string(object, "role", at)?.as_str() {
        "system" => Some(Role::System),
        "user" => Some(Role::User),
        other => {
            at.error(
                "role",
                format!("unknown role {other:?} (expected \"system\" or \"user\")"),
            );
            None
        }
    }
}

fn read_persistent(object: &Map<String, Value>, at: &mut HookProblems<'_>) -> Option<bool> {
    match object.get("persistent") {
        Some(Value::Bool(flag)) => Some(*flag),
        Some(_) => {
            at.error("persistent", "must be true or false");
            None
        }
        None => {
            at.error("persistent", "missing");
            None
        }
    }
}

/// `tool_filter`: optional (`null` is absent), tool names.
fn read_tool_filter(object: &Map<String, Value>, at: &mut HookProblems<'_>) -> Option<Vec<String>> {
    match object.get("tool_filter") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        Some(_) => {
            at.error("tool_filter", "must be an array of tool names");
            None
        }
    }
}

/// Warnings for a valid hook that likely does not do what its author meant: a tool filter on
/// a timing that has no tool, a persistent hook that fires more than once per chat.
fn warn_about_likely_mistakes(hook: &HookSpec, at: &mut HookProblems<'_>) {
    if hook.tool_filter.is_some() && hook.timing != Timing::AfterToolCall {
        at.warning(
            "tool_filter",
            format!(
                "is ignored: only after_tool_call hooks filter by tool, this one is {}",
                hook.timing.as_str()
            ),
        );
    }
    if hook.persistent && hook.timing.repeats() {
        at.warning(
            "persistent",
            format!(
                "a persistent {} hook adds one more copy to the history every time it fires; is that intended?",
                hook.timing.as_str()
            ),
        );
    }
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
mod tests;
