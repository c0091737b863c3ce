use super::*;
use crate::hooks::external::hook::Dialect;
use crate::hooks::external::wire::command_result;
use crate::process::CommandRun;
use serde_json::json;

/// A hook's environment for `event`, with the server's PATH.
fn env(event: &str) -> Vec<(String, std::ffi::OsString)> {
    environment(
        &server_variable,
        event,
        &std::env::temp_dir(),
        None,
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
    .await
    .map_err(|error| error.to_string());
    assert_eq!(
        run,
        Ok(CommandRun {
            timed_out: true,
            ..CommandRun::default()
        })
    );
    assert_eq!(
        run.map(|run| command_result(Dialect::Hookwire, run)),
        Ok(RunResult::Timeout)
    );
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
    ) -> Result<String, SubAgentError> {
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
        crate::hooks::external::load::parse_hooks(std::path::Path::new("h.yaml"), yaml, "server");
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
                    None,
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

/// A fake server environment: a PATH, a HOME and two secrets no hook may see.
fn lookup(name: &str) -> Option<std::ffi::OsString> {
    match name {
        "PATH" => Some("/usr/bin:/bin".into()),
        "HOME" => Some("/home/h".into()),
        "HOOKWIRE_SECRET" => Some("secret".into()),
        "OPENAI_API_KEY" => Some("sk-1".into()),
        _ => None,
    }
}

#[test]
fn the_environment_is_the_passed_variables_the_hook_variables_and_the_env_map() {
    let own = std::collections::BTreeMap::from([
        ("TOKEN".to_string(), "Bearer ${OPENAI_API_KEY}".to_string()),
        ("MODE".to_string(), "strict".to_string()),
    ]);
    let env = environment(
        &lookup,
        "stop",
        std::path::Path::new("/ws"),
        Some("s-1"),
        &own,
    );
    let env: Vec<(&str, &str)> = env
        .iter()
        .map(|(name, value)| (name.as_str(), value.to_str().unwrap()))
        .collect();
    assert_eq!(
        env,
        [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/home/h"),
            ("HOOKWIRE_HOOK_EVENT", "stop"),
            ("JCLI_HOOK_EVENT", "stop"),
            ("HOOKWIRE_CWD", "/ws"),
            ("JCLI_CWD", "/ws"),
            ("CLAUDE_PROJECT_DIR", "/ws"),
            ("GEMINI_PROJECT_DIR", "/ws"),
            ("GEMINI_CWD", "/ws"),
            ("GEMINI_SESSION_ID", "s-1"),
            ("MODE", "strict"),
            ("TOKEN", "Bearer sk-1"),
        ]
    );
}
