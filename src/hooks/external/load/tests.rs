use std::path::Path;

use super::*;
use std::time::Duration;

use crate::hooks::external::hook::{Event, Handler, OnError, OnFull};
use crate::types::Problem;

/// Whether `hook` runs at `event` for `tool` (under both its names) and `model`.
fn runs(hook: &HookDef, event: Event, tool: Option<&str>, model: &str) -> bool {
    let names = crate::hooks::external::wire::tools::names(hook.dialect, tool);
    hook.applies(event, names, model, None)
}

fn parse(text: &str) -> (Vec<HookDef>, Vec<String>) {
    let (hooks, problems) = parse_hooks(Path::new("hooks.yaml"), text, "server");
    assert!(problems.iter().all(Problem::is_error), "{problems:?}");
    (hooks, problems.iter().map(ToString::to_string).collect())
}

#[test]
fn both_vocabularies_and_all_handlers() {
    let (hooks, problems) = parse(
        "pre_tool_execution:\n  - command: ./guard.sh\n    timeout: 5\n    filter:\n      tool_matcher: \"read_file|search_text\"\n\
         before_model_call:\n  - type: http\n    url: http://127.0.0.1:1/h\n    matcher: '^gpt-'\n    capabilities: [system_prompt]\n\
         stop:\n  - type: prompt\n    prompt: 'judge {{assistant_output}}'\n\
         after_tool_dispatch:\n  - type: agent\n    prompt: check\n    on_error: abort\n\
         pre_send_message:\n  - command: x\n    on_error: block\n    env: {A: 'b ${PATH}'}\n",
    );
    assert_eq!(problems, Vec::<String>::new());
    let summary: Vec<(Event, &str, u64)> = hooks
        .iter()
        .map(|h| (h.event, h.handler.kind(), h.line))
        .collect();
    assert_eq!(
        summary,
        vec![
            (Event::PreToolExecution, "command", 2),
            (Event::PreLlmRequest, "http", 7),
            (Event::Stop, "llm", 12),
            (Event::PostToolExecution, "agent", 15),
            (Event::PostToolExecutionFailure, "agent", 15),
            (Event::PreSendMessage, "command", 19),
        ]
    );
    assert_eq!(hooks[0].timeout, Duration::from_secs(5));
    let pattern = hooks[0].filter.tool_matcher.as_ref().unwrap();
    assert!(pattern.is_match("read_file") && pattern.is_match("search_text"));
    assert!(!pattern.is_match("read_file_x"), "the whole name matches");
    assert_eq!(hooks[1].event_name, "before_model_call");
    assert_eq!(hooks[2].timeout, Duration::from_secs(30));
    assert_eq!(hooks[3].on_error, OnError::Abort);
    assert_eq!(hooks[5].on_error, OnError::Block);
    let Handler::Command { env, .. } = &hooks[5].handler else {
        panic!("{:?}", hooks[5].handler)
    };
    assert_eq!(env.get("A").map(String::as_str), Some("b ${PATH}"));
}

#[test]
fn env_maps_name_server_variables_only_at_server_level_and_only_set_ones() {
    let problems = |text: &str, level: &'static str| -> Vec<String> {
        let (_, problems) = parse_hooks(Path::new("hooks.yaml"), text, level);
        problems.iter().map(ToString::to_string).collect()
    };
    let hook = |env: &str| format!("stop:\n  - command: x\n    env: {env}\n");
    assert_eq!(
        problems(
            &hook("{TOKEN: 'Bearer ${PATH}', LITERAL: 'a $b'}"),
            "server"
        ),
        Vec::<String>::new()
    );
    let cases = [
        (
            "{TOKEN: '${HOOKWIRE_TEST_NEVER_SET}'}",
            "server",
            "env TOKEN names ${HOOKWIRE_TEST_NEVER_SET}, which is not set",
        ),
        (
            "{TOKEN: '${PATH}'}",
            "workspace",
            "only server-level hook files may",
        ),
        ("{TOKEN: '${PATH'}", "server", "without a closing"),
        ("{TOKEN: '${1X}'}", "server", "is not a variable name"),
        ("{'1X': a}", "server", "env name \"1X\" must be"),
        ("{HOOKWIRE_HOOK_RUN: a}", "server", "is reserved"),
    ];
    for (env, level, expected) in cases {
        let found = problems(&hook(env), level);
        assert!(
            found.iter().any(|p| p.contains(expected)),
            "{env}: expected {expected:?} in {found:?}"
        );
    }
    let http = "stop:\n  - type: http\n    url: http://127.0.0.1:1/\n    env: {A: b}\n";
    assert!(problems(http, "server")[0].contains("`env` applies to command hooks"));
}

