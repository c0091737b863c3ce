//! Prometheus metrics: one process-wide recorder, rendered by `GET /metrics`.
//!
//! Names (all prefixed `hookwire_`): `connections_open` (gauge), `connections_total`,
//! `chats_total{outcome}`, `llm_calls_total`, `llm_tokens_total{kind}`, `text_deltas_total`
//! (text chunks relayed to clients), `llm_first_token_seconds`, `llm_call_seconds`,
//! `chat_duration_seconds` (histograms), `tool_calls_total{tool,outcome}`,
//! `hook_runs_total{hook,event,outcome}`, `hook_duration_seconds{hook,event}`,
//! `bad_frames_total`, `history_dropped_total{reason}`, `rejected_connections_total{reason}`.
//!
//! Every metric is described (`# HELP`, `# TYPE`) when the recorder is installed, and the series
//! whose labels are known in advance are registered at zero, so a scraper and its dashboards see
//! them from the first scrape rather than after the first chat. Series labelled by a tool or a
//! hook name appear at their first use.

use std::sync::OnceLock;

use metrics::Unit;
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
            describe();
            run_upkeep(handle.clone());
            Some(handle)
        })
        .clone()
}

/// How often histogram samples are folded into their buckets.
const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Folds the histograms' samples into their buckets every few seconds. The recorder keeps each
/// sample until then; without this, a server nobody scrapes kept every hook run's and every
/// model call's sample for good (~260 bytes per chat: the 10,000-connection soak's RSS grew by
/// 64 MiB in 8 minutes, docs/performance.md). A thread, not a task: the recorder is process-wide
/// and outlives any one runtime (tests start many).
fn run_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP_EVERY);
            handle.run_upkeep();
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the metrics upkeep thread: histogram samples are folded only when /metrics is read");
    }
}

/// `(metric, label, values)`: the series registered at zero for each value of `label` — the
/// values the code records (`outcome` of a chat is its `done` reason or its error code).
const KNOWN_SERIES: &[(&str, &str, &[&str])] = &[
    (
        "hookwire_chats_total",
        "outcome",
        &[
            "completed",
            "cancelled",
            "max_steps",
            "max_tokens",
            "stopped",
            "length",
            "refused",
            "upstream",
            "hook_blocked",
            "internal",
            "approval_required",
            "context_too_long",
            "bad_frame",
        ],
    ),
    (
        "hookwire_approvals_total",
        "outcome",
        &["asked", "allowed", "denied"],
    ),
    (
        "hookwire_llm_tokens_total",
        "kind",
        &["prompt", "completion"],
    ),
    (
        "hookwire_rejected_connections_total",
        "reason",
        &[
            "capacity",
            "draining",
            "header_timeout",
            "host",
            "origin",
            "token",
        ],
    ),
    (
        "hookwire_closed_connections_total",
        "reason",
        &["client_gone", "flood", "write_failed", "write_stall"],
    ),
    (
        "hookwire_history_dropped_total",
        "reason",
        &[
            "bad_signature",
            "system_summary",
            "malformed_hook_tag",
            "unsigned_system_message",
        ],
    ),
];

/// How Prometheus types a metric.
#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// A metric's `# HELP` and `# TYPE`, and its unit if it has one.
struct Described {
    name: &'static str,
    kind: Kind,
    unit: Option<Unit>,
    help: &'static str,
}

