//! `cargo bench --bench load -- hooks`: hookwire with hooks against hookwire without any, under
//! the same load (issue 45, "Hooks at 1,000 chats").
//!
//! Every chat does one tool round. The fake upstream ([`tool_round_reply`]) answers the planning
//! call with the planning marker, the first agent round with a streamed `read_file` call of a
//! small file of the workspace (a built-in tool that needs no approval by default), and the
//! round with the tool's result with the 200 tokens; each after FIRST_TOKEN. The upstream counts
//! what it saw (`/stats`): each run prints the tool rounds, and fails when there were none.
//!
//! Variants, each in rounds against hookwire started with an empty skills dir and no hook file
//! (no hooks at all), the one that runs first alternating; the ratios as the median of the
//! rounds [min–max]:
//! - `skill`: (a) a skill whose prompt hook (`after_user_input`) is in every model call;
//! - `command`: (b) a command hook at `pre_tool_execution` (`cat > /dev/null`), then its cost
//!   per call against a bare spawn of the same command under the same load ([`BareSpawns`]);
//! - `both`: (c) the two;
//! - `http`: (d) an http hook at `pre_tool_execution` to the upstream's `/hook`;
//! - `slow`: every 100th chat says [`SLOW_MARK`]: its tool call is `list_dir` of that folder,
//!   and an http hook filtered on `list_dir` calls `/hook`, which sleeps 2 s; the other chats'
//!   figures (the marked chats' samples left out, in the no-hooks run too) against no hooks.
//!
//! `HOOKWIRE_LOAD_HOOKS=command,http` (or `-- hooks command`) runs those variants only.

use std::convert::Infallible;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;

use super::rusage::children_cpu;
use super::{
    cpu_time, env_number, hookwire_command, median, own_exe_as, percentile, print_figures,
    print_ratios, run_load_marking, settle, LoadFigures, Marked, Samples, Server, FIRST_TOKEN,
};

/// Set in the fake upstream's environment: each chat does one tool round.
pub(super) const TOOL_ROUND: &str = "HOOKWIRE_LOAD_TOOL_ROUND";

/// The planning reply that asks for the agent loop: it starts with hookwire's default
/// `planning.marker`.
const PLAN: &str = "[NEED_TOOL] read notes.txt";
/// The file every chat's tool call reads, and a line of it: the model call after the tool
/// carries it when the tool really ran.
const NOTES_FILE: &str = "notes.txt";
const NOTES_TEXT: &str = "hookwire-bench-notes: one line to read";
/// What the marked chats of the `slow` variant say: their tool call lists the folder of that
/// name (whose listing shows [`SLOW_FILE`]), and `/hook` sleeps [`SLOW_HOOK`] when its input
/// names it.
const SLOW_MARK: &str = "slow-hook";
const SLOW_FILE: &str = "marked.txt";
const SLOW_HOOK: Duration = Duration::from_secs(2);
/// The bench skill, and the text of its prompt hook.
const SKILL_NAME: &str = "bench-skill";
const SKILL_HOOK_TEXT: &str = "Prompt hook of the bench skill: keep it short.";
/// The command of (b) and (c), and the names of the hook files' hooks (their series on /metrics).
const COMMAND: &str = "cat > /dev/null";
const COMMAND_HOOK: &str = "bench-command";
const HTTP_HOOK: &str = "bench-http";
const SLOW_HOOK_NAME: &str = "bench-slow";

// ---------------------------------------------------------------------------------------------
// The fake upstream's side (its own process).

/// What the fake upstream counts, in the order `/stats` gives them.
#[derive(Clone, Copy)]
enum Seen {
    /// Model calls, all of them.
    Requests,
    /// Planning calls (no tools offered), answered with the marker.
    Planning,
    /// Agent rounds answered with a `read_file` call...
    ToolCalls,
    /// ...or, for a marked chat, a `list_dir` call of the slow folder.
    SlowToolCalls,
    /// Calls with a tool's result (answered with the 200 tokens)...
    Answers,
    /// ...of which carried the result the tool gives (the file's line, the folder's entry).
    ToolResults,
    /// Calls that carry the bench skill's prompt hook.
    PromptHooks,
    /// `/hook` calls...
    HookCalls,
    /// ...of which slept.
    SlowHooks,
}

const SEEN_KINDS: usize = 9;
static SEEN: [AtomicU64; SEEN_KINDS] = [const { AtomicU64::new(0) }; SEEN_KINDS];

fn saw(kind: Seen) {
    SEEN[kind as usize].fetch_add(1, Ordering::Relaxed);
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// `/hook` (the http hooks' endpoint) and `/stats` (the counts, space-separated).
pub(super) fn upstream_routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new().route("/hook", post(hook)).route(
        "/stats",
        get(|| async {
            let counts: Vec<String> = SEEN
                .iter()
                .map(|count| count.load(Ordering::Relaxed).to_string())
                .collect();
            counts.join(" ")
        }),
    )
}