#[test]
fn problems_name_file_and_line() {
    let cases = [
        (
            "pre_dance:\n  - command: x\n",
            "hooks.yaml:1: unknown event \"pre_dance\"",
        ),
        (
            "stop:\n  - type: shell\n    command: x\n",
            "hooks.yaml:2: stop[0]: unknown handler type \"shell\"",
        ),
        (
            "stop:\n  - command: x\n    matcher: '('\n",
            "hooks.yaml:2: stop[0]: matcher is not a valid regex",
        ),
        (
            "stop:\n  - command: x\n    timeout: -3\n",
            "hooks.yaml:2: stop[0]: timeout -3",
        ),
        ("stop:\n  - command: x\n    timeout: soon\n", "hooks.yaml"),
        ("stop:\n  - command: x\n    colour: red\n", "colour"),
        (
            "stop:\n  - type: http\n",
            "hooks.yaml:2: stop[0]: http hooks need a non-empty `url`",
        ),
        (
            "stop:\n  - command: x\n    capabilities: [everything]\n",
            "unknown capability \"everything\"",
        ),
        (
            "stop:\n  - command: x\n    on_error: explode\n",
            "on_error \"explode\"",
        ),
    ];
    for (text, expected) in cases {
        let (_, problems) = parse(text);
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{text:?}: expected {expected:?} in {problems:?}"
        );
    }
}

#[test]
fn filters_and_together() {
    let (hooks, _) = parse(
        "pre_tool_execution:\n  - command: x\n    matcher: '^read'\n    filter:\n      tool_name: read_file\n      tool_matcher: list_dir\n      model_prefix: gpt-\n",
    );
    let hook = &hooks[0];
    assert!(runs(
        hook,
        Event::PreToolExecution,
        Some("read_file"),
        "gpt-4o"
    ));
    assert!(
        !runs(hook, Event::PreToolExecution, Some("list_dir"), "gpt-4o"),
        "tool_name beats tool_matcher"
    );
    assert!(!runs(
        hook,
        Event::PreToolExecution,
        Some("read_file"),
        "llama"
    ));
}

#[test]
fn tool_matcher_takes_patterns() {
    let (hooks, _) = parse(
        "pre_tool_execution:\n  - command: x\n    filter: {tool_matcher: 'read_.*|list_dir'}\n",
    );
    let applies = |tool| runs(&hooks[0], Event::PreToolExecution, Some(tool), "m");
    assert!(applies("read_file") && applies("list_dir"));
    assert!(!applies("search_text") && !applies("my_list_dir"));
    let (_, problems) = parse_hooks(
        Path::new("h.yaml"),
        "stop:\n  - command: x\n    filter: {tool_matcher: '('}\n",
        "server",
    );
    assert!(problems[0]
        .to_string()
        .contains("tool_matcher is not a valid pattern"));
}

#[test]
fn matchers_read_as_their_dialect_and_events_pick_their_subject() {
    let (hooks, problems) = parse(
        "PreToolUse:\n  - {command: x, matcher: 'Read|Grep'}\n\
         BeforeTool:\n  - {command: x, matcher: 'read_.*', timeout: 1500}\n\
         run_completed:\n  - {command: x, matcher: '^chat$'}\n\
         run_failed:\n  - {command: x, matcher: '^cron$'}\n",
    );
    assert!(problems.is_empty(), "{problems:?}");
    let tool = |i: usize, name| runs(&hooks[i], Event::PreToolExecution, Some(name), "m");
    // Claude's exact list matches Claude's name or hookwire's.
    assert!(tool(0, "read_file") && tool(0, "search_text") && !tool(0, "list_dir"));
    assert_eq!(hooks[0].dialect, Dialect::Claude);
    assert!(tool(1, "read_file") && !tool(1, "list_dir"));
    assert_eq!(hooks[1].timeout, Duration::from_millis(1500), "Gemini: ms");
    assert!(
        runs(&hooks[2], Event::RunCompleted, None, "m"),
        "trigger_type"
    );
    assert!(!runs(&hooks[3], Event::RunFailed, None, "m"));

    let (hooks, problems) = parse_hooks(
        Path::new("h.yaml"),
        "after_context_build:\n  - {command: x, matcher: 'gpt'}\nUserPromptSubmit:\n  - {command: x, matcher: '*'}\n",
        "server",
    );
    let shown: Vec<String> = problems.iter().map(|p| p.labelled().to_string()).collect();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].starts_with("warning")
            && shown[0].contains("takes no matcher (the OpenHarness format)")
    );
    assert!(hooks[0].filter.matcher.is_none(), "ignored");
}

