//! The process group of a run, the run marker, and the cleanup of what a run left (see the
//! module doc of [`super`]).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::ProcessError;

/// The variable that marks every process of one run (and that an `env:` map may not set).
pub(crate) const RUN_MARKER: &str = "HOOKWIRE_HOOK_RUN";

/// How long the cleanup keeps killing what a run left before it gives up (and logs it).
const CLEANUP_LIMIT: Duration = Duration::from_secs(2);

/// A long-running process of the server's that is not a hook run (an MCP server over stdio),
/// started the way a hook's shell is: exactly its environment plus the run marker, in its own
/// process group, stdin, stdout and stderr piped. Dropping it kills the group and whatever else
/// the process left (see the module doc); once it exits by itself ([`ServerChild::wait`]), what
/// it left is killed too.
pub(crate) struct ServerChild {
    process: GroupLeader,
    pub(crate) stdin: Option<tokio::process::ChildStdin>,
    pub(crate) stdout: Option<tokio::process::ChildStdout>,
    pub(crate) stderr: Option<tokio::process::ChildStderr>,
}

impl ServerChild {
    /// Starts `program args…` in `cwd` with exactly `env`.
    pub(crate) fn spawn(
        program: &str,
        args: &[String],
        env: &[(String, OsString)],
        cwd: &Path,
    ) -> Result<ServerChild, ProcessError> {
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        let mut process = spawn_grouped(command, env, cwd, program)?;
        let (stdin, stdout, stderr) = process.take_stdio();
        Ok(ServerChild {
            process,
            stdin,
            stdout,
            stderr,
        })
    }

    /// Waits until the process exits; then what it left is killed and reaped.
    pub(crate) async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        let status = self.process.wait().await;
        if status.is_ok() {
            self.process.finished();
        }
        status
    }
}

/// Starts `command` with exactly `env` (and the run marker), in `cwd`, in a process group of its
/// own, its stdio piped; `what` names it in errors. The spawn holds the lock of the shells, so a
/// process that exits at once is never taken for an orphan and reaped behind tokio's back.
pub(super) fn spawn_grouped(
    mut command: tokio::process::Command,
    env: &[(String, OsString)],
    cwd: &Path,
    what: &str,
) -> Result<GroupLeader, ProcessError> {
    let marker = uuid::Uuid::new_v4().simple().to_string();
    // A bare program name (`sh`) with a `PATH` of the process's own would make the standard
    // library fork the whole server (page tables and all, ~2 ms) rather than use `posix_spawn`:
    // it is looked up in that `PATH` here instead, as the child's `execvp` would have.
    if let Some(program) = resolved(command.as_std().get_program(), env) {
        let mut resolved = tokio::process::Command::new(program);
        resolved.args(command.as_std().get_args());
        command = resolved;
    }
    command
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(name, value)| (name, value)))
        .env(RUN_MARKER, &marker)
        .envs(crate::telemetry::current_traceparent().map(|value| ("TRACEPARENT", value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let child = {
        let mut shells = shells();
        let child = command.spawn().map_err(|source| ProcessError::Start {
            what: what.to_string(),
            source,
        })?;
        if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
            shells.insert(pid);
        }
        child
    };
    let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) else {
        return Err(ProcessError::NoProcessId(what.to_string()));
    };
    let run = Run {
        group: pid,
        started: started(pid),
        marker,
    };
    Ok(GroupLeader {
        child: Some(child),
        run,
    })
}

/// `program` found in the `PATH` of `env` when it is a bare name (`None` when it holds a `/`,
/// or is found nowhere: then the spawn looks it up, or fails, as before).
fn resolved(program: &std::ffi::OsStr, env: &[(String, OsString)]) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.is_empty() || program.as_encoded_bytes().contains(&b'/') {
        return None;
    }
    let path = env.iter().rev().find(|(name, _)| name == "PATH")?;
    for dir in std::env::split_paths(&path.1) {
        // A relative entry is relative to the child's directory: left to the child's lookup.
        if !dir.is_absolute() {
            return None;
        }
        let candidate = dir.join(program);
        if std::fs::metadata(&candidate)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        {
            return Some(candidate);
        }
    }
    None
}

/// The hook shells (and [`ServerChild`]ren) that tokio owns, by pid, from their start until
/// tokio has reaped them: the orphan reaping must leave them alone. They are the only children
/// the server starts; a child of another kind would have to be registered here too, or a
/// subreaper's cleanup could reap it before its owner does.
static SHELLS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn shells() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    SHELLS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What identifies one hook run's processes.
#[derive(Debug, Clone)]
struct Run {
    /// The shell's pid, which is its process group's id.
    group: i32,
    /// The shell's start time (clock ticks since boot): the run's processes started no earlier.
    started: u64,
    /// The value of [`RUN_MARKER`] in their environment.
    marker: String,
}

