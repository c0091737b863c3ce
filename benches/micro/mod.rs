//! (6) A long agent conversation through the library: 20 turns of 3 tool rounds each (results of
//! 2 KB, kept in the history as the client would keep them), with and without micro compaction
//! past its threshold; the bytes of the requests the model gets per turn, and what estimating a
//! call's input costs against serialising that call's request.

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use hookwire::agent::{AgentClient, AgentConfig, ChatEvent, ChatRequest, Message, ToolCall};
use hookwire::llm::{ChatModel, LlmError, ModelEvent, ModelRequest, ModelStream};
use hookwire::tools::{Tool, ToolOutput, ToolSpec};
use serde_json::{json, Value};

const TURNS: usize = 20;
const ROUNDS: usize = 3;
const RESULT_BYTES: usize = 2_048;

/// A result of about 2 KB of varied text (numbers and words, as a file or a listing reads).
fn result_text(turn: usize, round: usize) -> String {
    let mut text = String::new();
    let mut line = 0;
    while text.len() < RESULT_BYTES {
        text.push_str(&format!(
            "{turn}.{round}.{line}: fn handler_{line}(request: Request) -> Response {{ route(request, {}) }}\n",
            line * 7 + turn
        ));
        line += 1;
    }
    text.truncate(RESULT_BYTES);
    text
}

/// The tool every round calls.
struct Fetch;

#[async_trait]
impl Tool for Fetch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "fetch".into(),
            description: "Fetches a page.".into(),
            parameters: json!({"type":"object","properties":{"page":{"type":"integer"}}}),
        }
    }
    async fn run(&self, arguments: Value) -> ToolOutput {
        let page = arguments["page"].as_u64().unwrap_or(0) as usize;
        ToolOutput::ok(result_text(page / 10, page % 10))
    }
}

/// A model that plays each turn: the plan, three rounds that call `fetch`, the answer. It
/// records each request's bytes (the OpenAI shape, serialised) and times the token estimate
/// of the request against that serialisation.
#[derive(Default)]
struct TurnModel {
    state: Mutex<TurnState>,
}

#[derive(Default)]
struct TurnState {
    turn: usize,
    step: usize,
    bytes: Vec<usize>,
    estimate: Vec<Duration>,
    serialise: Vec<Duration>,
}

#[async_trait]
impl ChatModel for TurnModel {
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, LlmError> {
        let started = Instant::now();
        black_box(hookwire::llm::estimate_tokens(black_box(&request.messages)));
        let estimate = started.elapsed();
        let started = Instant::now();
        let bytes = serde_json::to_string(&super::history_json(&request.messages))
            .map_or(0, |text| black_box(text.len()));
        let serialise = started.elapsed();
        let mut state = match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        let turn = state.turn;
        if let Some(total) = state.bytes.get_mut(turn) {
            *total += bytes;
        }
        state.estimate.push(estimate);
        state.serialise.push(serialise);
        let step = state.step;
        state.step += 1;
        let events = match step {
            0 => vec![ModelEvent::Text("[NEED_TOOL] fetch three pages".into())],
            round if round <= ROUNDS => vec![ModelEvent::Finished {
                tool_calls: vec![ToolCall {
                    id: format!("t{turn}r{round}"),
                    name: "fetch".into(),
                    arguments: json!({"page": turn * 10 + round}).to_string(),
                }],
                finish_reason: Some("tool_calls".into()),
                usage: None,
            }],
            _ => vec![ModelEvent::Text(format!(
                "turn {turn}: the three pages say the same."
            ))],
        };
        let mut events: Vec<Result<ModelEvent, LlmError>> = events.into_iter().map(Ok).collect();
        if !matches!(events.last(), Some(Ok(ModelEvent::Finished { .. }))) {
            events.push(Ok(ModelEvent::Finished {
                tool_calls: Vec::new(),
                finish_reason: Some("stop".into()),
                usage: None,
            }));
        }
        Ok(futures::stream::iter(events).boxed())
    }
}

/// What one conversation measured.
struct Run {
    bytes: Vec<usize>,
    estimate: Duration,
    serialise: Duration,
}

/// The conversation with `micro_threshold` (1.0: never past it).
async fn conversation(micro_threshold: f64) -> Option<Run> {
    let model = Arc::new(TurnModel::default());
    if let Ok(mut state) = model.state.lock() {
        state.bytes = vec![0; TURNS];
    }
    let mut config = AgentConfig::default();
    config.context.window_tokens = Some(64_000);
    config.context.compact_threshold = 1.0;
    config.context.micro_threshold = micro_threshold;
    let agent = AgentClient::builder()
        .model(model.clone())
        .config(config)
        .tool(Arc::new(Fetch))
        .build();
    let mut history: Vec<Message> = Vec::new();
    for turn in 0..TURNS {
        if let Ok(mut state) = model.state.lock() {
            state.turn = turn;
            state.step = 0;
        }
        let input = format!("question {turn}: fetch pages {turn}1 to {turn}3 and compare them");
        let mut request = ChatRequest::new(format!("c{turn}"), input.clone());
        request.messages = history.clone();
        let mut stream = agent.chat_stream(request);
        let mut added = vec![Message::user(input)];
        while let Some(event) = stream.next().await {
            match event {
                ChatEvent::ToolCall {
                    call_id,
                    name,
                    arguments,
                } => added.push(Message::assistant_with_tools(
                    "",
                    vec![ToolCall {
                        id: call_id,
                        name,
                        arguments: arguments.to_string(),
                    }],
                )),
                ChatEvent::ToolResult {
                    call_id, content, ..
                } => added.push(Message::tool_result(call_id, content)),
                ChatEvent::Done { content, .. } => added.push(Message::assistant(content)),
                ChatEvent::Error(error) => {
                    eprintln!(
                        "micro compaction bench: turn {turn} failed: {}",
                        error.message
                    );
                    return None;
                }
                _ => {}
            }
        }
        history.extend(added);
    }
    let state = model.state.lock().ok()?;
    let median = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    Some(Run {
        bytes: state.bytes.clone(),
        estimate: median(&state.estimate),
        serialise: median(&state.serialise),
    })
}

pub(crate) async fn bench_micro_compaction() {
    hookwire::llm::warm_up();
    let (Some(without), Some(with)) = (conversation(1.0).await, conversation(0.3).await) else {
        return;
    };
    let total = |run: &Run| run.bytes.iter().sum::<usize>();
    for turn in [0, 4, 9, 14, 19] {
        println!(
            "micro compaction, turn {:>2} of {TURNS} ({ROUNDS} tool rounds, results of {RESULT_BYTES} B): request bytes without {} B, with {} B (micro_threshold 0.3 of 64 000 tokens), ratio {:.2}",
            turn + 1,
            without.bytes[turn],
            with.bytes[turn],
            with.bytes[turn] as f64 / without.bytes[turn].max(1) as f64
        );
    }
    println!(
        "micro compaction, all {TURNS} turns: request bytes without {} B, with {} B, ratio {:.2}",
        total(&without),
        total(&with),
        total(&with) as f64 / total(&without).max(1) as f64
    );
    println!(
        "token estimate per model call (median over {} calls, without micro compaction): {:?}, serialising that request {:?}, ratio {:.1}",
        TURNS * (ROUNDS + 2),
        without.estimate,
        without.serialise,
        without.estimate.as_secs_f64() / without.serialise.as_secs_f64().max(1e-9)
    );
}
