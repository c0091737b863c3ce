//! The HTTP side: the axum router, the WebSocket upgrade, the small JSON endpoints, static files,
//! metrics and graceful shutdown. The session logic lives in [`session`], the wire types in
//! [`frames`].

mod access;
mod fit;
pub mod frames;
mod listen;
pub mod metrics;
pub mod session;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower_http::services::ServeDir;

use crate::agent::{AgentClient, AgentClientBuilder};
use crate::config::Config;
use crate::hooks::external::register_hook::RegisterHook;
use crate::hooks::external::runner::Runner;
use crate::hooks::external::session::{SessionHookFactory, SessionHookRules};
use crate::hooks::external::{hook_files, load_hook_set, HookFiles};
use crate::hooks::signing::SigningKey;
use crate::llm::demo::DemoModel;
use crate::llm::openai::{OpenAiClient, OpenAiConfig};
use crate::llm::ChatModel;
use crate::reload::Reloader;
use crate::skills::{SkillHookFactory, SkillRegistry};
use crate::tools::workspace::Workspace;
use crate::tools::{builtin_tools, ToolLimits};
use crate::trust::TrustPolicy;
use crate::types::Problem;

/// WebSocket read buffer: tungstenite's default of 128 KiB per socket would cost ~138 KB per idle
/// connection; 4 KiB keeps an idle connection near 10 KB (measured by `cargo bench`). Larger
/// messages still arrive whole: the buffer is refilled as often as needed.
const READ_BUFFER_BYTES: usize = 4 * 1024;

/// What every request handler shares.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub agent: AgentClient,
    /// Whether the agent runs the built-in demo model.
    pub demo: bool,
    /// One permit per open WebSocket session.
    pub sessions: Arc<Semaphore>,
    /// Cancelled when the server shuts down.
    pub shutdown: CancellationToken,
    /// Knows when the last session is gone.
    pub tracker: TaskTracker,
    /// The skills, reloaded when the skills dir changes.
    pub skills: Arc<SkillRegistry>,
    /// The hook files the agent runs (for `/api/info`); `None` for an agent built without them.
    pub hook_files: Option<Arc<HookFiles>>,
}

/// Why the server could not start; the message is for the person starting it.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create the model client: {0}")]
    ModelClient(String),
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
}

/// One problem a line, indented under the heading.
fn lines(problems: &[Problem]) -> String {
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    lines.join("\n  ")
}

impl AppState {
    /// Builds the model, the tools and the agent from the config.
    pub fn from_config(config: Config) -> Result<Self, StartError> {
        let demo = config.llm.is_demo();
        let skills = Arc::new(SkillRegistry::load(&config.skills_dir));
        let parts = agent_parts(&config, skills.clone())?;
        let agent = parts.builder.build();
        Ok(Self::new(config, agent, demo, skills).with_hook_files(parts.hook_files))
    }

    /// State around an agent built elsewhere (library users, tests).
    pub fn new(config: Config, agent: AgentClient, demo: bool, skills: Arc<SkillRegistry>) -> Self {
        // Install the recorder before anything records, or those values are lost.
        if metrics::handle().is_none() {
            tracing::warn!("another metrics recorder is installed; /metrics will be unavailable");
        }
        let sessions = Arc::new(Semaphore::new(config.limits.max_connections));
        Self {
            skills,
            config: Arc::new(config),
            agent,
            demo,
            sessions,
            shutdown: CancellationToken::new(),
            tracker: TaskTracker::new(),
            hook_files: None,
        }
    }

    /// The hook files the agent was built with ([`AgentParts::hook_files`]).
    pub fn with_hook_files(mut self, hook_files: Arc<HookFiles>) -> Self {
        self.hook_files = Some(hook_files);
        self
    }
}

/// An [`AgentClient`] builder with the model, the built-in tools and the agent settings of
/// `config`; add hooks to it before `build()`.
pub fn agent_builder(
    config: &Config,
    skills: Arc<SkillRegistry>,
) -> Result<AgentClientBuilder, StartError> {
    agent_parts(config, skills).map(|parts| parts.builder)
}

/// An agent builder and the hook files it runs (to see their reloads).
pub struct AgentParts {
    pub builder: AgentClientBuilder,
    pub hook_files: Arc<HookFiles>,
}

