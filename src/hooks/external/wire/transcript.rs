//! Claude Code's `transcript_path`: the chat so far as a JSONL file in Claude Code's format, so
//! that a hook written for Claude Code can read it. One file per chat, made when a
//! Claude-dialect hook first needs it, rewritten before each such hook runs, outside the
//! workspace, removed when the chat ends (the [`Transcript`] is dropped).
//!
//! The files live in a folder of this process (`$TMPDIR/hookwire-transcripts-{pid}-{start}`, mode
//! 0700; files 0600), removed when the server exits ([`remove_process_folder`]) and, for a
//! process that is gone (killed, crashed), at the next start ([`remove_stale_folders`]): a
//! transcript holds the whole chat, and must not outlive the server that wrote it.
//!
//! Claude Code does not document the lines; they follow what its own transcripts hold: one
//! object per message, `type` `user` / `assistant`, the API-shaped `message`, and `uuid`,
//! `parentUuid`, `sessionId`, `cwd`, `timestamp`. Tool calls are `tool_use` blocks and their
//! results `tool_result` blocks of a `user` line, under Claude Code's tool names and argument
//! shapes. The system prompt is not in it (nor is it in Claude Code's).

use std::fs::File;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::tools;
use crate::hooks::external::hook::Dialect;
use crate::types::{Message, Role};

/// The start of every transcript folder's name.
const FOLDER_PREFIX: &str = "hookwire-transcripts-";

/// This process's folder, made at first use (`None` when it cannot be made; logged).
static PROCESS_FOLDER: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

/// Where a chat in `workspace` writes its transcript: this process's folder in the temporary
/// directory, unless that is inside the workspace (then nowhere: a transcript must not be a
/// file of the workspace).
pub(crate) fn folder_for(workspace: &Path) -> Option<PathBuf> {
    let temp = std::env::temp_dir();
    let real = temp.canonicalize().unwrap_or_else(|_| temp.clone());
    if real.starts_with(workspace) {
        tracing::warn!(dir = %temp.display(), "the temporary directory is inside the workspace; Claude Code hooks get no transcript");
        return None;
    }
    process_folder(&temp)
}

/// At the server's start: the folders of servers that are gone removed, this one's made.
pub(crate) fn prepare_folders(workspace: &Path) {
    remove_stale_folders(&std::env::temp_dir());
    let _ = folder_for(workspace);
}

/// This process's transcript folder under `temp`, made (owner-only) the first time.
fn process_folder(temp: &Path) -> Option<PathBuf> {
    PROCESS_FOLDER
        .get_or_init(|| {
            let pid = std::process::id();
            let dir = temp.join(format!("{FOLDER_PREFIX}{pid}-{}", start_time(pid).unwrap_or(0)));
            match make_private_dir(&dir) {
                Ok(()) => Some(dir),
                Err(error) => {
                    tracing::warn!(dir = %dir.display(), %error, "cannot make the transcript folder; Claude Code hooks get no transcript");
                    None
                }
            }
        })
        .clone()
}

/// A new folder only its owner can enter; an existing one is taken only if it is a real folder
/// of ours with that mode (in a shared `/tmp`, someone else could have made it first).
fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(dir)?;
            let ours = meta.is_dir()
                && meta.uid() == rustix::process::geteuid().as_raw()
                && meta.permissions().mode() & 0o077 == 0;
            if ours {
                Ok(())
            } else {
                Err(std::io::Error::other(
                    "it exists and is not a private folder of ours",
                ))
            }
        }
        Err(error) => Err(error),
    }
}

/// Removes this process's folder and what is left in it (at exit).
pub(crate) fn remove_process_folder() {
    if let Some(Some(dir)) = PROCESS_FOLDER.get() {
        if let Err(error) = std::fs::remove_dir_all(dir) {
            if error.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %dir.display(), %error, "cannot remove the transcript folder");
            }
        }
    }
}

/// Removes the transcript folders under `temp` of processes that are gone (a server killed
/// before it could remove its own). Only ours: another user's are neither readable nor ours
/// to remove.
fn remove_stale_folders(temp: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(FOLDER_PREFIX)) else {
            continue;
        };
        let Some((pid, start)) = rest
            .split_once('-')
            .and_then(|(pid, start)| Some((pid.parse::<u32>().ok()?, start.parse::<u64>().ok()?)))
        else {
            continue;
        };
        let alive = pid == std::process::id() || start_time(pid).is_some_and(|now| now == start);
        let ours = entry
            .metadata()
            .is_ok_and(|meta| meta.is_dir() && meta.uid() == me);
        if alive || !ours {
            continue;
        }
        match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => {
                tracing::info!(dir = %entry.path().display(), "removed the transcript folder of a server that is gone")
            }
            Err(error) => {
                tracing::warn!(dir = %entry.path().display(), %error, "cannot remove a stale transcript folder")
            }
        }
    }
}

/// When process `pid` started (clock ticks since boot, `/proc/PID/stat` field 22): with the
/// pid, it names one process even when pids are reused. `None` when there is no such process.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (in parentheses, which may hold anything): state is field 3.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Writes a chat's transcript into `slot` (made at first use, in the folder for `workspace`)
/// and returns its path. A transcript that cannot be written is logged; the hooks then get an
/// empty path.
pub(crate) fn write(
    slot: &mut Option<Transcript>,
    workspace: &Path,
    session_id: &str,
    messages: &[Message],
    last: Option<&str>,
) -> Option<String> {
    if slot.is_none() {
        let dir = folder_for(workspace)?;
        match Transcript::create(&dir) {
            Ok(transcript) => *slot = Some(transcript),
            Err(error) => {
                tracing::warn!(dir = %dir.display(), %error, "cannot make the chat's transcript for Claude Code hooks");
                return None;
            }
        }
    }
    let transcript = slot.as_mut()?;
    match transcript.write(session_id, workspace, messages, last) {
        Ok(()) => Some(transcript.path().display().to_string()),
        Err(error) => {
            tracing::warn!(%error, "cannot write the chat's transcript");
            None
        }
    }
}