#[test]
fn claude_and_gemini_matchers() {
    let claude = |text| compile_matcher(text, Dialect::Claude, true).unwrap();
    assert!(claude("*").is_none() && claude("").is_none());
    let list = claude("Edit, Write|Read").unwrap();
    assert!(list.is_match("Write") && list.is_match("Read") && !list.is_match("NotebookEdit"));
    let regex = claude("Edit.*").unwrap();
    assert!(regex.is_match("NotebookEdit"), "regexes are unanchored");
    let gemini = |text, tool| compile_matcher(text, Dialect::Gemini, tool).unwrap();
    assert!(gemini("read", true).unwrap().is_match("read_file"));
    assert!(gemini("(", true).unwrap().is_match("("), "invalid: exact");
    assert!(
        !gemini("start", false).unwrap().is_match("startup"),
        "lifecycle: exact"
    );
}

#[test]
fn async_is_read_and_on_error_on_an_async_hook_is_a_warning() {
    let (hooks, _) = parse(
        "post_send_message:\n  - command: log.sh\n    async: true\n  - command: x\n    async: false\n  - command: y\n",
    );
    let flags: Vec<bool> = hooks.iter().map(|h| h.run_async).collect();
    assert_eq!(flags, [true, false, false]);
    let (hooks, problems) = parse_hooks(
        Path::new("hooks.yaml"),
        "stop:\n  - command: x\n    async: true\n    on_error: block\n",
        "server",
    );
    assert_eq!(hooks.len(), 1);
    assert!(
        problems.len() == 1
            && !problems[0].is_error()
            && problems[0].to_string().contains("on_error does not apply"),
        "{problems:?}"
    );
    let (_, problems) = parse_hooks(
        Path::new("hooks.yaml"),
        "stop:\n  - command: x\n    async: 'yes'\n",
        "server",
    );
    assert!(problems.iter().any(Problem::is_error), "{problems:?}");
}

#[test]
fn on_full_is_read_on_async_hooks_and_a_warning_elsewhere() {
    let (hooks, problems) = parse_hooks(
        Path::new("hooks.yaml"),
        "pre_tool_execution:\n  - {command: a, async: true, on_full: wait}\n  - {command: b, async: true, on_full: drop}\n  - {command: c, async: true}\n",
        "server",
    );
    assert!(problems.is_empty(), "{problems:?}");
    let modes: Vec<OnFull> = hooks.iter().map(|h| h.on_full).collect();
    assert_eq!(modes, [OnFull::Wait, OnFull::Drop, OnFull::Drop]);
    let (_, problems) = parse_hooks(
        Path::new("hooks.yaml"),
        "stop:\n  - {command: x, on_full: wait}\n",
        "server",
    );
    assert!(
        problems.len() == 1 && !problems[0].is_error(),
        "{problems:?}"
    );
    let (_, problems) = parse_hooks(
        Path::new("hooks.yaml"),
        "stop:\n  - {command: x, async: true, on_full: block}\n",
        "server",
    );
    assert!(problems.iter().any(Problem::is_error), "{problems:?}");
}

// ─── which files, and trust ───

