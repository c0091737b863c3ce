//! The command line: subcommands and flags (each flag with its environment variable), and the
//! commands other than `serve`: `check`, `trust`, `hooks test`, each printing what the library
//! reports.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};
use hookwire::config::{CliSettings, LogFormat, MessageStyleSetting, PlanningSetting, Provider};

pub(crate) mod check;
pub(crate) mod hooks;
pub(crate) mod replay;
pub(crate) mod trust;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "hookwire",
    version,
    about = "A stateless WebSocket chat backend for LLM agents, built around hooks"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    #[command(flatten)]
    pub(crate) flags: Flags,
}

#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub(crate) enum Command {
    /// Run the server (the default).
    Serve,
    /// Load skills and hook files as `serve` would, print every problem, exit 1 if any error.
    Check(CheckArgs),
    /// Show the workspace's hook files and what they run; trust them once confirmed.
    Trust(TrustArgs),
    /// Ask the server these settings describe whether it takes chats (`GET /healthz`): exit 0
    /// when it does, 1 otherwise (for a container's health check).
    Health,
    /// Work with the hooks: `hookwire hooks test EVENT` runs one event's hooks for real;
    /// `hookwire hooks replay PATH…` runs recorded traffic through them.
    #[command(subcommand)]
    Hooks(HooksCommand),
}

/// `hookwire hooks …`.
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub(crate) enum HooksCommand {
    /// Run EVENT's hooks (any dialect's name: `pre_tool_execution`, `PreToolUse`, …) on an input
    /// with their real handlers; print each hook's outcome and what it changed. Exit 0: the
    /// event goes on; 2: a hook stopped, skipped, blocked or asked; 1: a hook failed.
    Test {
        /// The event, as a hook file names it.
        event: String,
        /// The input JSON a hook would get (`tool_name`, `tool_input`, `user_input`, …): a
        /// file, or `-` for stdin; none = an empty input.
        #[arg(long)]
        input: Option<PathBuf>,
    },
    /// Run recorded hook traffic (`hooks.record`) through the hooks as they are now and compare
    /// each decision with the recorded one. Exit 0: every decision is the same; 1: some differ;
    /// 2: a recording or the hooks cannot be read.
    Replay(ReplayArgs),
}

/// `hookwire hooks replay PATH… [--hooks FILE] [--json] [--only-changed] [--repeat N] [--jobs N]`.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct ReplayArgs {
    /// Recordings (`hooks-<date>.jsonl`), or folders of them.
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// The server-level hook file to replay against (else the configured one).
    #[arg(long)]
    pub(crate) hooks: Option<PathBuf>,
    /// One JSON object per event (`changed`, `old`, `new`; `rates` with --repeat).
    #[arg(long)]
    pub(crate) json: bool,
    /// Show only the events whose decision changed.
    #[arg(long)]
    pub(crate) only_changed: bool,
    /// Run each event this many times and report the rate of each outcome (for hooks that ask
    /// a model, whose answers vary).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) repeat: u16,
    /// Events replayed at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub(crate) jobs: u16,
}

/// `hookwire check [--probe]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Args)]
pub(crate) struct CheckArgs {
    /// Also start each MCP server, list its tools and stop it (exit 1 if one fails).
    #[arg(long)]
    pub(crate) probe: bool,
}

/// `hookwire trust [--workspace DIR] [--yes | --list | --revoke]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Args)]
pub(crate) struct TrustArgs {
    /// Trust the files shown without asking (needed when stdin is not a terminal).
    #[arg(long, conflicts_with_all = ["list", "revoke"])]
    pub(crate) yes: bool,
    /// Show every trusted workspace and its files.
    #[arg(long, conflicts_with = "revoke")]
    pub(crate) list: bool,
    /// Forget the workspace: its hook files stop loading.
    #[arg(long)]
    pub(crate) revoke: bool,
}

