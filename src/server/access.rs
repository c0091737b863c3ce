//! Who may talk to the server (README "Security model"): one middleware in front of every route.
//!
//! In order, each check refusing with its own status and a `warn` log line:
//! 1. **Host** (DNS rebinding): a Host that is not `name[:port]` or `[ipv6][:port]` (e.g.
//!    `[::1].evil.example`) is refused. With `allowed_hosts` set, the request's `Host` must be one
//!    of them; unset and bound to a loopback address, it must be `localhost`, `127.0.0.1` or
//!    `[::1]` (any port); unset and bound to a wildcard address (`0.0.0.0`, `[::]`), it must be
//!    an IP literal or a loopback name (a DNS name could be an attacker's, rebound to this
//!    machine). Otherwise any Host. → 403.
//! 2. **Origin** (a web page the user visits): more than one `Origin` header is refused. With
//!    `allowed_origins` set, an `Origin` header must be one of them; unset, its `host[:port]`
//!    must equal the `Host` header (same origin). No `Origin` header (a non-browser client)
//!    passes. → 403.
//! 3. **Token**: with `auth_token` set, `/ws`, `/api/*` and `/metrics` need it, compared in
//!    constant time, as `Authorization: Bearer TOKEN`, as the WebSocket subprotocol
//!    `hookwire.token.TOKEN` (percent-encoded; the page's way: no URL, so no proxy log, holds
//!    it) or as `?token=TOKEN` (other clients). With `admin_token` set, `/api/hooks` and
//!    `/metrics` need that one instead (`Authorization: Bearer` only). `/healthz`, `/livez`
//!    and the page stay open (the page brings the token itself). → 401.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

mod jwt;
mod keys;

pub(super) use jwt::{JwtVerifier, SignedIn, TokenProblem};

/// The access rules, resolved from the config once at start.
#[derive(Debug, Clone, Default)]
pub(super) struct AccessPolicy {
    /// Hosts a request may name; `None` = see [`AccessPolicy::bound`].
    pub(crate) allowed_hosts: Option<Vec<String>>,
    /// Without `allowed_hosts`: which Hosts the address the server is bound to answers.
    pub(crate) bound: Bound,
    /// Origins a browser request may come from; `None` = same origin only.
    pub(crate) allowed_origins: Option<Vec<String>>,
    /// The bearer token `/ws`, `/api/*` and `/metrics` need.
    pub(crate) auth_token: Option<String>,
    /// The bearer token `/api/hooks` and `/metrics` need instead of `auth_token`.
    pub(crate) admin_token: Option<String>,
    /// `auth.jwt`: the routes behind the token take a JWT instead of `auth_token`.
    pub(crate) jwt: Option<Arc<JwtVerifier>>,
}

/// What kind of address the server listens on, for the Host rule without `allowed_hosts`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Bound {
    /// A loopback address: loopback names only.
    Loopback,
    /// `0.0.0.0` or `[::]`: IP literals and loopback names only.
    Wildcard,
    /// One other address: any Host.
    #[default]
    Address,
}

impl Bound {
    pub(super) fn of(ip: std::net::IpAddr) -> Self {
        // `[::ffff:127.0.0.1]` is loopback too.
        let ip = ip.to_canonical();
        if ip.is_loopback() {
            Bound::Loopback
        } else if ip.is_unspecified() {
            Bound::Wildcard
        } else {
            Bound::Address
        }
    }
}

