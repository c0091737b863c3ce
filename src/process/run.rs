//! One command run to its end: `sh -c` with exactly its environment, input on stdin, output
//! capped, how it ended as data.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::group::spawn_grouped;
use super::ProcessError;

/// Output past this is not kept (the process may go on writing; it is drained).
pub(crate) const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// How a command ended, before anyone gives it a meaning (a hook's dialect reads it by its
/// exit-code contract).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CommandRun {
    /// `None` when a signal ended the shell (or it was killed at its timeout).
    pub(crate) exit_code: Option<i32>,
    /// Capped at [`MAX_OUTPUT_BYTES`], lossily decoded.
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) timed_out: bool,
}

/// Runs `sh -c command` with exactly `env`, in its own process group in `cwd`: JSON on stdin
/// (written while stdout is read, so a large input cannot deadlock), stdout and stderr capped.
/// When the shell ends, what it left is killed and reaped (see the module doc); a leftover that
/// still holds stdout open therefore does not hold the run. `Err` only when the shell could not
/// be started or waited for; how the command itself ended is the [`CommandRun`].
pub(crate) async fn execute(
    command: &str,
    env: &[(String, OsString)],
    cwd: &Path,
    input: &Value,
    timeout: Duration,
) -> Result<CommandRun, ProcessError> {
    let payload = input.to_string().into_bytes();
    let run = execute_bytes(command, env, cwd, payload, timeout, MAX_OUTPUT_BYTES).await?;
    Ok(CommandRun {
        exit_code: run.exit_code,
        stdout: String::from_utf8_lossy(&run.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&run.stderr).into_owned(),
        timed_out: run.timed_out,
    })
}

/// How a command run by [`execute_bytes`] ended, its output as bytes.
#[derive(Debug, Default)]
pub(crate) struct ByteRun {
    /// `None` when a signal ended the shell (or it was killed at its timeout).
    pub(crate) exit_code: Option<i32>,
    pub(crate) stdout: Vec<u8>,
    /// Capped at [`MAX_OUTPUT_BYTES`].
    pub(crate) stderr: Vec<u8>,
    pub(crate) timed_out: bool,
    /// More than `max_stdout` bytes were written to stdout (the rest was drained, not kept).
    pub(crate) stdout_cut: bool,
}

/// [`execute`] for any bytes on stdin and binary output (a speech engine's audio): the same
/// shell, environment, process group and cleanup; stdout kept up to `max_stdout` bytes. Dropping
/// the future (a cancelled chat) kills the whole run at once.
pub(crate) async fn execute_bytes(
    command: &str,
    env: &[(String, OsString)],
    cwd: &Path,
    payload: Vec<u8>,
    timeout: Duration,
    max_stdout: usize,
) -> Result<ByteRun, ProcessError> {
    let mut shell = tokio::process::Command::new("sh");
    shell.arg("-c").arg(command);
    // If the run ends before the shell does (timeout, or this future dropped because the chat was
    // cancelled), dropping `process` kills and reaps everything.
    let mut process = spawn_grouped(shell, env, cwd, &format!("`sh -c {command}`"))?;
    let (mut stdin, mut stdout, mut stderr) = process.take_stdio();
    let work = async {
        let write = async {
            if let Some(mut stdin) = stdin.take() {
                // A command that does not read its input closes the pipe early; that is fine.
                let _ = stdin.write_all(&payload).await;
                let _ = stdin.shutdown().await;
            }
        };
        let main = async {
            let status = process.wait().await;
            process.finished();
            status
        };
        let (_, out, err, status) = tokio::join!(
            write,
            read_capped(stdout.as_mut(), max_stdout),
            read_capped(stderr.as_mut(), MAX_OUTPUT_BYTES),
            main
        );
        (out, err, status)
    };
    let Ok(((out, out_cut), (err, _), status)) = tokio::time::timeout(timeout, work).await else {
        drop(process);
        return Ok(ByteRun {
            timed_out: true,
            ..ByteRun::default()
        });
    };
    let status = status.map_err(ProcessError::Wait)?;
    Ok(ByteRun {
        exit_code: status.code(),
        stdout: out,
        stderr: err,
        timed_out: false,
        stdout_cut: out_cut,
    })
}

/// Reads to the end, keeping at most `limit` bytes; `true` when more came (and was drained).
async fn read_capped<R: tokio::io::AsyncRead + Unpin>(
    reader: Option<&mut R>,
    limit: usize,
) -> (Vec<u8>, bool) {
    let Some(reader) = reader else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let mut cut = false;
    let mut buffer = [0u8; 8192];
    loop {
        match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => return (kept, cut),
            Ok(n) => {
                let room = limit.saturating_sub(kept.len());
                cut |= n > room;
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::RUN_MARKER;
    use serde_json::json;

    #[tokio::test]
    async fn the_shell_gets_exactly_its_environment_and_the_run_marker() {
        let env = vec![
            ("PATH".to_string(), OsString::from("/usr/bin:/bin")),
            ("ONLY".to_string(), OsString::from("this")),
        ];
        let run = execute(
            "env",
            &env,
            &std::env::temp_dir(),
            &json!({}),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        let mut names: Vec<&str> = run
            .stdout
            .lines()
            .filter_map(|line| line.split_once('=').map(|(name, _)| name))
            .filter(|name| !["PWD", "OLDPWD", "SHLVL", "_"].contains(name))
            .collect();
        names.sort();
        assert_eq!(names, [RUN_MARKER, "ONLY", "PATH"]);
    }
}
