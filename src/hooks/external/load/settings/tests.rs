use super::*;

/// Whether `hook` runs at `event` for `tool` (under both its names) and `model`.
fn runs(hook: &HookDef, event: Event, tool: Option<&str>, model: &str) -> bool {
    let names = crate::hooks::external::wire::tools::names(hook.dialect, tool);
    hook.applies(event, names, model, None)
}

fn parse(text: &str, dialect: Dialect) -> (Vec<HookDef>, Vec<String>) {
    let (hooks, problems) = parse_settings(Path::new("settings.json"), text, "workspace", dialect);
    (
        hooks,
        problems.iter().map(|p| p.labelled().to_string()).collect(),
    )
}

#[test]
fn a_claude_settings_file() {
    let text = r#"{
  "permissions": {"allow": ["Read"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Read|Grep", "hooks": [
        {"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh", "timeout": 5}
      ]}
    ],
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}],
    "SubagentStop": [{"hooks": [{"type": "command", "command": "x"}]}],
    "PostToolUse": [{"matcher": "*", "hooks": [
      {"type": "mcp_tool", "server": "s", "tool": "t"},
      {"type": "command", "command": "log.sh", "async": true}
    ]}]
  }
}"#;
    assert_eq!(detect(text), Some(Dialect::Claude));
    let (hooks, problems) = parse(text, Dialect::Claude);
    let summary: Vec<(Event, Dialect, u64)> =
        hooks.iter().map(|h| (h.event, h.dialect, h.line)).collect();
    assert_eq!(
        summary,
        [
            (Event::PostToolExecution, Dialect::Claude, 13),
            (Event::PreToolExecution, Dialect::Claude, 6),
            (Event::PreSendMessage, Dialect::Claude, 9),
        ]
    );
    assert_eq!(hooks[1].timeout, std::time::Duration::from_secs(5));
    assert!(runs(
        &hooks[1],
        Event::PreToolExecution,
        Some("read_file"),
        "m"
    ));
    assert!(!runs(
        &hooks[1],
        Event::PreToolExecution,
        Some("list_dir"),
        "m"
    ));
    assert!(
        problems.iter().all(|p| p.starts_with("warning")),
        "{problems:?}"
    );
    for expected in ["SubagentStop is a Claude Code event", "mcp_tool"] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{expected}: {problems:?}"
        );
    }
    // `async` is honoured: the hook runs off the chat's path, so there is nothing to warn.
    assert!(
        !problems.iter().any(|p| p.contains("async")),
        "{problems:?}"
    );
    assert!(hooks[0].run_async && !hooks[1].run_async && !hooks[2].run_async);
}

#[test]
fn a_gemini_settings_file() {
    let text = r#"{"hooksConfig": {"disabled": ["off"]},
 "hooks": {"BeforeTool": [{"matcher": "read_file", "sequential": true, "hooks": [
     {"name": "guard", "type": "command", "command": "./g.sh", "timeout": 2000},
     {"name": "off", "type": "command", "command": "./off.sh"}]}],
   "SessionStart": [{"matcher": "startup", "hooks": [{"command": "./s.sh"}]}]}}"#;
    assert_eq!(detect(text), Some(Dialect::Gemini));
    let (hooks, problems) = parse(text, Dialect::Gemini);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(hooks.len(), 2, "the disabled one is left out");
    assert_eq!(hooks[0].name, "guard");
    assert_eq!(hooks[0].timeout, std::time::Duration::from_secs(2));
    assert_eq!(
        hooks[1].dialect,
        Dialect::Gemini,
        "a shared name in a Gemini file"
    );
    assert!(runs(&hooks[1], Event::SessionStart, None, "m"));
}

#[test]
fn errors_and_switches() {
    let (_, problems) = parse(
        r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}}"#,
        Dialect::Claude,
    );
    assert!(
        problems[0]
            .contains("hooks.PreToolUse[0].hooks[0]: command hooks need a non-empty `command`"),
        "{problems:?}"
    );
    let (_, problems) = parse(r#"{"hooks": {"PreToolUze": []}}"#, Dialect::Claude);
    assert!(problems[0].starts_with("error") && problems[0].contains("unknown event"));
    let (_, problems) = parse("{", Dialect::Claude);
    assert!(problems[0].contains("not valid JSON"));
    let (hooks, problems) = parse(
        r#"{"disableAllHooks": true, "hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}}"#,
        Dialect::Claude,
    );
    assert!(hooks.is_empty() && problems[0].contains("disableAllHooks"));
    assert!(
        !has_hooks(br#"{"permissions": {}}"#) && has_hooks(b"{") && has_hooks(br#"{"hooks":{}}"#)
    );
    assert_eq!(detect("stop:\n  - command: x\n"), None);
}
