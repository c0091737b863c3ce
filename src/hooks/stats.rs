//! Per-hook figures for `GET /api/hooks` (docs/protocol.md §12): runs, successes, failures,
//! timeouts, blocks, skips, the time spent in all and the recent durations, kept in memory by
//! hook id, for every kind of hook that runs from a file or the model (hook files' hooks, skill
//! prompt hooks, registered hooks). Prometheus has the same counts by hook name
//! (`hookwire_external_hook_runs_total`); this is what the page reads without a scraper, with
//! percentiles over the last runs. The ids are the callers' ([`skill_hook_id`],
//! [`registered_hook_id`], a hook file's hook id); this table knows no kind of hook.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde::Serialize;

use super::sync::lock;

/// How one hook's run ended: the `outcome` label of its metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ran {
    Success,
    Skip,
    Block,
    /// It asked for the person's approval.
    Ask,
    Timeout,
    Failure,
}

impl Ran {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Ran::Success => "success",
            Ran::Skip => "skip",
            Ran::Block => "block",
            Ran::Ask => "ask",
            Ran::Timeout => "timeout",
            Ran::Failure => "failure",
        }
    }
}

/// The runs whose durations the percentiles are taken over.
const RECENT: usize = 256;
/// Hooks tracked at most (ids of files edited away stay until then; a reload adds new ids).
const MAX_HOOKS: usize = 4096;

#[derive(Debug, Default)]
struct Figures {
    runs: u64,
    successes: u64,
    failures: u64,
    timeouts: u64,
    blocked: u64,
    skipped: u64,
    total_ms: f64,
    recent_ms: VecDeque<f64>,
}

/// What `/api/hooks` shows of one hook.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct HookMetrics {
    pub(crate) runs: u64,
    /// Runs that answered and decided nothing (they may have changed or added values).
    pub(crate) successes: u64,
    pub(crate) failures: u64,
    pub(crate) timeouts: u64,
    /// Runs that stopped the chat or refused what the event guards.
    pub(crate) blocked: u64,
    /// Runs that answered `skip` (a tool or a compaction not done): their own count.
    pub(crate) skipped: u64,
    /// The time of every run, added up (rounded to 0.1 ms).
    pub(crate) total_ms: f64,
    pub(crate) p50_ms: Option<f64>,
    pub(crate) p95_ms: Option<f64>,
}

fn table() -> std::sync::MutexGuard<'static, HashMap<String, Figures>> {
    static TABLE: OnceLock<Mutex<HashMap<String, Figures>>> = OnceLock::new();
    lock(TABLE.get_or_init(|| Mutex::new(HashMap::new())))
}

/// How the ids of registered hooks start.
const REGISTERED_PREFIX: &str = "session:";

/// The id of a skill prompt hook's figures (a skill's hooks have unique names).
pub(crate) fn skill_hook_id(skill: &str, name: &str) -> String {
    format!("skill:{skill}/{name}")
}

/// The id of a registered hook's figures. A registered hook has no file of its own (the model
/// wrote it and the client keeps it): its figures are by event (as configured) and name, over
/// every conversation of this process, which is how the page finds them for the hooks a
/// conversation stores.
pub(crate) fn registered_hook_id(event_name: &str, name: &str) -> String {
    format!("{REGISTERED_PREFIX}{event_name}:{name}")
}

/// Counts one run of the hook whose figures are kept under `id`.
pub(crate) fn record(id: String, ran: Ran, elapsed: Duration) {
    let mut table = table();
    if table.len() >= MAX_HOOKS && !table.contains_key(&id) {
        return;
    }
    let figures = table.entry(id).or_default();
    figures.runs += 1;
    match ran {
        Ran::Success => figures.successes += 1,
        Ran::Failure => figures.failures += 1,
        Ran::Timeout => figures.timeouts += 1,
        Ran::Block => figures.blocked += 1,
        Ran::Skip => figures.skipped += 1,
        Ran::Ask => {}
    }
    figures.total_ms += elapsed.as_secs_f64() * 1000.0;
    if figures.recent_ms.len() == RECENT {
        figures.recent_ms.pop_front();
    }
    figures.recent_ms.push_back(elapsed.as_secs_f64() * 1000.0);
}

/// The figures of the hook with `id` (zeros before its first run).
pub(crate) fn metrics(id: &str) -> HookMetrics {
    let table = table();
    let Some(figures) = table.get(id) else {
        return HookMetrics::default();
    };
    let mut sorted: Vec<f64> = figures.recent_ms.iter().copied().collect();
    sorted.sort_by(f64::total_cmp);
    HookMetrics {
        runs: figures.runs,
        successes: figures.successes,
        failures: figures.failures,
        timeouts: figures.timeouts,
        blocked: figures.blocked,
        skipped: figures.skipped,
        total_ms: (figures.total_ms * 10.0).round() / 10.0,
        p50_ms: percentile(&sorted, 0.50),
        p95_ms: percentile(&sorted, 0.95),
    }
}

/// `(event, name, figures)` of every registered hook that ran in this process, sorted.
pub(crate) fn registered_metrics() -> Vec<(String, String, HookMetrics)> {
    let keys: Vec<String> = table()
        .keys()
        .filter(|key| key.starts_with(REGISTERED_PREFIX))
        .cloned()
        .collect();
    let mut figures: Vec<(String, String, HookMetrics)> = keys
        .iter()
        .filter_map(|key| {
            let (event, name) = key[REGISTERED_PREFIX.len()..].split_once(':')?;
            Some((event.to_string(), name.to_string(), metrics(key)))
        })
        .collect();
    figures.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    figures
}

/// The nearest-rank percentile of sorted values, rounded to 0.1 ms.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    let value = sorted[rank.clamp(1, sorted.len()) - 1];
    Some((value * 10.0).round() / 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), Some(50.0));
        assert_eq!(percentile(&values, 0.95), Some(95.0));
        assert_eq!(percentile(&[7.25], 0.95), Some(7.3));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
