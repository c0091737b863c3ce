//! The process group of a run and its run marker; when the run ends, what it left is handed to
//! the cleanup (`cleanup.rs`; see the module doc of [`super`]).

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;

use super::cleanup::{clean_up_later, clean_up_now, kill_group, shells, started, Run, RUN_MARKER};
use super::ProcessError;

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
        clean_up_later(self.run.clone());
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
                    clean_up_later(run);
                });
            }
            // No runtime: the process is ending; kill what is left, tokio reaps the shell if it
            // can.
            Err(_) => {
                drop(child);
                clean_up_now(run);
            }
        }
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
