//! Hooks that do not hold the chain: `async: true` ones handed to the queue, and hooks that
//! call the model past the chat's hook model calls.

use super::*;

#[tokio::test]
async fn an_async_hook_is_handed_to_the_queue_with_the_values_so_far_and_the_chain_goes_on() {
    let yaml = "pre_send_message:\n  - {name: a, command: x}\n  - {name: slow, command: x, async: true}\n  - {name: b, command: x}\n";
    let (hooks, problems) = parse_hooks(Path::new("test.yaml"), yaml, "server");
    assert!(problems.is_empty(), "{problems:?}");
    let hooks: Vec<Arc<HookDef>> = hooks.into_iter().map(Arc::new).collect();
    let runner = Arc::new(Scripted::new(|name, input| {
        let seen = input["user_input"].as_str().unwrap_or_default();
        RunResult::Output(json!({
            "user_input": format!("{seen}+{name}"),
            "systemMessage": format!("note from {name}"),
        }))
    }));
    let queue = AsyncHooks::new(runner.clone(), 8, 8);
    let (events, mut received) = crate::types::event_channel();
    let chain = Chain {
        event: Event::PreSendMessage,
        hooks: &hooks,
        budget: BUDGET,
        background: Some(Background {
            queue: &queue,
            notices: Some(LateEvents::new(&events)),
            source: "external",
        }),
        spend: Default::default(),
    };
    let mut state = EventState {
        user_input: Some("hi".into()),
        ..Default::default()
    };
    let outcome = chain
        .run(runner.as_ref(), &Envelope::default(), &mut state)
        .await;
    // Its answer changes nothing, and it is not among the hooks that ran in the chain.
    assert_eq!(state.user_input.as_deref(), Some("hi+a+b"));
    assert_eq!(outcome.notices, ["note from a", "note from b"]);
    assert_eq!(ran(&outcome), [("a", Ran::Success), ("b", Ran::Success)]);
    // It ran from the queue, with the input as `a` left it, and its notice reached the chat.
    let notice = tokio::time::timeout(Duration::from_secs(5), received.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        notice,
        crate::types::ChatEvent::Notice {
            level: crate::types::NoticeLevel::Info,
            message: "note from slow".into(),
            source: "external".into(),
        }
    );
    let slow: Vec<String> = runner
        .seen()
        .into_iter()
        .filter(|(name, ..)| name == "slow")
        .map(|(_, input, _)| input["user_input"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(slow, ["hi+a"]);
}

#[tokio::test]
async fn past_the_chats_hook_model_calls_model_hooks_are_skipped_and_a_block_one_fails_closed() {
    let yaml = "pre_tool_execution:
  - {name: judge, type: llm, prompt: p}
  - {name: guard, command: x}
  - {name: strict, type: llm, prompt: p, on_error: block}
";
    let (hooks, problems) = parse_hooks(Path::new("test.yaml"), yaml, "server");
    assert!(problems.is_empty(), "{problems:?}");
    let hooks: Vec<Arc<HookDef>> = hooks.into_iter().map(Arc::new).collect();
    let runner = Scripted::new(|_, _| RunResult::Output(json!({})));
    let spend = Arc::new(HookSpend::new(1, None));
    spend.try_call().unwrap();
    let chain = Chain {
        event: Event::PreToolExecution,
        hooks: &hooks,
        budget: BUDGET,
        background: None,
        spend: spend.clone(),
    };
    let mut state = EventState {
        tool_name: Some("read_file".into()),
        ..Default::default()
    };
    let outcome = chain.run(&runner, &Envelope::default(), &mut state).await;
    // Only the command hook ran; the strict one refused the tool as its failure would.
    assert_eq!(runner.names(), ["guard"]);
    assert!(
        matches!(&outcome.control, Some(ChainControl::Skip(reason)) if reason.contains("strict")),
        "{:?}",
        outcome.control
    );
    assert_eq!(outcome.warnings.len(), 1, "{:?}", outcome.warnings);
    assert!(outcome.warnings[0].contains("limits.max_hook_model_calls"));
    // The chat's one notice: a later chain says nothing more.
    let again = chain.run(&runner, &Envelope::default(), &mut state).await;
    assert!(again.warnings.is_empty());
}

#[tokio::test]
async fn side_by_side_a_capped_model_hook_is_left_out_or_ends_the_chain_after_its_group() {
    for (on_error, refused) in [("skip", false), ("abort", false), ("block", true)] {
        let yaml = format!(
            "pre_tool_execution:
  parallel: true
  hooks:
    - {{name: guard, command: x}}
    - {{name: judge, type: llm, prompt: p, on_error: {on_error}}}
    - {{name: after, command: y}}
"
        );
        let (hooks, problems) = parse_hooks(Path::new("test.yaml"), &yaml, "server");
        assert!(problems.is_empty(), "{problems:?}");
        let hooks: Vec<Arc<HookDef>> = hooks.into_iter().map(Arc::new).collect();
        let runner = Scripted::new(|_, _| RunResult::Output(json!({})));
        let spend = Arc::new(HookSpend::new(1, None));
        spend.try_call().unwrap();
        let chain = Chain {
            event: Event::PreToolExecution,
            hooks: &hooks,
            budget: BUDGET,
            background: None,
            spend,
        };
        let mut state = EventState {
            tool_name: Some("read_file".into()),
            ..Default::default()
        };
        let outcome = chain.run(&runner, &Envelope::default(), &mut state).await;
        let mut names = runner.names();
        names.sort();
        match on_error {
            // Left out of the group: the hooks around it still run together.
            "skip" => assert_eq!(names, ["after", "guard"]),
            // The chain ends after the hooks before it in the group.
            _ => assert_eq!(names, ["guard"], "{on_error}"),
        }
        assert_eq!(
            matches!(&outcome.control, Some(ChainControl::Skip(reason)) if reason.contains("judge")),
            refused,
            "{on_error}: {:?}",
            outcome.control
        );
        if !refused {
            assert!(
                outcome.control.is_none(),
                "{on_error}: {:?}",
                outcome.control
            );
        }
        assert_eq!(outcome.warnings.len(), 1, "{:?}", outcome.warnings);
    }
}

/// Side by side at `pre_tool_execution`, of two decisions the stronger wins whatever order the
/// hooks are declared in: stop, then skip, then a retry (the tool does not run), then ask. An
/// approval never runs what a guard refused.
#[tokio::test]
async fn side_by_side_the_stronger_decision_wins_in_either_order() {
    let answers = [
        ("stop", json!({"action": "stop", "reason": "stop"}), 3),
        ("skip", json!({"action": "skip", "reason": "skip"}), 2),
        ("retry", json!({"retry_feedback": "retry"}), 1),
        ("ask", json!({"action": "ask", "reason": "ask"}), 0),
    ];
    for (first, first_answer, first_rank) in &answers {
        for (second, second_answer, second_rank) in &answers {
            if first == second {
                continue;
            }
            let yaml = format!(
                "pre_tool_execution:\n  parallel: true\n  hooks:\n    - {{name: {first}, command: {first}}}\n    - {{name: {second}, command: {second}}}\n"
            );
            let (hooks, problems) = parse_hooks(Path::new("test.yaml"), &yaml, "server");
            assert!(problems.is_empty(), "{problems:?}");
            let hooks: Vec<Arc<HookDef>> = hooks.into_iter().map(Arc::new).collect();
            let (a, b) = (first_answer.clone(), second_answer.clone());
            let first_name = first.to_string();
            let runner = Scripted::new(move |name, _| {
                RunResult::Output(if name == first_name {
                    a.clone()
                } else {
                    b.clone()
                })
            });
            let chain = Chain {
                event: Event::PreToolExecution,
                hooks: &hooks,
                budget: BUDGET,
                background: None,
                spend: Default::default(),
            };
            let mut state = EventState {
                tool_name: Some("read_file".into()),
                ..Default::default()
            };
            let outcome = chain.run(&runner, &Envelope::default(), &mut state).await;
            let winner = if first_rank > second_rank {
                first
            } else {
                second
            };
            let won = match &outcome.control {
                Some(ChainControl::Stop(_)) => "stop",
                Some(ChainControl::Skip(_)) => "skip",
                Some(ChainControl::Retry(_)) => "retry",
                Some(ChainControl::Ask(_)) => "ask",
                None => "none",
            };
            assert_eq!(won, *winner, "{first} then {second}");
        }
    }
}
