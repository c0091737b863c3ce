//! Who may talk to the server (README "Security model"): one middleware in front of every route.
//!
//! In order, each check refusing with its own status and a `warn` log line:
//! 1. **Host** (DNS rebinding): with `allowed_hosts` set, the request's `Host` must be one of
//!    them; unset and bound to a loopback address, it must be `localhost`, `127.0.0.1` or
//!    `[::1]` (any port). Otherwise any Host. → 403.
//! 2. **Origin** (a web page the user visits): with `allowed_origins` set, an `Origin` header must
//!    be one of them; unset, its `host[:port]` must equal the `Host` header (same origin). No
//!    `Origin` header (a non-browser client) passes. → 403.
//! 3. **Token**: with `auth_token` set, `/ws`, `/api/*` and `/metrics` need
//!    `Authorization: Bearer TOKEN` or `?token=TOKEN`, compared in constant time. `/healthz`,
//!    `/livez` and the page stay open (the page brings the token itself). → 401.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The access rules, resolved from the config once at start.
#[derive(Debug, Clone, Default)]
pub(super) struct AccessPolicy {
    /// Hosts a request may name; `None` = see [`AccessPolicy::loopback_only`].
    pub(crate) allowed_hosts: Option<Vec<String>>,
    /// Without `allowed_hosts`: only loopback names (the server is bound to loopback).
    pub(crate) loopback_only: bool,
    /// Origins a browser request may come from; `None` = same origin only.
    pub(crate) allowed_origins: Option<Vec<String>>,
    /// The bearer token `/ws`, `/api/*` and `/metrics` need.
    pub(crate) auth_token: Option<String>,
}

/// Why a request was refused: the status and the line the client and the log get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl AccessPolicy {
    /// Whether a request for `uri` with `headers` may go on.
    pub(super) fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .or_else(|| uri.authority().map(|a| a.as_str()));
        self.check_host(host)?;
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            self.check_origin(origin, host)?;
        }
        if self.auth_token.is_some() && needs_token(uri.path()) {
            self.check_token(uri, headers)?;
        }
        Ok(())
    }

    fn check_host(&self, host: Option<&str>) -> Result<(), Refusal> {
        let allowed = match (&self.allowed_hosts, host) {
            (_, None) => !self.loopback_only && self.allowed_hosts.is_none(),
            (Some(list), Some(host)) => {
                let name = host_name(host);
                list.iter().any(|entry| {
                    entry.eq_ignore_ascii_case(host) || entry.eq_ignore_ascii_case(name)
                })
            }
            (None, Some(host)) => !self.loopback_only || is_loopback_name(host_name(host)),
        };
        if allowed {
            return Ok(());
        }
        Err(Refusal {
            status: StatusCode::FORBIDDEN,
            reason: "host",
            message: format!(
                "Host {:?} is not allowed (set allowed_hosts to serve other names)",
                host.unwrap_or("")
            ),
        })
    }

    fn check_origin(&self, origin: &str, host: Option<&str>) -> Result<(), Refusal> {
        let allowed = match &self.allowed_origins {
            Some(list) => list.iter().any(|entry| entry == origin),
            None => match (origin_authority(origin), host) {
                (Some(authority), Some(host)) => authority.eq_ignore_ascii_case(host),
                _ => false,
            },
        };
        if allowed {
            return Ok(());
        }
        Err(Refusal {
            status: StatusCode::FORBIDDEN,
            reason: "origin",
            message: format!(
                "origin {origin:?} is not allowed (set allowed_origins to let other pages connect)"
            ),
        })
    }

    fn check_token(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(expected) = &self.auth_token else {
            return Ok(());
        };
        let from_header = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|t| t.trim().to_string());
        let from_query = uri.query().and_then(|q| {
            q.split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(key, _)| *key == "token")
                .map(|(_, value)| percent_decode(value))
        });
        let given = from_header.or(from_query);
        match given {
            Some(given) if same_secret(&given, expected) => Ok(()),
            Some(_) => Err(Refusal {
                status: StatusCode::UNAUTHORIZED,
                reason: "token",
                message: "wrong token".into(),
            }),
            None => Err(Refusal {
                status: StatusCode::UNAUTHORIZED,
                reason: "token",
                message: "this server needs a token: Authorization: Bearer TOKEN or ?token=TOKEN"
                    .into(),
            }),
        }
    }
}

/// The middleware: refuses with the status and a one-line body, logs why, counts it.
pub(super) async fn enforce(
    State(policy): State<Arc<AccessPolicy>>,
    request: Request,
    next: Next,
) -> Response {
    match policy.check(request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            tracing::warn!(
                path = request.uri().path(),
                reason = refusal.reason,
                "request refused: {}",
                refusal.message
            );
            ::metrics::counter!("hookwire_rejected_connections_total", "reason" => refusal.reason)
                .increment(1);
            let mut response = (refusal.status, refusal.message).into_response();
            if refusal.status == StatusCode::UNAUTHORIZED {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
            }
            response
        }
    }
}

/// The routes behind the token: the chat and everything that shows the server's state.
fn needs_token(path: &str) -> bool {
    path == "/ws" || path == "/metrics" || path == "/api" || path.starts_with("/api/")
}

/// `host` without its port: `localhost:8080` → `localhost`, `[::1]:80` → `[::1]`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn is_loopback_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "[::1]"
}

/// The `host[:port]` of an Origin (`http://localhost:8080` → `localhost:8080`); `None` for
/// `null` and other opaque origins.
fn origin_authority(origin: &str) -> Option<&str> {
    let (_, rest) = origin.split_once("://")?;
    let authority = rest.split('/').next()?;
    (!authority.is_empty()).then_some(authority)
}

