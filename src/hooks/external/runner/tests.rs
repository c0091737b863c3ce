use super::*;
use serde_json::json;

/// A hook's environment for `event`, with the server's PATH.
fn env(event: &str) -> Vec<(String, std::ffi::OsString)> {
    environment(
        &server_variable,
        event,
        &std::env::temp_dir(),
        &Default::default(),
    )
}

#[tokio::test]
async fn exit_codes() {
    let cwd = std::env::temp_dir();
    let cases = [
        (
            "cat >/dev/null; echo '{\"user_input\":\"x\"}'",
            "e",
            RunResult::Output(json!({"user_input":"x"})),
        ),
        ("true", "e", RunResult::Output(Value::Null)),
        (
            "echo 'not allowed' >&2; exit 2",
            "e",
            RunResult::Block("not allowed".into()),
        ),
        (
            "echo boom >&2; exit 3",
            "e",
            RunResult::Error("exit code 3: boom".into()),
        ),
        (
            "printf '{\"e\":\"%s\"}' \"$HOOKWIRE_HOOK_EVENT\"",
            "stop",
            RunResult::Output(json!({"e":"stop"})),
        ),
    ];
    for (command, event, expected) in cases {
        let result = run_command(
            command,
            &env(event),
            &cwd,
            &json!({}),
            Duration::from_secs(5),
        )
        .await;
        assert_eq!(result, expected, "{command}");
    }
}

#[tokio::test]
async fn a_command_past_its_timeout_is_a_timeout_not_an_error() {
    let cwd = std::env::temp_dir();
    let run = execute(
        "sleep 5",
        &env("e"),
        &cwd,
        &json!({}),
        Duration::from_millis(100),
    )
    .await;
    assert_eq!(
        run,
        Ok(CommandRun {
            timed_out: true,
            ..CommandRun::default()
        })
    );
    assert_eq!(run.map(CommandRun::result), Ok(RunResult::Timeout));
}

#[test]
fn the_exit_code_contract() {
    let ended = |exit_code: Option<i32>, stdout: &str, stderr: &str| {
        CommandRun {
            exit_code,
            stdout: stdout.into(),
            stderr: stderr.into(),
            timed_out: false,
        }
        .result()
    };
    assert_eq!(ended(Some(0), " {} \n", ""), RunResult::Output(json!({})));
    assert_eq!(
        ended(Some(0), "\n", "noise"),
        RunResult::Output(Value::Null)
    );
    assert!(
        matches!(ended(Some(0), "nope", ""), RunResult::Error(e) if e.starts_with("stdout is not JSON"))
    );
    assert_eq!(
        ended(Some(2), "{}", " \n"),
        RunResult::Block("blocked by a hook".into())
    );
    assert_eq!(ended(Some(2), "", "no\n"), RunResult::Block("no".into()));
    assert_eq!(
        ended(Some(1), "", "x"),
        RunResult::Error("exit code 1: x".into())
    );
    assert_eq!(
        ended(None, "", ""),
        RunResult::Error("killed by a signal".into())
    );
    let late = CommandRun {
        exit_code: Some(0),
        timed_out: true,
        ..CommandRun::default()
    };
    assert_eq!(late.result(), RunResult::Timeout);
}

#[tokio::test]
async fn large_input_does_not_deadlock() {
    let big = json!({"messages": "x".repeat(300_000)});
    let result = run_command(
        "wc -c | awk '{print \"{\\\"n\\\":\" $1 \"}\"}'",
        &env("e"),
        &std::env::temp_dir(),
        &big,
        Duration::from_secs(10),
    )
    .await;
    let RunResult::Output(value) = result else {
        panic!("{result:?}")
    };
    assert!(value["n"].as_u64().unwrap() > 300_000);
}

