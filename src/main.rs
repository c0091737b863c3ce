//! The `hookwire` binary: `serve` (the default), `check`, `trust`, `hooks test` and `health`.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use hookwire::config::{Config, LogFormat};
use tracing_subscriber::EnvFilter;

use cli::{Cli, Command, HooksCommand};

mod allocator;
mod cli;

fn init_logging(format: LogFormat) {
    // The MCP SDK logs each session's details at info: its warnings are what an operator needs.
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    // Colour codes only for a person at a terminal; in a pipe or a log file they are noise.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn main() -> ExitCode {
    // An empty flag variable counts as unset (clap would take it as a value: an empty
    // `HOOKWIRE_LLM_BASE_URL=` as a relative URL). Before any thread exists, so changing the
    // environment is safe.
    for name in Cli::empty_flag_variables(|name| std::env::var_os(name)) {
        std::env::remove_var(name);
    }
    let cli = Cli::parse();
    // A flag's value is in /proc/PID/cmdline, which every process on the machine (hooks
    // included) can read; the environment is not.
    if std::env::args_os().any(|arg| arg.to_string_lossy().starts_with("--llm-api-key")) {
        eprintln!(
            "hookwire: warning: --llm-api-key shows the key to every process on this machine \
             (the process list); set HOOKWIRE_LLM_API_KEY instead"
        );
    }
    let config = match Config::load(&cli.flags.into()) {
        Ok(config) => config,
        // `check` reports it as the problem it found (exit 1, as for any error it finds);
        // the other commands refuse to start (exit 2).
        Err(error) if matches!(cli.command, Some(Command::Check(_))) => {
            return cli::check::unloadable(&error)
        }
        Err(error) => {
            eprintln!("hookwire: {error}");
            return ExitCode::from(2);
        }
    };
    match cli.command.unwrap_or(Command::Serve) {
        Command::Check(args) => cli::check::run(&config, args),
        Command::Serve => serve(config),
        Command::Trust(args) => trust(&config, args),
        Command::Hooks(HooksCommand::Test { event, input }) => {
            cli::hooks::run(&config, &event, input)
        }
        Command::Hooks(HooksCommand::Replay(args)) => replay(config, args),
        Command::Health => health(&config),
    }
}

/// `hookwire hooks replay`: against `--hooks FILE` when given, else the configured hooks.
fn replay(mut config: Config, args: cli::ReplayArgs) -> ExitCode {
    if let Some(file) = args.hooks {
        config.hooks_file = Some(file);
    }
    // What the replay runs is the recording; recording it again would be noise.
    config.hook_record = None;
    let options = hookwire::app::hooks_replay::ReplayOptions {
        repeat: usize::from(args.repeat),
        jobs: usize::from(args.jobs),
    };
    let shown = cli::replay::Shown {
        json: args.json,
        only_changed: args.only_changed,
    };
    cli::replay::run(&config, &args.paths, options, shown)
}

/// Probes the server's `/healthz`: its answer on stdout and exit 0, or why not and exit 1.
fn health(config: &Config) -> ExitCode {
    let Some(runtime) = cli::runtime(false) else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(hookwire::server::health::probe(config)) {
        Ok(answer) => {
            println!("{answer}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("hookwire: unhealthy: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Reviews the workspace's hook files and trusts them, on the terminal.
fn trust(config: &Config, args: cli::TrustArgs) -> ExitCode {
    let stdin = std::io::stdin();
    let interactive = stdin.is_terminal();
    let mut input = stdin.lock();
    let (mut output, mut errors) = (std::io::stdout(), std::io::stderr());
    let mut terminal = cli::trust::Terminal {
        input: &mut input,
        output: &mut output,
        errors: &mut errors,
        interactive,
    };
    ExitCode::from(cli::trust::run(config, args, &mut terminal))
}

fn serve(config: Config) -> ExitCode {
    init_logging(config.log_format);
    allocator::publish_figures();
    let Some(runtime) = cli::runtime(true) else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(hookwire::server::serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        // Said once: the log is on stderr already (and JSON when asked).
        Err(error) => {
            tracing::error!("{error}");
            ExitCode::FAILURE
        }
    }
}