/// Flags, each with its environment variable (clap resolves flag before env); the library
/// gets them as [`CliSettings`].
#[derive(Debug, Clone, Args)]
pub(crate) struct Flags {
    /// YAML config file.
    #[arg(long, env = "HOOKWIRE_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// Listen address (port 0 = pick a free port).
    #[arg(long, env = "HOOKWIRE_ADDR", global = true)]
    addr: Option<String>,
    /// Skill folders.
    #[arg(long, env = "HOOKWIRE_SKILLS_DIR", global = true)]
    skills_dir: Option<PathBuf>,
    /// Root that the file tools may read; nothing outside it.
    #[arg(long, env = "HOOKWIRE_WORKSPACE", global = true)]
    workspace: Option<PathBuf>,
    /// The browser page.
    #[arg(long, env = "HOOKWIRE_STATIC_DIR", global = true)]
    static_dir: Option<PathBuf>,
    /// OpenAI-compatible API root (else OPENAI_BASE_URL).
    #[arg(long, env = "HOOKWIRE_LLM_BASE_URL", global = true)]
    llm_base_url: Option<String>,
    /// Bearer token (else OPENAI_API_KEY).
    #[arg(
        long,
        env = "HOOKWIRE_LLM_API_KEY",
        global = true,
        hide_env_values = true
    )]
    llm_api_key: Option<String>,
    /// The model API: `openai` (any OpenAI-compatible server) or `anthropic` (the Messages API).
    #[arg(long, env = "HOOKWIRE_PROVIDER", global = true)]
    provider: Option<Provider>,
    /// Model name sent upstream.
    #[arg(long, env = "HOOKWIRE_MODEL", global = true)]
    model: Option<String>,
    /// Seconds the upstream may stay silent before the chat fails.
    #[arg(long, env = "HOOKWIRE_LLM_TIMEOUT", global = true)]
    llm_timeout: Option<f64>,
    /// `text` or `json`; the level comes from RUST_LOG.
    #[arg(long, env = "HOOKWIRE_LOG_FORMAT", global = true)]
    log_format: Option<LogFormat>,
    /// How OpenAI-compatible requests are laid out: `auto` (default), `strict` or `openai`.
    #[arg(long, env = "HOOKWIRE_MESSAGE_STYLE", global = true)]
    message_style: Option<MessageStyleSetting>,
    /// How a chat with tools decides to use them: `marker` (default), `native` or `off`.
    #[arg(long, env = "HOOKWIRE_PLANNING", global = true)]
    planning: Option<PlanningSetting>,
}

impl From<Flags> for CliSettings {
    fn from(flags: Flags) -> Self {
        CliSettings {
            config: flags.config,
            addr: flags.addr,
            skills_dir: flags.skills_dir,
            workspace: flags.workspace,
            static_dir: flags.static_dir,
            llm_base_url: flags.llm_base_url,
            llm_api_key: flags.llm_api_key,
            provider: flags.provider,
            model: flags.model,
            llm_timeout: flags.llm_timeout,
            log_format: flags.log_format,
            message_style: flags.message_style,
            planning: flags.planning,
        }
    }
}

impl Cli {
    /// The environment variables of the flags (`HOOKWIRE_LLM_BASE_URL`, …).
    pub(crate) fn flag_variables() -> Vec<String> {
        let command = Cli::command();
        let mut names: Vec<String> = command
            .get_arguments()
            .chain(command.get_subcommands().flat_map(|c| c.get_arguments()))
            .filter_map(|arg| arg.get_env())
            .map(|name| name.to_string_lossy().into_owned())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The flags' variables that are set to the empty string: they count as unset (an
    /// `HOOKWIRE_LLM_BASE_URL=` left in a shell is not a URL). clap reads an empty value as
    /// given, so the binary removes them before parsing.
    pub(crate) fn empty_flag_variables(
        lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Vec<String> {
        Self::flag_variables()
            .into_iter()
            .filter(|name| lookup(name).is_some_and(|value| value.is_empty()))
            .collect()
    }
}

/// The async runtime of a command (`multi_thread` for the server); `None` after saying why
/// there is none.
pub(crate) fn runtime(multi_thread: bool) -> Option<tokio::runtime::Runtime> {
    let mut builder = if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    match builder.enable_all().build() {
        Ok(runtime) => Some(runtime),
        Err(error) => {
            eprintln!("hookwire: cannot start the async runtime: {error}");
            None
        }
    }
}
