//! The YAML reader's refusal as a person reads it, for every file hookwire reads as YAML (hook
//! files, the config file): its line, the reader's words on one line without its snippet (whose
//! `<input>` names no file, and whose layout is lost on one line), and, for a misspelt key, the
//! key it may have meant.

/// A YAML file the reader refused: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlError {
    /// From 1, when the reader knows it.
    pub(crate) line: Option<u64>,
    pub(crate) message: String,
}

impl YamlError {
    pub(crate) fn of(error: &serde_saphyr::Error) -> Self {
        let text = one_line(&error.without_snippet().to_string());
        let text = text.strip_prefix("error: ").unwrap_or(&text);
        // The reader puts the place first (`line 1 column 1: …`); the line is given apart.
        let text = match text.split_once(": ") {
            Some((place, rest)) if place.starts_with("line ") && place.contains(" column ") => rest,
            _ => text,
        };
        YamlError {
            line: error.location().map(|location| location.line()),
            message: with_suggestion(text),
        }
    }
}

/// An error message on one line (YAML and regex errors span several).
pub(crate) fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `unknown field `x`, expected one of a, b, …` with `; did you mean `b`?` when one of the
/// expected names is a typing slip away from `x`.
fn with_suggestion(message: &str) -> String {
    let Some(rest) = message.split("unknown field `").nth(1) else {
        return message.to_string();
    };
    let Some((unknown, rest)) = rest.split_once('`') else {
        return message.to_string();
    };
    let Some(expected) = rest.split("expected one of ").nth(1) else {
        return message.to_string();
    };
    let closest = expected
        .split(',')
        .map(|name| name.trim().trim_matches('`'))
        .filter(|name| !name.is_empty())
        .map(|name| (strsim::levenshtein(unknown, name), name))
        .min();
    match closest {
        Some((distance, name)) if distance <= 2 => format!("{message}; did you mean `{name}`?"),
        _ => message.to_string(),
    }
}
