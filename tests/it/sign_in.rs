//! Sign-in with JWTs (`auth.jwt`, docs/protocol.md §20): a real identity provider on 127.0.0.1
//! (OpenID Connect discovery and a JWKS with RSA and EC keys), tokens signed here with the
//! test-only keys of tests/data/jwt/, and the server refusing every bad kind before any model
//! call, taking good ones on the WebSocket and the HTTP routes, handing the person to hooks,
//! following key rotation and an `auth` frame after expiry.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::common::*;
use hookwire::config::{JwtSettings, KeySource};

pub(crate) const AUDIENCE: &str = "hookwire-test";

pub(crate) fn key_file(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/jwt")
        .join(name);
    std::fs::read(path).unwrap()
}

pub(crate) fn rsa_key() -> EncodingKey {
    EncodingKey::from_rsa_pem(&key_file("rsa.pem")).unwrap()
}

fn other_rsa_key() -> EncodingKey {
    EncodingKey::from_rsa_pem(&key_file("rsa_other.pem")).unwrap()
}

pub(crate) fn ec_key() -> EncodingKey {
    EncodingKey::from_ec_pem(&key_file("ec.pem")).unwrap()
}

/// The public JWK of `key`, named `kid`.
fn public_jwk(key: &EncodingKey, algorithm: Algorithm, kid: &str) -> Jwk {
    let mut jwk = Jwk::from_encoding_key(key, algorithm).unwrap();
    jwk.common.key_id = Some(kid.to_string());
    jwk
}

/// An identity provider: discovery at `/.well-known/openid-configuration`, keys at `/jwks`
/// (which it counts).
pub(crate) struct Provider {
    issuer: String,
    keys: Arc<Mutex<Vec<Jwk>>>,
    fetches: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct ProviderState {
    issuer: String,
    keys: Arc<Mutex<Vec<Jwk>>>,
    fetches: Arc<AtomicUsize>,
}

impl Provider {
    pub(crate) async fn start() -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let keys = Arc::new(Mutex::new(vec![
            public_jwk(&rsa_key(), Algorithm::RS256, "rsa-1"),
            public_jwk(&ec_key(), Algorithm::ES256, "ec-1"),
        ]));
        let fetches = Arc::new(AtomicUsize::new(0));
        let state = ProviderState {
            issuer: issuer.clone(),
            keys: keys.clone(),
            fetches: fetches.clone(),
        };
        let app = Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(|State(s): State<ProviderState>| async move {
                    Json(json!({"issuer": s.issuer, "jwks_uri": format!("{}/jwks", s.issuer)}))
                }),
            )
            .route(
                "/jwks",
                get(|State(s): State<ProviderState>| async move {
                    s.fetches.fetch_add(1, Ordering::SeqCst);
                    let keys = s.keys.lock().unwrap().clone();
                    Json(serde_json::to_value(JwkSet { keys }).unwrap())
                }),
            )
            .with_state(state);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Provider {
            issuer,
            keys,
            fetches,
        }
    }

    pub(crate) fn settings(&self) -> JwtSettings {
        JwtSettings {
            keys: KeySource::Discovery(self.issuer.clone()),
            issuer: Some(self.issuer.clone()),
            audience: AUDIENCE.into(),
            algorithms: vec![Algorithm::RS256, Algorithm::ES256],
            leeway: Duration::from_secs(60),
            user_claim: "sub".into(),
            tenant_claim: Some("org".into()),
            roles_claim: Some("roles".into()),
        }
    }

    /// Good claims for `sub`, valid for an hour.
    pub(crate) fn claims(&self, sub: &str) -> Value {
        let now = now();
        json!({"iss": self.issuer, "aud": AUDIENCE, "sub": sub, "org": "acme",
               "roles": ["admin", "dev"], "iat": now, "exp": now + 3600})
    }
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