/// No change; 2 s first when the hook's input names the slow folder.
async fn hook(body: Bytes) -> &'static str {
    saw(Seen::HookCalls);
    if contains(&body, SLOW_MARK) {
        saw(Seen::SlowHooks);
        tokio::time::sleep(SLOW_HOOK).await;
    }
    "{}"
}

/// The reply to a model call of a chat that does one tool round, or `None` for the call with
/// the tool's result (the 200 tokens, as without a tool round). JSON escapes the quotes inside a
/// string, so `"tools":` and `"role":"tool"` are the request's own keys, never a message's words.
pub(super) fn tool_round_reply(body: &[u8]) -> Option<Response> {
    saw(Seen::Requests);
    if contains(body, SKILL_HOOK_TEXT) {
        saw(Seen::PromptHooks);
    }
    if !contains(body, "\"tools\":") {
        saw(Seen::Planning);
        let plan = json!({"index": 0, "delta": {"content": PLAN}, "finish_reason": null});
        return Some(events_after_first_token(&[plan, finished("stop")]));
    }
    if !contains(body, "\"role\":\"tool\"") {
        let (kind, tool, path) = if contains(body, SLOW_MARK) {
            (Seen::SlowToolCalls, "list_dir", SLOW_MARK)
        } else {
            (Seen::ToolCalls, "read_file", NOTES_FILE)
        };
        saw(kind);
        let call = json!({"index": 0, "delta": {"role": "assistant", "tool_calls": [{
            "index": 0, "id": "call_1", "type": "function",
            "function": {"name": tool, "arguments": json!({"path": path}).to_string()},
        }]}, "finish_reason": null});
        return Some(events_after_first_token(&[call, finished("tool_calls")]));
    }
    saw(Seen::Answers);
    if contains(body, NOTES_TEXT) || contains(body, SLOW_FILE) {
        saw(Seen::ToolResults);
    }
    None
}

fn finished(reason: &str) -> serde_json::Value {
    json!({"index": 0, "delta": {}, "finish_reason": reason})
}

/// `choices` as chunks of a stream, sent at once FIRST_TOKEN after the request.
fn events_after_first_token(choices: &[serde_json::Value]) -> Response {
    let start = tokio::time::Instant::now();
    let mut events = String::new();
    for choice in choices {
        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "fake", "choices": [choice]});
        events.push_str(&format!("data: {chunk}\n\n"));
    }
    events.push_str("data: [DONE]\n\n");
    let stream = futures::stream::once(async move {
        tokio::time::sleep_until(start + FIRST_TOKEN).await;
        Ok::<_, Infallible>(Bytes::from(events))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The variants.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Skill,
    Command,
    Both,
    Http,
    Slow,
}

const VARIANTS: [Variant; 5] = [
    Variant::Skill,
    Variant::Command,
    Variant::Both,
    Variant::Http,
    Variant::Slow,
];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Skill => "skill",
            Variant::Command => "command",
            Variant::Both => "both",
            Variant::Http => "http",
            Variant::Slow => "slow",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Variant::Skill => "(a) a skill's prompt hook (after_user_input, in every model call)",
            Variant::Command => "(b) a command hook at pre_tool_execution (`cat > /dev/null`)",
            Variant::Both => "(c) the skill's prompt hook and the command hook",
            Variant::Http => {
                "(d) an http hook at pre_tool_execution (a local endpoint answering {})"
            }
            Variant::Slow => {
                "an http hook at pre_tool_execution sleeping 2 s, for every 100th chat only"
            }
        }
    }

    fn goal(self) -> &'static str {
        match self {
            Variant::Skill => "CPU per token and first token ≤ 1.05",
            Variant::Command => "the hook's cost per call ≤ 1.15× a bare spawn (below)",
            Variant::Both => "none of its own",
            Variant::Http => "≤ 1.1",
            Variant::Slow => {
                "the other chats' first token p99 and gap p99 unmoved (the ratios above are theirs)"
            }
        }
    }

    fn has_skill(self) -> bool {
        matches!(self, Variant::Skill | Variant::Both)
    }

    /// Its hook file, its http hooks calling `url`.
    fn hook_file(self, url: &str) -> Option<String> {
        let command = format!("  - name: {COMMAND_HOOK}\n    command: '{COMMAND}'\n");
        let hooks = match self {
            Variant::Skill => return None,
            Variant::Command | Variant::Both => command,
            Variant::Http => format!("  - name: {HTTP_HOOK}\n    type: http\n    url: {url}\n"),
            // Only the marked chats call list_dir: the others run no hook at all.
            Variant::Slow => format!(
                "  - name: {SLOW_HOOK_NAME}\n    type: http\n    url: {url}\n    timeout: 5\n    filter: {{ tool_name: list_dir }}\n"
            ),
        };
        Some(format!("pre_tool_execution:\n{hooks}"))
    }

    /// The hook of its hook file, as /metrics names it.
    fn hook_name(self) -> Option<&'static str> {
        match self {
            Variant::Skill => None,
            Variant::Command | Variant::Both => Some(COMMAND_HOOK),
            Variant::Http => Some(HTTP_HOOK),
            Variant::Slow => Some(SLOW_HOOK_NAME),
        }
    }

    /// The chats that say [`SLOW_MARK`] (in its no-hooks runs too: the same load).
    fn marked(self) -> Option<Marked> {
        (self == Variant::Slow).then_some(Marked {
            every: 100,
            text: SLOW_MARK,
        })
    }
}