#[test]
fn workspace_http_hooks_may_call_only_urls_under_an_allowed_entry() {
    let allowed = [
        "http://127.0.0.1:9".to_string(),
        "https://hooks.example/api/".to_string(),
    ];
    let cases = [
        ("http://127.0.0.1:9/hook", true),
        ("http://127.0.0.1:9", true),
        ("https://hooks.example/api/check?x=1", true),
        ("https://HOOKS.example/api/check", true),
        ("http://127.0.0.1:9000/hook", false),
        ("http://127.0.0.1:9@evil.example/", false),
        ("http://user@127.0.0.1:9/hook", false),
        ("https://hooks.example/api/../admin", false),
        ("https://hooks.example/apix", false),
        ("https://hooks.example/api/..%2fadmin", false),
        ("https://hooks.example/api/%2E%2E/admin", false),
        ("https://hooks.example/api/a%5c..%5cadmin", false),
        ("http://hooks.example/api/check", false),
        ("https://hooks.example.evil/api/", false),
        ("not a url", false),
    ];
    for (url, expected) in cases {
        assert_eq!(url_allowed(url, &allowed), expected, "{url}");
    }
    assert!(!url_allowed("http://127.0.0.1:9/hook", &[]), "empty = none");
}

/// A hook agent that answers with a fixed text.
struct Fixed(&'static str);

#[async_trait::async_trait]
impl SubAgent for Fixed {
    async fn answer(
        &self,
        _task: String,
        _: Arc<crate::hooks::spend::HookSpend>,
    ) -> Result<String, String> {
        Ok(self.0.to_string())
    }
}

#[tokio::test]
async fn agent_hooks_ask_the_agent_they_name() {
    let runner = Runner::new(
        Arc::new(crate::llm::demo::DemoModel::default()),
        "m".into(),
        Arc::new(Fixed(r#"{"reason":"default"}"#)),
        std::env::temp_dir(),
    )
    .with_agent("reviewer", Arc::new(Fixed(r#"{"reason":"reviewer"}"#)));
    let yaml = "stop:\n  - {type: agent, prompt: p}\n  - {type: agent, prompt: p, agent: reviewer}\n  - {type: agent, prompt: p, agent: nobody}\n";
    let (hooks, problems) =
        super::super::config::parse_hooks(std::path::Path::new("h.yaml"), yaml, "server");
    assert!(problems.is_empty(), "{problems:?}");
    let mut answers = Vec::new();
    for hook in &hooks {
        answers.push(
            runner
                .run(
                    hook,
                    &json!({}),
                    Duration::from_secs(5),
                    &Default::default(),
                )
                .await,
        );
    }
    assert_eq!(
        answers,
        [
            RunResult::Output(json!({"reason":"default"})),
            RunResult::Output(json!({"reason":"reviewer"})),
            RunResult::Error("no hook agent named \"nobody\" is configured".into()),
        ]
    );
}

#[test]
fn prompts_carry_the_envelope_as_their_dialect_wants() {
    let input = json!({"tool_name":"read_file"});
    let seed_001 = task(Dialect::Hookwire, "check {{tool_name}}", false, &input);
    assert!(seed_001.starts_with("check read_file\n\nReply with exactly one JSON object"));
    let seed_004 = task(Dialect::Seed004, "check", true, &input);
    assert!(seed_004.starts_with("check\n\nThe event:\n{\"tool_name\":\"read_file\"}"));
    let claude = task(Dialect::Claude, "Judge: $ARGUMENTS", false, &input);
    assert!(claude.starts_with("Judge: {\"tool_name\":\"read_file\"}"));
    assert!(claude.contains("{\"ok\": false"));
}

#[test]
fn templates_fill_variables() {
    let input = json!({"tool_name":"read_file","tool_arguments":"{\"path\":\"a\"}","model":"m"});
    assert_eq!(
        render(
            "{{tool_name}} {{tool_arguments}} {{model}} {{user_input}}!",
            &input
        ),
        "read_file {\"path\":\"a\"} m !"
    );
}
