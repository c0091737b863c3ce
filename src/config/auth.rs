//! `auth.jwt`: sign-in with JSON Web Tokens from an identity provider (docs/protocol.md §20).
//! Only the settings live here; the server's `access` room verifies the tokens.

use std::time::Duration;

use jsonwebtoken::Algorithm;
use serde::Deserialize;

use super::ConfigError;

/// `auth:` in the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthFile {
    pub jwt: Option<JwtFile>,
}

/// `auth.jwt:` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtFile {
    /// The identity provider: keys come from its OpenID Connect discovery document (else
    /// `HOOKWIRE_JWT_ISSUER`); tokens must name it as `iss`.
    pub issuer: Option<String>,
    /// The key set's URL, instead of discovery.
    pub jwks_url: Option<String>,
    /// What tokens must name as `aud` (else `HOOKWIRE_JWT_AUDIENCE`).
    pub audience: Option<String>,
    /// Accepted signature algorithms (default `[RS256, ES256]`).
    pub algorithms: Option<Vec<String>>,
    pub leeway_seconds: Option<u64>,
    pub user_claim: Option<String>,
    pub tenant_claim: Option<String>,
    pub roles_claim: Option<String>,
}

/// Where the verification keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `<issuer>/.well-known/openid-configuration` → `jwks_uri`.
    Discovery(String),
    /// A key set's URL, given.
    JwksUrl(String),
}

/// `auth.jwt`, resolved: when set, the chat routes take a JWT instead of `auth_token`.
#[derive(Debug, Clone, PartialEq)]
pub struct JwtSettings {
    pub keys: KeySource,
    /// The `iss` tokens must carry; `None` only with `jwks_url` and no issuer.
    pub issuer: Option<String>,
    pub audience: String,
    /// Never `none` nor an HMAC algorithm: the keys are public.
    pub algorithms: Vec<Algorithm>,
    pub leeway: Duration,
    pub user_claim: String,
    pub tenant_claim: Option<String>,
    pub roles_claim: Option<String>,
}

impl JwtSettings {
    /// `auth.jwt` from the file and `HOOKWIRE_JWT_ISSUER` / `HOOKWIRE_JWT_AUDIENCE`; `None`
    /// when neither sets it.
    pub(super) fn resolve(
        file: Option<&JwtFile>,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, ConfigError> {
        let empty = JwtFile::default();
        let issuer = env("HOOKWIRE_JWT_ISSUER");
        let audience = env("HOOKWIRE_JWT_AUDIENCE");
        if file.is_none() && issuer.is_none() && audience.is_none() {
            return Ok(None);
        }
        let file = file.unwrap_or(&empty);
        let issuer = issuer.or(file.issuer.clone());
        let keys = match (&file.jwks_url, &issuer) {
            (Some(url), _) => KeySource::JwksUrl(http_url("auth.jwt.jwks_url", url)?),
            (None, Some(issuer)) => KeySource::Discovery(http_url("auth.jwt.issuer", issuer)?),
            (None, None) => {
                return Err(ConfigError::Missing {
                    setting: "auth.jwt.issuer",
                    what: "auth.jwt needs an issuer (HOOKWIRE_JWT_ISSUER) or a jwks_url",
                })
            }
        };
        // Without an audience, a token the provider issued to any other application would do.
        let audience = audience
            .or(file.audience.clone())
            .filter(|a| !a.trim().is_empty())
            .ok_or(ConfigError::Missing {
                setting: "auth.jwt.audience",
                what: "auth.jwt needs an audience (HOOKWIRE_JWT_AUDIENCE): the `aud` this \
                       server's tokens carry",
            })?;
        let algorithms = match &file.algorithms {
            Some(names) => names
                .iter()
                .map(|n| algorithm(n))
                .collect::<Result<_, _>>()?,
            None => vec![Algorithm::RS256, Algorithm::ES256],
        };
        if file.algorithms.as_ref().is_some_and(Vec::is_empty) {
            return Err(ConfigError::Empty {
                setting: "auth.jwt.algorithms",
            });
        }
        Ok(Some(JwtSettings {
            keys,
            issuer,
            audience,
            algorithms,
            leeway: Duration::from_secs(file.leeway_seconds.unwrap_or(60)),
            user_claim: file.user_claim.clone().unwrap_or_else(|| "sub".into()),
            tenant_claim: file.tenant_claim.clone(),
            roles_claim: file.roles_claim.clone(),
        }))
    }
}

/// An algorithm a public key can verify; `none` and `HS*` are refused.
fn algorithm(name: &str) -> Result<Algorithm, ConfigError> {
    let invalid = || ConfigError::Invalid {
        setting: "auth.jwt.algorithms",
        expected: "public-key algorithms (RS256, RS384, RS512, PS256, PS384, PS512, ES256, \
                   ES384, EdDSA); none and HMAC are never accepted",
        value: name.to_string(),
    };
    let parsed: Algorithm = name.parse().map_err(|_| invalid())?;
    match parsed {
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => Err(invalid()),
        other => Ok(other),
    }
}

fn http_url(setting: &'static str, value: &str) -> Result<String, ConfigError> {
    let parsed = reqwest::Url::parse(value);
    if matches!(&parsed, Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host()) {
        return Ok(value.to_string());
    }
    Err(ConfigError::Invalid {
        setting,
        expected: "an absolute http:// or https:// URL",
        value: value.to_string(),
    })
}