/// The process a run started, leader of its own process group. Dropping it before it was
/// waited for kills the group and cleans up the rest.
pub(super) struct GroupLeader {
    /// `None` once the shell exited by itself and was waited for.
    child: Option<tokio::process::Child>,
    run: Run,
}

/// The pipes of a process started by [`spawn_grouped`].
type Stdio3 = (
    Option<tokio::process::ChildStdin>,
    Option<tokio::process::ChildStdout>,
    Option<tokio::process::ChildStderr>,
);

impl GroupLeader {
    /// Its stdin, stdout and stderr (once; `None` after).
    pub(super) fn take_stdio(&mut self) -> Stdio3 {
        match self.child.as_mut() {
            Some(child) => (child.stdin.take(), child.stdout.take(), child.stderr.take()),
            None => (None, None, None),
        }
    }

    pub(super) async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self.child.as_mut() {
            Some(child) => child.wait().await,
            None => Err(std::io::Error::other("the hook's process is gone")),
        }
    }

    /// The shell exited and was reaped: what it left is killed and reaped, in the background
    /// (the run's answer does not wait for the pass over `/proc`; a leftover that holds the
    /// output open is killed by it, which ends the reads).
    pub(super) fn finished(&mut self) {
        self.child = None;
        shells().remove(&self.run.group);
        let run = self.run.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || clean_up(&run))),
            Err(_) => clean_up(&run),
        }
    }
}

impl Drop for GroupLeader {
    /// Kills the group at once, then, once the shell is reaped, cleans up the rest.
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // The shell is not reaped yet, so the group's id cannot have been reused.
        kill_group(self.run.group);
        let run = self.run.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    // The shell first, through tokio, which owns its pid; then the rest.
                    let _ = child.wait().await;
                    shells().remove(&run.group);
                    let _ = tokio::task::spawn_blocking(move || clean_up(&run)).await;
                });
            }
            // No runtime: the process is ending; kill what is left, tokio reaps the shell if it
            // can.
            Err(_) => {
                drop(child);
                clean_up(&run);
            }
        }
    }
}

