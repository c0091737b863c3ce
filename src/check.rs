//! `hookwire check`: everything `serve` would load, with every problem reported as
//! `severity: file: field: reason`. A workspace hook file that `serve` would not load because it
//! is not trusted is an error (its hooks would not run); a non-loopback address without an
//! `auth_token` is a warning.

use std::net::ToSocketAddrs;

use crate::config::{Config, MessageStyleSetting, Provider};
use crate::hooks::external::{hook_files, load_hook_set};
use crate::skills::scan_skills;
use crate::trust::TrustPolicy;
pub use crate::types::{Labelled, Problem, Severity};

/// Every problem found, errors and warnings; empty when all is well.
pub fn problems(config: &Config) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Err(error) = std::fs::metadata(&config.workspace) {
        problems.push(
            Problem::error(error.to_string())
                .in_file(&config.workspace)
                .in_field("workspace"),
        );
    }
    if !config.skills_dir.is_dir() {
        problems.push(
            Problem::warning("skills dir does not exist; no skills will load")
                .in_file(&config.skills_dir),
        );
    }
    if config.auth_token.is_none() && !is_loopback(&config.addr) {
        problems.push(
            Problem::warning(
                "not a loopback address and no auth_token: anyone who can reach it can chat, \
                 read the workspace and spend the model's budget (set HOOKWIRE_AUTH_TOKEN)",
            )
            .in_field("addr"),
        );
    }
    if let Some(warning) = config.secret_warning() {
        problems.push(Problem::warning(warning).in_field("secret"));
    }
    problems.extend(hook_file_problems(config));
    problems.extend(mcp_problems(config));
    let skills = scan_skills(&config.skills_dir);
    problems.extend(skills.problems());
    if let Some(defaults) = &config.default_skills {
        for name in defaults {
            if skills.get(name).is_none() {
                problems.push(
                    Problem::error(format!("unknown skill {name:?}")).in_field("default_skills"),
                );
            }
        }
    }
    problems
}

/// The problems of the hook files: every file parsed (parsing runs nothing, and a broken file is
/// worth knowing about before it is trusted), then each workspace file `serve` would not load.
fn hook_file_problems(config: &Config) -> Vec<Problem> {
    // The workspace's real path is what trust is keyed by; a missing one is reported above.
    let workspace = config
        .workspace
        .canonicalize()
        .unwrap_or_else(|_| config.workspace.clone());
    let files = hook_files(config.hooks_file.as_deref(), &workspace);
    let (parsed, mut problems) = load_hook_set(&files, &TrustPolicy::all(&workspace));
    // What the files have that hookwire ignores (dialect settings, matchers where none apply).
    problems.extend(parsed.warnings);
    let (set, _) = load_hook_set(&files, &trust_policy(config, &workspace));
    for untrusted in set.untrusted {
        problems.push(Problem::error(untrusted.why()).in_file(untrusted.file));
    }
    problems
}

/// The problems of the MCP servers: the config file's and the workspace's `.mcp.json` (parsed
/// whether trusted or not, as hook files are), then `.mcp.json` if `serve` would not load it.
fn mcp_problems(config: &Config) -> Vec<Problem> {
    let workspace = config
        .workspace
        .canonicalize()
        .unwrap_or_else(|_| config.workspace.clone());
    let lookup = crate::process::server_variable;
    let mut problems = crate::mcp::configured(
        &config.mcp_servers,
        config.config_file.as_deref(),
        &workspace,
        &TrustPolicy::all(&workspace),
        &lookup,
    )
    .problems;
    let trusted = crate::mcp::configured(
        &config.mcp_servers,
        config.config_file.as_deref(),
        &workspace,
        &trust_policy(config, &workspace),
        &lookup,
    );
    if let Some(untrusted) = trusted.untrusted {
        problems.push(Problem::error(untrusted.why()).in_file(untrusted.file));
    }
    problems
}

fn trust_policy(config: &Config, workspace: &std::path::Path) -> TrustPolicy {
    TrustPolicy::new(
        workspace,
        config.trust_workspace_hooks,
        config.state_dir.as_deref(),
    )
    .with_config_file(config.config_file.as_deref())
}

