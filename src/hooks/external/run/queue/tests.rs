//! The async queue's rules with a runner whose runs wait for the test.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::Notify;

use super::*;
use crate::hooks::external::hook::RunResult;
use crate::hooks::external::load::parse_hooks;
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
    async fn run(
        &self,
        hook: &HookDef,
        _: &Value,
        _: Duration,
        _: &Arc<HookSpend>,
        _: Option<&crate::types::Person>,
    ) -> RunResult {
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

// Paused time: the runtime moves the clock only once every task waits, so the pause below
// lets everything that could start do so.
#[tokio::test(start_paused = true)]
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
    let (events, mut received) = crate::types::event_channel();
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

#[tokio::test(start_paused = true)]
async fn shutdown_takes_no_more_runs_and_ends_the_running_ones_after_the_grace() {
    let runner = Arc::new(Gated::default());
    let queue = AsyncHooks::new(runner.clone(), 4, 4);
    let hook = hook();
    assert!(queue.submit(job(&hook, None)));
    until(|| runner.started.load(Ordering::SeqCst) == 1).await;
    let started = tokio::time::Instant::now();
    queue.shutdown(Duration::from_millis(100)).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "it waited the grace"
    );
    assert_eq!(
        runner.dropped.load(Ordering::SeqCst),
        1,
        "the run was ended"
    );
    assert!(!queue.submit(job(&hook, None)), "no runs after shutdown");
}

// ─── fairness (docs/protocol.md §15) ───

fn waiting_hook() -> Arc<HookDef> {
    let yaml = "pre_tool_execution:\n  - {name: audit, command: x, async: true, on_full: wait}\n";
    let (hooks, problems) = parse_hooks(Path::new("test.yaml"), yaml, "server");
    assert!(problems.is_empty(), "{problems:?}");
    Arc::new(hooks.into_iter().next().unwrap())
}

/// A run of `hook` from the connection `session`, numbered `n` in its input.
fn job_from(hook: &Arc<HookDef>, session: &str, n: usize) -> Job {
    let mut job = job(hook, None);
    job.envelope.session_id = session.into();
    job.input = json!({ "n": format!("{session}{n}") });
    job
}

#[tokio::test]
async fn one_connection_holds_at_most_its_share_of_the_queue() {
    let runner = Arc::new(Gated::default());
    let queue = AsyncHooks::new(runner.clone(), 16, 2);
    let hook = hook();
    // No await in between: the dispatcher has taken none of them yet.
    let from_a: Vec<bool> = (0..4)
        .map(|n| queue.submit(job_from(&hook, "a", n)))
        .collect();
    assert_eq!(
        from_a,
        [true, true, false, false],
        "a's own runs are dropped"
    );
    assert!(queue.submit(job_from(&hook, "b", 0)), "b still has room");
    assert!(queue.submit(job_from(&hook, "b", 1)));
    assert!(!queue.submit(job_from(&hook, "b", 2)));
}

