//! The identity provider's public keys, cached: fetched on the first token, again when the
//! cache is older than [`CACHE_TTL`], and when a token names a key the cache does not hold (at
//! most once per [`UNKNOWN_KID_REFETCH`], so a stream of made-up `kid`s cannot make the server
//! hammer the provider).

use std::collections::HashMap;
use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::config::KeySource;

/// How long a fetched key set is used before it is fetched again.
pub(super) const CACHE_TTL: Duration = Duration::from_secs(15 * 60);
/// At most one fetch per this long for tokens that name an unknown key.
pub(super) const UNKNOWN_KID_REFETCH: Duration = Duration::from_secs(30);
/// A discovery document or key set larger than this is refused.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why keys could not be had (logged; the token is then refused as `unknown key`).
#[derive(Debug, thiserror::Error)]
pub(super) enum KeyFetchError {
    #[error("cannot fetch {url}: {source}")]
    Http { url: String, source: reqwest::Error },
    #[error("{url} answered {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    #[error("{url} is larger than {MAX_DOCUMENT_BYTES} bytes")]
    TooLarge { url: String },
    #[error("{url} is not the JSON expected: {source}")]
    Json {
        url: String,
        source: serde_json::Error,
    },
}

/// One usable public key: what it verifies and the algorithm it is pinned to, if any.
pub(super) struct PublicKey {
    pub(super) key: DecodingKey,
    pub(super) algorithm: Option<Algorithm>,
}

#[derive(Default)]
struct Cached {
    keys: HashMap<String, std::sync::Arc<PublicKey>>,
    /// Keys without a `kid`, for tokens without one.
    unnamed: Vec<std::sync::Arc<PublicKey>>,
    fetched_at: Option<Instant>,
    last_unknown_kid_fetch: Option<Instant>,
    /// Found by discovery once.
    jwks_url: Option<String>,
}

/// The key cache of one server.
pub(super) struct KeyCache {
    source: KeySource,
    http: reqwest::Client,
    cached: Mutex<Cached>,
}

impl KeyCache {
    pub(super) fn new(source: KeySource) -> Result<Self, reqwest::Error> {
        // reqwest panics without a process-wide rustls provider; a second install is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(FETCH_TIMEOUT)
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()?;
        Ok(Self {
            source,
            http,
            cached: Mutex::new(Cached::default()),
        })
    }

    /// The key a token's header names (`kid`; without one, the only unnamed key), fetching the
    /// set when the cache is empty or old, or (rate-limited) when the key is unknown.
    pub(super) async fn key(&self, kid: Option<&str>) -> Option<std::sync::Arc<PublicKey>> {
        let mut cached = self.cached.lock().await;
        let stale = cached.fetched_at.is_none_or(|at| at.elapsed() >= CACHE_TTL);
        if stale {
            self.refresh(&mut cached).await;
        }
        if let Some(key) = find(&cached, kid) {
            return Some(key);
        }
        let may_refetch = !stale
            && cached
                .last_unknown_kid_fetch
                .is_none_or(|at| at.elapsed() >= UNKNOWN_KID_REFETCH);
        if !may_refetch {
            return None;
        }
        cached.last_unknown_kid_fetch = Some(Instant::now());
        tracing::info!(
            kid = kid.unwrap_or(""),
            "a token names an unknown key: fetching the key set again"
        );
        self.refresh(&mut cached).await;
        find(&cached, kid)
    }

    /// Fetches the key set; on failure the old keys stay (an outage of the provider does not
    /// sign everyone out) and the next token tries again.
    async fn refresh(&self, cached: &mut Cached) {
        match self.fetch(cached).await {
            Ok(set) => {
                let (named, unnamed) = usable_keys(&set);
                cached.keys = named;
                cached.unnamed = unnamed;
                cached.fetched_at = Some(Instant::now());
            }
            Err(error) => tracing::warn!(%error, "cannot fetch the identity provider's keys"),
        }
    }

    async fn fetch(&self, cached: &mut Cached) -> Result<JwkSet, KeyFetchError> {
        let jwks_url = match (&self.source, &cached.jwks_url) {
            (KeySource::JwksUrl(url), _) => url.clone(),
            (KeySource::Discovery(_), Some(url)) => url.clone(),
            (KeySource::Discovery(issuer), None) => {
                let url = format!(
                    "{}/.well-known/openid-configuration",
                    issuer.trim_end_matches('/')
                );
                let document: Discovery = self.get_json(&url).await?;
                cached.jwks_url = Some(document.jwks_uri.clone());
                document.jwks_uri
            }
        };
        self.get_json(&jwks_url).await
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<T, KeyFetchError> {
        let http = |source| KeyFetchError::Http {
            url: url.to_string(),
            source,
        };
        let mut response = self.http.get(url).send().await.map_err(http)?;
        if !response.status().is_success() {
            return Err(KeyFetchError::Status {
                url: url.to_string(),
                status: response.status(),
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(http)? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(KeyFetchError::TooLarge {
                    url: url.to_string(),
                });
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|source| KeyFetchError::Json {
            url: url.to_string(),
            source,
        })
    }
}

#[derive(serde::Deserialize)]
struct Discovery {
    jwks_uri: String,
}

fn find(cached: &Cached, kid: Option<&str>) -> Option<std::sync::Arc<PublicKey>> {
    match kid {
        Some(kid) => cached.keys.get(kid).cloned(),
        None if cached.unnamed.len() == 1 => cached.unnamed.first().cloned(),
        None => None,
    }
}

type UsableKeys = (
    HashMap<String, std::sync::Arc<PublicKey>>,
    Vec<std::sync::Arc<PublicKey>>,
);

/// The set's public keys; symmetric (`oct`) keys and ones that do not parse are left out: a
/// published key is public, so it must never verify an HMAC.
fn usable_keys(set: &JwkSet) -> UsableKeys {
    let mut named = HashMap::new();
    let mut unnamed = Vec::new();
    for jwk in &set.keys {
        let Ok(key) = DecodingKey::from_jwk(jwk) else {
            continue;
        };
        if key.family() == AlgorithmFamily::Hmac {
            continue;
        }
        let algorithm = jwk
            .common
            .key_algorithm
            .and_then(|alg| alg.to_string().parse::<Algorithm>().ok());
        let key = std::sync::Arc::new(PublicKey { key, algorithm });
        match &jwk.common.key_id {
            Some(kid) => {
                named.insert(kid.clone(), key);
            }
            None => unnamed.push(key),
        }
    }
    (named, unnamed)
}
