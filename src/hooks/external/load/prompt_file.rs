//! `prompt_file:` of a `prompt`, `llm` or `agent` hook in the OpenHarness format: the prompt
//! read from a file under `.openharness/hooks/` (the format keeps its prompt files beside its
//! YAML files). Read once, at load; its SHA-256 goes with the hook so that workspace trust pins
//! it like the hook file itself (a prompt file edited after `hookwire trust` makes its hook file
//! untrusted again). A path that leads out of the folder (absolute, `..`, or a link) is refused.

use std::path::{Component, Path};

use crate::hooks::external::hook::PromptFile;
use crate::trust::sha256_hex;

/// The folder prompt files live in, as the workspace names it.
const FOLDER: &str = ".openharness/hooks";

/// Why an entry's `prompt_file` gives it no prompt.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PromptFileError {
    #[error("give `prompt` or `prompt_file`, not both")]
    Both,
    #[error("`prompt_file` applies to prompt, llm and agent hooks")]
    NoPrompt,
    #[error("`prompt_file` is only for hook files in {FOLDER}/ (the OpenHarness format)")]
    NotOpenHarness,
    #[error("prompt_file {0:?} must be a path inside {FOLDER}/ (relative, without `..`)")]
    NotInside(String),
    #[error("prompt_file {0:?} leads outside {FOLDER}/")]
    LeadsOutside(String),
    #[error("prompt_file {name:?}: cannot read: {error}")]
    Unreadable { name: String, error: std::io::Error },
    #[error("prompt_file {0:?} is not valid UTF-8")]
    NotUtf8(String),
    #[error("prompt_file {0:?} is empty")]
    Empty(String),
}

/// Reads the prompt `name`s for a hook of `hook_file`: the text and the file, or what is wrong.
pub(super) fn read(hook_file: &Path, name: &str) -> Result<(String, PromptFile), PromptFileError> {
    let folder = hook_file
        .parent()
        .filter(|folder| folder.ends_with(FOLDER))
        .ok_or(PromptFileError::NotOpenHarness)?;
    let relative = Path::new(name);
    let inside = !name.trim().is_empty()
        && relative
            .components()
            .all(|component| matches!(component, Component::Normal(_) | Component::CurDir));
    if !inside {
        return Err(PromptFileError::NotInside(name.to_string()));
    }
    let path = folder.join(relative);
    let unreadable = |error: std::io::Error| PromptFileError::Unreadable {
        name: name.to_string(),
        error,
    };
    // A link may point anywhere: what counts is where the file really is.
    let real = path.canonicalize().map_err(unreadable)?;
    let real_folder = folder.canonicalize().map_err(unreadable)?;
    if !real.starts_with(&real_folder) {
        return Err(PromptFileError::LeadsOutside(name.to_string()));
    }
    let bytes = crate::reload::read_small_file(&real).map_err(unreadable)?;
    let text = String::from_utf8(bytes).map_err(|_| PromptFileError::NotUtf8(name.to_string()))?;
    if text.trim().is_empty() {
        return Err(PromptFileError::Empty(name.to_string()));
    }
    let sha256 = sha256_hex(text.as_bytes());
    Ok((text, PromptFile { path, sha256 }))
}