#[test]
fn every_dialects_files_in_order_and_settings_only_with_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let write = |name: &str, text: &str| {
        let path = ws.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(".gemini/settings.json", r#"{"hooks": {"BeforeTool": []}}"#);
    write(".claude/settings.local.json", r#"{"permissions": {}}"#);
    write(".claude/settings.json", r#"{"hooks": {}}"#);
    write(".openharness/hooks/b.yml", "");
    write(".openharness/hooks/a.yaml", "");
    write(".openharness/hooks/notes.md", "");
    write(".jcli/hooks.yaml", "");
    write(".hookwire/hooks.yaml", "");
    let shown: Vec<String> = hook_files(None, ws)
        .into_iter()
        .map(|(path, level)| {
            assert_eq!(level, "workspace");
            path.strip_prefix(ws).unwrap().display().to_string()
        })
        .collect();
    assert_eq!(
        shown,
        [
            ".hookwire/hooks.yaml",
            ".jcli/hooks.yaml",
            ".openharness/hooks/a.yaml",
            ".openharness/hooks/b.yml",
            ".claude/settings.json",
            ".gemini/settings.json",
        ]
    );
    assert_eq!(
        settings_dialect(&ws.join(".gemini/settings.json")),
        Some(Dialect::Gemini)
    );
    assert_eq!(settings_dialect(&ws.join(".jcli/hooks.yaml")), None);
}

#[test]
fn only_trusted_bytes_of_workspace_files_are_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(workspace.join(".hookwire/hooks")).unwrap();
    let server = dir.path().join("server.yaml");
    std::fs::write(&server, "stop:\n  - command: server\n").unwrap();
    let main = workspace.join(".hookwire/hooks.yaml");
    std::fs::write(&main, "stop:\n  - command: main\n").unwrap();
    // Broken: not loaded while it is not trusted (its errors are named in the warning only).
    let extra = workspace.join(".hookwire/hooks/extra.yaml");
    std::fs::write(&extra, "stop: [[[").unwrap();
    let files = hook_files(Some(&server), &workspace);
    assert_eq!(files.len(), 3);

    let state = dir.path().join("state");
    let nothing = TrustPolicy::new(&workspace, false, Some(&state));
    let (set, problems) = load_hook_set(&files, &nothing);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(set.files, std::slice::from_ref(&server));
    assert_eq!(set.len(), 1);
    let shown: Vec<&str> = set.untrusted.iter().map(|u| u.shown.as_str()).collect();
    assert_eq!(
        shown,
        [".hookwire/hooks.yaml", ".hookwire/hooks/extra.yaml"]
    );

    let (set, problems) = load_hook_set(&files, &TrustPolicy::all(&workspace));
    assert_eq!(
        problems.len(),
        1,
        "the broken file, now parsed: {problems:?}"
    );
    assert_eq!(set.len(), 2);
    assert_eq!(set.sha256[&main], sha256_hex(b"stop:\n  - command: main\n"));
    assert_eq!(set.hooks_in(&main).len(), 1);

    let pruned = set.without(vec![nothing.current().check(&main, None).unwrap_err()]);
    assert_eq!(pruned.len(), 1);
    assert!(!pruned.files.contains(&main) && pruned.files.contains(&server));
    assert!(!pruned.sha256.contains_key(&main));
    assert_eq!(pruned.untrusted.len(), 1);

    // A file that cannot be read is not trusted either: no problem, unless all are trusted.
    std::fs::remove_file(&extra).unwrap();
    std::fs::create_dir(&extra).unwrap();
    let (set, problems) = load_hook_set(&files, &nothing);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(set.untrusted.len(), 2);
    let (_, problems) = load_hook_set(&files, &TrustPolicy::all(&workspace));
    assert!(
        problems[0].message.starts_with("cannot read"),
        "{problems:?}"
    );
}

#[test]
fn an_untrusted_file_with_errors_is_reported_with_them_since_trust_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap().join("ws");
    let file = workspace.join(".hookwire/hooks.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "stop:\n  - command: echo hi\n    on_eror: block\n").unwrap();
    let files = hook_files(None, &workspace);
    let nothing = TrustPolicy::new(&workspace, false, Some(&dir.path().join("state")));
    let (set, problems) = load_hook_set(&files, &nothing);
    assert!(
        problems.is_empty(),
        "not loaded, so no reason not to start: {problems:?}"
    );
    let warning = set.untrusted[0].to_string();
    assert!(
        warning.contains("hooks.yaml:3: unknown field `on_eror`")
            && warning.contains("did you mean `on_error`?")
            && warning.contains("hookwire trust refuses it until"),
        "{warning}"
    );
}

#[test]
fn a_misspelt_key_names_its_file_and_line_and_the_key_it_may_have_meant() {
    let yaml = "pre_send_message:\n  - command: echo hi\n    on_eror: skip\n";
    let (_, problems) = parse_hooks(Path::new("hooks.yaml"), yaml, "server");
    assert_eq!(problems.len(), 1, "{problems:?}");
    let shown = problems[0].to_string();
    assert!(
        shown.starts_with("hooks.yaml:3: unknown field `on_eror`"),
        "{shown}"
    );
    assert!(shown.ends_with("did you mean `on_error`?"), "{shown}");
    assert!(
        !shown.contains("<input>") && !shown.contains('|'),
        "no snippet: {shown}"
    );
    // Far from every name: no guess.
    let yaml = "pre_send_message:\n  - command: echo hi\n    frobnicate: 1\n";
    let (_, problems) = parse_hooks(Path::new("hooks.yaml"), yaml, "server");
    assert!(
        !problems[0].to_string().contains("did you mean"),
        "{problems:?}"
    );
}