/// Kills the hook's whole process group (the shell and everything that stayed in it).
fn kill_group(group: i32) {
    if let Some(group) = rustix::process::Pid::from_raw(group) {
        // ESRCH: nobody is left in the group.
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

/// Kills every process of `run` that is left and reaps those that are ours, until none is left
/// alive (or [`CLEANUP_LIMIT`] passed: then logs what survived). Blocking.
#[cfg(target_os = "linux")]
fn clean_up(run: &Run) {
    let me = std::process::id() as i32;
    // As a subreaper (or PID 1), every orphan of a hook is ours to reap, including ones that
    // died while their hook ran and that no marker names any more.
    let adopts = me == 1 || matches!(rustix::process::child_subreaper(), Ok(Some(_)));
    let deadline = Instant::now() + CLEANUP_LIMIT;
    let mut pause = Duration::from_millis(1);
    loop {
        let mut alive = Vec::new();
        for process in proc::processes() {
            // Started since the run began: a group id (or pid) freed and reused meanwhile by
            // someone else's process is not ours to kill.
            let member = process.started >= run.started
                && (process.group == run.group
                    || (process.state != 'Z' && proc::carries(process.pid, &run.marker)));
            if process.state == 'Z' {
                if process.parent == me && (member || adopts) {
                    reap(process.pid);
                }
            } else if member {
                alive.push(process);
            }
        }
        if alive.is_empty() {
            return;
        }
        if alive.iter().any(|process| process.group == run.group) {
            // Members alive: the group exists, so its id is not reused.
            kill_group(run.group);
        }
        for process in &alive {
            if let Some(pid) = rustix::process::Pid::from_raw(process.pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        if Instant::now() >= deadline {
            let pids: Vec<i32> = alive.iter().map(|process| process.pid).collect();
            tracing::warn!(?pids, "processes left by a hook survived being killed");
            return;
        }
        // They were sent SIGKILL: the next pass sees them dead (and reaps them).
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Without `/proc`, the process group is all that is known of a run.
#[cfg(not(target_os = "linux"))]
fn clean_up(run: &Run) {
    kill_group(run.group);
}

/// Reaps `pid`, a zombie child of ours, unless it is a hook shell that tokio will reap.
#[cfg(target_os = "linux")]
fn reap(pid: i32) {
    let shells = shells();
    if shells.contains(&pid) {
        return;
    }
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        // ECHILD: another cleanup reaped it first.
        let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
    }
}

/// The start time of process `pid` (0 when unknown: then every process is looked at).
fn started(pid: i32) -> u64 {
    #[cfg(target_os = "linux")]
    {
        proc::stat(pid).map_or(0, |process| process.started)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        0
    }
}

/// The server process itself, made ready to run hooks (call once at start): it becomes the
/// subreaper of its hooks' orphans, so that it can reap them (see the module doc), and
/// non-dumpable, so that a hook running as the same user cannot read the server's environment
/// through `/proc/PID/environ` (nor attach to it). Linux only; elsewhere a no-op.
pub(crate) fn guard_server_process() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{set_child_subreaper, set_dumpable_behavior, DumpableBehavior};
        if let Err(error) = set_child_subreaper(Some(rustix::process::getpid())) {
            tracing::warn!(%error, "cannot become the subreaper of hook processes");
        }
        if let Err(error) = set_dumpable_behavior(DumpableBehavior::NotDumpable) {
            tracing::warn!(%error, "cannot hide the server's environment from its hooks");
        }
    }
}

/// Reading `/proc`.
#[cfg(target_os = "linux")]
mod proc {
    /// The fields of `/proc/PID/stat` the cleanup needs.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Process {
        pub(crate) pid: i32,
        /// `R`, `S`, `D`, `Z`, …
        pub(crate) state: char,
        pub(crate) parent: i32,
        pub(crate) group: i32,
        /// Clock ticks since boot.
        pub(crate) started: u64,
    }

    /// Every process there is (those that vanish while being read are passed over).
    pub(super) fn processes() -> impl Iterator<Item = Process> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .filter_map(stat)
    }

    pub(super) fn stat(pid: i32) -> Option<Process> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(pid, &text)
    }

    /// `pid (comm) state ppid pgrp session … starttime …`; `comm` may hold spaces and `)`, so
    /// the fields are counted from the last `)`.
    pub(super) fn parse_stat(pid: i32, text: &str) -> Option<Process> {
        let (_, rest) = text.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        Some(Process {
            pid,
            state: fields.first()?.chars().next()?,
            parent: fields.get(1)?.parse().ok()?,
            group: fields.get(2)?.parse().ok()?,
            started: fields.get(19)?.parse().ok()?,
        })
    }

    /// Whether `pid`'s environment holds `RUN_MARKER=marker` (false when it cannot be read).
    pub(super) fn carries(pid: i32, marker: &str) -> bool {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            return false;
        };
        let wanted = format!("{}={marker}", super::RUN_MARKER);
        environ
            .split(|byte| *byte == 0)
            .any(|entry| entry == wanted.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::execute;
    use serde_json::json;

    #[test]
    fn stat_lines_are_read_from_the_last_parenthesis() {
        let line =
            "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3";
        let process = proc::parse_stat(4242, line).unwrap();
        assert_eq!(
            (
                process.state,
                process.parent,
                process.group,
                process.started
            ),
            ('S', 17, 4242, 987654)
        );
        assert!(proc::parse_stat(1, "garbage").is_none());
    }

    /// What a hook leaves in its group or outside it (`setsid`) is killed when the shell exits.
    #[tokio::test]
    async fn processes_left_behind_are_killed_when_the_shell_exits() {
        let dir = tempfile::tempdir().unwrap();
        let env = vec![(
            "PATH".to_string(),
            std::env::var_os("PATH").unwrap_or_default(),
        )];
        let script = "setsid sh -c 'echo $$ > out.pid; exec sleep 300' >/dev/null 2>&1 &\n\
                      sh -c 'echo $$ > in.pid; exec sleep 300' >/dev/null 2>&1 &\n\
                      until [ -s out.pid ] && [ -s in.pid ]; do sleep 0.01; done";
        let run = execute(
            script,
            &env,
            dir.path(),
            &json!({}),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert_eq!(run.exit_code, Some(0), "{run:?}");
        for file in ["out.pid", "in.pid"] {
            let pid: i32 = std::fs::read_to_string(dir.path().join(file))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            // Killed (in the background): gone, or a zombie waiting for its reaper (this test
            // process is none).
            let dead = || matches!(proc::stat(pid).map(|p| p.state), None | Some('Z'));
            let deadline = Instant::now() + Duration::from_secs(5);
            while !dead() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert!(dead(), "{file}: {:?}", proc::stat(pid));
        }
    }
}
