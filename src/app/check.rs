//! What `hookwire check` reports: everything `serve` would load, with every problem
//! (`severity: file: field: reason`). A workspace hook file that `serve` would not load because
//! it is not trusted is an error (its hooks would not run); a non-loopback address without an
//! `auth_token` is a warning (not in a container: its published port decides). And `--probe`: each MCP server started, its tools listed.

use std::net::ToSocketAddrs;

use crate::config::{AddressNotice, Config};
use crate::hooks::external::{hook_files, load_hook_set};
use crate::skills::scan_skills;
use crate::trust::TrustPolicy;
use crate::types::Problem;

mod scripts;

/// What `check` found: every problem, and what would be loaded.
#[derive(Debug, Clone)]
pub struct Report {
    pub problems: Vec<Problem>,
    pub loaded: Loaded,
}

/// The figures of what `serve` would load (for the line `check` prints before its verdict).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    pub skills: usize,
    /// The skills' prompt hooks.
    pub skill_hooks: usize,
    /// Hook files read (the server's and the trusted workspace files).
    pub hook_files: usize,
    pub hooks: usize,
    /// Configured in the config file and, when trusted, the workspace's `.mcp.json`.
    pub mcp_servers: usize,
}

impl std::fmt::Display for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "loaded: {} skill(s) ({} prompt hook(s)), {} hook file(s) with {} hook(s), {} MCP \
             server(s)",
            self.skills, self.skill_hooks, self.hook_files, self.hooks, self.mcp_servers
        )
    }
}

/// Every problem found, errors and warnings; empty when all is well.
pub fn problems(config: &Config) -> Vec<Problem> {
    report(config).problems
}

/// Every problem found, and what would be loaded.
pub fn report(config: &Config) -> Report {
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
    // In a container the note is the server's to log; it is not a problem of the settings.
    if let Some(AddressNotice::Warning(text)) =
        config.open_address_notice(is_loopback(&config.addr))
    {
        problems.push(Problem::warning(text).in_field("addr"));
    }
    if let Some(warning) = config.secret_warning() {
        problems.push(Problem::warning(warning).in_field("secret"));
    }
    let mut loaded = Loaded::default();
    problems.extend(hook_file_problems(config, &mut loaded));
    problems.extend(mcp_problems(config, &mut loaded));
    let skills = scan_skills(&config.skills_dir);
    problems.extend(skills.problems());
    loaded.skills = skills.skills.len();
    loaded.skill_hooks = skills.skills.values().map(|skill| skill.hooks.len()).sum();
    if let Some(defaults) = &config.default_skills {
        for name in defaults {
            if skills.get(name).is_none() {
                problems.push(
                    Problem::error(format!("unknown skill {name:?}")).in_field("default_skills"),
                );
            }
        }
    }
    Report { problems, loaded }
}

/// The problems of the hook files: every file parsed (parsing runs nothing, and a broken file is
/// worth knowing about before it is trusted), then each workspace file `serve` would not load.
fn hook_file_problems(config: &Config, loaded: &mut Loaded) -> Vec<Problem> {
    // The workspace's real path is what trust is keyed by; a missing one is reported above.
    let workspace = config
        .workspace
        .canonicalize()
        .unwrap_or_else(|_| config.workspace.clone());
    let files = hook_files(config.hooks_file.as_deref(), &workspace);
    let (parsed, mut problems) = load_hook_set(&files, &TrustPolicy::all(&workspace));
    // What the files have that hookwire ignores (dialect settings, matchers where none apply).
    problems.extend(parsed.warnings.iter().cloned());
    let (set, _) = load_hook_set(&files, &trust_policy(config, &workspace));
    (loaded.hook_files, loaded.hooks) = (set.files.len(), set.len());
    problems.extend(scripts::missing(&parsed.all_hooks(), &workspace));
    // Their errors are reported above, from the first parse.
    for untrusted in set.untrusted {
        problems.push(Problem::error(untrusted.reason()).in_file(untrusted.file));
    }
    problems
}

/// The problems of the MCP servers: the config file's and the workspace's `.mcp.json` (parsed
/// whether trusted or not, as hook files are), then `.mcp.json` if `serve` would not load it.
fn mcp_problems(config: &Config, loaded: &mut Loaded) -> Vec<Problem> {
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
    loaded.mcp_servers = trusted.servers.len();
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
    .in_container(config.container)
}

/// One MCP server as `--probe` found it.
#[derive(Debug, Clone)]
pub struct ProbedServer {
    pub name: String,
    /// What it runs or calls (`stdio: npx …`, `http: https://…`), as the settings say.
    pub describe: String,
    /// Where it is configured: the config file or the workspace's `.mcp.json`.
    pub origin: &'static str,
    pub outcome: ProbeOutcome,
}

/// What starting one MCP server gave.
#[derive(Debug, Clone)]
pub enum ProbeOutcome {
    /// `enabled: false`: not started.
    Disabled,
    Tools(Vec<ProbedTool>),
    Failed(String),
}

/// One tool a probed server lists.
#[derive(Debug, Clone)]
pub struct ProbedTool {
    /// The name the model sees (`mcp__<server>__<tool>`).
    pub name: String,
    pub description: String,
    /// Whether its calls run without approval (`auto_approve`).
    pub auto_approved: bool,
}

/// Starts each MCP server `serve` would start (the config file's, and the workspace's
/// `.mcp.json` when trusted), lists its tools and stops it.
pub async fn probe(config: &Config) -> Vec<ProbedServer> {
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
    let mut probed = Vec::new();
    for server in &configured.servers {
        let outcome = if !server.enabled {
            ProbeOutcome::Disabled
        } else {
            match crate::mcp::probe(server, &workspace).await {
                Ok(tools) => ProbeOutcome::Tools(
                    tools
                        .into_iter()
                        .map(|(name, remote, description)| ProbedTool {
                            auto_approved: server.auto_approves(&remote, &name),
                            name,
                            description,
                        })
                        .collect(),
                ),
                Err(error) => ProbeOutcome::Failed(error.to_string()),
            }
        };
        probed.push(ProbedServer {
            name: server.name.clone(),
            describe: server.describe(),
            origin: server.origin.as_str(),
            outcome,
        });
    }
    probed
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CliSettings, FileConfig};
    use crate::types::has_errors;
    use crate::types::Severity;

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
