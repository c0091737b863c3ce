//! A command hook's `env:` map: which names it may set, and `${NAME}` references to the
//! server's environment (server-level files only), expanded when the hook runs.

use std::collections::BTreeMap;

/// Names that a hook's `env` may not set: the marker the runner finds a hook's processes by.
const RESERVED_ENV: [&str; 1] = [crate::hooks::external::process::RUN_MARKER];

/// What is wrong with a command hook's `env` map. A value may name server variables as
/// `${NAME}` only in a server-level file, and each must be set when the file loads (a typo
/// would otherwise reach the hook as an empty secret); workspace files are the workspace's
/// and get no server variable.
pub(crate) fn check_env(env: &BTreeMap<String, String>, level: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for (name, value) in env {
        if !is_variable_name(name) {
            errors.push(format!(
                "env name {name:?} must be letters, digits and `_`, not starting with a digit"
            ));
        } else if RESERVED_ENV.contains(&name.as_str()) {
            errors.push(format!("env name {name} is reserved by hookwire"));
        }
        if value.contains('\0') {
            errors.push(format!("env {name} contains a NUL character"));
            continue;
        }
        let names = match variables_in(value) {
            Ok(names) => names,
            Err(error) => {
                errors.push(format!("env {name}: {error}"));
                continue;
            }
        };
        if names.is_empty() {
            continue;
        }
        if level != "server" {
            errors.push(format!(
                "env {name} names a server variable (${{{}}}); only server-level hook files may",
                names[0]
            ));
            continue;
        }
        for variable in names {
            if std::env::var_os(variable).is_none() {
                errors.push(format!(
                    "env {name} names ${{{variable}}}, which is not set in the server's environment"
                ));
            }
        }
    }
    errors
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The pieces of an `env` value: text, and `${NAME}` references.
enum Piece<'a> {
    Text(&'a str),
    Variable(&'a str),
}

/// Splits `value` at its `${NAME}` references. Only `${` is special: a `$` before anything
/// else is text.
fn pieces(value: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push(Piece::Text(&rest[..start]));
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`${{` without a closing `}}` in {value:?}"))?;
        let name = &after[..end];
        if !is_variable_name(name) {
            return Err(format!("${{{name}}} is not a variable name"));
        }
        out.push(Piece::Variable(name));
        rest = &after[end + 1..];
    }
    out.push(Piece::Text(rest));
    Ok(out)
}

/// The server variables an `env` value names.
pub(crate) fn variables_in(value: &str) -> Result<Vec<&str>, String> {
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