/// The WebSocket subprotocol the page speaks; the server answers it.
pub(super) const SUBPROTOCOL: &str = "hookwire";
/// The prefix of the subprotocol that carries the token.
const TOKEN_SUBPROTOCOL: &str = "hookwire.token.";

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
        self.check_sender(uri, headers)?;
        if self.admin_token.is_some() && is_admin_route(uri.path()) {
            self.check_admin_token(headers)?;
        } else if self.jwt.is_none() && self.auth_token.is_some() && needs_token(uri.path()) {
            self.check_token(uri, headers)?;
        }
        Ok(())
    }

    /// Where the request comes from: its `Host` and `Origin` (all a CORS preflight is asked).
    fn check_sender(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        // Two `Host`s: whichever one a check read, something else might read the other.
        if headers.get_all(header::HOST).iter().nth(1).is_some() {
            return Err(Refusal {
                status: StatusCode::BAD_REQUEST,
                reason: "host",
                message: "more than one Host header".into(),
            });
        }
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .or_else(|| uri.authority().map(|a| a.as_str()));
        self.check_host(host)?;
        let mut origins = headers.get_all(header::ORIGIN).iter();
        if let Some(origin) = origins.next() {
            if origins.next().is_some() {
                return Err(Refusal {
                    status: StatusCode::FORBIDDEN,
                    reason: "origin",
                    message: "more than one Origin header".into(),
                });
            }
            let origin = origin.to_str().unwrap_or("");
            self.check_origin(origin, host)?;
        }
        Ok(())
    }

    fn check_host(&self, host: Option<&str>) -> Result<(), Refusal> {
        let allowed = match (&self.allowed_hosts, host) {
            (_, None) => self.bound == Bound::Address && self.allowed_hosts.is_none(),
            // Not `name[:port]` / `[v6][:port]`: nothing may read it another way than we do.
            (_, Some(host)) if host_name(host).is_none() => false,
            (Some(list), Some(host)) => {
                let name = host_name(host).unwrap_or(host);
                list.iter().any(|entry| {
                    entry.eq_ignore_ascii_case(host) || entry.eq_ignore_ascii_case(name)
                })
            }
            (None, Some(host)) => {
                let name = host_name(host).unwrap_or(host);
                match self.bound {
                    Bound::Loopback => is_loopback_name(name),
                    Bound::Wildcard => is_loopback_name(name) || is_ip_literal(name),
                    Bound::Address => true,
                }
            }
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
        let given = from_header
            .or_else(|| subprotocol_token(headers))
            .or(from_query);
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

    /// The admin routes with `admin_token` set: its bearer only (`auth_token` does not do).
    fn check_admin_token(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(expected) = &self.admin_token else {
            return Ok(());
        };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        match given {
            Some(given) if same_secret(given, expected) => Ok(()),
            Some(_) => Err(Refusal {
                status: StatusCode::UNAUTHORIZED,
                reason: "token",
                message: "wrong admin token".into(),
            }),
            None => Err(Refusal {
                status: StatusCode::UNAUTHORIZED,
                reason: "token",
                message: "this route needs the admin token: Authorization: Bearer ADMIN_TOKEN"
                    .into(),
            }),
        }
    }
}

impl AccessPolicy {
    /// The verifier, when this request needs a JWT (the admin routes with `admin_token` keep
    /// theirs).
    fn jwt_for(&self, path: &str) -> Option<&JwtVerifier> {
        let admin = self.admin_token.is_some() && is_admin_route(path);
        self.jwt.as_deref().filter(|_| !admin && needs_token(path))
    }

    /// The person a request's JWT signs in, or the refusal.
    async fn sign_in(verifier: &JwtVerifier, headers: &HeaderMap) -> Result<SignedIn, Refusal> {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|t| t.trim().to_string())
            .or_else(|| subprotocol_token(headers));
        let Some(token) = given else {
            return Err(Refusal {
                status: StatusCode::UNAUTHORIZED,
                reason: "token",
                message: "this server needs a sign-in token: Authorization: Bearer JWT".into(),
            });
        };
        verifier.verify(&token).await.map_err(|problem| Refusal {
            status: StatusCode::UNAUTHORIZED,
            reason: INVALID_TOKEN,
            message: format!("invalid token: {}", problem.as_str()),
        })
    }
}

