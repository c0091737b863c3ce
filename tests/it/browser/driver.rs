//! What the browser tests need from a browser, whatever protocol drives it: evaluate a script,
//! navigate, reload, type, take a screenshot. Chromium speaks CDP, Firefox WebDriver BiDi; both
//! are plain JSON over a WebSocket. What the tests do on the hookwire page itself is the page
//! object's (`hookwire_page.rs`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use crate::common::eventually;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One page in a running browser.
pub trait Page {
    /// Evaluates `expression` (promises awaited) and returns its value as JSON.
    async fn eval(&mut self, expression: &str) -> Value;
    async fn navigate(&mut self, url: &str);
    async fn reload(&mut self);
    /// Types `text` into the focused element like a person, then presses Enter.
    async fn type_keys_and_enter(&mut self, text: &str);
    /// Presses Enter on the focused element as a keyboard does (a focused button activates).
    async fn press_enter(&mut self);
    async fn screenshot_png(&mut self) -> Vec<u8>;
    /// Makes the page's viewport `width` × `height` CSS pixels, as on a phone.
    async fn set_viewport(&mut self, width: u32, height: u32);
    /// The folder where the page's downloads land, without asking.
    fn downloads(&self) -> &std::path::Path;

    /// Waits until `expression` is true, or fails with what the page shows.
    async fn wait_for(&mut self, expression: &str) {
        // `eventually` asks again and again; each ask needs the page for itself.
        let page = tokio::sync::Mutex::new(&mut *self);
        let page = &page;
        let held = eventually(Duration::from_secs(15), move || async move {
            page.lock().await.eval(expression).await == json!(true)
        })
        .await;
        if !held {
            let shown = page.lock().await.eval("document.body.innerText").await;
            panic!("timed out waiting for `{expression}`; the page shows:\n{shown}");
        }
    }

    /// Saves a screenshot to `target/browser/<name>`, a test artifact.
    async fn screenshot(&mut self, name: &str) {
        let bytes = self.screenshot_png().await;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// The first of `names` on the PATH, or, when there is none, `None` after saying the tests were
/// skipped (outside CI) — under `CI=true` a missing browser fails the test instead.
pub fn find_browser(names: &[&str], install_hint: &str) -> Option<String> {
    let found = names.iter().find_map(|name| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {name}"))
            .output()
            .ok()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (!path.is_empty()).then_some(path)
    });
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!(
                "{} is not installed, and CI=true requires the browser tests",
                names[0]
            );
        }
        eprintln!(
            "SKIPPED: this browser test needs {} ({install_hint}); it is not installed",
            names[0]
        );
    }
    found
}

/// A browser process, killed when dropped.
pub struct Process {
    child: Child,
    _profile: tempfile::TempDir,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `path` with `args` and a fresh profile directory (`profile` fills it and returns the
/// flags that name it), and waits for the stderr line that contains `marker`; returns what
/// follows the marker (the WebSocket address to drive it with).
pub fn launch(
    path: &str,
    args: &[&str],
    profile: impl FnOnce(&std::path::Path) -> Vec<String>,
    marker: &'static str,
) -> (Process, String) {
    let profile_dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(path)
        .args(args)
        .args(profile(profile_dir.path()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split(marker).nth(1) {
                let _ = tx.send(rest.trim().to_string());
            }
        }
    });
    let process = Process {
        child,
        _profile: profile_dir,
    };
    let address = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{path} printed `{marker}` in time"));
    (process, address)
}

/// Sends one JSON command with a fresh id and returns the reply with that id (events and other
/// replies are skipped).
pub async fn command(ws: &mut Socket, next_id: &mut u64, mut message: Value) -> Value {
    *next_id += 1;
    let id = *next_id;
    message["id"] = json!(id);
    ws.send(WsMessage::text(message.to_string())).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let next = tokio::time::timeout_at(deadline, ws.next())
            .await
            .unwrap_or_else(|_| panic!("the browser answered {message} in time"));
        let Some(Ok(WsMessage::Text(text))) = next else {
            continue;
        };
        let value: Value = serde_json::from_str(text.as_str()).unwrap();
        if value["id"] == id {
            return value;
        }
    }
}
