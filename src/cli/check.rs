//! `hookwire check [--probe]`: the upstream and context lines, every problem the library finds
//! with its severity, a verdict; with `--probe`, each MCP server's tools. Severity decides the
//! exit code.

use std::process::ExitCode;

use hookwire::app::check::{Loaded, ProbeOutcome, ProbedServer};
use hookwire::app::review::printable;
use hookwire::app::{has_errors, Problem};
use hookwire::config::{Config, MessageStyleSetting, Provider};

use super::CheckArgs;

/// Loads everything `serve` would load and prints every problem; with `--probe`, starts each
/// MCP server too and lists its tools.
pub(crate) fn run(config: &Config, args: CheckArgs) -> ExitCode {
    let found = hookwire::app::check::report(config);
    let (text, mut passed) = report(&found.problems, &found.loaded);
    print!(
        "{}{}{text}",
        upstream_summary(config),
        context_summary(config)
    );
    if args.probe {
        let Some(runtime) = super::runtime(true) else {
            return ExitCode::FAILURE;
        };
        let (probed, answered) =
            probe_report(&runtime.block_on(hookwire::app::check::probe(config)));
        print!("{probed}");
        passed &= answered;
    }
    if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `check` when the settings cannot be loaded (a config file that is not valid): that is the
/// one problem found.
pub(crate) fn unloadable(error: &hookwire::config::ConfigError) -> ExitCode {
    print!("error: {error}\n1 problem(s) found\n");
    ExitCode::FAILURE
}

/// What `--probe` prints, and whether every enabled server answered.
fn probe_report(servers: &[ProbedServer]) -> (String, bool) {
    if servers.is_empty() {
        return ("mcp: no MCP server to probe\n".into(), true);
    }
    let mut text = String::new();
    let mut passed = true;
    for server in servers {
        let head = format!(
            "mcp: {} ({}, {})",
            server.name,
            printable(&server.describe),
            server.origin
        );
        match &server.outcome {
            ProbeOutcome::Disabled => text.push_str(&format!("{head}: disabled, not started\n")),
            ProbeOutcome::Tools(tools) => {
                text.push_str(&format!("{head}: {} tool(s)\n", tools.len()));
                for tool in tools {
                    let approval = if tool.auto_approved {
                        "runs without approval"
                    } else {
                        "needs approval"
                    };
                    text.push_str(&format!(
                        "  {}  ({approval}) {}\n",
                        printable(&tool.name),
                        printable(&tool.description)
                    ));
                }
            }
            ProbeOutcome::Failed(error) => {
                passed = false;
                text.push_str(&format!("{head}: failed: {}\n", printable(error)));
            }
        }
    }
    (text, passed)
}

/// The model API in use and how requests are laid out for it (one line).
fn upstream_summary(config: &Config) -> String {
    let llm = &config.llm;
    let Some(url) = llm.effective_base_url() else {
        return "upstream: the built-in demo model (no base URL, no API key)\n".into();
    };
    let layout = match llm.provider {
        Provider::Anthropic => format!(
            "Anthropic Messages API, system texts in `system`, max_tokens {}",
            llm.max_tokens
        ),
        Provider::Openai => {
            let style = llm.message_style();
            let why = match llm.message_style {
                MessageStyleSetting::Auto => " (auto)",
                _ => "",
            };
            format!("message style {}{why}", style.describe())
        }
    };
    // The operator's terminal, but a key in a URL is a key: it is never printed.
    let url = hookwire::llm::redact_url(&url);
    format!(
        "upstream: {} at {url}, model {}, {layout}\n",
        llm.provider.as_str(),
        config.agent.model
    )
}

/// The context window in use and where it comes from, and what compaction keeps (one line).
fn context_summary(config: &Config) -> String {
    let context = &config.agent.context;
    let model = &config.agent.model;
    let source = match context.window_tokens {
        Some(_) => "context.window_tokens".to_string(),
        None => format!("built-in table for {model}"),
    };
    let window = context.window_for(model);
    format!(
        "context: window {window} tokens ({source}), compaction threshold {} tokens, \
         the last {} message group(s) kept by auto compaction, \
         micro threshold {} tokens (context.micro_threshold {}), \
         tool results of the last {} agent round(s) kept in full\n",
        context.threshold_for(model),
        context.keep_recent_groups,
        context.micro_threshold_for(model),
        context.micro_threshold,
        context.micro_keep_rounds
    )
}

/// What `check` prints (each problem with its severity, what it loaded, then a verdict), and
/// whether it passed.
fn report(problems: &[Problem], loaded: &Loaded) -> (String, bool) {
    let mut text = String::new();
    for problem in problems {
        text.push_str(&format!("{}\n", problem.labelled()));
    }
    text.push_str(&format!("{loaded}\n"));
    // Any error fails `check`; warnings alone do not.
    let passed = !has_errors(problems);
    if passed {
        text.push_str("ok: configuration, skills and hooks load without errors\n");
    } else {
        text.push_str(&format!("{} problem(s) found\n", problems.len()));
    }
    (text, passed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookwire::config::{CliSettings, FileConfig};

    fn config(workspace: &std::path::Path, skills: &std::path::Path) -> Config {
        let cli = CliSettings {
            workspace: Some(workspace.to_path_buf()),
            skills_dir: Some(skills.to_path_buf()),
            ..Default::default()
        };
        match Config::resolve(&cli, FileConfig::default(), |_| None) {
            Ok(config) => config,
            Err(error) => panic!("{error}"),
        }
    }

    #[test]
    fn the_upstream_line_says_what_is_sent_where() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), dir.path());
        assert_eq!(
            upstream_summary(&config),
            "upstream: the built-in demo model (no base URL, no API key)\n"
        );
        config.llm.base_url = Some("http://127.0.0.1:11434/v1".into());
        config.llm.message_style = MessageStyleSetting::Auto;
        config.llm.system_role = false;
        assert_eq!(
            upstream_summary(&config),
            "upstream: openai at http://127.0.0.1:11434/v1, model gpt-4o-mini, \
             message style strict, no system role (auto)\n"
        );
        config.llm.provider = Provider::Anthropic;
        config.llm.base_url = None;
        config.llm.api_key = Some("k".into());
        assert_eq!(
            upstream_summary(&config),
            "upstream: anthropic at https://api.anthropic.com, model gpt-4o-mini, \
             Anthropic Messages API, system texts in `system`, max_tokens 4096\n"
        );
    }

    #[test]
    fn the_severity_decides_whether_check_passes() {
        let warning = Problem::warning("error: only looks bad").in_file("x");
        let loaded = Loaded::default();
        let (text, passed) = report(std::slice::from_ref(&warning), &loaded);
        assert!(passed, "{text}");
        assert_eq!(
            text,
            format!(
                "warning: x: error: only looks bad\n{loaded}\n\
                 ok: configuration, skills and hooks load without errors\n"
            )
        );
        let (text, passed) = report(&[warning, Problem::error("broken").in_file("y")], &loaded);
        assert!(!passed, "{text}");
        assert_eq!(
            text,
            format!(
                "warning: x: error: only looks bad\nerror: y: broken\n{loaded}\n2 problem(s) found\n"
            )
        );
        assert!(report(&[], &loaded).1);
    }
}