/// Every metric the crate (and the binary) records.
const METRICS: &[Described] = &[
    Described {
        name: "hookwire_connections_open",
        kind: Kind::Gauge,
        unit: None,
        help: "Open WebSocket sessions.",
    },
    Described {
        name: "hookwire_connections_total",
        kind: Kind::Counter,
        unit: None,
        help: "WebSocket sessions opened since the start.",
    },
    Described {
        name: "hookwire_rejected_connections_total",
        kind: Kind::Counter,
        unit: None,
        help: "Requests or connections refused, by reason.",
    },
    Described {
        name: "hookwire_idle_connections_closed_total",
        kind: Kind::Counter,
        unit: None,
        help: "Connections closed at the header timeout without having sent a byte (preconnects).",
    },
    Described {
        name: "hookwire_closed_connections_total",
        kind: Kind::Counter,
        unit: None,
        help: "Sessions the server closed because of the client, by reason (client_gone: the client left during a write).",
    },
    Described {
        name: "hookwire_chats_total",
        kind: Kind::Counter,
        unit: None,
        help: "Chats ended, by outcome.",
    },
    Described {
        name: "hookwire_chat_duration_seconds",
        kind: Kind::Histogram,
        unit: Some(Unit::Seconds),
        help: "Time from a chat's start to its end.",
    },
    Described {
        name: "hookwire_llm_calls_total",
        kind: Kind::Counter,
        unit: None,
        help: "Model calls.",
    },
    Described {
        name: "hookwire_llm_tokens_total",
        kind: Kind::Counter,
        unit: None,
        help: "Tokens the model reported, by kind (prompt, completion).",
    },
    Described {
        name: "hookwire_text_deltas_total",
        kind: Kind::Counter,
        unit: None,
        help: "Text chunks relayed to clients.",
    },
    Described {
        name: "hookwire_llm_first_token_seconds",
        kind: Kind::Histogram,
        unit: Some(Unit::Seconds),
        help: "Time from a model call to its first streamed token.",
    },
    Described {
        name: "hookwire_llm_call_seconds",
        kind: Kind::Histogram,
        unit: Some(Unit::Seconds),
        help: "Time of a whole model call.",
    },
    Described {
        name: "hookwire_tool_calls_total",
        kind: Kind::Counter,
        unit: None,
        help: "Tool calls, by tool and outcome.",
    },
    Described {
        name: "hookwire_hook_runs_total",
        kind: Kind::Counter,
        unit: None,
        help: "AgentHook calls, by hook, event and outcome.",
    },
    Described {
        name: "hookwire_hook_duration_seconds",
        kind: Kind::Histogram,
        unit: Some(Unit::Seconds),
        help: "Time of an AgentHook call, by hook and event.",
    },
    Described {
        name: "hookwire_external_hook_runs_total",
        kind: Kind::Counter,
        unit: None,
        help: "Runs of hooks from hook files, by hook, event and outcome.",
    },
    Described {
        name: "hookwire_external_hook_duration_seconds",
        kind: Kind::Histogram,
        unit: Some(Unit::Seconds),
        help: "Time of a hook file's hook run, by hook and event.",
    },
    Described {
        name: "hookwire_bad_frames_total",
        kind: Kind::Counter,
        unit: None,
        help: "Client frames refused as bad_frame.",
    },
    Described {
        name: "hookwire_history_dropped_total",
        kind: Kind::Counter,
        unit: None,
        help: "History messages dropped before the model saw them, by reason.",
    },
    Described {
        name: "hookwire_session_hooks_dropped_total",
        kind: Kind::Counter,
        unit: None,
        help: "Session hooks a chat ignored, by reason.",
    },
    Described {
        name: "hookwire_compactions_total",
        kind: Kind::Counter,
        unit: None,
        help: "Context compactions, by kind (auto: the history summarised; micro: old tool \
               results stubbed) and trigger (auto, manual).",
    },
    // Recorded by the `hookwire` binary, whose allocator it is (src/allocator.rs).
    Described {
        name: "hookwire_allocator_bytes",
        kind: Kind::Gauge,
        unit: Some(Unit::Bytes),
        help: "The allocator's figures, by kind: allocated (held by the program), active, \
               metadata, resident (kept in RAM), mapped, retained (address space given back to \
               the system).",
    },
    Described {
        name: "hookwire_approvals_total",
        kind: Kind::Counter,
        unit: None,
        help: "Tool calls that waited for approval, and the decisions, by outcome.",
    },
    Described {
        name: "hookwire_hook_model_calls_total",
        kind: Kind::Counter,
        unit: None,
        help: "Upstream requests made by hooks (llm and agent hooks, their retries included), \
               in chats and in connection events.",
    },
    Described {
        name: "hookwire_hook_model_calls_capped_total",
        kind: Kind::Counter,
        unit: None,
        help: "Chats whose hooks were stopped from calling the model \
               (limits.max_hook_model_calls or limits.max_total_tokens).",
    },
    Described {
        name: "hookwire_tenant_tokens_total",
        kind: Kind::Counter,
        unit: None,
        help: "Tokens of chats (their hooks' model calls included) by tenant: the tenants \
               listed in the config by name, any other as `other`.",
    },
    Described {
        name: "hookwire_quota_refusals_total",
        kind: Kind::Counter,
        unit: None,
        help: "Chats refused with quota_exceeded, by the limit that refused them.",
    },
    Described {
        name: "hookwire_shared_state_errors_total",
        kind: Kind::Counter,
        unit: None,
        help: "Questions to the shared state (Redis) that failed, by operation; meanwhile \
               quotas are counted in this replica's memory (or chats refused, failing closed).",
    },
    Described {
        name: "hookwire_hook_records_total",
        kind: Kind::Counter,
        unit: None,
        help: "Hook events handed to the recording (hooks.record).",
    },
    Described {
        name: "hookwire_hook_records_dropped_total",
        kind: Kind::Counter,
        unit: None,
        help: "Hook events the recording dropped (its writer was behind, or a file could not \
               be opened).",
    },
];

/// Describes every metric and registers the known series at zero.
fn describe() {
    describe_metrics();
    register_known_series();
}

/// `# HELP` and `# TYPE` for every metric of [`METRICS`].
fn describe_metrics() {
    metrics::with_recorder(|recorder| {
        for metric in METRICS {
            let (name, unit, help) = (metric.name.into(), metric.unit, metric.help.into());
            match metric.kind {
                Kind::Counter => recorder.describe_counter(name, unit, help),
                Kind::Gauge => recorder.describe_gauge(name, unit, help),
                Kind::Histogram => recorder.describe_histogram(name, unit, help),
            }
        }
    });
}

/// The series whose labels are known in advance, at zero, so dashboards see them from the first
/// scrape.
fn register_known_series() {
    // Registered at zero: an increment of 0 creates the series without changing it.
    metrics::gauge!("hookwire_connections_open").increment(0.0);
    for name in [
        "hookwire_connections_total",
        "hookwire_llm_calls_total",
        "hookwire_text_deltas_total",
        "hookwire_bad_frames_total",
        "hookwire_idle_connections_closed_total",
        "hookwire_hook_model_calls_total",
        "hookwire_hook_model_calls_capped_total",
    ] {
        metrics::counter!(name).increment(0);
    }
    for name in [
        "hookwire_chat_duration_seconds",
        "hookwire_llm_first_token_seconds",
        "hookwire_llm_call_seconds",
    ] {
        // A histogram handle registers the series; nothing is observed.
        let _ = metrics::histogram!(name);
    }
    for (kind, trigger) in [("auto", "auto"), ("auto", "manual"), ("micro", "auto")] {
        metrics::counter!("hookwire_compactions_total", "kind" => kind, "trigger" => trigger)
            .increment(0);
    }
    for (name, label, values) in KNOWN_SERIES {
        for value in *values {
            metrics::counter!(*name, *label => *value).increment(0);
        }
    }
}
