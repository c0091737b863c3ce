//! The Python agent-hooks design's helpers on the context, each on a small chat record.

use serde_json::json;

use super::*;

fn context() -> HookContext {
    let mut ctx = HookContext::new("s1".into(), "c1".into(), "m".into(), Vec::new());
    ctx.messages = vec![
        Message::system("SYS"),
        Message::user("one"),
        Message::assistant("reply"),
        Message::user("two"),
    ];
    ctx
}

fn tool_step(name: &str, content: &str) -> Step {
    Step::Tool {
        call_id: format!("call-{name}"),
        name: name.into(),
        content: content.into(),
        is_error: false,
        duration: Duration::ZERO,
    }
}

fn assistant_step(content: &str) -> Step {
    Step::Assistant {
        content: content.into(),
        tool_calls: Vec::new(),
        usage: Usage::default(),
    }
}

#[test]
fn prepend_to_system_prompt_goes_before_it_or_makes_it() {
    let mut ctx = context();
    ctx.prepend_to_system_prompt("FIRST");
    assert_eq!(ctx.system_prompt(), Some("FIRST\n\nSYS"));
    ctx.append_to_system_prompt("LAST");
    assert_eq!(ctx.system_prompt(), Some("FIRST\n\nSYS\n\nLAST"));
    let mut bare = context();
    bare.messages.remove(0);
    bare.prepend_to_system_prompt("ONLY");
    assert_eq!(bare.messages[0], Message::system("ONLY"));
    assert_eq!(bare.system_message(), Some(&Message::system("ONLY")));
}

#[test]
fn messages_by_role_keeps_their_order() {
    let ctx = context();
    let users: Vec<&str> = ctx
        .messages_by_role(Role::User)
        .into_iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(users, ["one", "two"]);
    assert_eq!(ctx.messages_by_role(Role::Assistant).len(), 1);
    assert!(ctx.messages_by_role(Role::Tool).is_empty());
}

#[test]
fn step_helpers_find_the_last_steps_and_the_tool_results() {
    let mut ctx = context();
    assert_eq!(ctx.last_step(), None);
    assert_eq!(ctx.last_assistant_step(), None);
    ctx.record_step(assistant_step("calling"));
    ctx.record_step(tool_step("read_file", "README text"));
    ctx.record_step(tool_step("list_dir", ""));
    ctx.record_step(tool_step("read_file", "notes"));
    ctx.record_step(assistant_step("done"));
    assert_eq!(ctx.last_step(), Some(&assistant_step("done")));
    assert_eq!(ctx.last_assistant_step(), Some(&assistant_step("done")));
    assert_eq!(ctx.last_tool_step(), Some(&tool_step("read_file", "notes")));
    assert_eq!(ctx.tool_steps(None).len(), 3);
    assert_eq!(ctx.tool_steps(Some("list_dir")).len(), 1);
    // The Python agent-hooks design: the contents of the tool steps, empty ones left out.
    assert_eq!(ctx.tool_results(None), ["README text", "notes"]);
    assert_eq!(
        ctx.tool_results(Some("read_file")),
        ["README text", "notes"]
    );
    assert!(ctx.tool_results(Some("list_dir")).is_empty());
    assert!(ctx.tool_results(Some("search_text")).is_empty());
}

#[test]
fn total_tokens_sums_prompt_and_completion() {
    let mut ctx = context();
    assert_eq!(ctx.total_tokens(), 0);
    ctx.record_usage(Usage {
        prompt_tokens: 10,
        completion_tokens: 2,
        ..Usage::default()
    });
    ctx.record_usage(Usage {
        prompt_tokens: 30,
        completion_tokens: 5,
        ..Usage::default()
    });
    assert_eq!(ctx.total_tokens(), 47);
}

#[test]
fn update_argument_sets_one_argument() {
    let mut call = ToolCallInfo {
        call_id: "c1".into(),
        name: "query".into(),
        arguments: json!({"table": "users"}),
    };
    call.update_argument("limit", json!(10));
    call.update_argument("table", json!("reports"));
    assert_eq!(call.arguments, json!({"table": "reports", "limit": 10}));
    // Arguments that are not an object become one.
    let mut odd = ToolCallInfo {
        arguments: json!("text"),
        ..call
    };
    odd.update_argument("limit", json!(1));
    assert_eq!(odd.arguments, json!({"limit": 1}));
}
