//! A process's environment: nothing of the server's but [`PASSED_VARIABLES`], then what its
//! caller adds, then its own `env:` map with `${NAME}` references to the server's environment
//! filled in when it starts.

use std::collections::BTreeMap;
use std::ffi::OsString;

/// The server's variables a process gets, when the server has them.
pub(crate) const PASSED_VARIABLES: [&str; 6] = ["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"];

/// A variable of the server's own environment: the `lookup` of [`environment_with`] outside
/// tests.
pub(crate) fn server_variable(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// An environment: [`PASSED_VARIABLES`] from `lookup` (the server's environment), then `extra`
/// (a hook's own variables), then the `env:` map `own` with its `${NAME}`s filled from `lookup`.
/// The run marker is added when the process starts.
pub(crate) fn environment_with(
    lookup: &dyn Fn(&str) -> Option<OsString>,
    extra: Vec<(String, OsString)>,
    own: &BTreeMap<String, String>,
) -> Vec<(String, OsString)> {
    let mut env: Vec<(String, OsString)> = PASSED_VARIABLES
        .iter()
        .filter_map(|name| lookup(name).map(|value| (name.to_string(), value)))
        .collect();
    env.extend(extra);
    let text = |name: &str| lookup(name).map(|value| value.to_string_lossy().into_owned());
    for (name, value) in own {
        env.push((name.clone(), expand(value, &text).into()));
    }
    env
}

/// The environment of a process the server runs that is not a hook (an MCP server over stdio, a
/// speech command): [`PASSED_VARIABLES`] from `lookup`, then the process's own `env:` map with
/// its `${NAME}`s filled from `lookup`. No hook variable, and nothing else of the server's.
pub(crate) fn plain_environment(
    lookup: &dyn Fn(&str) -> Option<OsString>,
    own: &BTreeMap<String, String>,
) -> Vec<(String, OsString)> {
    environment_with(lookup, Vec::new(), own)
}

/// Whether `name` may name a variable: letters, digits and `_`, not starting with a digit.
pub(crate) fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why an `env` value's `${NAME}` references do not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum VariableError {
    #[error("`${{` without a closing `}}` in {0:?}")]
    Unclosed(String),
    #[error("${{{0}}} is not a variable name")]
    NotAName(String),
}

/// The pieces of an `env` value: text, and `${NAME}` references.
enum Piece<'a> {
    Text(&'a str),
    Variable(&'a str),
}

/// Splits `value` at its `${NAME}` references. Only `${` is special: a `$` before anything
/// else is text.
fn pieces(value: &str) -> Result<Vec<Piece<'_>>, VariableError> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push(Piece::Text(&rest[..start]));
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| VariableError::Unclosed(value.to_string()))?;
        let name = &after[..end];
        if !is_variable_name(name) {
            return Err(VariableError::NotAName(name.to_string()));
        }
        out.push(Piece::Variable(name));
        rest = &after[end + 1..];
    }
    out.push(Piece::Text(rest));
    Ok(out)
}

/// The server variables an `env` value names.
pub(crate) fn variables_in(value: &str) -> Result<Vec<&str>, VariableError> {
    Ok(pieces(value)?
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Variable(name) => Some(name),
            Piece::Text(_) => None,
        })
        .collect())
}

/// An `env` value with each `${NAME}` replaced by `lookup(NAME)`. A name not set is empty
/// (loading refused such a file, so this is only reached when the server's environment
/// changed since); a value that does not parse is kept as it is (loading refused it too).
pub(crate) fn expand(value: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let Ok(pieces) = pieces(value) else {
        return value.to_string();
    };
    pieces
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => text.to_string(),
            Piece::Variable(name) => lookup(name).unwrap_or_default(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_expand_server_variables() {
        let lookup = |name: &str| (name == "KEY").then(|| "k3y".to_string());
        assert_eq!(expand("Bearer ${KEY}!", &lookup), "Bearer k3y!");
        assert_eq!(expand("${KEY}${KEY} $KEY $", &lookup), "k3yk3y $KEY $");
        assert_eq!(expand("[${GONE}]", &lookup), "[]");
    }
}
