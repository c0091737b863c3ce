//! The HTTP side: the axum router, the WebSocket upgrade, the small JSON endpoints, static files,
//! metrics and graceful shutdown. The session logic lives in `session`; a chat's events reach a
//! wire through `wire` (an encoder per wire), and the native wire's types are in `frames`. It serves an agent built elsewhere ([`crate::app`] wires the one `serve` runs).
//!
//! Shutdown is a drain: the server keeps listening, but `/healthz` answers 503 `draining` and new
//! WebSocket upgrades get 503 (a load balancer sends them elsewhere); idle sessions close at once
//! with 1001, running chats get `limits.shutdown_grace` to finish. Once the last session is gone
//! (or the grace period is over) the listener stops.

mod access;
mod agui;
mod aisdk;
mod frames;
pub use frames::frame_schemas;
pub mod health;
mod hooks;
mod http_chat;
mod listen;
mod metrics;
mod openai;
mod session;
mod voice;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower_http::services::ServeDir;

use crate::agent::AgentClient;
use crate::app::{agent_parts, Sources, StartError};
use crate::config::{AddressNotice, Config};
use crate::types::Problem;
use crate::voice::stt::Stt;
use crate::voice::tts::Tts;

/// WebSocket read buffer: tungstenite's default of 128 KiB per socket would cost ~138 KB per idle
/// connection (the buffer is zeroed, so touched, on every read); 1 KiB keeps an idle connection
/// under 8 KB (`cargo bench --bench load`). Larger messages still arrive whole: a frame's
/// length is reserved once its header is read, then filled 1 KiB per read.
const READ_BUFFER_BYTES: usize = 1024;

/// What every request handler shares.
#[derive(Clone)]
pub struct AppState {
    pub(crate) config: Arc<Config>,
    pub(crate) agent: AgentClient,
    /// Whether the agent runs the built-in demo model.
    pub(crate) demo: bool,
    /// One permit per open WebSocket session.
    pub(crate) sessions: Arc<Semaphore>,
    /// Cancelled when the server shuts down.
    pub(crate) shutdown: CancellationToken,
    /// Cancelled once the server has drained for `limits.shutdown_grace`: the HTTP chats' own
    /// tokens are its children (a WebSocket session keeps its own deadline).
    pub(crate) grace_over: CancellationToken,
    /// Knows when the last session is gone.
    pub(crate) tracker: TaskTracker,
    /// The skills (for `/api/skills`) and hook files (for `/api/info`) the agent runs.
    pub(crate) sources: Sources,
    /// A random id made at start: `/api/info` and every `start` frame carry it, so a client
    /// behind a load balancer can tell which replica served a chat.
    pub(crate) instance: Arc<str>,
    /// `voice.tts`, when configured: chats with `voice: true` get `audio` frames.
    pub(crate) tts: Option<Arc<Tts>>,
    /// `voice.stt`, when configured: `POST /api/transcribe`.
    pub(crate) stt: Option<Arc<Stt>>,
    /// `auth.jwt`'s verifier, made when the server starts: the routes' access check and a
    /// connection's `auth` frame use it.
    pub(crate) jwt: Option<Arc<access::JwtVerifier>>,
}

impl AppState {
    /// Wires the agent from the config ([`crate::app::agent_parts`]) and builds it.
    pub fn from_config(config: Config) -> Result<Self, StartError> {
        let demo = config.llm.is_demo();
        let parts = agent_parts(&config)?;
        let agent = parts.builder.build();
        Ok(Self::new(config, agent, demo, parts.sources))
    }

    /// State around an agent built elsewhere (library users, tests); `sources` are the skills
    /// and hook files it runs.
    pub fn new(config: Config, agent: AgentClient, demo: bool, sources: Sources) -> Self {
        // Install the recorder before anything records, or those values are lost.
        if metrics::handle().is_none() {
            tracing::warn!("another metrics recorder is installed; /metrics will be unavailable");
        }
        let sessions = Arc::new(Semaphore::new(config.limits.max_connections));
        let (tts, stt) = voice::engines(&config);
        Self {
            config: Arc::new(config),
            agent,
            demo,
            sessions,
            shutdown: CancellationToken::new(),
            grace_over: CancellationToken::new(),
            tracker: TaskTracker::new(),
            sources,
            instance: new_instance_id().into(),
            tts,
            stt,
            jwt: None,
        }
    }
}