/// Compares two secrets in time that depends only on their lengths' hashes: both are hashed
/// first, so the comparison runs over 32 bytes whatever was sent.
fn same_secret(given: &str, expected: &str) -> bool {
    let (a, b) = (
        Sha256::digest(given.as_bytes()),
        Sha256::digest(expected.as_bytes()),
    );
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// `%XX` escapes of a query value (a token may hold any character); `+` is a space.
fn percent_decode(value: &str) -> String {
    let hex = |byte: u8| (byte as char).to_digit(16);
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&high), Some(&low)) => hex(high).zip(hex(low)),
            _ => None,
        };
        match (escaped, bytes[i]) {
            (Some((high, low)), _) => {
                out.push((high * 16 + low) as u8);
                i += 3;
                continue;
            }
            (None, b'+') => out.push(b' '),
            (None, byte) => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    fn uri(text: &str) -> Uri {
        text.parse().unwrap()
    }

    fn loopback() -> AccessPolicy {
        AccessPolicy {
            loopback_only: true,
            ..AccessPolicy::default()
        }
    }

    #[test]
    fn loopback_servers_answer_only_loopback_names() {
        let policy = loopback();
        for host in [
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:8080",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert!(
                policy.check(&uri("/"), &headers(&[("host", host)])).is_ok(),
                "{host}"
            );
        }
        for host in [
            "evil.example:8080",
            "127.0.0.1.evil.example",
            "localhost.evil",
            "[::2]:80",
        ] {
            let refusal = policy
                .check(&uri("/"), &headers(&[("host", host)]))
                .unwrap_err();
            assert_eq!(
                (refusal.status, refusal.reason),
                (StatusCode::FORBIDDEN, "host"),
                "{host}"
            );
        }
        assert!(
            policy.check(&uri("/"), &HeaderMap::new()).is_err(),
            "no Host at all"
        );
        let anywhere = AccessPolicy::default();
        assert!(anywhere
            .check(&uri("/"), &headers(&[("host", "chat.example")]))
            .is_ok());
        let listed = AccessPolicy {
            allowed_hosts: Some(vec!["chat.example".into()]),
            loopback_only: true,
            ..AccessPolicy::default()
        };
        assert!(listed
            .check(&uri("/"), &headers(&[("host", "chat.example:443")]))
            .is_ok());
        assert!(listed
            .check(&uri("/"), &headers(&[("host", "localhost")]))
            .is_err());
    }

    #[test]
    fn origins_must_be_the_same_origin_unless_listed() {
        let policy = loopback();
        let same = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert!(policy.check(&uri("/ws"), &same).is_ok());
        assert!(policy
            .check(&uri("/ws"), &headers(&[("host", "127.0.0.1:8080")]))
            .is_ok());
        for origin in [
            "http://evil.example",
            "http://127.0.0.1:9999",
            "null",
            "garbage",
        ] {
            let h = headers(&[("host", "127.0.0.1:8080"), ("origin", origin)]);
            let refusal = policy.check(&uri("/ws"), &h).unwrap_err();
            assert_eq!(refusal.reason, "origin", "{origin}");
        }
        let listed = AccessPolicy {
            allowed_origins: Some(vec!["https://app.example".into()]),
            ..loopback()
        };
        let h = headers(&[
            ("host", "localhost:8080"),
            ("origin", "https://app.example"),
        ]);
        assert!(listed.check(&uri("/ws"), &h).is_ok());
        let h = headers(&[
            ("host", "localhost:8080"),
            ("origin", "http://localhost:8080"),
        ]);
        assert!(
            listed.check(&uri("/ws"), &h).is_err(),
            "a list replaces same-origin"
        );
    }

    #[test]
    fn the_token_guards_the_chat_the_api_and_metrics_only() {
        let policy = AccessPolicy {
            auth_token: Some("s3cret/+ x".into()),
            ..loopback()
        };
        let host = headers(&[("host", "localhost:8080")]);
        for path in ["/ws", "/api/info", "/api/skills", "/metrics"] {
            let refusal = policy.check(&uri(path), &host).unwrap_err();
            assert_eq!(refusal.status, StatusCode::UNAUTHORIZED, "{path}");
        }
        for path in ["/", "/healthz", "/app.js", "/apiary.html"] {
            assert!(policy.check(&uri(path), &host).is_ok(), "{path}");
        }
        let bearer = headers(&[
            ("host", "localhost"),
            ("authorization", "Bearer s3cret/+ x"),
        ]);
        assert!(policy.check(&uri("/api/info"), &bearer).is_ok());
        assert!(policy
            .check(&uri("/ws?token=s3cret%2F%2B%20x"), &host)
            .is_ok());
        assert!(policy
            .check(&uri("/ws?a=1&token=s3cret/%2B+x"), &host)
            .is_ok());
        let wrong = headers(&[("host", "localhost"), ("authorization", "Bearer nope")]);
        assert_eq!(
            policy.check(&uri("/ws"), &wrong).unwrap_err().message,
            "wrong token"
        );
        assert!(policy.check(&uri("/ws?token=s3cret"), &host).is_err());
    }

    #[test]
    fn helpers() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:8080"), "[::1]");
        assert_eq!(host_name("example"), "example");
        assert_eq!(
            origin_authority("http://a.example:1/x"),
            Some("a.example:1")
        );
        assert_eq!(origin_authority("null"), None);
        assert_eq!(percent_decode("a%2fb+c%zz%4"), "a/b c%zz%4");
        assert_eq!(percent_decode("%é%"), "%é%");
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("", "a"));
    }
}