/// The refusal reason (and RFC 6750 error code) of a JWT that does not verify.
const INVALID_TOKEN: &str = "invalid_token";

/// The token of a `Sec-WebSocket-Protocol: hookwire, hookwire.token.TOKEN` offer, percent-decoded
/// (a protocol name holds only token characters; `+` stays a plus).
fn subprotocol_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|offer| offer.trim().strip_prefix(TOKEN_SUBPROTOCOL))
        .map(|token| percent_decode(&token.replace('+', "%2B")))
}

/// The middleware: refuses with the status and a one-line body, logs why, counts it.
pub(super) async fn enforce(
    State(policy): State<Arc<AccessPolicy>>,
    mut request: Request,
    next: Next,
) -> Response {
    // A CORS preflight of a front-end route carries no credentials (browsers never send them on
    // one): its Host and Origin are checked, and the route's CORS layer answers it.
    let preflight =
        request.method() == axum::http::Method::OPTIONS && answers_json(request.uri().path());
    let mut checked = if preflight {
        policy.check_sender(request.uri(), request.headers())
    } else {
        policy.check(request.uri(), request.headers())
    };
    if let (Ok(()), false, Some(verifier)) =
        (&checked, preflight, policy.jwt_for(request.uri().path()))
    {
        match AccessPolicy::sign_in(verifier, request.headers()).await {
            Ok(signed_in) => {
                request.extensions_mut().insert(signed_in);
            }
            Err(refusal) => checked = Err(refusal),
        }
    }
    match checked {
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
            // The front ends' routes answer in JSON, as their clients read errors.
            let mut response = if answers_json(request.uri().path()) {
                let body = serde_json::json!({"error": {"code": refusal.reason,
                                                        "message": refusal.message}});
                (refusal.status, axum::Json(body)).into_response()
            } else {
                (refusal.status, refusal.message).into_response()
            };
            if refusal.status == StatusCode::UNAUTHORIZED {
                let challenge = if refusal.reason == INVALID_TOKEN {
                    "Bearer error=\"invalid_token\""
                } else {
                    "Bearer"
                };
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static(challenge),
                );
            }
            response
        }
    }
}

/// The routes behind the token: the chat and everything that shows the server's state.
fn needs_token(path: &str) -> bool {
    path == "/ws"
        || path == "/metrics"
        || path == "/api"
        || path.starts_with("/api/")
        || path == "/ag-ui"
        || path.starts_with("/ag-ui/")
        || path == "/v1"
        || path.starts_with("/v1/")
}

/// The routes of the front-end wires (docs/protocol.md §19), whose errors are JSON.
fn answers_json(path: &str) -> bool {
    path == "/ag-ui" || path == "/api/chat" || path.starts_with("/v1/")
}

/// The routes for the operator: what runs and how it fares, behind `admin_token` when set.
fn is_admin_route(path: &str) -> bool {
    path == "/metrics" || path == "/api/hooks" || path.starts_with("/api/hooks/")
}

/// `host` without its port (`localhost:8080` → `localhost`, `[::1]:80` → `[::1]`), or `None`
/// when it is not one name with an optional port (`[::1].evil.example`, `a:b:c`, `[::1`).
fn host_name(host: &str) -> Option<&str> {
    let digits = |port: &str| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    if host.starts_with('[') {
        let end = host.find(']')?;
        let rest = &host[end + 1..];
        let port_ok = rest.is_empty() || rest.strip_prefix(':').is_some_and(digits);
        return port_ok.then_some(&host[..=end]);
    }
    let (name, port) = match host.split_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    let name_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    (name_ok && port.is_none_or(digits)).then_some(name)
}

fn is_loopback_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "[::1]"
}

/// `192.0.2.1` or `[2001:db8::1]`: a name no DNS answer can point elsewhere.
fn is_ip_literal(name: &str) -> bool {
    match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => name.parse::<std::net::Ipv4Addr>().is_ok(),
    }
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
mod tests;