/// 16 hex digits (64 random bits): unique across any number of replicas, short in a log line.
fn new_instance_id() -> String {
    let mut id = uuid::Uuid::new_v4().simple().to_string();
    id.truncate(16);
    id
}

/// The router: `/ws`, `/healthz`, `/livez`, `/api/info`, `/api/skills`, `/api/hooks`,
/// `/api/hooks/replay`,
/// `/api/transcribe`, `/metrics`, and the page, all behind the access checks (`access`) for a server bound to `bound`.
fn router(state: AppState, bound: SocketAddr) -> Router {
    let config = &state.config;
    let policy = Arc::new(access::AccessPolicy {
        jwt: state.jwt.clone(),
        allowed_hosts: config.allowed_hosts.clone(),
        bound: access::Bound::of(bound.ip()),
        allowed_origins: config.allowed_origins.clone(),
        auth_token: config.auth_token.clone(),
        admin_token: config.admin_token.clone(),
    });
    let static_files = ServeDir::new(&config.static_dir);
    Router::new()
        .route("/ws", get(upgrade))
        .route("/healthz", get(healthz))
        .route("/livez", get(livez))
        .route("/api/info", get(info))
        .route("/api/skills", get(skills))
        .route("/api/hooks", get(hooks::list))
        .route("/api/hooks/replay", post(hooks::replay))
        .route("/api/transcribe", post(voice::transcribe))
        .route("/metrics", get(metrics_text))
        .merge(front_end_routes(config.allowed_origins.as_deref()))
        .fallback_service(static_files)
        .layer(axum::middleware::from_fn_with_state(
            policy,
            access::enforce,
        ))
        .with_state(state)
}

/// The front-end wires' routes (docs/protocol.md §19). With `allowed_origins`, pages of those
/// origins may call them from the browser: their CORS preflight is answered here (the access
/// check lets a preflight through without the token, which a browser never sends on one).
fn front_end_routes(allowed_origins: Option<&[String]>) -> Router<AppState> {
    let routes = Router::new()
        .route("/ag-ui", post(agui::run))
        .route("/api/chat", post(aisdk::chat))
        .route("/v1/chat/completions", post(openai::completions))
        .route("/v1/models", get(openai::models));
    let Some(origins) = allowed_origins else {
        return routes;
    };
    let origins: Vec<axum::http::HeaderValue> = origins
        .iter()
        .filter_map(|origin| origin.parse().ok())
        .collect();
    use axum::http::{header, Method};
    let cors = tower_http::cors::CorsLayer::new()
        .allow_origin(origins)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([
            header::CONTENT_TYPE,
            header::AUTHORIZATION,
            header::HeaderName::from_static("traceparent"),
        ])
        .expose_headers([header::HeaderName::from_static(
            "x-vercel-ai-ui-message-stream",
        )])
        .max_age(std::time::Duration::from_secs(600));
    routes.layer(cors)
}

/// Readiness: 503 `draining` once the shutdown began, so that nothing new is sent here.
async fn healthz(State(state): State<AppState>) -> Response {
    if state.shutdown.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "draining").into_response();
    }
    "ok".into_response()
}

/// Liveness: the process serves HTTP, draining or not (a liveness probe that failed during the
/// drain would kill the chats it is finishing).
async fn livez() -> &'static str {
    "ok"
}

