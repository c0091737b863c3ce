//! The scripts command hooks run: `sh .hookwire/x.sh`, `./x.sh`, `python3 x.py` whose file is
//! missing fail at every run, so `check` names them. Commands run in the workspace, so a
//! relative script is looked up there. Only the first simple command is read, and a word that
//! the shell would expand (`$VAR`, `~`, globs) is left alone: what cannot be known is not
//! reported.

use std::path::Path;

use crate::hooks::external::{Handler, HookDef};
use crate::types::Problem;

/// Programs whose first argument that is not a flag is the script they run.
const INTERPRETERS: [&str; 12] = [
    "sh", "bash", "dash", "zsh", "ksh", "python", "python3", "node", "ruby", "perl", "php", "deno",
];

/// Flags after which an interpreter runs no script (`sh -c '…'`, `python3 -m module`).
const INLINE: [&str; 5] = ["-c", "-m", "-e", "--eval", "-"];

/// An error for each command hook whose script does not exist in `workspace`.
pub(super) fn missing(hooks: &[std::sync::Arc<HookDef>], workspace: &Path) -> Vec<Problem> {
    hooks
        .iter()
        .filter_map(|hook| {
            let Handler::Command { command, .. } = &hook.handler else {
                return None;
            };
            let script = script_of(command)?;
            let path = workspace.join(&script);
            if path.exists() {
                return None;
            }
            Some(
                Problem::error(format!(
                    "the script {script} does not exist in the workspace {} (where commands \
                     run): the hook would fail at every run",
                    workspace.display()
                ))
                .in_file(&hook.file)
                .at_line(hook.line)
                .in_field("command"),
            )
        })
        .collect()
}

/// The script the first simple command of `command` runs, when that can be told from its text.
fn script_of(command: &str) -> Option<String> {
    let first = command
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#'))?;
    let first = first.split(['|', ';', '&', '(', ')', '<', '>']).next()?;
    let mut words = first
        .split_whitespace()
        .map(|word| word.trim_matches(['\'', '"']))
        .skip_while(|word| word.contains('=') || matches!(*word, "exec" | "env" | "command"));
    let program = words.next()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    let script = if INTERPRETERS.contains(&name) {
        let mut rest = words.skip_while(|word| word.starts_with('-') && !INLINE.contains(word));
        let script = rest.next()?;
        if INLINE.contains(&script) {
            return None;
        }
        script
    } else if program.contains('/') {
        program
    } else {
        return None; // a program from PATH
    };
    let expanded = script.contains(['$', '~', '*', '?', '[', '`', '\\']);
    (!expanded && !script.is_empty()).then(|| script.to_string())
}

#[cfg(test)]
mod tests {
    use super::script_of;

    #[test]
    fn the_script_is_read_where_the_shell_would_find_it() {
        for (command, script) in [
            ("sh .hookwire/x.sh", Some(".hookwire/x.sh")),
            ("./x.sh --flag", Some("./x.sh")),
            ("python3 -u hooks/x.py arg", Some("hooks/x.py")),
            ("FOO=1 bash 'guard.sh' | jq .", Some("guard.sh")),
            ("/usr/bin/env", Some("/usr/bin/env")),
            ("\n# a comment\nnode x.js\n", Some("x.js")),
            ("sh -c 'exit 0'", None),
            ("python3 -m http.server", None),
            ("echo hi", None),
            ("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/x.sh", None),
            ("sh ~/x.sh", None),
        ] {
            assert_eq!(script_of(command).as_deref(), script, "{command}");
        }
    }
}
