//! The real `hookwire` binary as a test server: its environment set for it alone (tests share
//! one process), its log captured, and it the subreaper of its hooks' orphans (it makes itself
//! one), so its children are exactly the hooks' processes.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;

/// A `hookwire serve` subprocess, killed however the test ends.
pub struct Hookwire {
    pub child: std::process::Child,
    pub addr: std::net::SocketAddr,
    /// The workspace folder the server reads.
    pub root: PathBuf,
    /// Kept for as long as the server runs, when the server owns its workspace.
    _workspace: Option<tempfile::TempDir>,
    /// Every line the server logged so far.
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Hookwire {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Hookwire {
    /// Starts the server with `hooks` as its server-level hook file, in a fresh workspace,
    /// with an environment of PATH plus `env`.
    pub fn start(hooks: &str, env: &[(&str, &str)]) -> Hookwire {
        Self::start_in(tempfile::tempdir().unwrap(), hooks, env, |command| command)
    }

    /// Like `start`, in a prepared workspace, with `wrap` making the command line (to run it as
    /// another user).
    pub fn start_in(
        workspace: tempfile::TempDir,
        hooks: &str,
        env: &[(&str, &str)],
        wrap: impl FnOnce(Command) -> Command,
    ) -> Hookwire {
        let hooks_file = workspace.path().join("server-hooks.yaml");
        std::fs::write(&hooks_file, hooks).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookwire"));
        command.args(["serve", "--addr", "127.0.0.1:0"]);
        let mut command = wrap(command);
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOOKWIRE_WORKSPACE", workspace.path())
            .env("HOOKWIRE_HOOKS", &hooks_file)
            .envs(env.iter().copied());
        let root = workspace.path().to_path_buf();
        Self::launch(command, root, Some(workspace))
    }

    /// Spawns `command` (a `hookwire serve` with its arguments and environment) serving `root`,
    /// and waits for its `listening on` line.
    pub fn launch(
        mut command: Command,
        root: PathBuf,
        workspace: Option<tempfile::TempDir>,
    ) -> Hookwire {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(addr) = line.split("listening on http://").nth(1) {
                    let _ = tx.send(addr.trim().to_string());
                }
                lines.lock().unwrap().push(line);
            }
        });
        let mut server = Hookwire {
            child,
            addr: "127.0.0.1:0".parse().unwrap(),
            root,
            _workspace: workspace,
            log,
        };
        let Ok(addr) = rx.recv_timeout(Duration::from_secs(20)) else {
            panic!("no `listening on` line; the log: {:?}", server.log());
        };
        server.addr = addr.parse().unwrap();
        server
    }

    pub async fn connect(&self) -> Client {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", self.addr))
            .await
            .unwrap();
        Client { ws }
    }

    pub async fn chat(&self, input: &str) -> Vec<Value> {
        self.connect()
            .await
            .chat(json!({"type":"chat","input":input,"enable_tools":false}))
            .await
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The content of a file a hook writes, once it is there.
    pub async fn written(&self, name: &str) -> String {
        let file = self.path(name);
        let there = eventually(Duration::from_secs(10), || async {
            std::fs::read_to_string(&file).is_ok_and(|text| !text.trim().is_empty())
        })
        .await;
        assert!(
            there,
            "the hook never wrote {name}; the log: {:?}",
            self.log()
        );
        std::fs::read_to_string(&file).unwrap()
    }

    /// Waits until a log line satisfies `test` (the log is read by another thread, so a line
    /// written just before an answer may arrive just after it).
    pub async fn logged(&self, test: impl Fn(&str) -> bool) -> bool {
        eventually(Duration::from_secs(5), || async {
            self.log().iter().any(|line| test(line))
        })
        .await
    }

    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The server's children that are zombies, as `pid (name)`.
    pub fn zombies(&self) -> Vec<String> {
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
