//! The async queue's rules with a runner whose runs wait for the test.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::{mpsc, Notify};

use super::super::config::parse_hooks;
use super::super::runner::RunResult;
use super::*;
use crate::types::ChatEvent;

/// Answers each run with a `systemMessage` once the test lets it (`open`); counts the runs that
/// started and the ones whose future was dropped before they answered.
#[derive(Default)]
struct Gated {
    gate: Notify,
    started: AtomicUsize,
    dropped: Arc<AtomicUsize>,
}

/// Counts a run whose future is dropped before it answers.
struct Unfinished(Option<Arc<AtomicUsize>>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(count) = self.0.take() {
            count.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[async_trait]
impl RunHook for Gated {
    async fn run(&self, hook: &HookDef, _: &Value, _: Duration, _: &Arc<HookSpend>) -> RunResult {
        self.started.fetch_add(1, Ordering::SeqCst);
        let mut unfinished = Unfinished(Some(self.dropped.clone()));
        self.gate.notified().await;
        unfinished.0 = None;
        RunResult::Output(json!({ "systemMessage": format!("done: {}", hook.name) }))
    }
}

fn hook() -> Arc<HookDef> {
    let yaml = "post_send_message:\n  - {name: slow, command: x, async: true}\n";
    let (hooks, problems) = parse_hooks(Path::new("test.yaml"), yaml, "server");
    assert!(problems.is_empty(), "{problems:?}");
    Arc::new(hooks.into_iter().next().unwrap())
}

fn job(hook: &Arc<HookDef>, notices: Option<LateEvents>) -> Job {
    Job {
        hook: hook.clone(),
        event: Event::PostSendMessage,
        input: json!({}),
        state: EventState::default(),
        envelope: Envelope::default(),
        notices,
        source: "external",
        spend: Default::default(),
    }
}

async fn until(check: impl Fn() -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(5), async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the condition never held");
}

#[tokio::test]
async fn a_full_queue_drops_the_run_and_says_so() {
    let runner = Arc::new(Gated::default());
    let queue = AsyncHooks::new(runner.clone(), 1, 1);
    let hook = hook();
    // Nothing else runs between these calls (one thread): the first fills the queue.
    let queued: Vec<bool> = (0..5).map(|_| queue.submit(job(&hook, None))).collect();
    assert_eq!(queued, [true, false, false, false, false]);
    // Once the dispatcher took it, the queue has room again.
    until(|| runner.started.load(Ordering::SeqCst) == 1).await;
    assert!(queue.submit(job(&hook, None)));
}

#[tokio::test]
async fn at_most_the_workers_run_at_once_and_the_rest_wait_in_the_queue() {
    let runner = Arc::new(Gated::default());
    let queue = AsyncHooks::new(runner.clone(), 16, 16);
    let hook = hook();
    for _ in 0..WORKERS + 3 {
        assert!(queue.submit(job(&hook, None)));
    }
    until(|| runner.started.load(Ordering::SeqCst) == WORKERS).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(runner.started.load(Ordering::SeqCst), WORKERS);
    runner.gate.notify_waiters();
    until(|| runner.started.load(Ordering::SeqCst) == WORKERS + 3).await;
}

#[tokio::test]
async fn a_notice_reaches_the_chat_only_while_it_runs() {
    let runner = Arc::new(Gated::default());
    let queue = AsyncHooks::new(runner.clone(), 4, 4);
    let hook = hook();
    let (events, mut received) = mpsc::channel(8);
    assert!(queue.submit(job(&hook, Some(LateEvents::new(&events)))));
    until(|| runner.started.load(Ordering::SeqCst) == 1).await;
    runner.gate.notify_waiters();
    let notice = tokio::time::timeout(Duration::from_secs(5), received.recv())
        .await
        .unwrap();
    assert_eq!(
        notice,
        Some(ChatEvent::Notice {
            level: NoticeLevel::Info,
            message: "done: slow".into(),
            source: "external".into(),
        })
    );
    // The chat ended (its sender is gone): a later notice goes nowhere, and the channel is not
    // kept open by the queue.
    assert!(queue.submit(job(&hook, Some(LateEvents::new(&events)))));
    until(|| runner.started.load(Ordering::SeqCst) == 2).await;
    drop(events);
    runner.gate.notify_waiters();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), received.recv())
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn shutdown_takes_no_more_runs_and_ends_the_running_ones_after_the_grace() {
    let runner = Arc::new(Gated::default());
    let queue = AsyncHooks::new(runner.clone(), 4, 4);
    let hook = hook();
    assert!(queue.submit(job(&hook, None)));
    until(|| runner.started.load(Ordering::SeqCst) == 1).await;
    let started = std::time::Instant::now();
    queue.shutdown(Duration::from_millis(100)).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        runner.dropped.load(Ordering::SeqCst),
        1,
        "the run was ended"
    );
    assert!(!queue.submit(job(&hook, None)), "no runs after shutdown");
}
