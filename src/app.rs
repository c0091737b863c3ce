//! The wiring of the app: from a [`Config`] to the agent a server runs — the model (the
//! OpenAI-compatible or the Anthropic client, or the demo model), the workspace and its built-in tools, the hook
//! files, the skills, the session hooks — and the reloaders that keep the hook files and the
//! skills current. The server serves what this builds; it does not build it.

use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::{AgentClient, AgentClientBuilder};
use crate::config::{Config, Provider};
use crate::hooks::external::{
    hook_files, load_hook_set, AsyncHooks, HookFiles, RegisterHook, RegisteredHookRules,
    RegisteredHooks, Runner, TenantHooks,
};
use crate::hooks::record::Recorder;
use crate::hooks::signing::SigningKey;
use crate::llm::demo::DemoModel;
use crate::llm::ChatModel;
use crate::llm::{AnthropicClient, AnthropicConfig, OpenAiClient, OpenAiConfig};
use crate::mcp::{McpServerStatus, McpServers};
use crate::quota::{Quotas, RedisStore, TenantLimits};
use crate::reload::Reloader;
use crate::skills::{SkillHookFactory, SkillRegistry};
use crate::tools::{builtin_tools, ToolLimits, Workspace};
use crate::trust::TrustPolicy;
pub use crate::types::{has_errors, Labelled, Problem, Severity};

pub mod check;
pub mod hooks_replay;
pub mod hooks_test;
pub mod review;