/// A chat's transcript file; removed when dropped.
#[derive(Debug)]
pub(crate) struct Transcript {
    path: PathBuf,
    file: File,
}

impl Transcript {
    /// A new, empty transcript in `dir` (a fresh name, created exclusively, owner-only).
    pub(crate) fn create(dir: &Path) -> std::io::Result<Transcript> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join(format!(
            "hookwire-transcript-{}.jsonl",
            uuid::Uuid::new_v4().simple()
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        Ok(Transcript { path, file })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file's content with `messages` (and `last`, the assistant's final answer
    /// that is not in the list yet, at `Stop`).
    pub(crate) fn write(
        &mut self,
        session_id: &str,
        root: &Path,
        messages: &[Message],
        last: Option<&str>,
    ) -> std::io::Result<()> {
        let text = lines(session_id, root, messages, last);
        self.file.set_len(0)?;
        self.file.rewind()?;
        self.file.write_all(text.as_bytes())?;
        self.file.flush()
    }
}

impl Drop for Transcript {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The JSONL text of a chat.
pub(crate) fn lines(
    session_id: &str,
    root: &Path,
    messages: &[Message],
    last: Option<&str>,
) -> String {
    let cwd = root.display().to_string();
    let now = super::timestamp();
    let mut out = String::new();
    let mut parent: Option<String> = None;
    // A tool result needs its call's name and arguments (for Claude's names and shapes).
    let mut calls: Vec<(String, String, Value)> = Vec::new();
    let mut push = |kind: &str, message: Value, extra: Option<Value>| {
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut line = json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": cwd,
            "sessionId": session_id, "version": "hookwire", "type": kind, "message": message,
            "uuid": uuid, "timestamp": now,
        });
        if let (Some(extra), Some(object)) = (extra, line.as_object_mut()) {
            object.insert("toolUseResult".into(), extra);
        }
        out.push_str(&line.to_string());
        out.push('\n');
        parent = Some(uuid);
    };
    for message in messages {
        match message.role {
            Role::System => {}
            Role::User => push(
                "user",
                json!({"role": "user", "content": message.content}),
                None,
            ),
            Role::Assistant => {
                let mut content = Vec::new();
                if !message.content.is_empty() {
                    content.push(json!({"type": "text", "text": message.content}));
                }
                for call in &message.tool_calls {
                    let arguments = call.arguments_value();
                    let input = tools::input_for(Dialect::Claude, &call.name, &arguments, root);
                    content.push(json!({"type": "tool_use", "id": call.id,
                        "name": tools::name_for(Dialect::Claude, &call.name), "input": input}));
                    calls.push((call.id.clone(), call.name.clone(), arguments));
                }
                push(
                    "assistant",
                    json!({"role": "assistant", "type": "message", "content": content}),
                    None,
                );
            }
            Role::Tool => {
                let id = message.tool_call_id.clone().unwrap_or_default();
                let call = calls.iter().find(|(call_id, _, _)| *call_id == id);
                let response = call.map(|(_, name, arguments)| {
                    tools::claude_response(name, arguments, &message.content, root)
                });
                push(
                    "user",
                    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                           "content": message.content}]}),
                    response,
                );
            }
        }
    }
    if let Some(last) = last {
        push(
            "assistant",
            json!({"role": "assistant", "type": "message",
                   "content": [{"type": "text", "text": last}]}),
            None,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolCall;

    #[test]
    fn a_chat_in_claude_codes_shape() {
        let messages = vec![
            Message::system("not in the transcript"),
            Message::user("read a.rs"),
            Message::assistant_with_tools(
                "Let me look.",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.rs"}"#.into(),
                }],
            ),
            Message::tool_result("c1", "fn main() {}"),
        ];
        let text = lines("s1", Path::new("/ws"), &messages, Some("It is empty."));
        let lines: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0]["type"], "user");
        assert_eq!(lines[0]["message"]["content"], "read a.rs");
        assert_eq!(lines[0]["sessionId"], "s1");
        assert_eq!(lines[1]["parentUuid"], lines[0]["uuid"]);
        let tool_use = &lines[1]["message"]["content"][1];
        assert_eq!(tool_use["name"], "Read");
        assert_eq!(tool_use["input"], json!({"file_path": "/ws/a.rs"}));
        assert_eq!(lines[2]["message"]["content"][0]["tool_use_id"], "c1");
        assert_eq!(lines[2]["toolUseResult"]["file"]["content"], "fn main() {}");
        assert_eq!(lines[3]["message"]["content"][0]["text"], "It is empty.");
    }

    #[test]
    fn the_file_is_private_rewritten_and_removed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mut transcript = Transcript::create(dir.path()).unwrap();
        let path = transcript.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let root = Path::new("/ws");
        transcript
            .write(
                "s",
                root,
                &[Message::user("one"), Message::user("two")],
                None,
            )
            .unwrap();
        transcript
            .write("s", root, &[Message::user("one")], None)
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
        drop(transcript);
        assert!(!path.exists());
    }
}