/// `HOOKWIRE_LOAD_HOOKS` (comma-separated) and the bench's arguments name the variants to run;
/// none named: all.
fn selected() -> Result<Vec<Variant>, String> {
    let listed = std::env::var("HOOKWIRE_LOAD_HOOKS").unwrap_or_default();
    let listed: Vec<&str> = listed
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .collect();
    if let Some(unknown) = listed
        .iter()
        .find(|name| VARIANTS.iter().all(|v| v.name() != **name))
    {
        return Err(format!(
            "HOOKWIRE_LOAD_HOOKS: no variant {unknown:?} (skill, command, both, http, slow)"
        ));
    }
    let args: Vec<String> = std::env::args().collect();
    let picked: Vec<Variant> = VARIANTS
        .into_iter()
        .filter(|v| listed.contains(&v.name()) || args.iter().any(|a| a == v.name()))
        .collect();
    Ok(if picked.is_empty() {
        VARIANTS.to_vec()
    } else {
        picked
    })
}

// ---------------------------------------------------------------------------------------------
// The bench.

pub(super) async fn under_load() {
    if let Err(error) = run().await {
        // Everything was dropped (the servers killed) when `run` returned.
        eprintln!("hooks: FAILED: {error}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), String> {
    let variants = selected()?;
    let bench = Bench::new()?;
    println!(
        "{} clients chatting at once, each chat one tool round (a planning call, a read_file call, \
         the answer: 200 tokens), {} s measured, {} rounds of hookwire without hooks (no skills, no \
         hook file) and with:",
        bench.clients, bench.seconds, bench.rounds
    );
    for variant in variants {
        println!("{}:", variant.title());
        bench.compare(variant).await?;
    }
    Ok(())
}

struct Bench {
    scratch: tempfile::TempDir,
    /// The upstreams of hookwire without hooks and with (one each, as in `load`).
    plain_upstream: Server,
    hooked_upstream: Server,
    clients: usize,
    seconds: u64,
    rounds: usize,
}

/// One run: the clients' figures, and what it is checked and costed by.
struct Run {
    load: LoadFigures,
    counts: RunCounts,
}

struct RunCounts {
    /// What the fake upstream saw during the run.
    seen: Counts,
    /// hookwire's runs of the variant's hook during the run (/metrics).
    hook: HookTimes,
    /// hookwire's CPU over the whole run (connections, ramp, window, the last chats), its
    /// hooks' processes included (they are its children).
    cpu: Duration,
    /// The marked chats' samples (the `slow` variant).
    marked: Samples,
    /// The whole run's time.
    elapsed: Duration,
}

impl Bench {
    fn new() -> Result<Bench, String> {
        let scratch = tempfile::tempdir().map_err(|e| format!("no scratch folder: {e}"))?;
        write_files(scratch.path()).map_err(|e| format!("cannot write the bench's files: {e}"))?;
        let upstream = || {
            let mut command = own_exe_as("upstream")?;
            command
                .env("HOOKWIRE_LOAD_TOKENS", "200")
                .env(TOOL_ROUND, "1");
            Server::spawn(command)
        };
        let (Some(plain_upstream), Some(hooked_upstream)) = (upstream(), upstream()) else {
            return Err("the fake upstreams did not start".into());
        };
        Ok(Bench {
            scratch,
            plain_upstream,
            hooked_upstream,
            clients: env_number("HOOKWIRE_LOAD_CLIENTS", 1000) as usize,
            seconds: env_number("HOOKWIRE_LOAD_SECONDS", 20),
            rounds: env_number("HOOKWIRE_LOAD_ROUNDS", 2).max(1) as usize,
        })
    }

    /// The workspace `start_hookwire_with` gives hookwire.
    fn workspace(&self) -> PathBuf {
        self.scratch.path().join("workspace")
    }

    fn upstream(&self, hooked: bool) -> &Server {
        if hooked {
            &self.hooked_upstream
        } else {
            &self.plain_upstream
        }
    }

    /// hookwire for `variant`, with its hooks or none: the skills dir is the bench skill's or an
    /// empty one (not the repository's `skills/`), checked on `/api/skills`.
    async fn start(&self, hooked: bool, variant: Variant) -> Result<Server, String> {
        let upstream = self.upstream(hooked);
        let name = if hooked {
            variant.name().to_string()
        } else {
            format!("plain-{}", variant.name())
        };
        let url = format!("http://{}/hook", upstream.addr);
        let hooks = if hooked {
            variant.hook_file(&url)
        } else {
            None
        };
        let with_skill = hooked && variant.has_skill();
        let skills = if with_skill { "skills" } else { "no-skills" };
        let mut command = hookwire_command(upstream, self.scratch.path(), &name, hooks.as_deref())
            .ok_or("cannot write hookwire's config")?;
        command.env("HOOKWIRE_SKILLS_DIR", self.scratch.path().join(skills));
        let server =
            Server::spawn(command).ok_or_else(|| format!("hookwire ({name}) did not start"))?;
        let loaded = loaded_skills(&server).await?;
        let expected: &[&str] = if with_skill { &[SKILL_NAME] } else { &[] };
        if loaded != expected {
            return Err(format!(
                "hookwire ({name}) loaded the skills {loaded:?}, not {expected:?}"
            ));
        }
        Ok(server)
    }

    /// `variant` against no hooks, in rounds; then its own figures.
    async fn compare(&self, variant: Variant) -> Result<(), String> {
        let plain = self.start(false, variant).await?;
        let hooked = self.start(true, variant).await?;
        settle().await;
        let (mut loads, mut counts) = (Vec::new(), Vec::new());
        for round in 0..self.rounds {
            let hooked_first = round % 2 == 1;
            let (mut with, mut without) = (None, None);
            for runs_hooked in [hooked_first, !hooked_first] {
                let server = if runs_hooked { &hooked } else { &plain };
                let run = self.measure(server, runs_hooked, variant).await?;
                print_figures(
                    if runs_hooked {
                        variant.name()
                    } else {
                        "no hooks"
                    },
                    &run.load,
                );
                println!("{}", check(&run.counts, runs_hooked, variant)?);
                if runs_hooked {
                    with = Some(run);
                } else {
                    without = Some(run);
                }
                settle().await;
            }
            if let (Some(with), Some(without)) = (with, without) {
                loads.push((with.load, without.load));
                counts.push((with.counts, without.counts));
            }
        }
        println!("  {} / no hooks:", variant.name());
        print_ratios(&loads, false);
        println!("    goal: {}", variant.goal());
        match variant {
            Variant::Command => self.command_cost(&plain, &counts).await,
            Variant::Slow => slow_chats(&counts),
            _ => Ok(()),
        }
    }

    /// One run of the load against `server`, with the counts around it.
    async fn measure(
        &self,
        server: &Server,
        hooked: bool,
        variant: Variant,
    ) -> Result<Run, String> {
        let upstream = self.upstream(hooked);
        let seen = upstream_counts(upstream).await?;
        let hook = hook_times(server, variant.hook_name()).await?;
        let cpu = cpu_time(server.pid());
        let started = Instant::now();
        let (load, marked) = run_load_marking(server, self.clients, self.seconds, variant.marked())
            .await
            .ok_or("the load did not run")?;
        let cpu = cpu_time(server.pid()).saturating_sub(cpu);
        let counts = RunCounts {
            seen: upstream_counts(upstream).await?.since(&seen),
            hook: hook_times(server, variant.hook_name()).await?.since(&hook),
            cpu,
            marked,
            elapsed: started.elapsed(),
        };
        Ok(Run { load, counts })
    }

    /// (b): hookwire's command hook per call against a bare spawn of the same command, the same
    /// way, at the same rate, during a run of hookwire without hooks.
    ///
    /// - Wall time: hookwire's is the mean of its hook's runs (`/metrics`:
    ///   `hookwire_external_hook_duration_seconds`): building the input and the environment, the
    ///   spawn, writing stdin and reading the output, the wait, reading the answer; and, under
    ///   load, the time its tasks wait for hookwire's busy runtime. The bare spawn's is the same
    ///   spawn, write, read and wait, from an otherwise idle runtime thread of the bench.
    /// - CPU: hookwire's is its CPU per chat with the hook less its CPU per chat in the no-hooks
    ///   run of the same round, per hook run (its hooks' processes included, and anything else
    ///   the hook costs it: the process group's cleanup, the wake-ups). The bare spawn's is its
    ///   thread's CPU and its processes' per call.
    async fn command_cost(
        &self,
        plain: &Server,
        counts: &[(RunCounts, RunCounts)],
    ) -> Result<(), String> {
        let (mut wall, mut cpu, mut rates) = (Vec::new(), Vec::new(), Vec::new());
        for (with, without) in counts {
            let runs = with.hook.runs.max(1) as f64;
            let chats = with.seen.get(Seen::Answers).max(1) as f64;
            wall.push(with.hook.seconds / runs);
            cpu.push((with.cpu_per_chat() - without.cpu_per_chat()) * chats / runs);
            rates.push(with.hook.runs as f64 / with.elapsed.as_secs_f64());
        }
        let rate = Spread::of(&rates).median;
        println!(
            "  bare spawns of `sh -c '{COMMAND}'` at {rate:.1}/s (hookwire's rate of hook runs in (b)), during a run of hookwire without hooks:"
        );
        let spawns = BareSpawns::start(rate, self.workspace())?;
        let run = self.measure(plain, false, Variant::Command).await;
        let bare = spawns.finish()?;
        let run = run?;
        print_figures("no hooks", &run.load);
        println!("{}", check(&run.counts, false, Variant::Command)?);
        let (wall, cpu) = (Spread::of(&wall), Spread::of(&cpu));
        let mut bare_wall: Vec<f64> = bare.wall.iter().map(Duration::as_secs_f64).collect();
        if bare_wall.is_empty() {
            return Err("no bare spawn ran".into());
        }
        bare_wall.sort_by(f64::total_cmp);
        let bare_mean = bare_wall.iter().sum::<f64>() / bare_wall.len() as f64;
        let at = |p: f64| bare_wall[((bare_wall.len() - 1) as f64 * p) as usize] * 1e3;
        let bare_cpu = bare.cpu.as_secs_f64() / bare_wall.len() as f64;
        println!(
            "    bare spawns: {} ({} failed), wall p50 {:.2} ms, p99 {:.2} ms",
            bare_wall.len(),
            bare.failed,
            at(0.5),
            at(0.99)
        );
        println!(
            "    per call, wall: hookwire {} ms (mean of its hook's runs), bare spawn {:.2} ms (mean): {:.2} (goal ≤ 1.15)",
            wall.show(1e3),
            bare_mean * 1e3,
            wall.median / bare_mean
        );
        println!(
            "    per call, CPU: hookwire {} ms ((with − without) per hook run, its processes included), bare spawn {:.2} ms (its thread and processes): {:.2} (goal ≤ 1.15)",
            cpu.show(1e3),
            bare_cpu * 1e3,
            cpu.median / bare_cpu
        );
        Ok(())
    }
}

impl RunCounts {
    fn cpu_per_chat(&self) -> f64 {
        self.cpu.as_secs_f64() / self.seen.get(Seen::Answers).max(1) as f64
    }
}

/// The bench skill, its empty counterpart, and the workspace's files.
fn write_files(scratch: &Path) -> std::io::Result<()> {
    let hooks = scratch.join("skills").join(SKILL_NAME).join("hooks");
    std::fs::create_dir_all(&hooks)?;
    std::fs::create_dir_all(scratch.join("no-skills"))?;
    std::fs::write(
        scratch.join("skills").join(SKILL_NAME).join("SKILL.md"),
        format!("---\nname: {SKILL_NAME}\ndescription: The hooks bench's skill.\n---\n"),
    )?;
    let hook = json!({"hooks": [{"name": "bench", "file": "bench.md",
        "timing": "after_user_input", "role": "system", "persistent": false}]});
    std::fs::write(hooks.join("hooks.json"), hook.to_string())?;
    std::fs::write(hooks.join("bench.md"), SKILL_HOOK_TEXT)?;
    let workspace = scratch.join("workspace");
    std::fs::create_dir_all(workspace.join(SLOW_MARK))?;
    std::fs::write(workspace.join(NOTES_FILE), format!("{NOTES_TEXT}\n"))?;
    std::fs::write(workspace.join(SLOW_MARK).join(SLOW_FILE), "marked\n")
}

/// What the run's hook should have done: whether it calls the http endpoint, and how many
/// tool calls it is for (the slow hook: the marked chats' only).
fn expected_hook(seen: &Counts, hooked: bool, variant: Variant) -> (bool, u64) {
    let http = hooked && matches!(variant, Variant::Http | Variant::Slow);
    let calls = match (hooked, variant) {
        (false, _) | (true, Variant::Skill) => 0,
        (true, Variant::Slow) => seen.get(Seen::SlowToolCalls),
        (true, _) => seen.get(Seen::ToolCalls),
    };
    (http, calls)
}

/// The run's counts as one line; `Err` when the run did not measure what it should: no tool
/// round, a prompt hook missing from a model call or present without the skill, a hook that did
/// not run for each of its tool calls, an http endpoint called or not against the hooks.
fn check(counts: &RunCounts, hooked: bool, variant: Variant) -> Result<String, String> {
    let seen = &counts.seen;
    let fail = |what: String| {
        let run = if hooked { "hooked" } else { "no-hooks" };
        Err(format!("{run} run of `{}`: {what}", variant.name()))
    };
    let tool_calls = seen.get(Seen::ToolCalls) + seen.get(Seen::SlowToolCalls);
    if seen.get(Seen::ToolResults) == 0 {
        return fail(format!(
            "no tool round: {} model calls, {} planning, {tool_calls} tool calls, none with the tool's result",
            seen.get(Seen::Requests),
            seen.get(Seen::Planning),
        ));
    }
    let (requests, prompts) = (seen.get(Seen::Requests), seen.get(Seen::PromptHooks));
    let with_skill = hooked && variant.has_skill();
    if with_skill && prompts < requests {
        return fail(format!(
            "the prompt hook was in {prompts} of {requests} model calls"
        ));
    }
    if !with_skill && prompts > 0 {
        return fail(format!("a prompt hook without the skill ({prompts} calls)"));
    }
    let (http, calls) = expected_hook(seen, hooked, variant);
    if counts.hook.runs < calls {
        return fail(format!(
            "its hook ran {} times for {calls} tool calls",
            counts.hook.runs
        ));
    }
    let hook_calls = seen.get(Seen::HookCalls);
    if (hook_calls > 0) != (http && calls > 0) {
        return fail(format!(
            "{hook_calls} calls of the http hook's endpoint for {calls} tool calls"
        ));
    }
    Ok(summary(counts, hooked, variant))
}

/// The run's counts as one line, with a warning where they do not add up.
fn summary(counts: &RunCounts, hooked: bool, variant: Variant) -> String {
    let seen = &counts.seen;
    let (answers, results) = (seen.get(Seen::Answers), seen.get(Seen::ToolResults));
    let (http, calls) = expected_hook(seen, hooked, variant);
    let hook_calls = seen.get(Seen::HookCalls);
    let mut line = format!(
        "            {results} tool rounds (of {answers} answers), prompt hook in {} of {} model calls",
        seen.get(Seen::PromptHooks),
        seen.get(Seen::Requests)
    );
    if hooked && variant.hook_name().is_some() {
        let mean = counts.hook.seconds / counts.hook.runs.max(1) as f64 * 1e3;
        line.push_str(&format!(
            ", hook runs {} (mean {mean:.2} ms)",
            counts.hook.runs
        ));
    }
    if http {
        line.push_str(&format!(", /hook calls {hook_calls}"));
    }
    if variant == Variant::Slow {
        let mut firsts = counts.marked.first_token.clone();
        let slow = firsts.iter().filter(|&&us| us >= 2_000_000).count();
        line.push_str(&format!(
            ", marked chats {} ({} in the window, {slow} with a first token ≥ 2 s, p50 {:.0} ms), /hook slept {}",
            seen.get(Seen::SlowToolCalls),
            firsts.len(),
            percentile(&mut firsts, 0.5),
            seen.get(Seen::SlowHooks)
        ));
    }
    if http && hook_calls != calls {
        line.push_str(&format!(
            " (WARNING: {hook_calls} calls of the http hook's endpoint for {calls} tool calls)"
        ));
    }
    if results < answers {
        line.push_str(&format!(
            " (WARNING: {} answers without the tool's result)",
            answers - results
        ));
    }
    line
}

/// The `slow` variant's marked chats, over the hooked runs: the hook slept, and they waited.
fn slow_chats(counts: &[(RunCounts, RunCounts)]) -> Result<(), String> {
    let (mut calls, mut slept, mut marked, mut slow) = (0, 0, 0, 0);
    for (with, _) in counts {
        calls += with.seen.get(Seen::SlowToolCalls);
        slept += with.seen.get(Seen::SlowHooks);
        marked += with.marked.first_token.len();
        slow += with
            .marked
            .first_token
            .iter()
            .filter(|&&us| us >= 2_000_000)
            .count();
    }
    println!(
        "    the slow hook slept {slept} times; {marked} marked chats had their first token in the windows, {slow} of them after ≥ 2 s"
    );
    if (calls > 0 && slept == 0) || (marked > 0 && slow == 0) {
        return Err("the slow hook did not make any chat wait".into());
    }
    if slow < marked {
        println!(
            "    WARNING: {} marked chats did not wait 2 s",
            marked - slow
        );
    }
    Ok(())
}

/// The median of some figures and their spread.
struct Spread {
    median: f64,
    low: f64,
    high: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Spread {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let at = |i: usize| sorted.get(i).copied().unwrap_or(f64::NAN);
        Spread {
            median: median(&sorted),
            low: at(0),
            high: at(sorted.len().saturating_sub(1)),
        }
    }

    /// `median [low–high]`, each times `scale`.
    fn show(&self, scale: f64) -> String {
        format!(
            "{:.2} [{:.2}–{:.2}]",
            self.median * scale,
            self.low * scale,
            self.high * scale
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Reading the servers.

/// `GET path` on `addr` (a loopback server of the bench): the body.
async fn http_get(addr: &str, path: &str) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let fail = |e: std::io::Error| format!("GET http://{addr}{path}: {e}");
    let mut stream = tokio::net::TcpStream::connect(addr).await.map_err(fail)?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.map_err(fail)?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await.map_err(fail)?;
    match text.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.1 200") => Ok(body.to_string()),
        _ => Err(format!("GET http://{addr}{path}: {text:.200}")),
    }
}

/// The skills hookwire loaded (`/api/skills`); `Err` if one has errors or no hook.
async fn loaded_skills(server: &Server) -> Result<Vec<String>, String> {
    let body = http_get(&server.addr, "/api/skills").await?;
    let skills: Vec<serde_json::Value> =
        serde_json::from_str(&body).map_err(|e| format!("/api/skills: {e}: {body:.200}"))?;
    let mut names = Vec::new();
    for skill in skills {
        let errors = skill["errors"].as_array().map_or(0, Vec::len);
        let hooks = skill["hooks"].as_array().map_or(0, Vec::len);
        if errors > 0 || hooks == 0 {
            return Err(format!("a skill with errors or no hook: {skill}"));
        }
        names.push(skill["name"].as_str().unwrap_or_default().to_string());
    }
    Ok(names)
}

/// The fake upstream's counts.
#[derive(Clone, Copy, Default)]
struct Counts([u64; SEEN_KINDS]);

impl Counts {
    fn get(&self, kind: Seen) -> u64 {
        self.0[kind as usize]
    }

    fn since(&self, before: &Counts) -> Counts {
        let mut delta = *self;
        for (now, then) in delta.0.iter_mut().zip(before.0) {
            *now = now.saturating_sub(then);
        }
        delta
    }
}

async fn upstream_counts(upstream: &Server) -> Result<Counts, String> {
    let body = http_get(&upstream.addr, "/stats").await?;
    let mut counts = Counts::default();
    let values: Vec<u64> = body
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    if values.len() != SEEN_KINDS {
        return Err(format!("the upstream's /stats: {body:?}"));
    }
    counts.0.copy_from_slice(&values);
    Ok(counts)
}

/// A hook's runs and their summed time, from hookwire's `/metrics`.
#[derive(Clone, Copy, Default)]
struct HookTimes {
    runs: u64,
    seconds: f64,
}

impl HookTimes {
    fn since(&self, before: &HookTimes) -> HookTimes {
        HookTimes {
            runs: self.runs.saturating_sub(before.runs),
            seconds: self.seconds - before.seconds,
        }
    }
}

/// `hook`'s series of `hookwire_external_hook_duration_seconds` (every event's); zero before its
/// first run, or without a hook.
async fn hook_times(server: &Server, hook: Option<&str>) -> Result<HookTimes, String> {
    let Some(hook) = hook else {
        return Ok(HookTimes::default());
    };
    let text = http_get(&server.addr, "/metrics").await?;
    let label = format!("hook=\"{hook}\"");
    let sum = |series: &str| -> f64 {
        text.lines()
            .filter(|line| line.starts_with(series) && line.contains(&label))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    Ok(HookTimes {
        runs: sum("hookwire_external_hook_duration_seconds_count{") as u64,
        seconds: sum("hookwire_external_hook_duration_seconds_sum{"),
    })
}

// ---------------------------------------------------------------------------------------------
// Bare spawns.

/// The bench spawning `sh -c COMMAND` as hookwire spawns a command hook (`src/process/`: the
/// shell looked up in `PATH`, a clean environment with the hook's variables, the workspace as
/// its directory, a process group of its own, the input JSON on stdin while stdout and stderr
/// are read), at a fixed rate, each call in a task of its own, on a thread of its own with a
/// runtime of its own: its CPU is that thread's and its processes' (the bench's other children
/// are not reaped while it runs).
struct BareSpawns {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<SpawnFigures, String>>,
}

struct SpawnFigures {
    wall: Vec<Duration>,
    failed: u64,
    cpu: Duration,
}

/// What every bare spawn shares.
struct SpawnSpec {
    shell: PathBuf,
    env: Vec<(String, OsString)>,
    cwd: PathBuf,
    input: Vec<u8>,
}

impl BareSpawns {
    fn start(rate: f64, workspace: PathBuf) -> Result<BareSpawns, String> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(format!("no rate of hook calls to spawn at ({rate})"));
        }
        let spec = Arc::new(SpawnSpec::new(workspace)?);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("bare-spawns".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("no runtime for the bare spawns: {e}"))?;
                let (thread_before, children_before) = (thread_cpu(), children_cpu());
                let (wall, failed) = runtime.block_on(spawn_at(rate, spec, &flag));
                let cpu = thread_cpu().saturating_sub(thread_before)
                    + children_cpu().saturating_sub(children_before);
                Ok(SpawnFigures { wall, failed, cpu })
            })
            .map_err(|e| format!("no thread for the bare spawns: {e}"))?;
        Ok(BareSpawns { stop, thread })
    }

    fn finish(self) -> Result<SpawnFigures, String> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| "the bare spawns' thread panicked".to_string())?
    }
}

