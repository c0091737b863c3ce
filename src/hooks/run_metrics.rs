//! The metrics of hook runs: a counter by hook, event and outcome and a duration histogram by
//! hook and event (`hookwire_hook_runs_total`, `hookwire_hook_duration_seconds` for the hooks of
//! a chat's stack; `hookwire_external_hook_*` for a hook file's runs).
//!
//! A chat calls its hooks several times: each series is looked up in the recorder once and its
//! handles kept here, per recorder, as `types::Kept` does for series of fixed labels (its module
//! doc says why), with the hook's name, known only at its run, as the key.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use metrics::{Counter, Histogram};

use super::sync::lock;
use crate::types::current_recorder;

/// One pair of hook-run metrics and the handles of the series seen so far.
pub(crate) struct HookRunMetrics {
    runs: &'static str,
    duration: &'static str,
    kept: Mutex<ByHook>,
}

#[derive(Default)]
struct ByHook {
    /// The recorder the handles belong to (its address).
    recorder: usize,
    /// By hook name; a hook's events in a short list (the few it answers).
    by_hook: HashMap<String, Vec<EventSeries>>,
}

/// One hook's series at one event.
struct EventSeries {
    event: &'static str,
    duration: Histogram,
    /// A counter for each outcome seen (a handful at most).
    runs: Vec<(&'static str, Counter)>,
}

impl HookRunMetrics {
    /// The counter `runs{hook,event,outcome}` and the histogram `duration{hook,event}`.
    pub(crate) fn new(runs: &'static str, duration: &'static str) -> Self {
        Self {
            runs,
            duration,
            kept: Mutex::new(ByHook::default()),
        }
    }

    /// Counts one run of `hook` at `event` that ended as `outcome` after `elapsed`.
    pub(crate) fn record(
        &self,
        hook: &str,
        event: &'static str,
        outcome: &'static str,
        elapsed: Duration,
    ) {
        let recorder = current_recorder();
        let mut kept = lock(&self.kept);
        if kept.recorder != recorder {
            kept.by_hook.clear();
            kept.recorder = recorder;
        }
        // One hash of the name for a hook seen before; the name is copied once, at its first run.
        if let Some(events) = kept.by_hook.get_mut(hook) {
            return self.record_in(events, hook, event, outcome, elapsed);
        }
        let events = kept.by_hook.entry(hook.to_owned()).or_default();
        self.record_in(events, hook, event, outcome, elapsed);
    }

    fn record_in(
        &self,
        events: &mut Vec<EventSeries>,
        hook: &str,
        event: &'static str,
        outcome: &'static str,
        elapsed: Duration,
    ) {
        let index = match events.iter().position(|series| series.event == event) {
            Some(index) => index,
            None => {
                events.push(EventSeries {
                    event,
                    duration: metrics::histogram!(
                        self.duration, "hook" => hook.to_owned(), "event" => event
                    ),
                    runs: Vec::new(),
                });
                events.len() - 1
            }
        };
        let series = &mut events[index];
        series.duration.record(elapsed.as_secs_f64());
        match series.runs.iter().find(|(seen, _)| *seen == outcome) {
            Some((_, counter)) => counter.increment(1),
            None => {
                let counter = metrics::counter!(
                    self.runs,
                    "hook" => hook.to_owned(),
                    "event" => event,
                    "outcome" => outcome
                );
                counter.increment(1);
                series.runs.push((outcome, counter));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};

    /// The lines of `recorder`'s page about the pair, sorted.
    fn seen(recorder: &PrometheusRecorder) -> Vec<String> {
        let mut lines: Vec<String> = recorder
            .handle()
            .render()
            .lines()
            .filter(|line| {
                line.starts_with("t_runs_total{") || line.starts_with("t_duration_seconds_count{")
            })
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    }

    #[test]
    fn every_run_is_counted_in_its_series_and_a_new_recorder_gets_its_own() {
        let runs = HookRunMetrics::new("t_runs_total", "t_duration_seconds");
        let first = PrometheusBuilder::new().build_recorder();
        metrics::with_local_recorder(&first, || {
            for outcome in ["ok", "ok", "error"] {
                runs.record("a", "pre_tool_execution", outcome, Duration::from_millis(1));
            }
            runs.record("b", "pre_tool_execution", "ok", Duration::from_millis(1));
            runs.record("a", "stop", "ok", Duration::from_millis(1));
        });
        assert_eq!(
            seen(&first),
            [
                r#"t_duration_seconds_count{hook="a",event="pre_tool_execution"} 3"#,
                r#"t_duration_seconds_count{hook="a",event="stop"} 1"#,
                r#"t_duration_seconds_count{hook="b",event="pre_tool_execution"} 1"#,
                r#"t_runs_total{hook="a",event="pre_tool_execution",outcome="error"} 1"#,
                r#"t_runs_total{hook="a",event="pre_tool_execution",outcome="ok"} 2"#,
                r#"t_runs_total{hook="a",event="stop",outcome="ok"} 1"#,
                r#"t_runs_total{hook="b",event="pre_tool_execution",outcome="ok"} 1"#,
            ]
        );
        // A series kept for the first recorder is looked up again in the second one.
        let second = PrometheusBuilder::new().build_recorder();
        metrics::with_local_recorder(&second, || {
            runs.record("a", "stop", "ok", Duration::from_millis(1));
        });
        assert_eq!(
            seen(&second),
            [
                r#"t_duration_seconds_count{hook="a",event="stop"} 1"#,
                r#"t_runs_total{hook="a",event="stop",outcome="ok"} 1"#,
            ]
        );
        assert!(seen(&first)
            .contains(&r#"t_runs_total{hook="a",event="stop",outcome="ok"} 1"#.to_string()));
    }
}
