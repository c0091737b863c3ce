//! Asking a model server for its context window (docs/providers.md, "The context window").
//!
//! A local server runs a model with a window its operator chose (llama.cpp's `-c`, vLLM's
//! `--max-model-len`, Ollama's `num_ctx`), usually far smaller than what the model's name
//! suggests. Assuming the name's window there lets a chat grow past what the server holds: every
//! later call fails. So a client asks, where the server says:
//! - llama.cpp: `GET {root}/props` → `default_generation_settings.n_ctx` (a slot's window, the
//!   one a request gets);
//! - vLLM, llama.cpp, LM Studio and others: `GET {api}/models` → the model's entry (by id, or the
//!   only one): `max_model_len` (vLLM), `meta.n_ctx` (llama.cpp), `context_length`;
//! - Ollama: `GET {root}/api/ps` → the loaded model's `context_length`, else `POST
//!   {root}/api/show` → `num_ctx` among its `parameters`.
//!
//! Each question is short (a 2 s timeout) and a wrong or missing answer only means "unknown":
//! the caller goes on with the name's window. OpenAI's and Anthropic's own APIs are never asked
//! (they publish no window, and the name's is right there).

use std::time::Duration;

use reqwest::Url;
use serde_json::Value;

/// How long one question may take.
const TIMEOUT: Duration = Duration::from_secs(2);

/// The largest answer read (a `/props` carries the chat template).
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// A window a server stated, and where it said so (for the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerWindow {
    pub tokens: u64,
    /// E.g. `"llama.cpp's /props"`.
    pub source: &'static str,
}

/// Where to ask: the server's root (`/props`, `/api/*`) and its OpenAI-style API root
/// (`/models`).
struct Asked<'a> {
    http: &'a reqwest::Client,
    root: Url,
    api: Url,
    api_key: Option<&'a str>,
}

/// The roots of an API whose base URL is `base_url` (`http://h:8080/v1` → `http://h:8080/`
/// and `http://h:8080/v1`); `None` for OpenAI's and Anthropic's own hosts.
fn roots(base_url: &str) -> Option<(Url, Url)> {
    let mut api = Url::parse(base_url.trim()).ok()?;
    let host = api.host_str()?.to_ascii_lowercase();
    if host == "api.openai.com"
        || host == "api.anthropic.com"
        || host.ends_with(".openai.azure.com")
    {
        return None;
    }
    api.set_fragment(None);
    api.set_query(None);
    let mut root = api.clone();
    {
        let mut segments = root.path_segments_mut().ok()?;
        segments.pop_if_empty();
    }
    if root.path().ends_with("/v1") {
        root.path_segments_mut().ok()?.pop();
    }
    api.path_segments_mut().ok()?.pop_if_empty();
    if !api.path().ends_with("/v1") {
        api.path_segments_mut().ok()?.push("v1");
    }
    Some((root, api))
}

/// The window the server at `base_url` states for `model` (see the module doc); `None` for
/// OpenAI's and Anthropic's own APIs, and when it does not say.
pub(super) async fn ask(
    http: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
    model: &str,
) -> Option<ServerWindow> {
    let (root, api) = roots(base_url)?;
    let asked = Asked {
        http,
        root,
        api,
        api_key,
    };
    asked.window(model).await
}

