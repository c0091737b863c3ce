//! A problem found while loading something a person wrote (a skill's `hooks.json`, a hook file,
//! the settings `check` looks at), as data: where it is, how bad it is, what is wrong. Callers
//! decide on the [`Severity`]; the text is only for people.

use std::fmt;
use std::path::PathBuf;

/// Whether a problem keeps something from loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// What it is about is not used (a skill loads no hooks, a hook file is refused).
    Error,
    /// Worth a look, but everything still loads.
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem. Shown as `file:line: field: message`, each part only when known (the severity is
/// not part of it: see [`Problem::labelled`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file it is in; `None` for a setting that has no file of its own.
    pub file: Option<PathBuf>,
    /// 1-based line in `file`, when the parser knows it.
    pub line: Option<u64>,
    /// What in the file, e.g. `hooks[1] (brief).timing` or `stop[0]`; `None` when the file as a
    /// whole (or its line) is the problem.
    pub field: Option<String>,
    pub severity: Severity,
    pub message: String,
}

impl Problem {
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        Self {
            file: None,
            line: None,
            field: None,
            severity,
            message: message.into(),
        }
    }

    pub fn error(message: impl Into<String>) -> Self {
        Self::new(Severity::Error, message)
    }

    pub fn warning(message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, message)
    }

    pub fn in_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub fn at_line(mut self, line: u64) -> Self {
        self.line = Some(line);
        self
    }

    pub fn in_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The problem with its severity in front (`error: …`, `warning: …`): how `check` and the log
    /// show a list that mixes both.
    pub fn labelled(&self) -> Labelled<'_> {
        Labelled(self)
    }
}

/// Whether any problem is an error (warnings alone never are).
pub fn has_errors(problems: &[Problem]) -> bool {
    problems.iter().any(Problem::is_error)
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{}:{line}: ", file.display())?,
            (Some(file), None) => write!(f, "{}: ", file.display())?,
            (None, Some(line)) => write!(f, "line {line}: ")?,
            (None, None) => {}
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// See [`Problem::labelled`].
#[derive(Debug, Clone, Copy)]
pub struct Labelled<'a>(&'a Problem);

impl fmt::Display for Labelled<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.severity, self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_is_shown_only_when_known() {
        let cases = [
            (Problem::error("bad"), "bad"),
            (
                Problem::error("not valid JSON").in_file("s/hooks.json"),
                "s/hooks.json: not valid JSON",
            ),
            (
                Problem::error("missing")
                    .in_file("s/hooks.json")
                    .in_field("hooks[0].name"),
                "s/hooks.json: hooks[0].name: missing",
            ),
            (
                Problem::error("unknown event")
                    .in_file("hooks.yaml")
                    .at_line(4),
                "hooks.yaml:4: unknown event",
            ),
            (
                Problem::error("timeout -1")
                    .in_file("hooks.yaml")
                    .at_line(2)
                    .in_field("stop[0]"),
                "hooks.yaml:2: stop[0]: timeout -1",
            ),
            (
                Problem::error("unknown skill \"x\"").in_field("default_skills"),
                "default_skills: unknown skill \"x\"",
            ),
        ];
        for (problem, shown) in cases {
            assert_eq!(problem.to_string(), shown);
        }
    }

    #[test]
    fn the_label_is_the_severity() {
        let warning = Problem::warning("skills dir does not exist").in_file("skills");
        assert_eq!(
            warning.labelled().to_string(),
            "warning: skills: skills dir does not exist"
        );
        let error = Problem::error("cannot read").in_file("h.yaml");
        assert_eq!(error.labelled().to_string(), "error: h.yaml: cannot read");
    }

    #[test]
    fn only_the_severity_makes_an_error() {
        // A warning whose text looks like an error is still a warning.
        let warnings = [
            Problem::warning("error: looks bad"),
            Problem::warning("x").in_field("error"),
        ];
        assert!(!has_errors(&warnings));
        assert!(!has_errors(&[]));
        let mixed = [Problem::warning("w"), Problem::error("warning: e")];
        assert!(has_errors(&mixed));
    }
}