/// Like [`agent_builder`], with a handle on the hook files.
pub fn agent_parts(config: &Config, skills: Arc<SkillRegistry>) -> Result<AgentParts, StartError> {
    let model: Arc<dyn ChatModel> = match config.llm.effective_base_url() {
        None => Arc::new(DemoModel::new(&config.agent.marker)),
        Some(base_url) => Arc::new(
            OpenAiClient::new(OpenAiConfig {
                base_url,
                api_key: config.llm.api_key.clone(),
                connect_timeout: config.llm.connect_timeout,
                idle_timeout: config.llm.idle_timeout,
                ..OpenAiConfig::default()
            })
            .map_err(StartError::ModelClient)?,
        ),
    };
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
    .with_config_file(config.config_file.as_deref());
    let files = hook_files(config.hooks_file.as_deref(), workspace.root());
    let (set, problems) = load_hook_set(&files, &trust);
    if !problems.is_empty() {
        return Err(StartError::HookFiles(problems));
    }
    for untrusted in &set.untrusted {
        tracing::warn!("{untrusted}");
    }
    let read_only_tools = builtin_tools(Arc::new(workspace.clone()), ToolLimits::default());
    let sub_agent = AgentClient::builder()
        .model(model.clone())
        .tools(read_only_tools)
        .config(agent_config.for_hook_agent(4))
        .build();
    let mut runner = Runner::new(
        model.clone(),
        agent_config.model.clone(),
        Arc::new(sub_agent),
        workspace.root().to_path_buf(),
    )
    .with_chain_budget(config.limits.hook_chain_timeout)
    .with_http_hook_urls(config.http_hook_urls.clone());
    // The named agents `agent` hooks may ask (seed 004): each a bounded sub-run of its own.
    for (name, settings) in &config.hook_agents {
        let mut agent = agent_config.for_hook_agent(settings.max_steps.unwrap_or(4));
        agent.system_prompt = settings
            .system_prompt
            .clone()
            .unwrap_or(agent.system_prompt);
        agent.model = settings.model.clone().unwrap_or(agent.model);
        let client = AgentClient::builder()
            .model(model.clone())
            .tools(builtin_tools(
                Arc::new(workspace.clone()),
                ToolLimits::default(),
            ))
            .config(agent)
            .build();
        runner = runner.with_agent(name.clone(), Arc::new(client));
    }
    let runner = Arc::new(runner);
    let hook_files = Arc::new(HookFiles::new(set, runner.clone()));
    if let Err(error) = hook_files.watch(config.hooks_file.clone(), trust) {
        tracing::warn!("{error}; hook files will not reload without a restart");
    }
    let signing_key = config.agent.secret.as_deref().map(SigningKey::new);
    let session_rules = SessionHookRules {
        enabled: config.session_hooks.enabled,
        allow_command: config.allow_session_command_hooks,
        max_per_chat: config.session_hooks.max_per_chat,
    };
    let session_hooks = SessionHookFactory::new(runner, signing_key.clone(), session_rules);
    let skill_hooks =
        SkillHookFactory::new(skills, config.default_skills.clone(), signing_key.clone());
    let builder = AgentClient::builder()
        .model(model)
        .tools(builtin_tools(Arc::new(workspace), ToolLimits::default()))
        .config(agent_config)
        // The connection events; chats get the hook files as they were when they started.
        .hook(hook_files.clone())
        .hook_factory(hook_files.clone())
        .hook_factory(Arc::new(skill_hooks))
        .hook_factory(Arc::new(session_hooks));
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
        hook_files,
    })
}

/// The router: `/ws`, `/healthz`, `/api/info`, `/api/skills`, `/metrics`, and the page, all
/// behind the access checks (`access`) for a server bound to `bound`.
pub fn router(state: AppState, bound: SocketAddr) -> Router {
    let config = &state.config;
    let policy = Arc::new(access::AccessPolicy {
        allowed_hosts: config.allowed_hosts.clone(),
        loopback_only: bound.ip().is_loopback(),
        allowed_origins: config.allowed_origins.clone(),
        auth_token: config.auth_token.clone(),
    });
    let static_files = ServeDir::new(&config.static_dir);
    Router::new()
        .route("/ws", get(upgrade))
        .route("/healthz", get(healthz))
        .route("/api/info", get(info))
        .route("/api/skills", get(skills))
        .route("/metrics", get(metrics_text))
        .fallback_service(static_files)
        .layer(axum::middleware::from_fn_with_state(
            policy,
            access::enforce,
        ))
        .with_state(state)
}

async fn healthz(State(state): State<AppState>) -> Response {
    if state.shutdown.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response();
    }
    "ok".into_response()
}

async fn info(State(state): State<AppState>) -> Json<serde_json::Value> {
    let skills = state.skills.current();
    let default_skills = match &state.config.default_skills {
        Some(names) => names
            .iter()
            .filter(|n| skills.get(n).is_some())
            .cloned()
            .collect(),
        None => skills.names(),
    };
    // Workspace-relative paths: enough to find the file, and no more of the server's disk.
    let untrusted: Vec<String> = match &state.hook_files {
        Some(files) => files
            .current()
            .untrusted
            .iter()
            .map(|u| u.shown.clone())
            .collect(),
        None => Vec::new(),
    };
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "model": if state.demo { "demo" } else { state.agent.config().model.as_str() },
        "demo": state.demo,
        "tools": state.agent.tool_names(),
        "default_skills": default_skills,
        "untrusted_hook_files": untrusted,
    }))
}