#[test]
fn connections_take_turns() {
    let hook = hook();
    let limits = Limits {
        capacity: 16,
        per_connection: 8,
    };
    let mut waiting = Waiting::default();
    for n in 0..3 {
        assert!(waiting
            .push(Box::new(job_from(&hook, "a", n)), limits)
            .is_ok());
    }
    assert!(waiting
        .push(Box::new(job_from(&hook, "b", 0)), limits)
        .is_ok());
    assert!(waiting
        .push(Box::new(job_from(&hook, "c", 0)), limits)
        .is_ok());
    let order: Vec<String> = std::iter::from_fn(|| waiting.pop())
        .map(|job| job.input["n"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(order, ["a0", "b0", "c0", "a1", "a2"]);
    assert_eq!(waiting.total, 0);
    assert!(waiting.turns.is_empty() && waiting.by_connection.is_empty());
}

/// One client with many connections filled the queue: another connection's run still gets in,
/// and the newest run of the connection holding the most makes room (issue: 17 connections of
/// one client filled the 1,024 slots and another chat's audit run was dropped).
#[test]
fn a_full_queue_makes_room_for_a_connection_holding_less_than_the_largest_holder() {
    let hook = hook();
    let limits = Limits {
        capacity: 6,
        per_connection: 3,
    };
    let mut waiting = Waiting::default();
    for (session, n) in [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("c", 0)] {
        let pushed = waiting.push(Box::new(job_from(&hook, session, n)), limits);
        assert!(matches!(pushed, Ok(None)), "{session}{n}");
    }
    let evicted = |pushed: Result<Option<Box<Job>>, (Box<Job>, Full)>| match pushed {
        Ok(Some(job)) => Some(job.input["n"].as_str().unwrap_or_default().to_string()),
        Ok(None) => None,
        Err((_, full)) => panic!("refused: {full:?}"),
    };
    // d holds none: a, the largest holder, gives up its newest.
    let pushed = waiting.push(Box::new(job_from(&hook, "d", 0)), limits);
    assert_eq!(evicted(pushed).as_deref(), Some("a2"));
    // c holds 1, a and b hold 2: the first of them by name gives up its newest.
    let pushed = waiting.push(Box::new(job_from(&hook, "c", 1)), limits);
    assert_eq!(evicted(pushed).as_deref(), Some("a1"));
    // b and c hold 2, a and d 1: a connection holding 2 finds no one holding more.
    let refused = waiting.push(Box::new(job_from(&hook, "c", 2)), limits);
    assert!(matches!(refused, Err((_, Full::Queue))));
    assert_eq!(waiting.total, 6);
    let order: Vec<String> = std::iter::from_fn(|| waiting.pop())
        .map(|job| job.input["n"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(order, ["a0", "b0", "c0", "d0", "b1", "c1"]);
}

#[tokio::test(start_paused = true)]
async fn an_on_full_wait_run_waits_for_room_and_gives_up_when_its_budget_is_spent() {
    let runner = Arc::new(Gated::default());
    let queue = Arc::new(AsyncHooks::new(runner.clone(), 1, 8));
    let plain = hook();
    // The workers run (and wait for the gate); one more run fills the queue.
    for n in 0..WORKERS {
        assert!(queue.submit(job_from(&plain, "a", n)));
        until(|| runner.started.load(Ordering::SeqCst) == n + 1).await;
    }
    assert!(queue.submit(job_from(&plain, "a", WORKERS)));
    // Full, and its only waiting run is a's own: a's next run is dropped (another connection's
    // would take that run's place).
    assert!(
        !queue.submit(job_from(&plain, "a", WORKERS + 1)),
        "full: dropped"
    );
    // With no room coming, it waits its whole budget (on the paused clock), then is dropped.
    let audit = waiting_hook();
    let began = tokio::time::Instant::now();
    assert!(
        !queue
            .hand_over(job_from(&audit, "a", 10), Duration::from_secs(30))
            .await
    );
    assert_eq!(began.elapsed(), Duration::from_secs(30));
    // With room coming (the runs end), it is queued and runs.
    let handed = tokio::spawn({
        let queue = queue.clone();
        let audit = audit.clone();
        async move {
            queue
                .hand_over(job_from(&audit, "a", 11), Duration::from_secs(30))
                .await
        }
    });
    tokio::task::yield_now().await;
    runner.gate.notify_waiters();
    assert!(handed.await.unwrap(), "queued once there was room");
    until(|| runner.started.load(Ordering::SeqCst) == WORKERS + 2).await;
}

#[test]
fn a_dropped_run_is_named_by_its_chat_event_hook_tool_and_an_arguments_hash() {
    let hook = waiting_hook();
    let mut job = job(&hook, None);
    job.event = Event::PreToolExecution;
    job.envelope.run_id = Some("chat-7".into());
    job.state.tool_name = Some("read_file".into());
    job.state.tool_arguments = Some(json!({"path": "secret.txt"}));
    let line = Dropped(&job).to_string();
    assert_eq!(
        line,
        format!(
            "chat=chat-7 event=pre_tool_execution hook=audit tool=read_file arguments_sha256={}",
            arguments_hash(&json!({"path": "secret.txt"}))
        )
    );
    assert_eq!(arguments_hash(&json!({"path": "secret.txt"})).len(), 16);
    assert!(
        !line.contains("secret.txt"),
        "never the arguments themselves"
    );
}
