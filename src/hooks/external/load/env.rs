//! A command hook's `env:` map: which names it may set, and `${NAME}` references to the
//! server's environment (server-level files only), expanded when the hook runs
//! ([`crate::process::env`]).

use std::collections::BTreeMap;

use crate::process::{is_variable_name, variables_in, RUN_MARKER};

/// Names that a hook's `env` may not set: the marker the runner finds a hook's processes by.
const RESERVED_ENV: [&str; 1] = [RUN_MARKER];

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
