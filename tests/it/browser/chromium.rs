//! Headless Chromium with one page, driven over the Chrome DevTools Protocol.

use base64::Engine;
use serde_json::{json, Value};

use super::driver::{command, find_browser, launch, Page, Process, Socket};

pub struct Chromium {
    ws: Socket,
    session: String,
    next_id: u64,
    downloads: tempfile::TempDir,
    _process: Process,
}

impl Chromium {
    /// Starts Chromium, or says why the test is skipped (a failure under CI).
    pub async fn launch() -> Option<Chromium> {
        let path = find_browser(
            &["chromium", "chromium-browser", "google-chrome"],
            "apt-get install chromium",
        )?;
        let (process, url) = launch(
            &path,
            &[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--window-size=1200,900",
                // The voice test plays an answer's audio without a click first.
                "--autoplay-policy=no-user-gesture-required",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            |profile| vec![format!("--user-data-dir={}", profile.display())],
            "DevTools listening on ",
        );
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let mut browser = Chromium {
            ws,
            session: String::new(),
            next_id: 0,
            downloads: tempfile::tempdir().unwrap(),
            _process: process,
        };
        let folder = browser.downloads.path().display().to_string();
        browser
            .call(
                "Browser.setDownloadBehavior",
                json!({"behavior": "allow", "downloadPath": folder}),
            )
            .await;
        let target = browser
            .call("Target.createTarget", json!({"url": "about:blank"}))
            .await;
        let attached = browser
            .call(
                "Target.attachToTarget",
                json!({"targetId": target["targetId"], "flatten": true}),
            )
            .await;
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        browser.call("Page.enable", json!({})).await;
        Some(browser)
    }

    /// One CDP command (on the page once attached); returns its result.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let mut message = json!({"method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let reply = command(&mut self.ws, &mut self.next_id, message).await;
        assert!(reply.get("error").is_none(), "{method}: {reply}");
        reply["result"].clone()
    }

    /// A desktop screen of `width` × `height` (`set_viewport` emulates a phone's).
    pub async fn set_desktop_viewport(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
    }
}

impl Page for Chromium {
    fn downloads(&self) -> &std::path::Path {
        self.downloads.path()
    }

    async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
            )
            .await;
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    async fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url})).await;
    }

    async fn reload(&mut self) {
        self.call("Page.reload", json!({})).await;
    }

    async fn type_keys_and_enter(&mut self, text: &str) {
        self.call("Input.insertText", json!({"text": text})).await;
        for kind in ["keyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}),
            )
            .await;
        }
    }

    async fn press_enter(&mut self) {
        // With `text`, the key also makes the keypress that activates a focused button.
        for kind in ["keyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": "Enter", "code": "Enter", "text": "\r", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}),
            )
            .await;
        }
    }

    async fn set_viewport(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": true}),
        )
        .await;
    }

    async fn screenshot_png(&mut self) -> Vec<u8> {
        let shot = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap()
    }
}
