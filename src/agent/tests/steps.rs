//! The Python agent-hooks design's order around a model response: the step is recorded, then `post_llm_response`
//! (its `on_llm_end`) runs with it in `ctx.steps`; a hook that rewrites the output rewrites the
//! recorded step too.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;

use super::scripted::{show, Echo, Reply, ScriptedModel};
use super::{config, direct};
use crate::agent::{AgentClient, AgentConfig};
use crate::hooks::{AgentHook, HookContext, HookResult, LlmResponse, ResponseAction, Step};
use crate::hooks::{RunOutput, StopAction};
use crate::types::ChatRequest;

/// Logs the chat's last step where it matters, and rewrites every response it sees.
#[derive(Default)]
struct StepWatcher {
    lines: Mutex<Vec<String>>,
}

fn last(ctx: &HookContext) -> String {
    let count = ctx.steps().len();
    match ctx.last_step() {
        Some(Step::Assistant {
            content,
            tool_calls,
            ..
        }) => format!("{count}:assistant:{content}:{}", tool_calls.len()),
        Some(Step::Tool { name, .. }) => format!("{count}:tool:{name}"),
        _ => format!("{count}:none"),
    }
}

#[async_trait]
impl AgentHook for StepWatcher {
    async fn post_llm_response(
        &self,
        ctx: &mut HookContext,
        response: &mut LlmResponse,
    ) -> HookResult<ResponseAction> {
        self.lines
            .lock()
            .unwrap()
            .push(format!("post_llm_response {}", last(ctx)));
        if !response.content.is_empty() {
            response.content = format!("{} (checked)", response.content);
        }
        Ok(ResponseAction::Continue)
    }
    async fn stop(&self, ctx: &mut HookContext, _: &str) -> HookResult<StopAction> {
        self.lines
            .lock()
            .unwrap()
            .push(format!("stop {}", last(ctx)));
        Ok(StopAction::Finish)
    }
    async fn run_completed(&self, ctx: &mut HookContext, _: &mut RunOutput) -> HookResult {
        let steps: Vec<String> = ctx
            .steps()
            .iter()
            .map(|step| match step {
                Step::Assistant { content, .. } => format!("assistant:{content}"),
                Step::Tool { name, .. } => format!("tool:{name}"),
            })
            .collect();
        self.lines
            .lock()
            .unwrap()
            .push(format!("run_completed {}", steps.join(" | ")));
        Ok(())
    }
}

async fn run(model: Arc<ScriptedModel>, config: AgentConfig, request: ChatRequest) -> Vec<String> {
    let watcher = Arc::new(StepWatcher::default());
    let client = AgentClient::builder()
        .model(model)
        .tool(Arc::new(Echo))
        .hook(watcher.clone())
        .config(config)
        .build();
    let events: Vec<String> = client
        .chat_stream(request)
        .map(|e| show(&e))
        .collect()
        .await;
    assert!(events.last().unwrap().starts_with("done:"), "{events:?}");
    let lines = watcher.lines.lock().unwrap().clone();
    lines
}

#[tokio::test]
async fn the_step_is_in_ctx_steps_before_post_llm_response_and_a_rewrite_updates_it() {
    let model = ScriptedModel::new([Reply::text(&["Hi"])]);
    let lines = run(model, config(), direct("hello")).await;
    assert_eq!(
        lines,
        [
            "post_llm_response 1:assistant:Hi:0",
            "stop 1:assistant:Hi (checked):0",
            "run_completed assistant:Hi (checked)",
        ]
    );
}

#[tokio::test]
async fn every_call_of_the_loop_records_its_step_first() {
    let model = ScriptedModel::new([
        Reply::text(&["[NEED_TOOL] plan"]),
        Reply::tool_calls(&[("c1", "echo", r#"{"x":1}"#)]),
        Reply::text(&["It says 1."]),
    ]);
    let lines = run(model, config(), ChatRequest::new("c1", "read")).await;
    assert_eq!(
        lines,
        [
            "post_llm_response 1:assistant:[NEED_TOOL] plan:0",
            "post_llm_response 2:assistant::1",
            "post_llm_response 4:assistant:It says 1.:0",
            "stop 4:assistant:It says 1. (checked):0",
            "run_completed assistant:[NEED_TOOL] plan (checked) | assistant: | tool:echo | assistant:It says 1. (checked)",
        ]
    );
}

#[tokio::test]
async fn the_summary_at_the_limit_records_its_step_first_too() {
    let model = ScriptedModel::new([
        Reply::text(&["[NEED_TOOL] plan"]),
        Reply::tool_calls(&[("c1", "echo", r#"{"x":1}"#)]),
        Reply::text(&["Done so far."]),
    ]);
    let config = AgentConfig {
        max_steps: 1,
        ..config()
    };
    let lines = run(model, config, ChatRequest::new("c1", "read")).await;
    assert_eq!(
        lines[2..],
        [
            "post_llm_response 4:assistant:Done so far.:0",
            "run_completed assistant:[NEED_TOOL] plan (checked) | assistant: | tool:echo | assistant:Done so far. (checked)",
        ]
    );
}