async fn info(State(state): State<AppState>) -> Json<serde_json::Value> {
    let skills = state.sources.skills.current();
    let default_skills = match &state.config.default_skills {
        Some(names) => names
            .iter()
            .filter(|n| skills.get(n).is_some())
            .cloned()
            .collect(),
        None => skills.names(),
    };
    let untrusted = state.sources.untrusted_hook_files();
    let mcp_servers: Vec<serde_json::Value> = state
        .sources
        .mcp_servers()
        .into_iter()
        .map(|server| {
            json!({
                "name": server.name,
                "origin": server.origin,
                "state": server.state,
                "reason": server.reason,
                "tools": server.tools,
                "restarts": server.restarts,
            })
        })
        .collect();
    // Each MCP tool with its server, for the page to group them.
    let mcp_tools: Vec<serde_json::Value> = state
        .sources
        .mcp_servers()
        .into_iter()
        .flat_map(|server| {
            server
                .tools
                .into_iter()
                .map(move |tool| json!({"name": tool, "server": server.name.clone()}))
        })
        .collect();
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "model": if state.demo { "demo" } else { state.agent.config().model.as_str() },
        "demo": state.demo,
        "tools": state.agent.tool_names(),
        "default_skills": default_skills,
        "untrusted_hook_files": untrusted,
        "mcp_servers": mcp_servers,
        "mcp_tools": mcp_tools,
        "untrusted_mcp_files": state.sources.untrusted_mcp_files(),
        "instance": &*state.instance,
        "voice": voice::info(&state),
    }))
}

/// The skills, as the caller's tenant gets them (a listed tenant's people see theirs only).
async fn skills(
    State(state): State<AppState>,
    signed_in: Option<axum::Extension<access::SignedIn>>,
) -> Json<serde_json::Value> {
    let set = state.sources.skills.current();
    let problems = |list: &[Problem]| list.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    let tenant = signed_in.as_ref().and_then(|s| s.person.tenant.as_deref());
    let allowed = state
        .config
        .tenants
        .get(tenant.unwrap_or_default())
        .and_then(|tenant| tenant.skills.as_deref());
    let skills: Vec<serde_json::Value> = set
        .skills
        .values()
        .filter(|skill| allowed.is_none_or(|allowed| allowed.contains(&skill.name)))
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
async fn upgrade(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    signed_in: Option<axum::Extension<access::SignedIn>>,
    ws: WebSocketUpgrade,
) -> Response {
    if state.shutdown.is_cancelled() {
        ::metrics::counter!("hookwire_rejected_connections_total", "reason" => "draining")
            .increment(1);
        return (StatusCode::SERVICE_UNAVAILABLE, "draining").into_response();
    }
    let Ok(permit) = state.sessions.clone().try_acquire_owned() else {
        ::metrics::counter!("hookwire_rejected_connections_total", "reason" => "capacity")
            .increment(1);
        return (StatusCode::SERVICE_UNAVAILABLE, "too many open connections").into_response();
    };
    let limit = state.config.limits.max_message_bytes;
    let traceparent = headers
        .get("traceparent")
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let tracker = state.tracker.clone();
    // The write buffer has no cap of its own (tungstenite's default): outgoing frames are
    // bounded by `limits.max_frame_bytes` (see `fit`) and `done` carries the whole answer, which
    // must not be refused. A client that stops reading is caught by the write-stall watchdog.
    // Frames ready together are flushed together (`session::WRITE_COALESCE_BYTES`).
    // A client that offers `hookwire` (the page: `hookwire, hookwire.token.…`) gets it back; the
    // token's offer is never echoed.
    ws.protocols([access::SUBPROTOCOL])
        .read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(session::WRITE_COALESCE_BYTES)
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| {
            tracker.track_future(async move {
                let signed_in = signed_in.map(|signed_in| signed_in.0);
                session::run_session(socket, state, traceparent, signed_in).await;
                drop(permit);
            })
        })
}

/// A server bound and running in this process.
pub struct RunningServer {
    pub addr: SocketAddr,
    state: AppState,
    task: tokio::task::JoinHandle<()>,
    /// Stops the accept loop: after the drain, not at its start, so `/healthz` can say so.
    stop: CancellationToken,
}

