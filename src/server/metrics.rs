//! Prometheus metrics: one process-wide recorder, rendered by `GET /metrics`.
//!
//! Names (all prefixed `hookwire_`): `connections_open` (gauge), `connections_total`,
//! `chats_total{outcome}`, `llm_calls_total`, `llm_tokens_total{kind}`, `text_deltas_total`
//! (text chunks relayed to clients), `llm_first_token_seconds`, `llm_call_seconds`,
//! `chat_duration_seconds` (histograms), `tool_calls_total{tool,outcome}`,
//! `hook_runs_total{hook,event,outcome}`, `hook_duration_seconds{hook,event}`,
//! `bad_frames_total`, `history_dropped_total{reason}`, `rejected_connections_total{reason}`.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Seconds buckets fit for model latencies and hook runs.
const BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Installs the recorder once per process (tests start many servers in one process) and returns
/// the handle that renders it; `None` if another recorder was installed first.
pub(super) fn handle() -> Option<PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets(BUCKETS)
                .ok()?
                .build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).ok()?;
            Some(handle)
        })
        .clone()
}