impl SpawnSpec {
    fn new(workspace: PathBuf) -> Result<SpawnSpec, String> {
        // The variables hookwire passes from its own environment, and the hook's own.
        let mut env: Vec<(String, OsString)> = ["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"]
            .into_iter()
            .filter_map(|name| Some((name.to_string(), std::env::var_os(name)?)))
            .collect();
        for name in ["HOOKWIRE_HOOK_EVENT", "JCLI_HOOK_EVENT"] {
            env.push((name.into(), "pre_tool_execution".into()));
        }
        for name in [
            "HOOKWIRE_CWD",
            "JCLI_CWD",
            "CLAUDE_PROJECT_DIR",
            "GEMINI_PROJECT_DIR",
            "GEMINI_CWD",
        ] {
            env.push((name.into(), workspace.clone().into_os_string()));
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let shell = std::env::split_paths(&path)
            .map(|dir| dir.join("sh"))
            .find(|candidate| candidate.is_file())
            .ok_or("no sh in PATH")?;
        // A pre_tool_execution input as hookwire writes it (the same fields, about the size).
        let input = json!({
            "event": "pre_tool_execution", "hook_event_name": "pre_tool_execution",
            "session_id": "6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5",
            "run_id": "0a1b2c3d-4e5f-4061-8273-8495a6b7c8d9",
            "cwd": workspace, "workspace_id": "ws-0123456789abcdef",
            "agent_name": "hookwire", "effective_agent_name": "hookwire", "model": "gpt-4o",
            "tool_name": "read_file", "tool_arguments": json!({"path": NOTES_FILE}).to_string(),
            "tool_input": {"path": NOTES_FILE},
        })
        .to_string()
        .into_bytes();
        Ok(SpawnSpec {
            shell,
            env,
            cwd: workspace,
            input,
        })
    }
}

/// Spawns at `rate` a second until `stop`, each run a task of its own; the runs' wall times
/// and how many failed.
async fn spawn_at(rate: f64, spec: Arc<SpawnSpec>, stop: &AtomicBool) -> (Vec<Duration>, u64) {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut runs = tokio::task::JoinSet::new();
    let (mut wall, mut failed) = (Vec::new(), 0);
    let mut note = |done: Result<Option<Duration>, tokio::task::JoinError>| match done {
        Ok(Some(took)) => wall.push(took),
        _ => failed += 1,
    };
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        n += 1;
        runs.spawn(bare_spawn(spec.clone(), n));
        while let Some(done) = runs.try_join_next() {
            note(done);
        }
    }
    while let Some(done) = runs.join_next().await {
        note(done);
    }
    (wall, failed)
}