/// Why the server could not start; the message is for the person starting it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    #[error("cannot create the model client: {0}")]
    ModelClient(#[source] crate::llm::LlmError),
    #[error("workspace {}: {source}", path.display())]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Every problem of the hook files (a server never starts with a broken one).
    #[error("invalid hook file(s):\n  {}", lines(.0))]
    HookFiles(Vec<Problem>),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot read the bound address: {0}")]
    LocalAddr(std::io::Error),
    /// `auth.jwt` is set, but the client that fetches the provider's keys cannot be built.
    #[error("auth.jwt: cannot build the HTTP client for the identity provider's keys: {0}")]
    SignInClient(#[source] reqwest::Error),
    /// `hooks.record.dir` cannot be made.
    #[error("hooks.record: cannot record into {}: {source}", dir.display())]
    HookRecord {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// `shared_state` is not a URL the Redis client can use (it is not quoted: it may hold a
    /// password).
    #[error("shared_state: {0}")]
    SharedState(#[source] crate::quota::StoreError),
}

/// One problem a line, indented under the heading.
fn lines(problems: &[Problem]) -> String {
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    lines.join("\n  ")
}

/// The skills and the hook files an agent was wired with, as they are reloaded. Clones share
/// them; the skills stop reloading when the last clone is gone, the hook files when the agent
/// (which runs them) is gone too.
#[derive(Clone)]
pub struct Sources {
    pub(crate) skills: Arc<SkillRegistry>,
    /// `None` for an agent built without the hook files (the session unit tests).
    pub(crate) hook_files: Option<Arc<HookFiles>>,
    /// Reloads `skills`; `None` when the skills dir cannot be watched.
    _skill_reloader: Option<Arc<Reloader>>,
    /// The queue of the hook files' `async: true` hooks.
    pub(crate) async_hooks: Option<Arc<AsyncHooks>>,
    /// The MCP servers whose tools the agent offers (`None` for an agent built without them).
    pub(crate) mcp: Option<Arc<McpServers>>,
}

impl Sources {
    /// Sources of skills alone, which do not reload.
    #[cfg(test)]
    pub(crate) fn skills_only(skills: Arc<SkillRegistry>) -> Self {
        Self {
            skills,
            hook_files: None,
            _skill_reloader: None,
            async_hooks: None,
            mcp: None,
        }
    }

    /// Starts the MCP servers in the background (once): the server calls it when it starts
    /// serving, and does not wait for them.
    pub fn start_mcp_servers(&self) {
        if let Some(mcp) = &self.mcp {
            mcp.start();
        }
    }

    /// Stops the MCP servers (a stdio server's process group is killed once it had a moment to
    /// exit). The server calls it when it stops.
    pub async fn stop_mcp_servers(&self) {
        if let Some(mcp) = &self.mcp {
            mcp.shutdown().await;
        }
    }

    /// Each MCP server: its state and its tools.
    pub fn mcp_servers(&self) -> Vec<McpServerStatus> {
        self.mcp.as_ref().map_or_else(Vec::new, |mcp| mcp.status())
    }

    /// The workspace's `.mcp.json`, when it was left out because it is not trusted.
    pub fn untrusted_mcp_files(&self) -> Vec<String> {
        self.mcp
            .as_ref()
            .map_or_else(Vec::new, |mcp| mcp.untrusted_files())
    }

    /// Takes no more `async` hook runs; those running get `grace`, then are ended (their
    /// processes killed). The server calls it when it stops.
    pub async fn stop_async_hooks(&self, grace: std::time::Duration) {
        if let Some(queue) = &self.async_hooks {
            queue.shutdown(grace).await;
        }
    }

    /// How many reloads replaced the skills since the start (0 for a server nobody edited).
    pub fn skills_generation(&self) -> u64 {
        self.skills.generation()
    }

    /// How many reloads replaced the hook files' hooks since the start.
    pub fn hook_files_generation(&self) -> u64 {
        self.hook_files
            .as_ref()
            .map_or(0, |files| files.generation())
    }

    /// Why the last change of the hook files was refused; empty when it was loaded.
    pub fn hook_file_problems(&self) -> Vec<Problem> {
        self.hook_files
            .as_ref()
            .map_or_else(Vec::new, |files| files.problems())
    }

    /// The hooks the hook files hold now.
    pub fn hook_count(&self) -> usize {
        self.hook_files
            .as_ref()
            .map_or(0, |files| files.current().len())
    }

    /// The hook files (`None` for an agent built without them).
    pub(crate) fn hook_files(&self) -> Option<&Arc<HookFiles>> {
        self.hook_files.as_ref()
    }

    /// The hook files' current set (`None` for an agent built without them).
    pub(crate) fn hook_set(&self) -> Option<Arc<crate::hooks::external::HookSet>> {
        self.hook_files.as_ref().map(|files| files.current())
    }

    /// The workspace hook files left out because they are not trusted, workspace-relative
    /// (enough to find the file, and no more of the server's disk).
    pub fn untrusted_hook_files(&self) -> Vec<String> {
        match &self.hook_files {
            Some(files) => files
                .current()
                .untrusted
                .iter()
                .map(|u| u.shown.clone())
                .collect(),
            None => Vec::new(),
        }
    }
}

/// An agent builder wired from a config as `serve` wires it, and the sources behind its hooks.
pub struct AgentParts {
    /// The model, the built-in tools, the agent settings and every hook source of the config;
    /// add hooks (or tools) to it before `build()`.
    pub builder: AgentClientBuilder,
    pub sources: Sources,
}

/// Loads the skills and the hook files of `config`, starts reloading them, and wires the agent
/// builder around them. Fails on a model client that cannot be made, a workspace that cannot be
/// opened, or any problem in a hook file.
pub fn agent_parts(config: &Config) -> Result<AgentParts, StartError> {
    let skills = Arc::new(SkillRegistry::load(&config.skills_dir));
    let model = model_client(config)?;
    let workspace = Workspace::new(&config.workspace).map_err(|source| StartError::Workspace {
        path: config.workspace.clone(),
        source,
    })?;
    let mut agent_config = config.agent.clone();
    agent_config.workspace = workspace.root().to_path_buf();
    agent_config.hook_timeout = config.limits.hook_chain_timeout;
    let trust = TrustPolicy::new(
        workspace.root(),
        config.trust_workspace_hooks,
        config.state_dir.as_deref(),
    )
    .with_config_file(config.config_file.as_deref())
    .in_container(config.container);
    // Started with the server (`Sources::start_mcp_servers`), not here: `hookwire hooks test`
    // wires the agent too, and runs no tool.
    let telemetry = telemetry(config);
    let mcp = McpServers::new(
        crate::mcp::configured(
            &config.mcp_servers,
            config.config_file.as_deref(),
            workspace.root(),
            &trust,
            &crate::process::server_variable,
        ),
        workspace.root(),
    );
    let mcp = Arc::new(mcp.with_telemetry(telemetry.clone()));
    let runner = Arc::new(hook_runner(config, &model, &agent_config, &workspace));
    let tenant_trust = trust.clone();
    let recorder = recorder(config)?;
    let (hook_files, async_hooks) =
        hook_files_of(config, workspace.root(), trust, &runner, &recorder)?;
    let tenant_hooks = tenant_hooks_of(config, &tenant_trust, &runner, &async_hooks, &recorder)?;
    let signing_key = config.agent.secret.as_deref().map(SigningKey::new);
    let session_rules = RegisteredHookRules {
        enabled: config.session_hooks.enabled,
        allow_command: config.allow_session_command_hooks,
        max_per_chat: config.session_hooks.max_per_chat,
    };
    let session_hooks = RegisteredHooks::new(runner, signing_key.clone(), session_rules);
    let tenant_skills = config
        .tenants
        .iter()
        .filter_map(|(name, tenant)| Some((name.clone(), tenant.skills.clone()?)))
        .collect();
    let skill_hooks = SkillHookFactory::new(
        skills.clone(),
        config.default_skills.clone(),
        signing_key.clone(),
    )
    .with_tenants(tenant_skills);
    let mut builder = AgentClient::builder()
        .quotas(Arc::new(quotas(config)?))
        .telemetry(telemetry)
        .model(model)
        .tools(builtin_tools(Arc::new(workspace), ToolLimits::default()))
        .tool_source(mcp.clone())
        .config(agent_config)
        // The connection events; chats get the hook files as they were when they started.
        .connection_hook(hook_files.clone())
        .hook_factory(hook_files.clone())
        .hook_factory(Arc::new(tenant_hooks))
        .hook_factory(Arc::new(skill_hooks))
        .hook_factory(Arc::new(session_hooks));
    for (name, tenant) in &config.tenants {
        builder = builder.tenant(name.clone(), tenant.tools.clone());
    }
    // `session_hooks.enabled: false` takes the tool away, so the model cannot even try.
    let builder = if config.session_hooks.enabled {
        builder.tool(Arc::new(RegisterHook::new(
            signing_key,
            config.allow_session_command_hooks,
            config.session_hooks.ttl,
        )))
    } else {
        builder
    };
    Ok(AgentParts {
        builder,
        sources: Sources {
            _skill_reloader: watch_skills(&skills),
            skills,
            hook_files: Some(hook_files),
            async_hooks: Some(async_hooks),
            mcp: Some(mcp),
        },
    })
}

/// The quotas of `quotas:` and `tenants:`, counted in `shared_state` when it is set.
fn quotas(config: &Config) -> Result<Quotas, StartError> {
    let settings = &config.quotas;
    let mut quotas = Quotas::new(settings.per_user, settings.per_tenant);
    if let Some(url) = &settings.shared_state {
        let store = RedisStore::new(url).map_err(StartError::SharedState)?;
        quotas = quotas.shared(store, settings.fail_closed);
    }
    for (name, tenant) in &config.tenants {
        let limits = TenantLimits {
            per_user: tenant.per_user,
            per_tenant: tenant.per_tenant,
        };
        quotas = quotas.tenant(name.clone(), limits);
    }
    Ok(quotas)
}

/// The model client of `llm`: the demo model when no upstream is configured.
fn model_client(config: &Config) -> Result<Arc<dyn ChatModel>, StartError> {
    let llm = &config.llm;
    Ok(match (llm.effective_base_url(), llm.provider) {
        (None, _) => Arc::new(DemoModel::new(&config.agent.marker)),
        (Some(base_url), Provider::Openai) => Arc::new(
            OpenAiClient::new(OpenAiConfig {
                base_url,
                api_key: llm.api_key.clone(),
                connect_timeout: llm.connect_timeout,
                idle_timeout: llm.idle_timeout,
                message_style: llm.message_style(),
                ..OpenAiConfig::default()
            })
            .map_err(StartError::ModelClient)?,
        ),
        (Some(base_url), Provider::Anthropic) => Arc::new(
            AnthropicClient::new(AnthropicConfig {
                base_url,
                api_key: llm.api_key.clone(),
                connect_timeout: llm.connect_timeout,
                idle_timeout: llm.idle_timeout,
                max_tokens: llm.max_tokens,
                ..AnthropicConfig::default()
            })
            .map_err(StartError::ModelClient)?,
        ),
    })
}

/// The runner of the hook files' and the session hooks' handlers: their model, the `agent`
/// hooks' read-only sub-agent, and the named agents `agent` hooks may ask (the OpenHarness
/// format), each a bounded sub-run of its own.
fn hook_runner(
    config: &Config,
    model: &Arc<dyn ChatModel>,
    agent_config: &crate::agent::AgentConfig,
    workspace: &Workspace,
) -> Runner {
    let read_only_agent = |agent_config| {
        Arc::new(
            AgentClient::builder()
                .model(model.clone())
                .tools(builtin_tools(
                    Arc::new(workspace.clone()),
                    ToolLimits::default(),
                ))
                .config(agent_config)
                .build(),
        )
    };
    let mut runner = Runner::new(
        model.clone(),
        agent_config.model.clone(),
        read_only_agent(agent_config.for_hook_agent(4)),
        workspace.root().to_path_buf(),
    )
    .with_chain_budget(config.limits.hook_chain_timeout)
    .with_max_hook_model_calls(config.agent.max_hook_model_calls)
    .with_http_hook_urls(config.http_hook_urls.clone());
    for (name, settings) in &config.hook_agents {
        let mut agent = agent_config.for_hook_agent(settings.max_steps.unwrap_or(4));
        agent.system_prompt = settings
            .system_prompt
            .clone()
            .unwrap_or(agent.system_prompt);
        agent.model = settings.model.clone().unwrap_or(agent.model);
        runner = runner.with_agent(name.clone(), read_only_agent(agent));
    }
    runner
}

/// The hook files of `config` (refused whole on any problem), reloaded as they change, and the
/// queue of their `async: true` hooks.
fn hook_files_of(
    config: &Config,
    workspace: &std::path::Path,
    trust: TrustPolicy,
    runner: &Arc<Runner>,
    recorder: &Option<Arc<Recorder>>,
) -> Result<(Arc<HookFiles>, Arc<AsyncHooks>), StartError> {
    let files = hook_files(config.hooks_file.as_deref(), workspace);
    let (set, problems) = load_hook_set(&files, &trust);
    if !problems.is_empty() {
        return Err(StartError::HookFiles(problems));
    }
    for untrusted in &set.untrusted {
        tracing::warn!("{untrusted}");
    }
    let async_hooks = Arc::new(AsyncHooks::serving(
        runner.clone(),
        config.limits.async_hook_queue,
        config.limits.async_hook_queue_per_connection,
    ));
    let hook_files = HookFiles::new(set, runner.clone())
        .with_queue(async_hooks.clone())
        .with_recorder(recorder.clone());
    let hook_files = Arc::new(hook_files);
    if let Err(error) = hook_files.watch(config.hooks_file.clone(), trust) {
        tracing::warn!("{error}; hook files will not reload without a restart");
    }
    Ok((hook_files, async_hooks))
}

/// The recording of hook traffic (`hooks.record`), when configured: its folder is made and its
/// writer started.
fn recorder(config: &Config) -> Result<Option<Arc<Recorder>>, StartError> {
    let Some(settings) = &config.hook_record else {
        return Ok(None);
    };
    let dir = settings.dir.clone();
    // The recording holds other people's chats: never where the model's tools can read it.
    let workspace = crate::trust::resolved(&config.workspace);
    let resolved = crate::trust::resolved(&dir);
    if let (Ok(workspace), Ok(resolved)) = (workspace, resolved) {
        if resolved.starts_with(&workspace) {
            return Err(StartError::HookRecord {
                dir,
                source: std::io::Error::other(
                    "it is inside the workspace, where the model's tools could read other \
                     people's chats; choose a folder outside it",
                ),
            });
        }
    }
    let recorder = Recorder::start(settings.clone())
        .map_err(|source| StartError::HookRecord { dir, source })?;
    tracing::info!(dir = %settings.dir.display(), sample = settings.sample, "hook traffic is recorded (hooks.record) for hookwire hooks replay");
    Ok(Some(Arc::new(recorder)))
}

/// Each tenant's hook files (`tenants.<name>.hooks`), under the server's trust rules: a file
/// inside the workspace is a workspace file, which runs only once trusted. Read at start (a
/// change needs a restart); any problem refuses the start, as in the server's own files.
fn tenant_hooks_of(
    config: &Config,
    trust: &TrustPolicy,
    runner: &Arc<Runner>,
    async_hooks: &Arc<AsyncHooks>,
    recorder: &Option<Arc<Recorder>>,
) -> Result<TenantHooks, StartError> {
    let workspace = trust.workspace();
    let mut tenants = std::collections::BTreeMap::new();
    for (name, tenant) in &config.tenants {
        if tenant.hooks.is_empty() {
            continue;
        }
        let files: Vec<(PathBuf, &'static str)> = tenant
            .hooks
            .iter()
            .map(|path| {
                // Links resolved: a link into the workspace is a workspace file.
                let absolute = crate::trust::resolved(path).unwrap_or_else(|_| path.clone());
                let level = if absolute.starts_with(workspace) {
                    "workspace"
                } else {
                    "server"
                };
                (absolute, level)
            })
            .collect();
        let (set, problems) = load_hook_set(&files, trust);
        if !problems.is_empty() {
            return Err(StartError::HookFiles(problems));
        }
        for untrusted in &set.untrusted {
            tracing::warn!(tenant = %name, "{untrusted}");
        }
        let files = HookFiles::new(set, runner.clone())
            .with_queue(async_hooks.clone())
            .with_recorder(recorder.clone());
        tenants.insert(name.clone(), Arc::new(files));
    }
    Ok(TenantHooks::new(tenants))
}

/// The trace exporter the config asks for; off (with a warning) when it cannot be built: traces
/// never keep the server from starting.
fn telemetry(config: &Config) -> crate::telemetry::Telemetry {
    match crate::telemetry::Telemetry::start(&config.telemetry) {
        Ok(telemetry) => {
            if telemetry.is_on() {
                tracing::info!("exporting traces over OTLP/HTTP");
            }
            telemetry
        }
        Err(error) => {
            tracing::warn!(%error, "telemetry is off");
            crate::telemetry::Telemetry::off()
        }
    }
}

/// Starts reloading the skills and logs the problems they have now.
fn watch_skills(skills: &Arc<SkillRegistry>) -> Option<Arc<Reloader>> {
    let reloader = match crate::skills::watch::watch(skills.clone()) {
        Ok(reloader) => Some(Arc::new(reloader)),
        Err(error) => {
            tracing::warn!("{error}; skills will not reload without a restart");
            None
        }
    };
    for problem in skills.current().problems() {
        tracing::warn!("{}", problem.labelled());
    }
    reloader
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_file_problems_are_listed_one_a_line() {
        let error = StartError::HookFiles(vec![
            Problem::error("timeout -1")
                .in_file("hooks.yaml")
                .at_line(2)
                .in_field("stop[0]"),
            Problem::error("cannot read: gone").in_file("extra.yaml"),
        ]);
        assert_eq!(
            error.to_string(),
            "invalid hook file(s):\n  hooks.yaml:2: stop[0]: timeout -1\n  extra.yaml: cannot read: gone"
        );
    }
}
