//! The processes the server starts: command hooks, MCP servers over stdio, speech commands
//! (docs/protocol.md §8, "Hook processes"). This module knows nothing of hooks or MCP: it starts
//! a program with exactly the environment it is given, in a process group of its own, and kills
//! and reaps everything the program left once it ends.
//!
//! - [`env`]: the clean environment (the few variables passed from the server's, a process's
//!   own `env:` map with its `${NAME}` references filled in);
//! - `group`: the process group, the run marker, the server's own guard
//!   ([`guard_server_process`]), and [`ServerChild`] (a long-running process);
//! - `cleanup`: the cleaner, one thread that kills and reaps what runs left;
//! - `run`: one command run to its end, its outcome as data ([`CommandRun`], [`ByteRun`]).
//!
//! **Environment.** A process starts with an empty environment plus [`PASSED_VARIABLES`] (those
//! the server has) and what its caller adds (a hook's variables, its `env:` map): nothing else of
//! the server's, so no API key or signing secret, unless the operator's `env:` names it.
//!
//! **Cleanup.** The process runs in its own process group. When it ends (it exits, times out, or
//! the run is dropped because the chat was cancelled), everything it left is killed and reaped:
//! - the process group catches what stayed in it (`cmd &`, `nohup cmd &`, `(cmd &)`);
//! - every process of a run also carries [`RUN_MARKER`]`=<uuid>` in its environment, so a process
//!   that left the group (`setsid`, `setpgid`, a double fork that does either) is found by
//!   reading `/proc/PID/environ` (Linux);
//! - the server is the subreaper of its children's orphans ([`guard_server_process`]) and reaps
//!   them (each time a run ends: one that died since is `<defunct>` until then).
//!
//! What this cannot catch: a process that both leaves the group and clears or rewrites its own
//! environment (`setsid env -i cmd`), or one the server may not read or signal (a setuid
//! program). A hook runs as the server's user: for a hook that is hostile, the boundary is a
//! separate user or container, not this.
//!
//! Cost: a pass over `/proc` (each process's `stat`; `environ` only for the processes started
//! since the run) in the cleaner's thread, which the run does not wait for: about 10 µs a
//! process (1 ms for 70 processes, measured on a small VM). The runs that end within 20 ms of
//! each other share one pass, so under load the cost per run falls with the rate of runs.

mod cleanup;
pub(crate) mod env;
mod group;
mod run;

/// Why a process could not be started or waited for (how it ended is data, not an error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProcessError {
    #[error("cannot start {what}: {source}")]
    Start {
        what: String,
        source: std::io::Error,
    },
    #[error("{0} has no process id")]
    NoProcessId(String),
    #[error("waiting for the command failed: {0}")]
    Wait(std::io::Error),
}

pub(crate) use cleanup::RUN_MARKER;
pub(crate) use env::{
    environment_with, expand, is_variable_name, plain_environment, server_variable, variables_in,
};
pub(crate) use group::{guard_server_process, ServerChild};
pub(crate) use run::{execute, execute_bytes, CommandRun};