impl Asked<'_> {
    /// The window of `model`, from the first place (in the order above) that states one. The
    /// questions go at once, so a server that answers none costs one timeout.
    async fn window(&self, model: &str) -> Option<ServerWindow> {
        let (props, listed, ollama) = tokio::join!(
            self.llama_props(),
            self.models_entry(model),
            self.ollama(model)
        );
        let stated =
            |tokens: Option<u64>, source| tokens.map(|tokens| ServerWindow { tokens, source });
        stated(props, "llama.cpp's /props")
            .or_else(|| stated(listed, "the server's /v1/models"))
            .or_else(|| stated(ollama, "Ollama's /api/ps or /api/show"))
    }

    async fn llama_props(&self) -> Option<u64> {
        let props = self.get(join(&self.root, &["props"])?).await?;
        positive(&props["default_generation_settings"]["n_ctx"])
    }

    async fn models_entry(&self, model: &str) -> Option<u64> {
        let list = self.get(join(&self.api, &["models"])?).await?;
        let entries = list["data"].as_array()?;
        let named = |entry: &&Value| {
            entry["id"].as_str() == Some(model)
                || entry["aliases"]
                    .as_array()
                    .is_some_and(|aliases| aliases.iter().any(|a| a.as_str() == Some(model)))
        };
        let entry = match entries.iter().find(named) {
            Some(entry) => entry,
            None if entries.len() == 1 => &entries[0],
            None => return None,
        };
        positive(&entry["max_model_len"])
            .or_else(|| positive(&entry["meta"]["n_ctx"]))
            .or_else(|| positive(&entry["context_length"]))
    }

    async fn ollama(&self, model: &str) -> Option<u64> {
        if let Some(running) = self.get(join(&self.root, &["api", "ps"])?).await {
            let loaded = running["models"].as_array().and_then(|models| {
                models.iter().find(|m| {
                    m["name"].as_str() == Some(model) || m["model"].as_str() == Some(model)
                })
            });
            if let Some(tokens) = loaded.and_then(|m| positive(&m["context_length"])) {
                return Some(tokens);
            }
        }
        let request = self
            .http
            .post(join(&self.root, &["api", "show"])?)
            .json(&serde_json::json!({ "model": model }));
        let shown = self.answer(request).await?;
        shown["parameters"].as_str()?.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse::<u64>().ok())
                .flatten()
                .filter(|&n| n > 0)
        })
    }

    async fn get(&self, url: Url) -> Option<Value> {
        self.answer(self.http.get(url)).await
    }

    /// The JSON answer of `request`, or `None` (any failure: the question is only a hint).
    async fn answer(&self, mut request: reqwest::RequestBuilder) -> Option<Value> {
        if let Some(key) = self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.timeout(TIMEOUT).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_ANSWER_BYTES as u64)
        {
            return None;
        }
        let body = response.bytes().await.ok()?;
        if body.len() > MAX_ANSWER_BYTES {
            return None;
        }
        serde_json::from_slice(&body).ok()
    }
}

fn join(base: &Url, segments: &[&str]) -> Option<Url> {
    let mut url = base.clone();
    url.path_segments_mut()
        .ok()?
        .pop_if_empty()
        .extend(segments);
    Some(url)
}

fn positive(value: &Value) -> Option<u64> {
    value.as_u64().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::roots;

    #[test]
    fn roots_of_a_base_url() {
        let pair = |base: &str| roots(base).map(|(root, api)| (root.to_string(), api.to_string()));
        assert_eq!(
            pair("http://127.0.0.1:8080/v1"),
            Some((
                "http://127.0.0.1:8080/".into(),
                "http://127.0.0.1:8080/v1".into()
            ))
        );
        assert_eq!(
            pair("http://127.0.0.1:8080/v1/?key=x"),
            Some((
                "http://127.0.0.1:8080/".into(),
                "http://127.0.0.1:8080/v1".into()
            ))
        );
        // Anthropic's layout: the root itself.
        assert_eq!(
            pair("http://127.0.0.1:8080"),
            Some((
                "http://127.0.0.1:8080/".into(),
                "http://127.0.0.1:8080/v1".into()
            ))
        );
        assert_eq!(
            pair("http://127.0.0.1:11434/proxy/v1"),
            Some((
                "http://127.0.0.1:11434/proxy".into(),
                "http://127.0.0.1:11434/proxy/v1".into()
            ))
        );
        assert_eq!(pair("https://api.openai.com/v1"), None);
        assert_eq!(pair("https://x.openai.azure.com/openai"), None);
        assert_eq!(pair("https://api.anthropic.com"), None);
        assert_eq!(pair("not a url"), None);
    }
}