impl RunningServer {
    /// Binds `config.addr` and serves until [`RunningServer::shutdown`] (or the returned future
    /// of [`serve`] sees a signal).
    pub async fn start(mut state: AppState) -> Result<Self, StartError> {
        let listener = TcpListener::bind(&state.config.addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: state.config.addr.clone(),
                source,
            })?;
        let addr = listener.local_addr().map_err(StartError::LocalAddr)?;
        match state
            .config
            .open_address_notice(addr.ip().to_canonical().is_loopback())
        {
            Some(AddressNotice::Warning(text)) => tracing::warn!(%addr, "{text}"),
            Some(AddressNotice::Note(text)) => tracing::info!(%addr, "{text}"),
            None => {}
        }
        if let Some(settings) = &state.config.jwt {
            let verifier =
                access::JwtVerifier::new(settings.clone()).map_err(StartError::SignInClient)?;
            state.jwt = Some(Arc::new(verifier));
        }
        let app = router(state.clone(), addr);
        let stop = CancellationToken::new();
        let limits = listen::ListenLimits {
            header_read_timeout: state.config.limits.header_read_timeout,
            max_pending_connections: state.config.limits.max_pending_connections,
        };
        let task = tokio::spawn(listen::serve(listener, app, limits, stop.clone()));
        // In the background: a slow MCP server does not hold the listener.
        state.sources.start_mcp_servers();
        Ok(Self {
            addr,
            state,
            task,
            stop,
        })
    }

    /// Drains: takes no new sessions or chats (`/healthz` and upgrades answer 503), closes idle
    /// sessions with 1001 at once, lets running chats finish within the grace period, closes
    /// their sessions with 1001, waits for them, then stops listening; then the hooks still running beside the sessions
    /// (`session_end`, `async` hooks) get what is left of the deadline (at least a second),
    /// and are ended. The HTTP chats still running past the grace period are cancelled by this
    /// future: poll it to its end (or at least for `limits.shutdown_grace`).
    pub async fn shutdown(self) {
        self.state.shutdown.cancel();
        self.state.tracker.close();
        let grace = self.state.config.limits.shutdown_grace;
        let deadline = tokio::time::Instant::now() + grace + Duration::from_secs(3);
        let drained = tokio::time::timeout_at(deadline, self.state.tracker.wait());
        tokio::pin!(drained);
        let drained = tokio::select! {
            drained = &mut drained => drained,
            () = tokio::time::sleep(grace) => {
                // The HTTP chats still running are cancelled (each ends with its last event).
                self.state.grace_over.cancel();
                drained.await
            }
        };
        if drained.is_err() {
            tracing::warn!("sessions still open after the shutdown deadline");
        }
        let left = || {
            deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .max(Duration::from_secs(1))
        };
        // session_end first: its hooks may still queue async runs.
        self.state.agent.finish_session_hooks(left()).await;
        self.state.sources.stop_async_hooks(left()).await;
        self.state.sources.stop_mcp_servers().await;
        self.state.agent.shutdown_telemetry().await;
        self.stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(1), self.task).await;
    }
}

/// Runs the server until SIGTERM or Ctrl-C.
pub async fn serve(config: Config) -> Result<(), StartError> {
    crate::process::guard_server_process();
    let workspace = config
        .workspace
        .canonicalize()
        .unwrap_or_else(|_| config.workspace.clone());
    crate::hooks::external::transcript::prepare_folders(&workspace);
    if let Some(warning) = config.secret_warning() {
        tracing::warn!("{warning}");
    }
    let state = AppState::from_config(config)?;
    if state.demo {
        tracing::warn!("no model API configured: running the built-in demo model (set OPENAI_BASE_URL / OPENAI_API_KEY for a real one)");
    } else {
        tracing::info!(model = %state.agent.config().model, "model API configured");
    }
    let grace = state.config.limits.shutdown_grace;
    if !state.demo {
        // In the background: a model server that is slow to answer delays no start.
        let agent = state.agent.clone();
        tokio::spawn(async move {
            let model = agent.config().model.clone();
            agent.learn_window(&model).await;
        });
    }
    let server = RunningServer::start(state).await?;
    tracing::info!("listening on http://{}", server.addr);
    shutdown_signal().await;
    tracing::info!(
        "draining: no new chats; running chats get {:.0}s to finish (a second signal stops at once)",
        grace.as_secs_f64()
    );
    tokio::select! {
        _ = server.shutdown() => tracing::info!("drained"),
        _ = shutdown_signal() => tracing::warn!("second signal: stopping without waiting for running chats"),
    }
    crate::hooks::external::transcript::remove_process_folder();
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