pub(crate) fn sign(claims: &Value, algorithm: Algorithm, kid: &str, key: &EncodingKey) -> String {
    let mut header = Header::new(algorithm);
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A token with a header and claims of our own and the signature `signature` made over them
/// with HMAC-SHA256 and `secret` (or none at all).
fn hand_made(header: Value, claims: &Value, secret: Option<&[u8]>) -> String {
    let signing_input = format!(
        "{}.{}",
        base64url(header.to_string().as_bytes()),
        base64url(claims.to_string().as_bytes())
    );
    let signature = match secret {
        Some(secret) => {
            use hmac::Mac;
            let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
            mac.update(signing_input.as_bytes());
            base64url(&mac.finalize().into_bytes())
        }
        None => String::new(),
    };
    format!("{signing_input}.{signature}")
}

/// A server behind `provider`, whose hook writes its input and environment to the workspace.
async fn server(provider: &Provider, upstream: &FakeUpstream) -> TestServer {
    let settings = provider.settings();
    TestServer::builder()
        .upstream(upstream)
        .hooks("pre_send_message:\n  - command: 'cat > input.json; env > env.txt'\n")
        .config(move |c| c.jwt = Some(settings))
        .start()
        .await
}

pub(crate) async fn connect(server: &TestServer, token: &str) -> Client {
    let mut request = format!("ws://{}/ws", server.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let (ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    Client { ws }
}

/// `POST /v1/chat/completions` with `token`: the status, the `WWW-Authenticate` and the body.
async fn completion(server: &TestServer, token: &str) -> (u16, String, Value) {
    let response = reqwest::Client::new()
        .post(server.url("/v1/chat/completions"))
        .bearer_auth(token)
        .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, challenge, body)
}

fn workspace_file(server: &TestServer, name: &str) -> String {
    std::fs::read_to_string(server.workspace.path().join(name)).unwrap_or_default()
}

#[tokio::test]
async fn good_rs256_and_es256_tokens_chat_and_the_hook_sees_the_person() {
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    let server = server(&provider, &upstream).await;
    for (algorithm, kid, key, sub) in [
        (Algorithm::RS256, "rsa-1", rsa_key(), "alice"),
        (Algorithm::ES256, "ec-1", ec_key(), "bob"),
    ] {
        upstream.push(Reply::text(&["hello"]));
        let token = sign(&provider.claims(sub), algorithm, kid, &key);
        let frames = connect(&server, &token)
            .await
            .chat(json!({"type": "chat", "input": "hi"}))
            .await;
        assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
        let input: Value = serde_json::from_str(&workspace_file(&server, "input.json")).unwrap();
        assert_eq!(
            input["user"],
            json!({"id": sub, "tenant": "acme", "roles": ["admin", "dev"]}),
            "{input}"
        );
        let env = workspace_file(&server, "env.txt");
        assert!(env.contains(&format!("HOOKWIRE_USER_ID={sub}\n")), "{env}");
        assert!(env.contains("HOOKWIRE_TENANT=acme\n"), "{env}");
        assert!(!env.contains(&token), "the hook saw the token");
    }
    assert_eq!(upstream.requests().len(), 2);
}

#[tokio::test]
async fn every_bad_token_is_refused_with_401_and_no_model_call() {
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    let server = server(&provider, &upstream).await;
    let good = provider.claims("alice");
    let with = |field: &str, value: Value| {
        let mut claims = good.clone();
        claims[field] = value;
        claims
    };
    let public_pem = key_file("rsa.pub.pem");
    let cases = [
        (
            "expired",
            sign(
                &with("exp", json!(now() - 600)),
                Algorithm::RS256,
                "rsa-1",
                &rsa_key(),
            ),
        ),
        (
            "not yet valid",
            sign(
                &with("nbf", json!(now() + 600)),
                Algorithm::RS256,
                "rsa-1",
                &rsa_key(),
            ),
        ),
        (
            "wrong issuer",
            sign(
                &with("iss", json!("https://evil.example")),
                Algorithm::RS256,
                "rsa-1",
                &rsa_key(),
            ),
        ),
        (
            "wrong audience",
            sign(
                &with("aud", json!("another-app")),
                Algorithm::RS256,
                "rsa-1",
                &rsa_key(),
            ),
        ),
        (
            "bad signature",
            sign(&good, Algorithm::RS256, "rsa-1", &other_rsa_key()),
        ),
        (
            "forbidden algorithm",
            hand_made(
                json!({"alg": "none", "typ": "JWT", "kid": "rsa-1"}),
                &good,
                None,
            ),
        ),
        (
            "forbidden algorithm",
            hand_made(
                json!({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}),
                &good,
                Some(&public_pem),
            ),
        ),
        ("malformed", "not-a-jwt".to_string()),
    ];
    for (reason, token) in &cases {
        let (status, challenge, body) = completion(&server, token).await;
        assert_eq!(status, 401, "{reason}: {body}");
        assert_eq!(challenge, "Bearer error=\"invalid_token\"", "{reason}");
        assert_eq!(body["error"]["code"], "invalid_token", "{reason}: {body}");
        assert_eq!(
            body["error"]["message"],
            format!("invalid token: {reason}"),
            "{body}"
        );
        // The WebSocket upgrade is refused the same way.
        let mut request = format!("ws://{}/ws", server.addr)
            .into_client_request()
            .unwrap();
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        match tokio_tungstenite::connect_async(request).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 401, "{reason}")
            }
            other => panic!("{reason}: the upgrade was not refused: {:?}", other.is_ok()),
        }
    }
    // No token at all: 401 too.
    let (status, _, _) = completion(&server, "").await;
    assert_eq!(status, 401);
    assert!(
        upstream.requests().is_empty(),
        "a refused token reached the model"
    );
}