/// One run of the hook's command, as `process::execute_bytes` does it: its wall time, `None`
/// if it could not start or did not exit 0.
async fn bare_spawn(spec: Arc<SpawnSpec>, n: u64) -> Option<Duration> {
    use tokio::io::AsyncWriteExt;
    let started = Instant::now();
    let mut command = tokio::process::Command::new(&spec.shell);
    command
        .args(["-c", COMMAND])
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(name, value)| (name, value)))
        .env("HOOKWIRE_HOOK_RUN", format!("{n:032x}"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().ok()?;
    let (mut stdin, mut stdout, mut stderr) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let write = async {
        if let Some(stdin) = stdin.as_mut() {
            let _ = stdin.write_all(&spec.input).await;
            let _ = stdin.shutdown().await;
        }
        drop(stdin);
    };
    let (_, _, _, status) = tokio::join!(
        write,
        read_all(stdout.as_mut()),
        read_all(stderr.as_mut()),
        child.wait()
    );
    let took = started.elapsed();
    status.ok()?.success().then_some(took)
}

async fn read_all<R: tokio::io::AsyncRead + Unpin>(pipe: Option<&mut R>) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut kept = Vec::new();
    if let Some(pipe) = pipe {
        let _ = pipe.read_to_end(&mut kept).await;
    }
    kept
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}