async fn skills(State(state): State<AppState>) -> Json<serde_json::Value> {
    let set = state.skills.current();
    let problems = |list: &[Problem]| list.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    let skills: Vec<serde_json::Value> = set
        .skills
        .values()
        .map(|skill| {
            let hooks: Vec<serde_json::Value> = skill
                .hooks
                .iter()
                .map(|hook| {
                    json!({
                        "name": hook.name,
                        "timing": hook.timing.as_str(),
                        "role": hook.role.as_str(),
                        "persistent": hook.persistent,
                        "tool_filter": hook.tool_filter,
                    })
                })
                .collect();
            json!({
                "name": skill.name,
                "description": skill.description,
                "hooks": hooks,
                "errors": problems(&skill.errors),
                "warnings": problems(&skill.warnings),
            })
        })
        .collect();
    Json(serde_json::Value::Array(skills))
}

async fn metrics_text() -> Response {
    match metrics::handle() {
        Some(handle) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            handle.render(),
        )
            .into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            "metrics recorder unavailable",
        )
            .into_response(),
    }
}

/// The upgrade: the session cap before the 101 (access was checked in front of every route);
/// everything else in the session.
async fn upgrade(State(state): State<AppState>, ws: WebSocketUpgrade) -> Response {
    if state.shutdown.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response();
    }
    let Ok(permit) = state.sessions.clone().try_acquire_owned() else {
        ::metrics::counter!("hookwire_rejected_connections_total", "reason" => "capacity")
            .increment(1);
        return (StatusCode::SERVICE_UNAVAILABLE, "too many open connections").into_response();
    };
    let limit = state.config.limits.max_message_bytes;
    let tracker = state.tracker.clone();
    // The write buffer has no cap of its own (tungstenite's default): outgoing frames are
    // bounded by `limits.max_frame_bytes` (see `fit`) and `done` carries the whole answer, which
    // must not be refused. A client that stops reading is caught by the write-stall watchdog.
    ws.read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(0)
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| {
            tracker.track_future(async move {
                session::run_session(socket, state).await;
                drop(permit);
            })
        })
}

/// A server bound and running in this process.
pub struct RunningServer {
    pub addr: SocketAddr,
    state: AppState,
    task: tokio::task::JoinHandle<()>,
    _skill_reloader: Option<Reloader>,
}

impl RunningServer {
    /// Binds `config.addr` and serves until [`RunningServer::shutdown`] (or the returned future
    /// of [`serve`] sees a signal).
    pub async fn start(state: AppState) -> Result<Self, StartError> {
        let listener = TcpListener::bind(&state.config.addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: state.config.addr.clone(),
                source,
            })?;
        let addr = listener.local_addr().map_err(StartError::LocalAddr)?;
        let reloader = match crate::skills::watch::watch(state.skills.clone()) {
            Ok(reloader) => Some(reloader),
            Err(error) => {
                tracing::warn!("{error}; skills will not reload without a restart");
                None
            }
        };
        for problem in state.skills.current().problems() {
            tracing::warn!("{}", problem.labelled());
        }
        if !addr.ip().is_loopback() && state.config.auth_token.is_none() {
            tracing::warn!(%addr, "bound to a non-loopback address with no auth_token: anyone who can reach it can chat, read the workspace and spend the model's budget (set HOOKWIRE_AUTH_TOKEN)");
        }
        let app = router(state.clone(), addr);
        let shutdown = state.shutdown.clone();
        let limits = listen::ListenLimits {
            header_read_timeout: state.config.limits.header_read_timeout,
            max_pending_connections: state.config.limits.max_pending_connections,
        };
        let task = tokio::spawn(listen::serve(listener, app, limits, shutdown));
        Ok(Self {
            addr,
            state,
            task,
            _skill_reloader: reloader,
        })
    }

    /// Stops accepting, lets running chats finish within the grace period, closes every
    /// session with 1001, and waits for them.
    pub async fn shutdown(self) {
        self.state.shutdown.cancel();
        self.state.tracker.close();
        let deadline = self.state.config.limits.shutdown_grace + Duration::from_secs(3);
        if tokio::time::timeout(deadline, self.state.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("sessions still open after the shutdown deadline");
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), self.task).await;
    }
}

/// Runs the server until SIGTERM or Ctrl-C.
pub async fn serve(config: Config) -> Result<(), StartError> {
    crate::hooks::external::process::guard_server_process();
    let state = AppState::from_config(config)?;
    if state.demo {
        tracing::warn!("no model API configured: running the built-in demo model (set OPENAI_BASE_URL / OPENAI_API_KEY for a real one)");
    } else {
        tracing::info!(model = %state.agent.config().model, "model API configured");
    }
    let server = RunningServer::start(state).await?;
    tracing::info!("listening on http://{}", server.addr);
    shutdown_signal().await;
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
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
