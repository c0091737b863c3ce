//! Command hooks that are killed (timeout, cancelled chat) are reaped: `ps` shows no
//! `<defunct>` child of the server. The server runs as a process of its own, so its children are
//! exactly the hooks' processes, and as a child subreaper, like PID 1 of a container: the killed
//! hook's own children are handed to it, not to init.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::common::*;

/// The hook's shell waits on a long sleep.
const SLOW_HOOK: &str = "sleep 30 & echo $$ > hook.pid; wait";

/// Kills the server subprocess however the test ends.
struct Server {
    child: std::process::Child,
    addr: std::net::SocketAddr,
    workspace: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(timeout_seconds: f64) -> Server {
        let workspace = tempfile::tempdir().unwrap();
        let hooks_file = workspace.path().join("hooks.yaml");
        std::fs::write(
            &hooks_file,
            format!(
                "pre_send_message:\n  - command: '{SLOW_HOOK}'\n    timeout: {timeout_seconds}\n"
            ),
        )
        .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookwire"));
        command
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOOKWIRE_WORKSPACE", workspace.path())
            .env("HOOKWIRE_HOOKS", &hooks_file)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: prctl is async-signal-safe; the attribute survives the exec.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        let mut child = command.spawn().unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(addr) = line.split("listening on http://").nth(1) {
                    let _ = tx.send(addr.trim().to_string());
                }
            }
        });
        let mut server = Server {
            child,
            addr: "127.0.0.1:0".parse().unwrap(),
            workspace,
        };
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("a `listening on` line");
        server.addr = addr.parse().unwrap();
        server
    }

    async fn connect(&self) -> Client {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", self.addr))
            .await
            .unwrap();
        Client { ws }
    }

    /// Waits until the hook has written its pid.
    async fn hook_started(&self) {
        let file = self.workspace.path().join("hook.pid");
        let written = eventually(Duration::from_secs(5), || async {
            std::fs::read_to_string(&file).is_ok_and(|p| !p.trim().is_empty())
        })
        .await;
        assert!(written, "the hook never started");
    }

    /// The server's children that are zombies, as `pid (name)`.
    fn zombies(&self) -> Vec<String> {
        let server = self.child.id().to_string();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
            .filter_map(|stat| {
                let (head, rest) = stat.rsplit_once(')')?;
                let mut fields = rest.split_whitespace();
                let (state, parent) = (fields.next()?, fields.next()?);
                (state == "Z" && parent == server).then(|| format!("{head})"))
            })
            .collect()
    }
}

#[tokio::test]
async fn a_hook_killed_at_its_timeout_leaves_no_zombie() {
    let server = Server::start(0.3);
    let mut client = server.connect().await;
    let frames = client
        .chat(json!({"type":"chat","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done");
    server.hook_started().await;
    let clean = eventually(Duration::from_secs(2), || async {
        server.zombies().is_empty()
    })
    .await;
    assert!(clean, "zombies of the server: {:?}", server.zombies());
}

#[tokio::test]
async fn a_hook_killed_by_a_cancelled_chat_leaves_no_zombie() {
    let server = Server::start(20.0);
    let mut client = server.connect().await;
    client
        .send(json!({"type":"chat","id":"slow","input":"hi","enable_tools":false}))
        .await;
    assert_eq!(client.frame().await["type"], "start");
    server.hook_started().await;
    client.send(json!({"type":"cancel","id":"slow"})).await;
    assert_eq!(
        client.until_end().await.last().unwrap()["reason"],
        "cancelled"
    );
    let clean = eventually(Duration::from_secs(2), || async {
        server.zombies().is_empty()
    })
    .await;
    assert!(clean, "zombies of the server: {:?}", server.zombies());
}