/// `hookwire check --probe`: starts each MCP server `serve` would start (the config file's,
/// and the workspace's `.mcp.json` when trusted), lists its tools and stops it. The report, and
/// whether every enabled server answered.
pub async fn probe(config: &Config) -> (String, bool) {
    let workspace = config
        .workspace
        .canonicalize()
        .unwrap_or_else(|_| config.workspace.clone());
    let configured = crate::mcp::configured(
        &config.mcp_servers,
        config.config_file.as_deref(),
        &workspace,
        &trust_policy(config, &workspace),
        &crate::process::server_variable,
    );
    if configured.servers.is_empty() {
        return ("mcp: no MCP server to probe\n".into(), true);
    }
    let mut text = String::new();
    let mut passed = true;
    for server in &configured.servers {
        let head = format!(
            "mcp: {} ({}, {})",
            server.name,
            crate::trust::printable(&server.describe()),
            server.origin.as_str()
        );
        if !server.enabled {
            text.push_str(&format!("{head}: disabled, not started\n"));
            continue;
        }
        match crate::mcp::probe(server, &workspace).await {
            Ok(tools) => {
                text.push_str(&format!("{head}: {} tool(s)\n", tools.len()));
                for (name, remote, description) in tools {
                    let approval = if server.auto_approves(&remote, &name) {
                        "runs without approval"
                    } else {
                        "needs approval"
                    };
                    text.push_str(&format!(
                        "  {}  ({approval}) {}\n",
                        crate::trust::printable(&name),
                        crate::trust::printable(&description)
                    ));
                }
            }
            Err(error) => {
                passed = false;
                text.push_str(&format!(
                    "{head}: failed: {}\n",
                    crate::trust::printable(&error)
                ));
            }
        }
    }
    (text, passed)
}

/// Whether every address `addr` names is a loopback one (as `serve` would bind it).
fn is_loopback(addr: &str) -> bool {
    match addr.to_socket_addrs() {
        Ok(addrs) => {
            let addrs: Vec<_> = addrs.collect();
            !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
        }
        // `serve` would fail to bind it: nothing is exposed.
        Err(_) => true,
    }
}

/// The model API in use and how requests are laid out for it (one line).
pub fn upstream_summary(config: &Config) -> String {
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
    let url = crate::llm::redact_url(&url);
    format!(
        "upstream: {} at {url}, model {}, {layout}\n",
        llm.provider.as_str(),
        config.agent.model
    )
}

/// The context window in use and where it comes from, and what compaction keeps (one line).
pub fn context_summary(config: &Config) -> String {
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

/// What `check` prints (each problem with its severity, then a verdict), and whether it passed.
pub fn report(problems: &[Problem]) -> (String, bool) {
    let mut text = String::new();
    for problem in problems {
        text.push_str(&format!("{}\n", problem.labelled()));
    }
    // Any error fails `check`; warnings alone do not.
    let passed = !crate::types::has_errors(problems);
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
    use crate::config::{CliSettings, FileConfig};
    use crate::types::has_errors;

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
        let (text, passed) = report(std::slice::from_ref(&warning));
        assert!(passed, "{text}");
        assert_eq!(
            text,
            "warning: x: error: only looks bad\nok: configuration, skills and hooks load without errors\n"
        );
        let (text, passed) = report(&[warning, Problem::error("broken").in_file("y")]);
        assert!(!passed, "{text}");
        assert_eq!(
            text,
            "warning: x: error: only looks bad\nerror: y: broken\n2 problem(s) found\n"
        );
        assert!(report(&[]).1);
    }

    #[test]
    fn a_missing_skills_dir_is_only_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let problems = problems(&config(dir.path(), &dir.path().join("no-skills")));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].severity, Severity::Warning);
        assert!(!has_errors(&problems));
        assert!(problems[0].labelled().to_string().starts_with("warning: "));
    }

    #[test]
    fn a_broken_hook_file_is_an_error_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".hookwire")).unwrap();
        std::fs::write(
            dir.path().join(".hookwire/hooks.yaml"),
            "stop:\n  - command: x\n    on_error: explode\n",
        )
        .unwrap();
        let problems = problems(&config(dir.path(), dir.path()));
        assert!(has_errors(&problems));
        let problem = problems.iter().find(|p| p.is_error()).unwrap();
        assert_eq!(problem.line, Some(2));
        assert_eq!(problem.field.as_deref(), Some("stop[0]"));
        let shown = problem.labelled().to_string();
        assert!(shown.starts_with("error: "), "{shown}");
        assert!(shown.contains("hooks.yaml:2: stop[0]: on_error"), "{shown}");
    }

    #[test]
    fn an_unknown_default_skill_is_an_error_of_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), dir.path());
        config.default_skills = Some(vec!["nope".into()]);
        let problems = problems(&config);
        assert_eq!(
            problems
                .iter()
                .map(|p| p.labelled().to_string())
                .collect::<Vec<_>>(),
            ["error: default_skills: unknown skill \"nope\""]
        );
        assert!(has_errors(&problems));
    }
}
