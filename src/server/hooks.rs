//! `GET /api/hooks` (docs/protocol.md §12): every loaded hook with where it comes from, what it
//! runs and its figures; the skills' prompt hooks; the workspace files not loaded for want of
//! trust, with the command that trusts them. Commands and URLs are shown with their secrets
//! hidden (`types::redact`; docs/protocol.md §16).

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::AppState;
use crate::app::hooks_replay::{replay_last, ReplayError, ReplayOptions};
use crate::hooks::external::{Handler, HookDef};
use crate::hooks::stats;
use crate::types::redact;

/// Longer handler texts are cut for the list (the file has them whole).
const SHOWN_CHARS: usize = 160;

pub(super) async fn list(State(state): State<AppState>) -> Json<Value> {
    let set = state.sources.hook_set();
    let hooks: Vec<Value> = set
        .as_ref()
        .map(|set| set.all_hooks().iter().map(|hook| describe(hook)).collect())
        .unwrap_or_default();
    let untrusted: Vec<Value> = set
        .as_ref()
        .map(|set| {
            set.untrusted
                .iter()
                .map(|file| {
                    json!({
                        "file": file.file.display().to_string(),
                        "shown": file.shown,
                        "why": file.why(),
                        "trust_command": file.trust_command(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let skills = state.sources.skills.current();
    let skill_hooks: Vec<Value> = skills
        .skills
        .values()
        .flat_map(|skill| {
            skill.hooks.iter().map(move |hook| {
                let id = stats::skill_hook_id(&skill.name, &hook.name);
                json!({
                    "id": id,
                    "skill": skill.name,
                    "name": hook.name,
                    "timing": hook.timing.as_str(),
                    "role": hook.role.as_str(),
                    "persistent": hook.persistent,
                    "file": skill.dir.join("hooks").join(&hook.file).display().to_string(),
                    "metrics": stats::metrics(&id),
                })
            })
        })
        .collect();
    // The server keeps no conversation: session hooks are shown by event and name, with the
    // figures of every run in this process (the page matches them to the hooks it stores).
    let session_hooks: Vec<Value> = stats::registered_metrics()
        .into_iter()
        .map(|(event, name, metrics)| json!({"event": event, "name": name, "metrics": metrics}))
        .collect();
    Json(json!({
        "hooks": hooks,
        "skill_hooks": skill_hooks,
        "session_hooks": session_hooks,
        "untrusted": untrusted,
    }))
}

fn describe(hook: &HookDef) -> Value {
    let shorten = |text: &str| -> String {
        let mut chars = text.chars();
        let head: String = chars.by_ref().take(SHOWN_CHARS).collect();
        if chars.next().is_some() {
            format!("{head}…")
        } else {
            head
        }
    };
    let (command, url, prompt) = match &hook.handler {
        // Hidden first, then cut: a cut cannot leave half a secret unrecognised.
        Handler::Command { command, .. } => (Some(shorten(&redact::command(command))), None, None),
        Handler::Http { url, .. } => (None, Some(redact::url(url)), None),
        Handler::Llm { prompt, .. } | Handler::Agent { prompt, .. } => {
            (None, None, Some(shorten(prompt)))
        }
    };
    let filter = &hook.filter;
    let matcher = filter
        .matcher
        .as_ref()
        .map(|m| m.as_str().to_string())
        .or_else(|| filter.tool_name.clone())
        .or_else(|| filter.tool_matcher.as_ref().map(|m| m.as_str().to_string()));
    json!({
        "id": hook.id(),
        "name": hook.name,
        "level": hook.level,
        "file": hook.file.display().to_string(),
        "line": hook.line,
        "event": hook.event.as_str(),
        "event_name": hook.event_name,
        "dialect": hook.dialect.as_str(),
        "type": hook.handler.kind(),
        "matcher": matcher,
        "command": command,
        "url": url,
        "prompt": prompt,
        // A hook that is loaded is trusted: server files always are, workspace files only once
        // `hookwire trust` pinned them (the others are under `untrusted`).
        "trusted": true,
        "async": hook.run_async,
        "timeout_ms": hook.timeout.as_millis() as u64,
        "metrics": stats::metrics(&hook.id()),
    })
}

/// `POST /api/hooks/replay` `{"last"?, "repeat"?}`: the last recorded events through the hook
/// files as they are loaded now (docs/protocol.md §21) — what the Hooks tab shows after a hook
/// file was edited. Admin only: the answer holds recorded traffic (redacted, but other people's),
/// so it needs `admin_token`, or a server open to everyone who reaches it (no `auth_token`, no
/// `auth.jwt`), whose operator is whoever is at it.
pub(super) async fn replay(
    State(state): State<AppState>,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let refuse = |status: StatusCode, code: &str, message: String| {
        (
            status,
            Json(json!({"error": {"code": code, "message": message}})),
        )
            .into_response()
    };
    let config = &state.config;
    let open_to_all = config.auth_token.is_none() && config.jwt.is_none();
    if config.admin_token.is_none() && !open_to_all {
        return refuse(
            StatusCode::FORBIDDEN,
            "admin_only",
            "replaying recorded hook traffic shows other people's chats: set admin_token and send it"
                .into(),
        );
    }
    let asked: ReplayAsk = if body.is_empty() {
        ReplayAsk::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(asked) => asked,
            Err(error) => return refuse(StatusCode::BAD_REQUEST, "bad_request", error.to_string()),
        }
    };
    let options = ReplayOptions {
        repeat: asked.repeat.clamp(1, MAX_REPEAT),
        jobs: 4,
    };
    let last = asked.last.clamp(1, MAX_LAST);
    match replay_last(config, &state.sources, last, options).await {
        Ok(report) => Json(json!({
            "replayed": report.events.len(),
            "changed": report.changed(),
            "files": report.files,
            "events": report.events,
        }))
        .into_response(),
        Err(error @ ReplayError::NotRecorded) => {
            refuse(StatusCode::NOT_FOUND, "not_recorded", error.to_string())
        }
        Err(error) => {
            tracing::warn!(%error, "a replay of recorded hook traffic failed");
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "replay_failed",
                error.to_string(),
            )
        }
    }
}

/// The most events one replay takes, and runs of each.
const MAX_LAST: usize = 500;
const MAX_REPEAT: usize = 10;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ReplayAsk {
    last: usize,
    repeat: usize,
}

impl Default for ReplayAsk {
    fn default() -> Self {
        Self {
            last: 50,
            repeat: 1,
        }
    }
}