#[tokio::test]
async fn the_http_route_takes_the_jwt_and_the_chat_is_for_its_person() {
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    let server = server(&provider, &upstream).await;
    upstream.push(Reply::text(&["hello"]));
    let token = sign(
        &provider.claims("carol"),
        Algorithm::ES256,
        "ec-1",
        &ec_key(),
    );
    let (status, _, body) = completion(&server, &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "hello", "{body}");
    let input: Value = serde_json::from_str(&workspace_file(&server, "input.json")).unwrap();
    assert_eq!(input["user"]["id"], "carol", "{input}");
}

#[tokio::test]
async fn a_new_key_is_fetched_on_an_unknown_kid_at_most_once_per_30_seconds() {
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    let server = server(&provider, &upstream).await;
    upstream.push(Reply::text(&["one"]));
    upstream.push(Reply::text(&["two"]));
    let token = sign(
        &provider.claims("alice"),
        Algorithm::RS256,
        "rsa-1",
        &rsa_key(),
    );
    assert_eq!(completion(&server, &token).await.0, 200);
    assert_eq!(provider.fetches.load(Ordering::SeqCst), 1);
    // The provider rotates: a new key appears, and a token signed with it is taken after one
    // fetch.
    provider
        .keys
        .lock()
        .unwrap()
        .push(public_jwk(&other_rsa_key(), Algorithm::RS256, "rsa-2"));
    let rotated = sign(
        &provider.claims("alice"),
        Algorithm::RS256,
        "rsa-2",
        &other_rsa_key(),
    );
    let (status, _, body) = completion(&server, &rotated).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(provider.fetches.load(Ordering::SeqCst), 2);
    // Another unknown kid within 30 s: no fetch, refused as an unknown key.
    let made_up = sign(
        &provider.claims("alice"),
        Algorithm::RS256,
        "rsa-3",
        &rsa_key(),
    );
    let (status, _, body) = completion(&server, &made_up).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["message"], "invalid token: unknown key");
    assert_eq!(
        provider.fetches.load(Ordering::SeqCst),
        2,
        "refetch not rate-limited"
    );
}

#[tokio::test]
async fn an_expired_connection_gets_auth_expired_until_an_auth_frame_renews_it() {
    let provider = Provider::start().await;
    let upstream = FakeUpstream::start().await;
    let server = server(&provider, &upstream).await;
    let expires = now() + 2;
    let mut claims = provider.claims("alice");
    claims["exp"] = json!(expires);
    let short = sign(&claims, Algorithm::RS256, "rsa-1", &rsa_key());
    let mut client = connect(&server, &short).await;
    upstream.push(Reply::text(&["before"]));
    let frames = client.chat(json!({"type": "chat", "input": "hi"})).await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
    // The token's `exp` passes (a condition on the clock: nothing to await but the time).
    let expired = eventually(Duration::from_secs(5), || async { now() > expires }).await;
    assert!(expired);
    let frames = client
        .chat(json!({"type": "chat", "id": "c2", "input": "hi"}))
        .await;
    assert_eq!(
        frames.last().unwrap()["code"],
        "auth_expired",
        "{frames:#?}"
    );
    assert_eq!(
        upstream.requests().len(),
        1,
        "an expired connection reached the model"
    );
    // Another user's token is refused; the connection stays expired.
    let bob = sign(
        &provider.claims("bob"),
        Algorithm::RS256,
        "rsa-1",
        &rsa_key(),
    );
    client.send(json!({"type": "auth", "token": bob})).await;
    let refused = client.frame().await;
    assert_eq!(refused["code"], "bad_frame", "{refused}");
    // A fresh token of the same user: chats go on.
    let fresh = sign(
        &provider.claims("alice"),
        Algorithm::RS256,
        "rsa-1",
        &rsa_key(),
    );
    client.send(json!({"type": "auth", "token": fresh})).await;
    upstream.push(Reply::text(&["after"]));
    let frames = client
        .chat(json!({"type": "chat", "id": "c3", "input": "hi"}))
        .await;
    assert_eq!(frames.last().unwrap()["type"], "done", "{frames:#?}");
}
