//! Headless Firefox with one page, driven over WebDriver BiDi (built into Firefox: no
//! geckodriver needed).

use base64::Engine;
use serde_json::{json, Value};

use super::driver::{command, find_browser, launch, Page, Process, Socket};

pub struct Firefox {
    ws: Socket,
    context: String,
    next_id: u64,
    downloads: tempfile::TempDir,
    _process: Process,
}

/// Preferences for a quiet test profile: no first-run pages, no network calls of its own.
const USER_JS: &str = r#"
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.disabledForTesting", true);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("services.settings.server", "http://127.0.0.1:9/");
user_pref("browser.download.folderList", 2);
user_pref("browser.download.useDownloadDir", true);
user_pref("browser.download.always_ask_before_handling_new_types", false);
user_pref("browser.download.start_downloads_in_tmp_dir", false);
user_pref("browser.download.alwaysOpenPanel", false);
user_pref("browser.download.panel.shown", true);
"#;

impl Firefox {
    /// Starts Firefox, or says why the test is skipped (a failure under CI).
    pub async fn launch() -> Option<Firefox> {
        let path = find_browser(&["firefox-esr", "firefox"], "apt-get install firefox-esr")?;
        let downloads = tempfile::tempdir().unwrap();
        // Downloads go to their own folder, without a dialog.
        let folder = json!(downloads.path().display().to_string());
        let user_js = format!("{USER_JS}user_pref(\"browser.download.dir\", {folder});\n");
        let (process, url) = launch(
            &path,
            &["--headless", "--no-remote", "--remote-debugging-port", "0"],
            |profile| {
                std::fs::write(profile.join("user.js"), user_js).unwrap();
                vec!["--profile".into(), profile.display().to_string()]
            },
            "WebDriver BiDi listening on ",
        );
        let (ws, _) = tokio_tungstenite::connect_async(format!("{url}/session"))
            .await
            .unwrap();
        let mut browser = Firefox {
            ws,
            context: String::new(),
            next_id: 0,
            downloads,
            _process: process,
        };
        browser
            .call("session.new", json!({"capabilities": {}}))
            .await;
        let tree = browser.call("browsingContext.getTree", json!({})).await;
        browser.context = tree["contexts"][0]["context"].as_str().unwrap().to_string();
        browser.set_viewport(1200, 900).await;
        Some(browser)
    }

    /// One BiDi command; returns its result.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        let reply = command(
            &mut self.ws,
            &mut self.next_id,
            json!({"method": method, "params": params}),
        )
        .await;
        assert_eq!(reply["type"], "success", "{method}: {reply}");
        reply["result"].clone()
    }
}

impl Page for Firefox {
    fn downloads(&self) -> &std::path::Path {
        self.downloads.path()
    }

    async fn eval(&mut self, expression: &str) -> Value {
        // BiDi returns typed remote values; JSON text is the simplest common ground.
        let wrapped = format!(
            "(async () => {{ const v = await ({expression}); return v === undefined ? 'null' : JSON.stringify(v); }})()"
        );
        let result = self
            .call(
                "script.evaluate",
                json!({"expression": wrapped, "target": {"context": self.context},
                       "awaitPromise": true, "resultOwnership": "none"}),
            )
            .await;
        assert_eq!(result["type"], "success", "{expression}: {result}");
        serde_json::from_str(result["result"]["value"].as_str().unwrap()).unwrap()
    }

    async fn navigate(&mut self, url: &str) {
        self.call(
            "browsingContext.navigate",
            json!({"context": self.context, "url": url, "wait": "complete"}),
        )
        .await;
    }

    async fn reload(&mut self) {
        self.call(
            "browsingContext.reload",
            json!({"context": self.context, "wait": "complete"}),
        )
        .await;
    }

    async fn type_keys_and_enter(&mut self, text: &str) {
        let mut keys: Vec<Value> = Vec::new();
        for key in text.chars().map(String::from).chain(["\u{E007}".into()]) {
            keys.push(json!({"type": "keyDown", "value": key}));
            keys.push(json!({"type": "keyUp", "value": key}));
        }
        self.call(
            "input.performActions",
            json!({"context": self.context, "actions": [{"type": "key", "id": "keyboard", "actions": keys}]}),
        )
        .await;
    }

    async fn press_enter(&mut self) {
        // Headless Firefox delivers WebDriver BiDi key actions (keydown, keypress, keyup) but
        // does not activate a focused button with them; a click stands in for the key there.
        self.eval("document.activeElement.click()").await;
    }

    async fn set_viewport(&mut self, width: u32, height: u32) {
        self.call(
            "browsingContext.setViewport",
            json!({"context": self.context, "viewport": {"width": width, "height": height}}),
        )
        .await;
    }

    async fn screenshot_png(&mut self) -> Vec<u8> {
        let shot = self
            .call(
                "browsingContext.captureScreenshot",
                json!({"context": self.context}),
            )
            .await;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap()
    }
}
